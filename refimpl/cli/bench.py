"""``refimpl bench WHAT``: the benchmarks (ratios measured in one run; refimpl.tools.bench)."""
from __future__ import annotations

import json

from refimpl.cli.common import progress


def add_parser(sub):
    b = sub.add_parser("bench", help="benchmarks")
    b.add_argument("what", choices=["ssca", "ssca-constrained", "vfl", "mfcgd", "paper-scale", "verify", "threads"])
    b.add_argument("--full", action="store_true", help="verify: time `refimpl verify --full` (both tiers, full sizes)")
    b.add_argument("--claims", action="store_true", help="verify: time `refimpl verify --claims`")
    b.add_argument("--cold", action="store_true",
                   help="verify: with an empty Numba cache (every kernel compiled, as on a fresh install)")
    b.add_argument("--quiet", action="store_true", help="no progress lines or bar")
    b.add_argument("--data-dir", default=None, help="paper-scale: MNIST-format IDX files (60,000 training samples)")
    b.add_argument("--batches", default="10,100,600", help="per-client batch sizes")
    b.add_argument("--repeats", type=int, default=5)
    b.add_argument("--breakdown", action="store_true",
                   help="ssca: the round split into phases; ratios to floor, floor+gather, plain NumPy, torch")
    b.add_argument("--json")
    b.set_defaults(fn=run)


def _batch_list(text):
    try:
        out = [int(b) for b in text.split(",")]
    except ValueError:
        raise ValueError(f"--batches {text}: expected comma-separated whole numbers, e.g. 10,100,600")
    if any(b < 1 for b in out):
        raise ValueError(f"--batches {text}: batch sizes must be >= 1")
    return out


def _rows(args, what, bar):
    """Run the benchmark ``what``; returns (rows, its table, whether the floor comparison applies)."""
    from refimpl.tools import bench as B
    reps = args.repeats
    table = {
        "vfl": lambda: (B.bench_vfl(repeats=reps, progress=bar), B.format_vfl, False),
        "paper-scale": lambda: (B.bench_paper_scale(args.data_dir, progress=None),
                                lambda rows: json.dumps(rows, indent=1), False),
        "mfcgd": lambda: (B.bench_mfcgd(repeats=reps, progress=bar), B.format_mfcgd, False),
        "ssca-breakdown": lambda: (B.bench_ssca_breakdown(batches=_batch_list(args.batches), repeats=reps, progress=bar),
                                   B.format_breakdown, False),
        "ssca-round": lambda: (B.bench_ssca(batches=_batch_list(args.batches), repeats=reps, progress=bar),
                               B.format_bench, True),
        "ssca-constrained": lambda: (B.bench_constrained(repeats=reps, progress=bar), B.format_constrained, False),
    }
    rows, fmt, floor = table[what]()
    return rows, fmt(rows), floor


#: `refimpl bench WHAT` → the benchmark it runs (ssca with --breakdown: the round's phases)
BENCHES = {"vfl": "vfl", "paper-scale": "paper-scale", "mfcgd": "mfcgd", "ssca-constrained": "ssca-constrained"}


def run(args):
    if args.repeats < 1:
        raise ValueError(f"--repeats must be >= 1, got {args.repeats}")
    if args.full and args.what != "verify":
        raise ValueError("--full applies to bench verify only")
    if (args.claims or args.cold) and args.what != "verify":
        raise ValueError("--claims and --cold apply to bench verify only")
    if args.what == "verify":
        if args.breakdown:
            raise ValueError("--breakdown applies to bench ssca only")
        from refimpl.tools.bench import bench_verify
        tier = "--full" if args.full else "--claims" if args.claims else ""
        with progress(args, None, "bench verify", "msg") as bar:
            out = bench_verify(tier, cold=args.cold, progress=bar)
        print(out["table"])
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({k: v for k, v in out.items() if k != "table"}, fh, indent=1)
        return 0 if out["returncode"] in (0, 1) else out["returncode"]
    from refimpl.tools.bench import bench_conditions, load_average
    load_before = load_average()
    if args.what == "threads":
        if args.breakdown:
            raise ValueError("--breakdown applies to bench ssca only")
        from refimpl.tools.bench import bench_threads, format_threads
        with progress(args, None, "bench threads", "msg") as bar:
            res = bench_threads(repeats=max(args.repeats, 5), progress=bar)
        print(format_threads(res))
        for line in bench_conditions(load_before, load_average()):
            print(line)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(res, fh, indent=1)
        return 0
    what = BENCHES.get(args.what) or ("ssca-breakdown" if args.breakdown else "ssca-round")
    if args.breakdown and what != "ssca-breakdown":
        raise ValueError("--breakdown applies to bench ssca only")
    label = {"ssca-breakdown": "bench ssca --breakdown", "ssca-round": "bench ssca",
             "ssca-constrained": "bench constrained"}.get(what, f"bench {what}")
    if what == "paper-scale":
        rows, text, floor = _rows(args, what, None)
    else:
        with progress(args, None, label, "msg") as bar:
            rows, text, floor = _rows(args, what, bar)
    print(text)
    for line in bench_conditions(load_before, load_average(), floor, rows):
        print(line)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0
