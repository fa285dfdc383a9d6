"""``refimpl crosscheck A B``: two traces compared (iterate snapshots and metrics); nothing left uncompared passes
silently. The comparison and its verdict: refimpl/tools/crosscheck.py."""
from __future__ import annotations

from refimpl.tools.crosscheck import DEFAULT_MAP


def add_parser(sub):
    c = sub.add_parser("crosscheck", help="compare two traces (iterate snapshots and metrics)")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("--tol", type=float, default=1e-8, help="largest allowed relative difference")
    c.add_argument("--metrics-only", action="store_true", help="accept a comparison without common iterate snapshots")
    c.add_argument("--allow-missing", default="",
                   help="metrics that may be recorded by one trace only or at other rounds (comma-separated); anything "
                        "else left uncompared makes the exit 1")
    c.add_argument("--map", default=DEFAULT_MAP,
                   help=".mat inputs: the variables holding W1 and W2 (snapshots as NAME_<round>); the default "
                        "names the authors' iterate (their Theta1/Theta2 are the surrogate minimiser ω̄)")
    c.add_argument("--round", type=int, default=None, help=".mat inputs: the round of plain NAME variables")
    c.set_defaults(fn=run)


def run(args):
    from refimpl.tools.crosscheck import compare_runs, load_side
    a, b = (load_side(p, args.map, args.round) for p in (args.a, args.b))
    return compare_runs(a, b, args.tol, args.metrics_only, args.allow_missing)
