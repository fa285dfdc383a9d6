"""``refimpl sweep SPEC``: a hyper-parameter grid × seeds on the task engine (resumable)."""
from __future__ import annotations

import json

from refimpl.cli.common import engine_options, progress


def add_parser(sub):
    sw = sub.add_parser("sweep", help="run a hyper-parameter grid × seeds (resumable)")
    sw.add_argument("spec", help="TOML or JSON sweep specification")
    sw.add_argument("--out", required=True)
    engine_options(sw)
    sw.add_argument("--overwrite", action="store_true", help="discard the tasks of another spec in --out")
    sw.add_argument("--max-cells", type=int, default=None,
                    help="run a grid larger than the limit of 10,000 cells (a typo in a range is refused otherwise)")
    sw.add_argument("--quiet", action="store_true")
    sw.set_defaults(fn=run)


def run(args):
    from refimpl.tools.sweep import MAX_CELLS, run_sweep
    if args.max_cells is not None and args.max_cells < 1:
        raise ValueError(f"--max-cells must be >= 1, got {args.max_cells}")
    with progress(args, None, "sweep", "msg") as bar:
        counts = run_sweep(args.spec, args.out, args.executor, args.workers, args.scheduler,
                           progress=bar, overwrite=args.overwrite, max_cells=args.max_cells or MAX_CELLS)
    print(json.dumps(counts))
    return 0 if counts["failed"] == 0 else 1
