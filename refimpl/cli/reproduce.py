"""``refimpl reproduce NAME``: a paper's figure averaged over seeds (refimpl.tools.reproduce)."""
from __future__ import annotations

from refimpl.cli.common import engine_options, info, progress, say


def add_parser(sub):
    from refimpl import papers
    rp = sub.add_parser("reproduce", help="the papers' figures, averaged over seeds")
    rp.add_argument("name", choices=[n for p in papers.papers() for n in p.reproductions])
    rp.add_argument("--out", required=True)
    rp.add_argument("--data-dir", default=None)
    rp.add_argument("--seeds", type=int, default=3)
    rp.add_argument("--rounds", type=int, default=None, help="rounds (steps for mfcgd-rates); default per NAME")
    rp.add_argument("--paper", action="store_true", help="the paper's batch sizes and T = 1000 (needs --data-dir)")
    rp.add_argument("--quick", action="store_true", help="short runs (tests, the quick report)")
    rp.add_argument("--preset", choices=list(dict.fromkeys(v for p in papers.papers() for v in p.reproduction_presets)),
                    default="paper",
                    help="SSCA settings: the paper's table, or the authors' scripts (ReLU, bias, their a1/a2/α/τ, A = τ)")
    rp.add_argument("--resume", action="store_true", help="continue an interrupted reproduction in --out")
    rp.add_argument("--tune", action="store_true",
                    help="ssca-sample/-feature with --data-dir: per-method grids on a validation split, then the best")
    engine_options(rp)
    rp.add_argument("--quiet", action="store_true")
    rp.set_defaults(fn=run)


def run(args):
    from refimpl.tools.reproduce import reproduce, tune_and_reproduce
    for flag in ("rounds", "seeds"):
        v = getattr(args, flag, None)
        if v is not None and v < 1:
            raise ValueError(f"--{flag} must be >= 1, got {v}")
    if args.tune:
        for flag in ("paper", "quick"):
            if getattr(args, flag):
                raise ValueError(f"--tune runs its own protocol (K = 10, B = 100, T = --rounds or 1000); drop --{flag}")
        with progress(args, None, f"reproduce {args.name} --tune", "msg") as bar:
            path = tune_and_reproduce(args.name, args.out, args.data_dir, args.seeds, args.rounds, args.resume,
                                      progress=bar, executor=args.executor, workers=args.workers,
                                      scheduler=args.scheduler)
        info(args, f"reproduction written to {args.out} ({path}; tuned_results.csv)")
        _say_unfinished(path)
        return 0
    with progress(args, None, f"reproduce {args.name}", "msg") as bar:
        path = reproduce(args.name, args.out, args.data_dir, args.seeds, args.rounds, args.paper, args.resume,
                         args.quick, progress=bar, preset=args.preset, executor=args.executor,
                         workers=args.workers, scheduler=args.scheduler)
    info(args, f"reproduction written to {args.out} ({path})")
    _say_unfinished(path)
    return 0


def _say_unfinished(path):
    """A note naming the runs of the reproduction at ``path`` that did not finish (diverged or
    stopped): their curves end at the blow-up, and each label's curves stop at its shortest run."""
    import json
    with open(path) as fh:
        unfinished = json.load(fh).get("unfinished", [])
    if unfinished:
        say(f"note: {len(unfinished)} run{'s' if len(unfinished) != 1 else ''} did not finish; each label's curves "
            "stop at its shortest run: "
            + "; ".join(unfinished))
