"""``refimpl run ALGORITHM``: one run of any registered paper's algorithm. The parser of each
algorithm lists only its options (from the paper's description); the paper's command module
(``run(args, ui)``) or the generic run does the work; this module owns what every run shares —
the output directory prepared before any work and left clean on failure or ``--overwrite``."""
from __future__ import annotations

import os
import time

import refimpl.cli.common as common
from refimpl.cli.common import COMMON, RUN_PARSERS, Formatter, add_option, clear_stale_result, prepare_out, say


def add_parser(sub):
    from refimpl import papers
    r = sub.add_parser("run", help="run one algorithm and write its trace",
                       description="Run one algorithm; `refimpl run ALGORITHM --help` lists its options.")
    algs = r.add_subparsers(dest="algorithm", required=True, metavar="ALGORITHM")
    for alg in papers.algorithms():
        RUN_PARSERS[alg] = add_algorithm_parser(algs, alg)


def add_algorithm_parser(sub, algorithm):
    """``refimpl run ALGORITHM``: only that algorithm's options, each with its help and default."""
    from refimpl import papers
    paper = papers.of_algorithm(algorithm)
    text = paper.algorithms[algorithm]
    p = sub.add_parser(algorithm, help=text, description=text,
                       usage=f"refimpl run {algorithm} [options]", formatter_class=Formatter)
    for opt, default in paper.options_for(algorithm):
        add_option(p, opt, default)
    for flag, text in paper.replay_args:
        p.add_argument("--" + flag.replace("_", "-"), dest=flag, help=text)
    for dest, text in COMMON:
        if dest.startswith("data") and paper.data_note:
            text += f" ({paper.data_note})"
        p.add_argument("--" + dest.replace("_", "-"), dest=dest, help=text)
    if any(opt.field == "dump_rounds" for opt, _ in paper.options_for(algorithm)):
        p.add_argument("--max-dump-gb", type=float, default=None,
                       help="refuse --dump-rounds when its estimated size is larger (default 4 GB)")
    p.add_argument("--label-base", type=int, choices=(0, 1), default=0,
                   help="--data labels start at 0, or at 1 (MATLAB)")
    p.add_argument("--overwrite", action="store_true", help="replace a result already in --out")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(fn=run, algorithm=algorithm, family=paper.key)
    return p


def run(args):
    from refimpl import papers
    common.max_dump_gb(args)                  # checked when given, with or without --dump-rounds
    from refimpl.core.replay import check_index_base
    check_index_base(getattr(args, "index_base", None))      # checked when given, with or without --batches
    created = bool(args.out) and not os.path.exists(args.out)
    if args.out:
        prepare_out(args.out, args.overwrite)
    since = time.time()
    try:
        code = papers.of_algorithm(args.algorithm).run_command(args, common)
    except BaseException:
        if created and os.path.isdir(args.out) and not os.listdir(args.out):
            os.rmdir(args.out)              # refused before anything was written: leave no empty directory
        raise
    if args.out and args.overwrite and not created:
        clear_stale_result(args.out, since)
    if not args.out and not args.quiet:
        say("note: no --out given, so nothing was saved (pass --out DIR to keep the trace)")
    return code
