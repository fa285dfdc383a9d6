"""``refimpl partition-stats``: per-client sizes and label counts of a sample-based split."""
from __future__ import annotations

import os

from refimpl.cli.common import Formatter, info, load_data


def add_parser(sub):
    ps = sub.add_parser("partition-stats", help="per-client sizes and label counts of a sample-based split",
                        formatter_class=Formatter)
    ps.add_argument("--partition", default="contiguous",
                    help="contiguous | iid | label_skew | dirichlet:α[:MIN_SIZE] | quantity:σ")
    ps.add_argument("--partition-file", default=None, help="JSON file, one list of sample ids per client")
    ps.add_argument("--clients", type=int, default=None, help="number of clients K (default: 10, or the file's)")
    ps.add_argument("--seed", type=int, default=0, help="the run's seed (the same split as refimpl run --seed)")
    ps.add_argument("--data", help="FILE.npz (default: the embedded MNIST subset)")
    ps.add_argument("--data-dir", help="directory with MNIST-format IDX files")
    ps.add_argument("--out", help="directory for partition_stats.csv and partition.png")
    ps.add_argument("--quiet", action="store_true")
    ps.set_defaults(fn=run)


def run(args):
    """Per-client sizes and label counts of a sample-based split, and the client × label heat map."""
    from refimpl.core.partition import partition_stats
    from refimpl.core.plots import plot_partition
    from refimpl.core.trace import write_csv
    from refimpl.ssca.experiment import RunConfig, client_partition
    data = load_data(args)
    cfg = RunConfig(clients=args.clients, partition=args.partition, partition_file=args.partition_file,
                    seed=args.seed).resolved()
    stats = partition_stats(client_partition(cfg, data), data.y_train, data.n_classes)
    header = "client  size  " + " ".join(f"{c:>5}" for c in range(data.n_classes))
    print(header)
    for k, (n, row) in enumerate(zip(stats["sizes"], stats["label_counts"])):
        print(f"{k:>6}  {n:>4}  " + " ".join(f"{int(v):>5}" for v in row))
    if args.out:
        from refimpl.tools.sweep import make_out_dir
        make_out_dir(args.out)
        rows = [{"client": k, "size": n, **{f"label_{c}": int(v) for c, v in enumerate(row)}}
                for k, (n, row) in enumerate(zip(stats["sizes"], stats["label_counts"]))]
        write_csv(os.path.join(args.out, "partition_stats.csv"), rows)
        png = plot_partition(stats["label_counts"], os.path.join(args.out, "partition.png"),
                             cfg.partition_file or cfg.partition)
        info(args, f"written to {args.out}: partition_stats.csv" + (", partition.png" if png else ""))
    return 0
