"""``refimpl diagnose OURS THEIRS``: the first (round, quantity) where two implementations' dumps part, and why (refimpl.tools.diagnose)."""
from __future__ import annotations

from refimpl.cli.common import info, load_data, prepare_out, say


def add_parser(sub):
    dg = sub.add_parser("diagnose", help="where and why two implementations' per-round dumps part")
    dg.add_argument("ours", help="refimpl's trace (directory or trace.npz) with --dump-rounds")
    dg.add_argument("theirs", help="their dump: a trace, .npz or .mat with r<round>_<name> arrays (docs/guide.md)")
    dg.add_argument("--map", default="", help="their names for ours: OURS=THEIRS,… (e.g. omega=w)")
    dg.add_argument("--tol", type=float, default=1e-10, help="largest relative difference that still agrees")
    dg.add_argument("--report", default=None, help="directory for diagnose.md and diagnose.png")
    dg.add_argument("--overwrite", action="store_true", help="replace an earlier report in --report")
    dg.add_argument("--no-rerun", action="store_true", help="compare only; do not try refimpl's convention switches")
    dg.add_argument("--data", default=None, help="FILE.npz for the reruns (default: the data OURS's trace records)")
    dg.add_argument("--data-dir", default=None, help="MNIST-format IDX directory for the reruns (instead of --data)")
    dg.add_argument("--allow-missing", default="",
                    help="quantities that may be dumped on one side only (comma-separated; 'rounds' for rounds); "
                         "anything else left uncompared makes the exit 1")
    dg.add_argument("--index-base", type=int, choices=(0, 1), default=0,
                    help="the id of THEIR first sample in their batch arrays: 0, or 1 (MATLAB: each id read minus 1)")
    dg.add_argument("--quiet", action="store_true")
    dg.set_defaults(fn=run)


def run(args):
    """refimpl diagnose OURS THEIRS: the first (round, quantity) where the dumps part, and why: a
    baseline rerun from THEIR inputs, then each convention switch (and pairs). Exit codes:
    refimpl.tools.diagnose.EXIT (0 everything compared agrees, 1 differ or left uncompared,
    3 explained by a switch, 4 by the inputs, 5 reruns that could not run; 2 bad input)."""
    from refimpl.core.validate import relative_tolerance
    from refimpl.tools import diagnose as DG
    relative_tolerance(args.tol)          # before a report directory is made (diagnose refuses it too)
    allowed = tuple(n.strip() for n in (args.allow_missing or "").split(",") if n.strip())
    if args.report:        # checked (and created) before any rerun: a report that cannot be written is refused now
        prepare_out(args.report, args.overwrite, holds=("diagnose.md", "diagnose.png"), flag="--report")
    data = load_data(args) if (args.data or args.data_dir) else None
    dg = DG.diagnose(args.ours, args.theirs, tol=args.tol, map_text=args.map, allowed=allowed,
                     rerun_switches=not args.no_rerun, data=data, note=lambda line: info(args, line),
                     progress=None if args.quiet else say, index_base=args.index_base)
    for ln in dg.lines:
        print(ln)
    if args.report:
        png = DG.write_report(args.report, dg.comparison, dg.lines, dg.rows)
        info(args, f"report written to {args.report}" + ("" if png else " (no PNG: matplotlib not installed)"))
    return dg.code

