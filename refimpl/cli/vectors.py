"""``refimpl vectors export DIR``: the conformance vectors, a JSON Schema per file and a checksummed manifest."""
from __future__ import annotations

import os

from refimpl.cli.common import info


def add_parser(sub):
    vx = sub.add_parser("vectors", help="conformance vectors for other implementations (docs/conformance.md)")
    vsub = vx.add_subparsers(dest="vectors_cmd", required=True)
    ve = vsub.add_parser("export", help="write the vectors, a JSON Schema per file and a checksummed manifest")
    ve.add_argument("dir")
    ve.add_argument("--paper", default=None, help="comma list of core, ssca, vfl, mfcgd (default: all)")
    ve.add_argument("--format", default="json", choices=("json", "npz", "mat"))
    ve.add_argument("--overwrite", action="store_true", help="write into a non-empty directory")
    ve.add_argument("--quiet", action="store_true")
    ve.set_defaults(fn=run)


def run(args):
    """refimpl vectors export DIR: the conformance vectors, a schema per file and the manifest."""
    from refimpl.conformance import vectors as VX
    papers = VX.PAPERS
    if args.paper:
        papers = tuple(p.strip() for p in args.paper.split(","))
        bad = [p for p in papers if p not in VX.PAPERS]
        if bad:
            raise ValueError(f"--paper {args.paper}: unknown {bad}; allowed {', '.join(VX.PAPERS)}")
    if os.path.exists(args.dir) and os.listdir(args.dir) and not args.overwrite:
        raise ValueError(f"{args.dir} is not empty; give --overwrite to replace its vectors")
    manifest = VX.export(args.dir, papers, args.format)
    n = sum(1 for f in manifest["files"] if not f.endswith((".schema.json", ".meta.json")))
    info(args, f"{n} vector files ({args.format}) with schemas and manifest.json written to {args.dir}")
    return 0
