"""``refimpl crosscheck A B`` (refimpl/cli/crosscheck.py parses its flags): two traces compared —
iterate snapshots and metrics — with a verdict in which nothing left uncompared passes silently."""
from __future__ import annotations

import sys

#: the .mat variables holding W1 and W2 by default: the authors' iterate (their Theta1/Theta2 are
#: the surrogate minimiser ω̄)
DEFAULT_MAP = "W1=Theta1a,W2=Theta2a"


def _say(msg):
    print(msg, file=sys.stderr, flush=True)


def load_side(path, map_spec=DEFAULT_MAP, mat_round=None):
    """A trace directory or .npz, or a .mat of iterate snapshots (NAME_<round>, or plain NAME at
    ``mat_round``) read through ``map_spec``."""
    from refimpl.core.trace import Trace
    if not str(path).endswith(".mat"):
        return Trace.load(path)
    from refimpl.core.matfiles import mat_snapshots, parse_map
    tr = Trace(config={"source": str(path)})
    tr.snapshots = mat_snapshots(path, parse_map(map_spec), mat_round)
    return tr


def _rounds(rs):
    """'round 3' / 'rounds 3, 4' / 'rounds 3, 4, 5, … (12 rounds)'."""
    shown = ", ".join(str(int(r)) for r in rs[:3]) + (f", … ({len(rs)} rounds)" if len(rs) > 3 else "")
    return f"round{'s' if len(rs) > 1 else ''} {shown}"


def compare_runs(a, b, tol=1e-8, metrics_only=False, allow_missing=""):
    """Print the comparison of traces ``a`` and ``b`` and return the exit code: 0 when every
    quantity was compared and is within ``tol`` (relative); 1 when one differs or something was left
    uncompared (no common snapshot without ``metrics_only``; a metric of one trace only, NaN on one
    side, or at rounds the other trace does not hold — a run that stopped or diverged early —,
    unless ``allow_missing`` names it); 2 when nothing at all was compared (whatever the flags). A
    run that diverged or stopped is named first."""
    from refimpl.core.identity import run_finished
    from refimpl.core.trace import crosscheck, shifted_agreement
    from refimpl.core.validate import relative_tolerance
    differ = [f"{k}: {a.config.get(k)!r} vs {b.config.get(k)!r}" for k in
              ("algorithm", "method", "setting", "batch", "clients", "seed", "activation", "bias", "hidden")
              if k in a.config and k in b.config and a.config[k] != b.config[k]]
    if differ:
        _say("note: the two runs were configured differently (" + "; ".join(differ) + "); differences below may "
             "come from that")
    for side, t in (("first", a), ("second", b)):
        # "running" (a trace built, never run) and "unknown" (a file without trace.json) say nothing
        if t.status not in ("running", "unknown") and not run_finished(t.status):
            _say(f"note: the {side} trace's run did not finish ({t.status})")
    tol = relative_tolerance(tol)
    rows = crosscheck(a, b)
    if all(r.get("skipped") for r in rows):         # nothing compared: never an agreement
        for r in rows:
            print(f"{r['what']:<22} {r['note']}")
        _say("refimpl: the traces share no snapshot round and no metric")
        return 2
    if not any("@" in r["what"] for r in rows):
        _say("refimpl: no iterates were compared (the traces share no snapshot round); only metrics"
             + ("" if metrics_only else " — exit 1 (pass --metrics-only to accept that)"))
    bad = not metrics_only and not any("@" in r["what"] for r in rows)
    allowed = {n.strip() for n in (allow_missing or "").split(",") if n.strip()}
    shifts, uncompared = set(), []
    for r in rows:
        if r.get("skipped"):
            print(f"{r['what']:<22} {r['note']}")
            if r["what"] not in allowed and not r.get("iterates_only"):
                uncompared.append(r["what"])
            continue
        if r.get("one_sided") and r["what"] not in allowed:
            uncompared.append(f"{r['what']} at {len(r['one_sided'])} round{'s' if len(r['one_sided']) > 1 else ''} "
                              "(NaN on one side: not evaluated there)")
        for side, rs in r.get("unmatched", []) if r["what"] not in allowed else []:
            uncompared.append(f"{r['what']} at {_rounds(rs)} of the {side} trace only (the other trace holds no such "
                              "round)")
        ok = r["rel"] <= tol
        bad |= not ok
        note = r.get("note")
        if not ok and "@" in r["what"]:
            rnd = int(r["what"].split("@")[1])
            s = shifted_agreement(a, b, rnd, tol)
            if s is not None:
                shifts.add(s)
                note = f"equals the second trace's round {rnd + s}"
        print(f"{r['what']:<22} max|Δ| {r['abs']:.3e}  relative {r['rel']:.3e}  {'ok' if ok else 'DIFFERS'}"
              + (f"  ({note})" if note else ""))
    if len(shifts) == 1:
        s = shifts.pop()
        _say(f"note: the snapshots agree under a shift of one round (first trace's W_r = second's W_{{r{s:+d}}}): "
             "an off-by-one snapshot convention (is round 0 the initial point in both?)")
    if uncompared:
        print("not compared: " + "; ".join(uncompared) + " (exit 1; --allow-missing NAME,… to accept)")
    n_snap = sum(1 for r in rows if "@" in r["what"] and not r.get("skipped"))
    n_met = [r for r in rows if "@" not in r["what"] and not r.get("skipped")]
    print(f"compared {n_snap} snapshot arrays and {len(n_met)} metrics "
          f"({sum(r['rounds'] for r in n_met)} metric values)")
    return 1 if bad or uncompared else 0
