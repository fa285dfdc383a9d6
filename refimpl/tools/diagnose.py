"""Where and why two implementations part: ``refimpl diagnose OURS THEIRS``.

Both sides are per-round dumps under the names of docs/guide.md ("Replay inputs and per-round
dumps"): a refimpl trace, or another implementation's ``.npz``/``.mat`` written in those names
(``--map`` renames theirs). The rounds are walked in order and each round's quantities in
data-flow order (inputs → gradients → statistics → step → iterate); the first (round, quantity)
beyond the tolerance is the divergence, reported with the quantities of that round that still
agree. Then, when OURS is a refimpl trace, refimpl is rerun from THEIR initial point and
schedule under each of its convention switches in turn, and the switch under which every dumped
round agrees is named.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

import numpy as np

from refimpl.core.replay import dump_view, from_index_base, read_arrays, read_dump

def _paper(key):
    from refimpl import papers
    return papers.get(key)


def switches(paper, held=None):
    """The convention switches a rerun tries, from the paper's description: option → its values.
    Conventions on the arithmetic, and bundles; a convention on the inputs only when THEIR dump
    does not hold the replay input that fixes what it draws (``held``: THEIR array names; None:
    unknown, so none of them). Record-only conventions change no dumped quantity."""
    out = {}
    for c in _paper(paper).conventions:
        undecided = (c.acts_on == "inputs" and held is not None and bool(c.replay)
                     and not any(re.fullmatch(c.replay, n) for n in held))
        if c.acts_on in ("arithmetic", "bundle") or undecided:
            out[c.option] = c.values
    return out


def paper_of(names):
    """Which paper's dump a set of quantity names is (its key)."""
    from refimpl import papers
    return papers.of_dump(names).key


def _same_paper(ours_key, their_names):
    """Refuse a THEIR dump that is plainly another paper's (its names carry another paper's markers
    and none of OURS's), rather than compare unrelated quantities entry by entry."""
    from refimpl import papers
    ours = papers.get(ours_key)
    if ours.owns_dump(their_names):
        return
    other = next((p for p in papers.papers() if p.key != ours_key and p.owns_dump(their_names)), None)
    if other is not None:
        marks = sorted(n for n in their_names if any(re.fullmatch(m, n) for m in other.dump_markers))
        raise ValueError(f"THEIRS is a dump of {other.short_name or other.key} (it holds {', '.join(marks[:4])}), OURS "
                         f"one of {ours.short_name or ours.key}: diagnose compares two implementations of the same "
                         "method; give THEIRS from the same paper")


def ordered(paper, names):
    """``names`` in the paper's data-flow order (party-indexed names by party), unknown names last."""
    out = []
    for pattern in _paper(paper).dump_order:
        if "<k>" in pattern:
            rx = re.compile("^" + re.escape(pattern).replace("<k>", r"(\d+)") + "$")
            out += sorted((n for n in names if rx.match(n)), key=lambda n: int(rx.match(n).group(1)))
        elif pattern in names:
            out.append(pattern)
    return out + sorted(set(names) - set(out))


def parse_map(text):
    """``OURS=THEIRS,…`` pairs: their quantity names for ours (a name without '=' is refused)."""
    out = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        ours, sep, theirs = item.partition("=")
        if not sep or not ours.strip() or not theirs.strip():
            raise ValueError(f"--map {text!r}: expected OURS=THEIRS pairs, e.g. omega=w,omega_bar=w_bar")
        out[theirs.strip()] = ours.strip()
    return out


def _rel(a, b):
    """Relative difference max|a − b| / max(max|a|, tiny); inf for a shape mismatch or a value that
    is not finite on either side (NaN and inf never agree, not even with themselves: an agreement
    is claimed only for values that were compared)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        if a.size == b.size:
            b = b.reshape(a.shape)
        else:
            return np.inf
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return np.inf
    if a.size == 0:
        return 0.0
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(a))), 1e-300))


@dataclass
class Divergence:
    round: int
    quantity: str
    ours: object
    theirs: object
    rel: float
    agreeing: list = field(default_factory=list)      # (name, rel) of that round's earlier quantities
    step: int | None = None                            # the local step (sub-round quantities), or None


@dataclass
class Comparison:
    paper: str
    rounds: list
    divergence: Divergence | None
    worst: float
    missing: dict = field(default_factory=dict)       # quantity -> side that lacks it
    per_round: dict = field(default_factory=dict)     # quantity -> [rel per round]
    one_side_rounds: dict = field(default_factory=dict)   # side that lacks them -> [rounds]
    compared: int = 0                                  # (round, quantity) pairs compared
    nonfinite: dict = field(default_factory=dict)      # quantity -> [rounds with NaN or inf on a side]

    def uncompared(self, allowed=()):
        """What was not compared, one phrase each (quantities and rounds on one side only), less
        the names in ``allowed`` ("rounds" allows rounds dumped on one side only)."""
        out = [f"{n} (only in {'ours' if side == 'theirs' else 'theirs'})"
               for n, side in sorted(self.missing.items()) if n not in allowed]
        if "rounds" not in allowed:
            out += [f"rounds {_span(rs)} (only in {'ours' if side == 'theirs' else 'theirs'})"
                    for side, rs in sorted(self.one_side_rounds.items()) if rs]
        return out

    def counted(self):
        """The closing count: what the verdict rests on."""
        names = len(self.per_round)
        return (f"compared {names} quantit{'y' if names == 1 else 'ies'} × {len(self.rounds)} "
                f"round{'' if len(self.rounds) == 1 else 's'} ({self.compared} pairs)")


def _span(rounds):
    rounds = sorted(rounds)
    return ", ".join(str(r) for r in rounds) if len(rounds) <= 6 else f"{rounds[0]}..{rounds[-1]} ({len(rounds)})"


def compare_dumps(ours, theirs, tol):
    """Walk both dumps ({round: {name: array}}) in round and data-flow order; count what was
    compared and list what was not (a quantity or a round on one side only)."""
    if not ours:
        raise ValueError("OURS holds no per-round dump (run it with --dump-rounds)")
    if not theirs:
        raise ValueError("THEIRS holds no per-round dump (quantities named r<round>_<name>, docs/guide.md)")
    common = sorted(set(ours) & set(theirs))
    if not common:
        raise ValueError(f"no round is dumped on both sides (ours {sorted(ours)}, theirs {sorted(theirs)})")
    names_o = set().union(*(set(ours[r]) for r in common))
    names_t = set().union(*(set(theirs[r]) for r in common))
    paper = paper_of(names_o)
    _same_paper(paper, names_t)
    missing = {n: "theirs" for n in names_o - names_t}
    missing.update({n: "ours" for n in names_t - names_o})
    names = ordered(paper, names_o & names_t)
    if not names:
        raise ValueError(f"the dumps share no quantity (ours: {sorted(names_o)}, theirs: {sorted(names_t)})")
    div, worst, per_round, compared, nonfinite = None, 0.0, {n: [] for n in names}, 0, {}
    for r in common:
        agreeing = []
        for n in names:
            if n not in ours[r] or n not in theirs[r]:
                per_round[n].append(np.nan)
                if n in ours[r] or n in theirs[r]:         # absent from both sides in r: nothing left out
                    missing.setdefault(n, "theirs" if n not in theirs[r] else "ours")
                continue
            a, b = np.asarray(ours[r][n], dtype=float), np.asarray(theirs[r][n], dtype=float)
            d = _rel(a, b)
            compared += 1
            if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
                nonfinite.setdefault(n, []).append(r)
            per_round[n].append(d)
            worst = max(worst, d)
            if div is None:
                if d > tol:
                    div = Divergence(r, n, np.asarray(ours[r][n]), np.asarray(theirs[r][n]), d, list(agreeing))
                    div = _first_local_step(paper, ours[r], theirs[r], tol, div)
                else:
                    agreeing.append((n, d))
    one_side = {"theirs": sorted(set(ours) - set(theirs)), "ours": sorted(set(theirs) - set(ours))}
    return Comparison(paper, common, div, worst, missing, per_round, one_side, compared, nonfinite)


def _first_local_step(paper, ours, theirs, tol, div):
    """Inside a round, the paper's per-step quantities (its description's ``step_quantities``: row
    t of each belongs to local step t, listed in the order one step computes them) are walked step
    by step, so the divergence is the first (local step, quantity) that differs — the momentum
    buffer of step 0, say, rather than the iterate it moved. ``div`` unchanged when its quantity
    is not a per-step one or no row differs."""
    steps = _paper(paper).step_quantities
    rx = [(pos, re.compile("^" + re.escape(p).replace("<k>", r"(\d+)") + "$")) for pos, p in enumerate(steps)]
    if not any(r.match(div.quantity) for _, r in rx):
        return div
    best = None
    for name in set(ours) & set(theirs):
        for pos, r in rx:
            m = r.match(name)
            if not m:
                continue
            a, b = np.asarray(ours[name], dtype=float), np.asarray(theirs[name], dtype=float)
            if a.ndim == 0 or b.ndim == 0 or a.shape[1:] != b.shape[1:]:
                continue
            for t in range(max(len(a), len(b))):
                d = _rel(a[t], b[t]) if t < len(a) and t < len(b) else np.inf
                if d > tol:
                    key = (t, pos, int(m.group(1)) if m.groups() else 0)
                    if best is None or key < best[0]:
                        best = (key, name, a[t] if t < len(a) else np.array([]),
                                b[t] if t < len(b) else np.array([]), d)
                    break
    if best is None:
        return div
    (t, _, _), name, a, b, d = best
    return Divergence(div.round, name, a, b, d, div.agreeing, t)


def load_side(path, mapping=None):
    """A side's dump, with ``mapping`` {their name: our name} applied."""
    if not os.path.exists(path):
        raise ValueError(f"{path}: no such file or directory")
    dump = read_dump(path)
    for r, quantities in sorted(dump.items()):
        for name, arr in sorted(quantities.items()):
            kind = np.asarray(arr).dtype.kind
            if kind in "cUSOV":
                what = {"c": "complex", "U": "text", "S": "text", "O": "object", "V": "structured"}[kind]
                raise ValueError(f"{path}: r{r}_{name} holds {what} values (dtype {np.asarray(arr).dtype}); a dump "
                                 "holds real numbers (refused, not cast)")
    if mapping:
        dump = {r: {mapping.get(k, k): v for k, v in q.items()} for r, q in dump.items()}
    return dump


def _trace_config(path):
    js = os.path.join(path if os.path.isdir(path) else os.path.dirname(path), "trace.json")
    if not os.path.exists(js):
        return None
    try:
        with open(js) as fh:
            return json.load(fh).get("config")
    except (OSError, ValueError) as exc:
        raise ValueError(f"{js}: not a readable trace.json ({exc})")


def _owner(cfg):
    from refimpl import papers
    return papers.of_record(cfg)


def run_data(ours_path):
    """The data set OURS's run used, rebuilt by its paper from its trace
    (:meth:`~refimpl.core.paper.Paper.load_data`); refused, naming the file, when it is not
    reachable here or has changed."""
    doc = _trace_config(ours_path) or {}
    return _owner(doc).load_data(doc, f"{ours_path}: the run's data")


def their_replay(theirs_path, paper, index_base=0):
    """THEIR arrays, with the replay inputs their per-round dump implies added where they hold no
    array of that name (:meth:`~refimpl.core.paper.Paper.replay_from_dump`, on the per-round view
    the comparison reads: MATLAB's n×1 columns as vectors, a run's round files). ``index_base`` 1:
    THEIR sample ids start at 1 (MATLAB); the id arrays come back 0-based."""
    theirs = theirs_path if os.path.isfile(theirs_path) else os.path.join(theirs_path, "trace.npz")
    arrays = read_arrays(theirs, "THEIRS")
    implied = paper.replay_from_dump(dump_view(arrays, theirs))
    arrays = {**arrays, **{k: v for k, v in implied.items() if k not in arrays}}
    if index_base:
        for name in paper.id_names:
            if name in arrays:
                arrays[name] = from_index_base(arrays[name], 1, f"THEIRS {name}")
    return arrays


def zero_based(dump, paper, index_base, what="THEIRS"):
    """A side's dump with its sample ids (the paper's ``id_names``) read with ``index_base``."""
    return {r: {k: (from_index_base(v, index_base, f"{what} r{r}_{k}") if k in paper.id_names else v)
                for k, v in q.items()} for r, q in dump.items()}


def replay_sources(arrays, paper):
    """Which replay inputs (their words: "initial point", "batch schedule", …) THEIR arrays (as
    :func:`their_replay` gives them: their own and those rebuilt from the per-round dump) give the
    reruns, and which they do not (those the reruns take from OURS's configuration).
    ``(held, missing)``, in the paper's order."""
    held, missing = [], []
    for inp in paper.replay_inputs:
        has = any(re.fullmatch(inp.pattern, k) for k in arrays)
        if has and inp.word not in held:
            held.append(inp.word)
    for inp in paper.replay_inputs:
        if inp.word not in held and inp.word not in missing:
            missing.append(inp.word)
    return held, missing


def sources_line(held, missing):
    """The sentence saying where the reruns' inputs come from (never "from THEIR initial point"
    when THEIR file does not hold it)."""
    if not missing:
        return f"the reruns start from THEIR {', '.join(held)} (read from THEIR file)"
    if not held:
        return (f"THEIR file holds none of the replay inputs ({', '.join(missing)}): the reruns use OURS's, "
                "so a difference in them is not told apart from a convention")
    return (f"the reruns start from THEIR {', '.join(held)}; THEIR file holds no {', '.join(missing)}: "
            f"the reruns use OURS's")


def rerun(ours_path, replay_file, arrays, rounds, overrides, data=None):
    """refimpl rerun with OURS's configuration, THEIR initial point and schedule (``arrays``: the
    replay inputs THEIRS holds, refimpl's names, read from ``replay_file``) and ``overrides``, on
    ``data`` (the run's own data: :func:`run_data`); returns the rerun's dump."""
    cfg_doc = _trace_config(ours_path)
    owner = _owner(cfg_doc)
    cfg = owner.config_from_record(cfg_doc)
    changes, replay = owner.replay_from(arrays, replay_file)
    cfg = owner.with_length(cfg, max(rounds), dump_rounds=",".join(str(r) for r in rounds), **changes,
                            **owner.rerun_changes(overrides))
    tr = owner.run(cfg, data, replay)
    from refimpl.core.dumps import dump_arrays
    return dump_arrays(tr.arrays)


def differing_inputs(ours_path, their_arrays, paper):
    """Which replay inputs OURS's trace and THEIR dump both hold and that differ (their words,
    e.g. "initial point"), and which were recorded on one side only. ``their_arrays``: THEIR
    arrays as :func:`their_replay` gives them (what THEIR dump implies counts too)."""
    f = ours_path if os.path.isfile(ours_path) else os.path.join(ours_path, "trace.npz")
    a, b = read_arrays(f, os.path.basename(f)), their_arrays
    differ, unknown = [], []
    for inp in _paper(paper).replay_inputs:
        word = inp.word
        keys = sorted({k for k in set(a) | set(b) if inp.matches(k)})
        for k in keys:
            if k not in a or k not in b:
                unknown.append(word)
                continue
            x, y = np.asarray(a[k]), np.asarray(b[k])
            if x.shape != y.shape or not np.array_equal(x, y):
                differ.append(word)
    return sorted(set(differ)), sorted(set(unknown) - set(differ))


def _label(overrides):
    return " + ".join(f"--{o.replace('_', '-')} {v}" for o, v in overrides.items()) or "no switch (baseline)"


def try_switches(ours_path, arrays, theirs, paper, tol, takes, progress=None, data=None, unreadable=""):
    """Why the dumps part. First a baseline: refimpl rerun from THEIR inputs with OURS's
    conventions. If it agrees with THEIRS the difference is in the inputs. Otherwise each
    convention switch the algorithm takes (``takes``: its option names), then every pair of
    switches of two options when no single one explains it; a switch is credited only when its
    rerun agrees with THEIRS *and* differs from the baseline (a switch that changes nothing is
    never credited). Returns (rows, verdict); a row {switch, overrides, ran, agrees, changes,
    worst, first}; verdict {"kind": "inputs" | "switch" | "none" | "not-run", "row", "not_run"}.
    ``arrays``: :func:`their_replay`'s answer, read once by the caller; None when THEIR arrays
    could not be read (``unreadable``: why) — every rerun then says so."""
    import tempfile
    from refimpl.core.dumps import is_dump_name
    with tempfile.TemporaryDirectory(prefix="refimpl-diagnose-") as tmp:
        replay_file = unreadable
        if arrays is not None:
            # THEIR replay inputs (their own and those rebuilt from their dump) in a file of their own,
            # read by every rerun without THEIR per-round dump
            replay_file = os.path.join(tmp, "theirs_replay.npz")
            np.savez(replay_file, **{k: v for k, v in arrays.items() if not is_dump_name(k)})
        return _switch_search(ours_path, replay_file, arrays, theirs, paper, tol, takes, progress, data)


def _switch_search(ours_path, replay_file, arrays, theirs, paper, tol, takes, progress, data, rerun_fn=None):
    """The search of :func:`try_switches` (``rerun_fn``: what reruns refimpl, :func:`rerun` unless
    given — ``tools.diagnose_report`` plants its reruns' dumps to check the search's rules)."""
    rerun_fn = rerun if rerun_fn is None else rerun_fn
    cfg = _trace_config(ours_path) or {}
    rounds = sorted(theirs)
    rows = []

    def attempt(overrides, baseline=None):
        row = {"switch": _label(overrides), "overrides": dict(overrides), "ran": False, "agrees": False,
               "changes": None, "worst": None, "first": None}
        rows.append(row)
        try:
            if arrays is None:
                raise ValueError(replay_file)          # why THEIR arrays could not be read
            dump = rerun_fn(ours_path, replay_file, arrays, rounds, overrides, data)
        except ValueError as exc:
            row["first"] = f"could not rerun: {exc}"
            if progress:
                progress(f"{row['switch']}: could not rerun: {exc}")
            return None, row
        cmp_ = compare_dumps(dump, theirs, tol)
        row.update(ran=True, agrees=cmp_.divergence is None, worst=cmp_.worst,
                   first=None if cmp_.divergence is None else f"round {cmp_.divergence.round}, {cmp_.divergence.quantity}")
        if baseline is not None:
            row["changes"] = compare_dumps(dump, baseline, tol).divergence is not None
        if progress:
            what = ("all rounds agree" if row["agrees"] else f"differs at {row['first']}")
            if baseline is not None and not row["changes"]:
                what += " (the same as the baseline: this switch changes nothing here)"
            progress(f"{row['switch']}: {what}")
        return dump, row

    base, base_row = attempt({})
    if base is None:
        return rows, {"kind": "not-run", "row": base_row, "not_run": [base_row]}
    if base_row["agrees"]:
        return rows, {"kind": "inputs", "row": base_row, "not_run": []}
    singles = []
    held = None if arrays is None else set(arrays)
    for option, values in switches(paper, held).items():
        if option not in takes or option not in cfg:
            continue
        current = cfg.get(option)
        current = values[0] if current is None else current
        singles += [(option, v) for v in values if v != current]
    credited = []
    for option, v in singles:
        dump, row = attempt({option: v}, base)
        if dump is not None and row["agrees"] and row["changes"]:
            credited.append(row)
    if not credited:
        for i, (o1, v1) in enumerate(singles):
            for o2, v2 in singles[i + 1:]:
                if o1 == o2:
                    continue
                dump, row = attempt({o1: v1, o2: v2}, base)
                if dump is not None and row["agrees"] and row["changes"]:
                    credited.append(row)
    not_run = [r for r in rows if not r["ran"]]
    if credited:
        return rows, {"kind": "switch", "row": credited[0], "not_run": not_run}
    return rows, {"kind": "not-run" if not_run else "none", "row": None, "not_run": not_run}


#: exit codes of ``refimpl diagnose``, one per verdict
EXIT = {"agree": 0, "differ": 1, "switch": 3, "inputs": 4, "not-run": 5}


def describe(cmp_, tol, verdict=None, allowed=(), inputs=None, entry_words=None):
    """The report's text lines, ending with the count of what was compared. ``entry_words(quantity,
    index)``: the paper's name of an entry (:meth:`~refimpl.core.paper.Paper.entry_words`)."""
    lines = [f"{cmp_.paper} dumps, rounds {cmp_.rounds[0]}..{cmp_.rounds[-1]} ({len(cmp_.rounds)} on both sides), "
             f"tolerance {tol:g} (relative)"]
    d = cmp_.divergence
    if d is None:
        lines.append(f"every compared value agrees (worst relative difference {cmp_.worst:.2g})")
    else:
        entry = ""
        a, b = np.asarray(d.ours, dtype=float), np.asarray(d.theirs, dtype=float)
        if a.shape == b.shape and a.size > 1:
            with np.errstate(over="ignore", invalid="ignore"):     # 1e308 vs −1e308 differ by inf: named
                diff = a - b
            i = int(np.nanargmax(np.abs(diff))) if np.all(np.isfinite(diff)) else int(np.argmax(~np.isfinite(diff)))
            idx = np.unravel_index(i, a.shape)
            full = ((d.step,) if d.step is not None else ()) + tuple(int(j) for j in idx)   # a local step's row
            words = entry_words(d.quantity, full) if entry_words else None
            entry = (f" at entry {tuple(int(j) for j in idx)}{f' = {words}' if words else ''}: "
                     f"{a[idx]:.6g} vs {b[idx]:.6g}")
        elif a.size == 1 and b.size == 1:
            entry = f": {a.reshape(()).item():.6g} vs {b.reshape(()).item():.6g}"
        else:
            entry = f": shapes {a.shape} vs {b.shape}"
        agree = ", ".join(f"{n} {r:.1g}" for n, r in d.agreeing) or "none before it"
        where = f"round {d.round}, {d.quantity}" + ("" if d.step is None else f" at local step {d.step}")
        lines.append(f"{where}{entry} (relative {d.rel:.3g}); agreeing before it: {agree}")
        hint = layout_hint(d.ours, d.theirs)
        if hint:
            lines.append(f"{d.quantity}: {hint}")
    for n, rs in sorted(cmp_.nonfinite.items()):
        lines.append(f"{n} is not finite (NaN or inf) in round{'s' if len(rs) > 1 else ''} {_span(rs)}: "
                     "never counted as agreeing")
    if verdict is not None:
        kind, row = verdict["kind"], verdict.get("row")
        if kind == "inputs":
            which = ", ".join(inputs[0]) if inputs and inputs[0] else "the inputs"
            lines.append(f"rerun from THEIR inputs with OURS's conventions, every round agrees (worst {row['worst']:.2g}): "
                         f"the difference is in the inputs ({which}), not in a convention")
        elif kind == "switch":
            lines.append(f"with {row['switch']} all rounds agree (worst {row['worst']:.2g}); the rerun without it "
                         "(the baseline, from the same inputs) does not")
        elif kind == "none":
            lines.append("no convention switch of refimpl (nor a pair) makes every round agree; "
                         "the baseline rerun from THEIR inputs differs too")
        for r in verdict.get("not_run", []):
            lines.append(f"{r['switch']}: {r['first']}")
        if kind == "not-run" and row is None:
            lines.append("no switch that ran explains the difference; the reruns above could not run")
    gaps = cmp_.uncompared(allowed)
    if gaps:
        lines.append("not compared: " + "; ".join(gaps) + " (exit 1; --allow-missing NAME,… or rounds to accept)")
    lines.append(cmp_.counted())
    return lines


def layout_hint(ours, theirs):
    """A sentence when THEIR array is OURS in another layout or convention that an implementation
    easily gets wrong — 1-based indices, a transpose, column-major order, the same values in
    another order — else None. It says what the numbers show, not why."""
    a, b = np.asarray(ours), np.asarray(theirs)
    if a.size < 2 or a.size != b.size or a.dtype.kind not in "iuf" or b.dtype.kind not in "iuf":
        return None
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))) or (a.shape == b.shape and np.array_equal(a, b)):
        return None
    if a.shape == b.shape and np.array_equal(b, a + 1):
        return ("THEIR values are OURS + 1 everywhere: 1-based (MATLAB-style) indices on their side "
                "(sample ids: --index-base 1 reads them)")
    if a.ndim == 2 and b.shape == a.T.shape and a.shape[0] != a.shape[1] and np.array_equal(b, a.T):
        return "THEIR array is OURS transposed"
    if a.ndim == 2 and a.shape == b.shape and a.shape[0] == a.shape[1] and not np.array_equal(a, a.T) \
            and np.array_equal(b, a.T):
        return "THEIR array is OURS transposed"
    if a.ndim >= 2 and np.array_equal(b.reshape(-1), a.reshape(-1, order="F")):
        return "THEIR values are OURS read in column-major (Fortran/MATLAB) order"
    if np.array_equal(np.sort(a, axis=None), np.sort(b, axis=None)):
        return "THEIR values are OURS in another order (the same values, permuted)"
    return None


def verdict_code(cmp_, verdict=None, allowed=()):
    """The exit code: 0 only when everything dumped was compared and agrees."""
    if cmp_.divergence is None:
        return EXIT["agree"] if not cmp_.uncompared(allowed) else EXIT["differ"]
    if verdict is None or verdict["kind"] == "none":
        return EXIT["differ"]
    return EXIT[verdict["kind"]]


def write_report(directory, cmp_, lines, rows):
    """``diagnose.md`` (the lines and the switch table) and ``diagnose.png`` (relative difference
    per quantity against round, the first divergence marked) in ``directory``."""
    os.makedirs(directory, exist_ok=True)
    md = ["# refimpl diagnose", ""] + [f"- {ln}" for ln in lines]
    if rows:
        md += ["", "| rerun | ran | agrees with theirs | differs from the baseline | worst | first divergence |",
               "|---|---|---|---|---|---|"]
        for r in rows:
            worst = "-" if r["worst"] is None else f"{r['worst']:.2g}"
            changes = "-" if r["changes"] is None else str(r["changes"])
            md.append(f"| {r['switch']} | {r['ran']} | {r['agrees']} | {changes} | {worst} | {r['first'] or '-'} |")
    with open(os.path.join(directory, "diagnose.md"), "w") as fh:
        fh.write("\n".join(md) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig = diagnose_figure(cmp_, plt)
    fig.tight_layout()
    fig.savefig(os.path.join(directory, "diagnose.png"), dpi=110)
    plt.close(fig)
    return os.path.join(directory, "diagnose.png")


def diagnose_figure(cmp_, plt):
    """diagnose.png's figure (``plt``: matplotlib.pyplot): a curve per quantity of its relative
    differences (:func:`plotted_differences`) against the rounds, a dashed line at the first
    divergence's round named by its quantity."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for n, vals in cmp_.per_round.items():
        ax.semilogy(cmp_.rounds, plotted_differences(vals), marker=".", label=n)
    if cmp_.divergence is not None:
        ax.axvline(cmp_.divergence.round, color="k", ls="--", lw=1)
        ax.annotate(f"first: {cmp_.divergence.quantity}", (cmp_.divergence.round, 1e-3), fontsize=8)
    ax.set_xlabel("round")
    ax.set_ylabel("relative difference")
    ax.set_title(f"{cmp_.paper}: ours vs theirs per quantity")
    ax.legend(fontsize=7, ncol=2)
    return fig


def plotted_differences(vals):
    """A quantity's relative differences as diagnose.png draws them on its log axis: an infinite one
    (a NaN or inf on one side) at 1e3, above every finite difference worth reading, and 0 (exact
    agreement) at 1e-18, below round-off."""
    v = np.asarray(vals, dtype=float)
    return np.maximum(np.where(np.isinf(v), 1e3, v), 1e-18)


def epoch_order_hint(batches, n, level=1e-3):
    """A sentence when THEIR batch schedule (rounds × B sample ids) walks the n samples epoch by
    epoch — no id twice within any run of n consecutive draws — and independent draws without
    replacement per round would show that with probability below ``level``; else None. The
    probability is the Poisson estimate exp(−Σ_{rounds i<j in one epoch} B_i B_j / n)."""
    a = np.asarray(batches)
    if a.ndim != 2 or a.dtype.kind not in "iu" or n is None or n < 2:
        return None
    flat = a.ravel()
    flat = flat[flat >= 0]                      # −1 pads a shorter batch (an epoch's last)
    B = a.shape[1]
    pairs = 0.0
    for start in range(0, flat.size, n):
        chunk = flat[start:start + n]
        if np.unique(chunk).size != chunk.size:
            return None
        rounds = -(-chunk.size // B)
        pairs += rounds * (rounds - 1) / 2 * B * B / n
    p = float(np.exp(-pairs))
    if p >= level:
        return None
    odds = f"about {p:.1g}" if p > 0 else "below 1e-300"
    return (f"THEIR batch schedule draws every sample once per epoch (no sample twice within any {n} consecutive "
            f"draws; independent rounds would do that with probability {odds}): an epoch-permutation "
            "batch order, which refimpl draws with --batch-order epoch")


def their_schedule_hint(arrays, paper, ours_config, n):
    """:func:`epoch_order_hint` on THEIR batch schedule (``arrays`` as :func:`their_replay` gives
    them: their ``batches`` or the one rebuilt from r<t>_batch), for a paper with a batch-order
    convention, when OURS's run drew its batches independently; ``n``: the run's training-set size."""
    if n is None or not any(c.option == "batch_order" for c in paper.conventions):
        return None
    conv = (ours_config or {}).get("conventions") or {}
    if conv.get("batch_order") == "epoch":
        return None
    b = arrays.get("batches")
    return None if b is None else epoch_order_hint(b, n)


# ----------------------------------------------------------------------------- one whole diagnosis

@dataclass
class Diagnosis:
    """What :func:`diagnose` found: the exit ``code`` (:data:`EXIT`), the report's ``lines``, the
    dumps' comparison, the reruns' ``rows`` (for the report's table) and the verdict."""
    code: int
    lines: list
    comparison: Comparison
    rows: list
    verdict: dict | None


def diagnose(ours_path, theirs_path, *, tol=1e-10, map_text="", allowed=(), rerun_switches=True, data=None,
             note=None, progress=None, index_base=0):
    """``refimpl diagnose OURS THEIRS`` as a function: the first (round, quantity) where the dumps
    part and why — a baseline rerun from THEIR inputs, then each convention switch (and pairs).
    ``data``: the reruns' data set (None: the data OURS's run used, :func:`run_data`);
    ``note(line)``: where the reruns' inputs and data come from; ``progress(line)``: each rerun;
    ``index_base`` 1: THEIR sample ids start at 1 (MATLAB), read as each id minus 1."""
    from refimpl import papers
    from refimpl.core.validate import relative_tolerance
    tol = relative_tolerance(tol)
    ours = load_side(ours_path)
    theirs = load_side(theirs_path, parse_map(map_text))
    cmp_ = compare_dumps(ours, theirs, tol)
    if index_base:
        theirs = zero_based(theirs, papers.get(cmp_.paper), index_base)
        cmp_ = compare_dumps(ours, theirs, tol)
    rows, verdict, inputs, extra = [], None, None, []
    paper, doc = papers.get(cmp_.paper), _trace_config(ours_path)
    if cmp_.divergence is not None and rerun_switches and doc is not None:
        rows, verdict, inputs, extra, data = _reruns(ours_path, theirs_path, theirs, cmp_, paper, doc, tol, data,
                                                     note, progress, index_base)
    elif cmp_.divergence is not None and doc is not None and data is None:
        try:                       # only to name the differing entry in the paper's terms
            data = run_data(ours_path)
        except (ValueError, OSError):
            data = None
    lines = describe(cmp_, tol, verdict, allowed, inputs, entry_words=_entry_words(paper, doc, data))
    for line in extra:
        lines.insert(-1, line)
    return Diagnosis(verdict_code(cmp_, verdict, allowed), lines, cmp_, rows, verdict)


def _reruns(ours_path, theirs_path, theirs, cmp_, paper, doc, tol, data, note, progress, index_base=0):
    """The reruns of a diagnosis: (rows, verdict, the differing inputs, the lines saying where the
    reruns' inputs come from and what THEIR schedule looks like, the data used)."""
    unreadable = ""
    try:
        arrays = their_replay(theirs_path, paper, index_base)     # read once, for every use below
    except (ValueError, OSError) as exc:
        arrays, unreadable = None, str(exc)
    their_arrays = arrays or {}
    sources = sources_line(*replay_sources(their_arrays, paper))
    if note:
        note(f"rerunning refimpl ({sources}): first without a switch (the baseline), then under each convention "
             "switch")
    algorithm = doc.get(paper.method_field)
    takes = {o.field for o, _ in paper.options_for(algorithm)} if algorithm in paper.algorithms else set()
    given = data is not None
    data = data if given else run_data(ours_path)
    if data is not None and note:
        note(f"reruns on {data.name} ({data.n_train} training samples"
             + (", from --data" if given else ", the data OURS's run used") + ")")
    schedule = their_schedule_hint(their_arrays, paper, doc, getattr(data, "n_train", None))
    rows, verdict = try_switches(ours_path, arrays, theirs, cmp_.paper, tol, takes, progress=progress, data=data,
                                 unreadable=unreadable)
    inputs = differing_inputs(ours_path, arrays, cmp_.paper) if verdict["kind"] == "inputs" else None
    return rows, verdict, inputs, [x for x in (sources, schedule) if x is not None], data


def _entry_words(paper, doc, data):
    """The paper's names of a dumped entry, from OURS's recorded configuration and its data (None
    without a configuration; without the data an entry keeps its array index alone)."""
    if doc is None:
        return None

    def words(quantity, index):
        try:
            return paper.entry_words(quantity, index, doc, data)
        except (ValueError, TypeError, KeyError):
            return None
    return words
