"""``refimpl compare PAPER``: several methods of one paper on the same data, speeds and seed — the
comparison the paper's own command module offers (``add_compare_arguments`` and ``compare``)."""
from __future__ import annotations

import refimpl.cli.common as common


def _comparers():
    from refimpl import papers
    return [p for p in papers.papers() if p.command() is not None and hasattr(p.command(), "compare")]


def add_parser(sub):
    cp = sub.add_parser("compare", help="run several methods on the same data, speeds and seed")
    cp.add_argument("what", choices=[p.key for p in _comparers()])
    cp.add_argument("--rounds", type=int, default=2000, help="cap on rounds per method")
    cp.add_argument("--batch", type=int, default=64)
    cp.add_argument("--hidden", type=int, default=32)
    cp.add_argument("--seed", type=int, default=0)
    cp.add_argument("--eval-every", type=int, default=None)
    cp.add_argument("--targets", default="0.8,0.85,0.9", help="test accuracies for the time-to-target table")
    cp.add_argument("--data")
    cp.add_argument("--data-dir")
    cp.add_argument("--out")
    cp.add_argument("--quiet", action="store_true")
    cp.add_argument("--clients", type=int, default=10)
    cp.add_argument("--backend", choices=["numba", "numpy"], default="numba")
    for paper in _comparers():
        paper.command().add_compare_arguments(cp, common)
    cp.set_defaults(fn=run, time_budget=None)


def run(args):
    from refimpl import papers
    return papers.get(args.what).command().compare(args, common)
