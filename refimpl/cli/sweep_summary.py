"""``refimpl sweep-summary DIR``: per-cell mean and spread over seeds; the best cells."""
from __future__ import annotations

import os

from refimpl.cli.common import say


def add_parser(sub):
    ss = sub.add_parser("sweep-summary", help="per-cell mean and spread over seeds; best cells")
    ss.add_argument("dir")
    ss.add_argument("--criterion", default="final:train_cost",
                    help="final:METRIC (min), -final:METRIC (max), first:METRIC<=V or first:METRIC>=V")
    ss.add_argument("--metric", default=None, help="metric plotted for the best cells")
    ss.add_argument("--top", type=int, default=3)
    ss.set_defaults(fn=run)


def run(args):
    from refimpl.tools.sweep import summarize
    if args.top < 1:
        raise ValueError(f"--top must be >= 1 (how many best cells to print), got {args.top}")
    rows, failures = summarize(args.dir, args.criterion, args.metric, args.top)
    written = [f for f in ("summary.csv", "curves.csv", "failures.csv", "best.png") if os.path.exists(os.path.join(args.dir, f))]
    say(f"written to {args.dir}: {', '.join(written)}")
    shown = min(args.top, len(rows))
    print(f"the best {shown} of {len(rows)} cells by {args.criterion}"
          + (f" (--top N for more; every cell is in {os.path.join(args.dir, 'summary.csv')})"
             if shown < len(rows) else " (every cell)"))
    for r in rows[:args.top]:
        print(", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()))
    unfinished = [r for r in rows if r["unfinished"]]
    if unfinished:
        print(f"{len(unfinished)} of {len(rows)} cells have a seed that did not finish (diverged or stopped; "
              f"'unfinished' counts them): ranked after every cell whose seeds all finished, whatever their mean")
    if failures:
        print(f"{len(failures)} failed tasks (see {args.dir}/failures.csv):")
        for f in failures:
            print(f"  {f['task']} cell {f['cell']} seed {f['seed']}: {f['error']}")
    return 0
