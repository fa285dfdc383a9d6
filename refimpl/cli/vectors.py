"""``refimpl vectors export DIR``: the conformance vectors, a JSON Schema per file and a checksummed manifest."""
from __future__ import annotations

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
    vd = vsub.add_parser("digests", help="compare the generated cases with the pinned digests (exit 1 when they "
                                         "differ); --update pins the current ones")
    vd.add_argument("--update", action="store_true", help="write the current digests into the package's digests.json")
    vd.add_argument("--quiet", action="store_true")
    vd.set_defaults(fn=run_digests)


def run_digests(args):
    """refimpl vectors digests [--update]: the cases each family publishes, against the pinned digests."""
    import json

    from refimpl.conformance import vectors as VX
    if args.update:
        docs = {f: d for f, d in VX.generate().items() if d["paper"] in VX.PINNED_PAPERS}
        VX.DIGESTS_FILE.write_text(json.dumps(VX.case_digests(docs), indent=1, sort_keys=True) + "\n")
        info(args, f"{len(docs)} families' digests written to {VX.DIGESTS_FILE}")
        return 0
    problems = VX.digest_problems()
    for p in problems:
        print(p)
    if not problems:
        info(args, "every family publishes the pinned cases")
    return 1 if problems else 0


def run(args):
    """refimpl vectors export DIR: the conformance vectors, a schema per file and the manifest."""
    from refimpl.conformance import vectors as VX
    papers = VX.PAPERS
    if args.paper:
        papers = tuple(p.strip() for p in args.paper.split(","))
        bad = [p for p in papers if p not in VX.PAPERS]
        if bad:
            raise ValueError(f"--paper {args.paper}: unknown {bad}; allowed {', '.join(VX.PAPERS)}")
    manifest = VX.export(args.dir, papers, args.format, overwrite=args.overwrite)
    info(args, f"{len(VX.vector_files(manifest))} vector files ({args.format}) with schemas and manifest.json "
               f"written to {args.dir}")
    return 0
