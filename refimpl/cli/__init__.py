"""Command line of refimpl: run, compare, bound, sweep, sweep-summary, reproduce, report, verify, bench,
crosscheck, diagnose, vectors, partition-stats, check-schedule (``refimpl COMMAND --help`` for each).

One module per command (``add_parser(subparsers)`` and ``run(args)``), in the order ``--help``
lists them; what they share is :mod:`refimpl.cli.common`. A paper's own command-line hooks live in
its folder (``refimpl/<paper>/command.py``), found through its description (:mod:`refimpl.papers`).
"""
from __future__ import annotations

import importlib
import sys

from refimpl.cli.common import RUN_PARSERS, Parser, foreign_option, load_run_config, say

#: the command modules, in the order of ``refimpl --help``
COMMANDS = ("run", "compare", "bound", "sweep", "sweep_summary", "reproduce", "report", "verify", "bench",
            "vectors", "diagnose", "crosscheck", "partition_stats", "check_schedule")


def build_parser():
    p = Parser(prog="refimpl", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(f"refimpl.cli.{name}").add_parser(sub)
    return p


def _sigterm_as_interrupt():
    """SIGTERM (``kill PID``) is handled as Ctrl-C: the engine stops its workers, finished work is
    kept, the exit status is 130 (only in the main thread of the command's own process)."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum, frame):
        raise KeyboardInterrupt
    previous = signal.getsignal(signal.SIGTERM)
    if previous not in (signal.SIG_DFL, None):
        return lambda: None
    signal.signal(signal.SIGTERM, handler)
    return lambda: signal.signal(signal.SIGTERM, previous)


def main(argv=None):
    from refimpl.core.runtime import tune_allocator
    from refimpl.ssca.constrained import SolverError
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    code = foreign_option(argv)
    if code:
        return code
    args = parser.parse_args(argv)
    args.argv = argv
    tune_allocator()
    restore = _sigterm_as_interrupt()
    try:
        seed = getattr(args, "seed", None)
        if isinstance(seed, int) and not isinstance(seed, bool) and seed < 0:
            raise ValueError(f"--seed must be a whole number >= 0, got {seed}")
        if getattr(args, "scheduler", None) and getattr(args, "executor", None) != "dask":
            raise ValueError(f"--scheduler {args.scheduler} is a Dask scheduler address: it needs --executor dask "
                             f"(the {getattr(args, 'executor', None) or 'local'} executor would ignore it)")
        if getattr(args, "config", None):
            loaded = load_run_config(args.config, args.algorithm)
            RUN_PARSERS[args.algorithm].set_defaults(**loaded)
            args = parser.parse_args(argv)
            args.argv = argv
            args.config_keys = set(loaded)
        from refimpl.core.threads import blas_threads
        with blas_threads():               # one BLAS thread unless the environment says otherwise
            return args.fn(args)
    except (ValueError, FileNotFoundError, SolverError, RuntimeError) as exc:
        from refimpl.cli.common import name_the_flag
        say(f"refimpl: error: {name_the_flag(str(exc), args)}")
        return 2
    except OSError as exc:             # a directory given as a file, a file given as --out, …
        what = f"{exc.filename}: " if exc.filename else ""
        say(f"refimpl: error: {what}{exc.strerror or exc}")
        return 2
    except KeyboardInterrupt:
        hint = {"reproduce": "; finished runs are kept, continue with --resume",
                "report": "; finished reproduction runs are kept, rerun the same command to continue",
                "sweep": "; finished tasks are kept, rerun the same command to continue"}.get(args.command, "")
        say(f"refimpl: interrupted{hint}")
        return 130
    finally:
        restore()
