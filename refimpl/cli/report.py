"""``refimpl report``: the verification suite and the reproductions in one REPORT.md."""
from __future__ import annotations

from refimpl.cli.common import engine_options, progress


def add_parser(sub):
    rr = sub.add_parser("report", help="verification suite + reproductions in one REPORT.md")
    rr.add_argument("--out", required=True)
    rr.add_argument("--quick", action="store_true")
    rr.add_argument("--seeds", type=int, default=2)
    rr.add_argument("--rounds", type=int, default=None,
                    help="cut every reproduction to this many rounds (steps for mfcgd-rates): a smoke report, "
                         "said so in REPORT.md; the checks keep their sizes")
    engine_options(rr)
    rr.add_argument("--quiet", action="store_true")
    rr.set_defaults(fn=run)


def run(args):
    from refimpl.tools.report import build_report
    with progress(args, None, "report", "msg") as bar:
        path, records = build_report(args.out, args.quick, args.seeds, progress=bar, executor=args.executor,
                                     workers=args.workers, scheduler=args.scheduler, rounds=args.rounds)
    failed = [r.id for r in records if not r.holds]
    print(f"{path}: {len(records) - len(failed)} of {len(records)} checks hold"
          + (f"; not holding: {', '.join(failed)}" if failed else ""))
    return 0
