"""Flex-VFL against its baselines across communication regimes (docs/flexvfl.md §5): the server
round trip ``server_time`` S as an axis, two named comparison protocols, time to a target test
accuracy per method and regime, and where the ordering of two methods flips.

Protocols:
  - ``tuned``: every method keeps the configuration's optimizers and gets its own best η from a
    grid; the grid is widened (×3 beyond the edge, up to ``max_widen`` times) until the best value
    is interior, and the grid, the choice and whether it is interior are reported.
  - ``authors``: one η for every method; round-based methods (Flex-VFL, adaptive, sync, P-BCD) use
    SGD with momentum 0.9 re-initialised every round at the parties and the server, asynchronous
    clients plain SGD; the server runs τ_0 = Q local steps (P-BCD: 1) and its compute is free;
    every round (async: every event) waits S. Batches, initial point and the unit of S stay
    refimpl's (independent draws, Glorot, the fastest party's mean step).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from refimpl.vfl.flexvfl import time_to_target

PROTOCOLS = ("tuned", "authors")
REGIME_METHODS = ("flexvfl", "sync-vfl", "async-vfl", "pbcd")
TUNE_GRID = (0.01, 0.03, 0.1, 0.3)


def check_protocol(protocol):
    if protocol not in PROTOCOLS:
        raise ValueError(f"--protocol must be one of {', '.join(PROTOCOLS)}, got {protocol!r}")
    return protocol


def check_seeds(seeds):
    """--seeds: the runs averaged per time to target, a whole number >= 1."""
    from refimpl.core.validate import positive_int
    return positive_int("--seeds", seeds)


def parse_server_times(text):
    """'1,10,50' → [1.0, 10.0, 50.0]; each finite and >= 0."""
    out = []
    for s in str(text).split(","):
        if not s.strip():
            continue
        try:
            v = float(s)
        except ValueError:
            raise ValueError(f"--server-time takes comma-separated numbers (units of the fastest party's mean "
                             f"step), got {s!r}")
        if not np.isfinite(v) or v < 0:
            raise ValueError(f"--server-time values must be finite and >= 0, got {s!r}")
        out.append(v)
    if not out:
        raise ValueError("--server-time needs at least one value")
    return out


def protocol_config(cfg, method, protocol, eta=None):
    """The configuration one method runs with under a protocol."""
    check_protocol(protocol)
    kw = {"method": method, "protocol": "refimpl"}
    if eta is not None:
        kw["eta"] = str(eta)
    if protocol == "authors":
        # the comparison protocol is the authors' step counts and timing with refimpl's batches,
        # initial point and unit of S (pinned, so the claims measure one instance); the full set
        # of the authors' conventions is `refimpl run … --protocol authors` (docs/flexvfl.md §6)
        kw.update(protocol="authors", optimizer="sgd" if method == "async-vfl" else "momentum:0.9",
                  batch_order="independent", init_scheme="glorot", server_time_unit="step")
    elif method == "async-vfl":
        kw["optimizer"] = "sgd"
    return replace(cfg, **kw)


def time_to(cfg, ds, seeds, target, budget, keep=None):
    """Per seed the simulated time to ``target``; (mean or None if a seed misses, per-seed list).
    ``keep``: a dict that receives the first seed's trace under "trace"."""
    from refimpl.vfl.experiment import run_vfl
    ts = []
    for s in range(seeds):
        tr = run_vfl(replace(cfg, seed=cfg.seed + s, target=target, time_budget=budget), ds)
        if keep is not None and s == 0:
            keep["trace"] = tr
        ts.append(time_to_target(tr, target))
    return (None if any(t is None for t in ts) else float(np.mean(ts))), ts


def tuned_eta(cfg, ds, seeds, target, budget, grid=TUNE_GRID, max_widen=3, keep=None, time_of=None):
    """Best η of a grid for one method (mean time to target over the seeds), widening the grid
    beyond an edge that holds the best value. Returns (η, time, table {η: time}, interior?);
    ``keep`` receives the best η's first-seed trace. ``time_of(η)``: the mean time to target at η
    (instead of running :func:`time_to`; no trace is kept then)."""
    table, traces = {}, {}

    def fill(values):
        for e in values:
            if e not in table:
                k = {}
                table[e] = (time_to(replace(cfg, eta=str(e)), ds, seeds, target, budget, k)[0] if time_of is None
                            else time_of(e))
                traces[e] = k.get("trace")
    fill(grid)
    for _ in range(max_widen):
        ok = {e: t for e, t in table.items() if t is not None}
        if not ok:
            break
        best = min(ok, key=ok.get)
        keys = sorted(table)
        if best == keys[0]:
            fill([keys[0] / 3])
        elif best == keys[-1]:
            fill([keys[-1] * 3])
        else:
            break
    ok = {e: t for e, t in table.items() if t is not None}
    if not ok:
        return None, None, table, False
    best = min(ok, key=ok.get)
    keys = sorted(table)
    if keep is not None:
        keep["trace"] = traces[best]
    return best, ok[best], table, keys[0] < best < keys[-1]


def grid_record(table):
    """A tuned row's η grid as recorded: {η as text: its time to target}, η increasing."""
    return {str(k): v for k, v in sorted(table.items())}


def row_eta(cfg):
    """The η a regime row names for a run at the configuration's fixed η: the value given, or the
    first of a comma list (the server's; the parties' follow)."""
    return float(str(cfg.eta).split(",")[0])


def regime_table(cfg, ds, server_times, protocol, methods=REGIME_METHODS, target=0.85, seeds=1,
                 progress=None, traces=None):
    """One row per (S, method): protocol, η, mean time to target (None: not reached within the
    budget), per-seed times and, for ``tuned``, the grid. The budget grows with S:
    ``cfg.time_budget`` · (1 + S), S in units of the fastest party's mean step. ``traces``: a dict
    that receives {S: {method: first-seed trace}} (at the chosen η) for plotting."""
    check_protocol(protocol)
    seeds = check_seeds(seeds)
    if cfg.time_budget is None:
        raise ValueError("a regime comparison needs --time-budget (simulated time at S = 0)")
    rows = []
    for S in server_times:
        for meth in methods:
            keep = {}
            row = regime_row(cfg, ds, S, meth, protocol, target, seeds, keep)
            if traces is not None:
                traces.setdefault(S, {})[meth] = keep.get("trace")
            rows.append(row)
            if progress:
                t, eta = row["time_to_target"], row["eta"]
                progress(f"S = {S:g}, {meth}: time to {target:g} = {t if t is None else round(t, 1)}"
                         f"{'' if protocol == 'authors' else f' (η = {eta})'}")
    return rows


def regime_row(cfg, ds, S, meth, protocol, target=0.85, seeds=1, keep=None):
    """One (server time, method) row of :func:`regime_table` (independent of the others)."""
    check_protocol(protocol)
    budget = cfg.time_budget * (1.0 + S)
    c = protocol_config(replace(cfg, server_time=S), meth, protocol)
    keep = {} if keep is None else keep
    if protocol == "tuned":
        eta, t, table, interior = tuned_eta(c, ds, seeds, target, budget, keep=keep)
        row = {"eta": eta, "grid": grid_record(table), "eta_interior": interior}
    else:
        t, per_seed = time_to(c, ds, seeds, target, budget, keep)
        row = {"eta": row_eta(cfg), "per_seed": per_seed}
    return {"server_time": S, "method": meth, "protocol": protocol, "time_to_target": t, "target": target,
            "time_budget": budget, **row}


# ----------------------------------------------------------------------------- one run, every S
#
# In a round-based method (Flex-VFL, sync, P-BCD) a round lasts its work (compute, upload,
# download) + S, and nothing in the round reads the clock: the rounds themselves — batches, τ,
# iterates, accuracies — are the same at every server time S. One run (at the largest budget)
# then gives the time to target at every S: the clock is re-added round by round, work_r + S, in
# the order the run at S adds it, so the times are the same floating-point numbers. A server time
# whose budget the run does not cover gets its own run. (Asynchronous VFL's events queue at the
# server, so its trajectory depends on S: it always runs once per S.)

S_INDEPENDENT = ("flexvfl", "sync-vfl", "pbcd")
_UNCOVERED = object()


def time_at_server_time(trace, S, budget, rounds, target):
    """Time to ``target`` of the run whose rounds pay a server round trip of ``S`` simulated
    seconds, with ``budget``, read from ``trace`` (a
    run of the same configuration at another S, evaluated every round): a float, None (the run at
    S misses the target: its budget or ``rounds`` ends first, or it diverges first), or
    ``_UNCOVERED`` when ``trace`` ends before the run at S would."""
    rnd, acc = trace.series("round"), trace.series("test_accuracy")
    work = trace.arrays.get("round_work", np.zeros(0))
    if not np.array_equal(rnd, np.arange(len(rnd))):
        raise ValueError("re-timing a run needs an evaluation every round (eval_every = 1)")
    if acc.size and acc[0] >= target:
        return 0.0
    clock = 0.0
    for r in range(1, len(rnd)):
        clock += float(work[r - 1]) + S
        if acc[r] >= target:
            return clock
        if r == rounds or clock >= budget:
            return None
    return None if trace.status.startswith("diverged") else _UNCOVERED


def times_over_server_times(cfg, ds, server_times, seeds, target, budget_of):
    """{S: (mean time to target or None, per-seed times)} for a round-based method, as
    :func:`time_to` at each S would give, from one run per seed at the largest budget."""
    from refimpl.vfl.experiment import conventions, network_of, run_vfl
    from refimpl.vfl.speeds import parse_speeds
    if cfg.eval_every != 1:
        raise ValueError("one run for every S needs eval_every = 1")
    S_ref = max(server_times, key=budget_of)
    per = {S: [] for S in server_times}
    model_speeds = parse_speeds(cfg.speeds, cfg.parties + 1, cfg.timeout)
    # S in the configuration's unit → the simulated seconds a round pays, as run_vfl computes them
    paid = {S: network_of(replace(cfg, server_time=S), model_speeds, conventions(cfg)["server_time_unit"]).server_time
            for S in server_times}
    for s in range(seeds):
        c = replace(cfg, seed=cfg.seed + s, target=target)
        tr = run_vfl(replace(c, server_time=S_ref, time_budget=budget_of(S_ref)), ds)
        for S in server_times:
            t = time_at_server_time(tr, paid[S], budget_of(S), cfg.rounds, target)
            # never for the largest budget; a fresh run otherwise. Reached only if S_ref's run's mean
            # round work w̄ is below S's unit u (the fastest party's mean step): a budget B(1 + S) holds
            # about B(1 + S)/(w̄ + uS) rounds, which grows with S when w̄ ≥ u, so S_ref's run covers
            # every S. A Flex-VFL round takes the timeout (≥ every party's mean step), a sync or P-BCD
            # round waits for its slowest party: no run of the checks reaches it.
            if t is _UNCOVERED:
                t = time_to_target(run_vfl(replace(c, server_time=S, time_budget=budget_of(S)), ds), target)
            per[S].append(t)
    return {S: (None if any(t is None for t in ts) else float(np.mean(ts)), ts) for S, ts in per.items()}


def regime_rows(cfg, ds, server_times, meth, protocol, target=0.85, seeds=1):
    """``[regime_row(cfg, ds, S, meth, protocol, target, seeds) for S in server_times]``, with one
    run per seed (and η) serving every S for the round-based methods (tests/test_vfl_regime.py
    checks the rows are equal)."""
    check_protocol(protocol)
    if meth not in S_INDEPENDENT or cfg.eval_every != 1:
        return [regime_row(cfg, ds, S, meth, protocol, target, seeds) for S in server_times]
    budget_of = lambda S: cfg.time_budget * (1.0 + S)
    c = protocol_config(cfg, meth, protocol)
    rows = []
    if protocol == "tuned":
        memo = {}

        def time_of(eta, S):
            if eta not in memo:
                memo[eta] = times_over_server_times(replace(c, eta=str(eta)), ds, server_times, seeds, target,
                                                    budget_of)
            return memo[eta][S][0]
        for S in server_times:
            eta, t, table, interior = tuned_eta(c, ds, seeds, target, budget_of(S),
                                                time_of=lambda e, S=S: time_of(e, S))
            rows.append((S, t, {"eta": eta, "grid": grid_record(table),
                                "eta_interior": interior}))
    else:
        times = times_over_server_times(c, ds, server_times, seeds, target, budget_of)
        rows = [(S, times[S][0], {"eta": row_eta(cfg), "per_seed": times[S][1]})
                for S in server_times]
    return [{"server_time": S, "method": meth, "protocol": protocol, "time_to_target": t, "target": target,
             "time_budget": budget_of(S), **row} for S, t, row in rows]


def ratios(rows, other, reference="flexvfl"):
    """Per S: time(other) / time(reference) (> 1: the reference is faster; inf: only the reference
    reached the target; None: the reference did not)."""
    out = {}
    for S in sorted({r["server_time"] for r in rows}):
        t = {r["method"]: r["time_to_target"] for r in rows if r["server_time"] == S}
        ref, oth = t.get(reference), t.get(other)
        out[S] = None if ref is None else (np.inf if oth is None else oth / ref)
    return out


def crossover(ratio_by_S):
    """The first pair of consecutive server times between which the ratio crosses 1, as
    (S_below, S_above), or None when the ordering never flips on the grid."""
    keys = [S for S in sorted(ratio_by_S) if ratio_by_S[S] is not None]
    for a, b in zip(keys, keys[1:]):
        if (ratio_by_S[a] > 1) != (ratio_by_S[b] > 1):
            return (a, b)
    return None
