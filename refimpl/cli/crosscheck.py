"""``refimpl crosscheck A B``: two traces compared (iterate snapshots and metrics); nothing left uncompared passes silently."""
from __future__ import annotations

import math

from refimpl.cli.common import say


def add_parser(sub):
    c = sub.add_parser("crosscheck", help="compare two traces (iterate snapshots and metrics)")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("--tol", type=float, default=1e-8, help="largest allowed relative difference")
    c.add_argument("--metrics-only", action="store_true", help="accept a comparison without common iterate snapshots")
    c.add_argument("--allow-missing", default="",
                   help="metrics that may be recorded by one trace only or at other rounds (comma-separated); anything "
                        "else left uncompared makes the exit 1")
    c.add_argument("--map", default="W1=Theta1a,W2=Theta2a",
                   help=".mat inputs: the variables holding W1 and W2 (snapshots as NAME_<round>); the default "
                        "names the authors' iterate (their Theta1/Theta2 are the surrogate minimiser ω̄)")
    c.add_argument("--round", type=int, default=None, help=".mat inputs: the round of plain NAME variables")
    c.set_defaults(fn=run)


def run(args):
    from refimpl.core.trace import Trace, crosscheck

    def load(path):
        if not str(path).endswith(".mat"):
            return Trace.load(path)
        from refimpl.core.matfiles import mat_snapshots, parse_map
        tr = Trace(config={"source": str(path)})
        tr.snapshots = mat_snapshots(path, parse_map(args.map), args.round)
        return tr
    a, b = load(args.a), load(args.b)
    differ = [f"{k}: {a.config.get(k)!r} vs {b.config.get(k)!r}" for k in
              ("algorithm", "method", "setting", "batch", "clients", "seed", "activation", "bias", "hidden")
              if k in a.config and k in b.config and a.config[k] != b.config[k]]
    if differ:
        say("note: the two runs were configured differently (" + "; ".join(differ) + "); differences below may "
             "come from that")
    if not (math.isfinite(args.tol) and args.tol >= 0):
        raise ValueError(f"--tol must be a finite number >= 0 (a relative difference), got {args.tol}")
    rows = crosscheck(a, b)
    if not rows:
        say("refimpl: the traces share no snapshot round and no metric")
        return 2
    if not any("@" in r["what"] for r in rows):
        say("refimpl: no iterates were compared (the traces share no snapshot round); only metrics"
             + ("" if args.metrics_only else " — exit 1 (pass --metrics-only to accept that)"))
    bad = not args.metrics_only and not any("@" in r["what"] for r in rows)
    allowed = {n.strip() for n in (args.allow_missing or "").split(",") if n.strip()}
    from refimpl.core.trace import shifted_agreement
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
        ok = r["rel"] <= args.tol
        bad |= not ok
        note = r.get("note")
        if not ok and "@" in r["what"]:
            rnd = int(r["what"].split("@")[1])
            s = shifted_agreement(a, b, rnd, args.tol)
            if s is not None:
                shifts.add(s)
                note = f"equals the second trace's round {rnd + s}"
        print(f"{r['what']:<22} max|Δ| {r['abs']:.3e}  relative {r['rel']:.3e}  {'ok' if ok else 'DIFFERS'}"
              + (f"  ({note})" if note else ""))
    if len(shifts) == 1:
        s = shifts.pop()
        say(f"note: the snapshots agree under a shift of one round (first trace's W_r = second's W_{{r{s:+d}}}): "
             "an off-by-one snapshot convention (is round 0 the initial point in both?)")
    if uncompared:
        print("not compared: " + "; ".join(uncompared) + " (exit 1; --allow-missing NAME,… to accept)")
    n_snap = sum(1 for r in rows if "@" in r["what"] and not r.get("skipped"))
    n_met = [r for r in rows if "@" not in r["what"] and not r.get("skipped")]
    print(f"compared {n_snap} snapshot arrays and {len(n_met)} metrics "
          f"({sum(r['rounds'] for r in n_met)} metric values)")
    return 1 if bad or uncompared else 0
