"""``refimpl verify``: the verification checks by tier, the mutation catalogue (--mutations) and the checks' coverage (--coverage)."""
from __future__ import annotations

import json

from refimpl.cli.common import engine_options, progress, say


def add_parser(sub):
    v = sub.add_parser("verify", help="run the verification checks")
    v.add_argument("--quick", action="store_true",
                   help="the checks' reduced sizes: the default of every tier (kept for scripts); --full for full sizes")
    v.add_argument("--claims", action="store_true",
                   help="run the papers' experimental claims (reproductions of experiments, minutes) instead of the "
                        "theorem-kind checks (seconds)")
    v.add_argument("--all", action="store_true", help="both tiers: the theorem-kind checks and the claims")
    v.add_argument("--full", action="store_true", help="both tiers at the checks' full sizes (several minutes)")
    v.add_argument("--list", action="store_true", help="list the checks (id, paper, kind, claim) and exit")
    v.add_argument("--wide", action="store_true",
                   help="one wide row per check, with its claim and note in columns (default: a table that fits "
                        "100 columns, each note under its row)")
    v.add_argument("--only", help="comma-separated check ids")
    v.add_argument("--json", help="write the records to this JSON file")
    v.add_argument("--quiet", action="store_true")
    v.add_argument("--strict", action="store_true", help="exit 1 also when a paper's claim does not reproduce")
    v.add_argument("--mutations", action="store_true",
                   help="run the mutation catalogue: each mutation on a copy of the package against its paper's "
                        "theorem checks (quick); --only then takes mutation ids")
    v.add_argument("--only-paper", help="with --mutations: core, ssca, vfl and/or mfcgd (comma-separated)")
    v.add_argument("--vectors", action="store_true",
                   help="with --mutations: run the conformance vectors on each mutated copy instead (a report)")
    v.add_argument("--catalogue", help="with --mutations: another catalogue file (default: the package's)")
    engine_options(v, "processes running checks (or mutations) at a time; default: the number of cores")
    v.add_argument("--markdown", help="with --mutations: also write the tables as Markdown to this file")
    v.add_argument("--with-claims", action="store_true",
                   help="with --mutations: also run the paper's claims on each mutation no theorem check catches "
                        "(a claims column; not counted as caught)")
    v.add_argument("--coverage", action="store_true",
                   help="run the theorem-kind checks traced in this process; print the lines they execute per module")
    v.add_argument("--profile", action="store_true",
                   help="also print each check's wall, CPU and Numba seconds and the totals against the target")
    v.set_defaults(fn=run)


def run(args):
    if args.list:
        from refimpl.tools.verify import load_checks
        reg = load_checks()
        paper = {"grad": "core", "kernels": "core"}
        rows = [("id", "paper", "kind", "claim")] + [(cid, paper.get(cid.split(".")[0], cid.split(".")[0]), kind, claim)
                                                       for cid, (claim, _, _, kind) in reg.items()]
        w = [max(len(r[i]) for r in rows) for i in range(3)]
        for r in rows:
            print(" | ".join(c.ljust(n) for c, n in zip(r[:3], w)) + " | " + r[3])
        return 0
    tiers = [f"--{f}" for f in (("claims", "all", "full") if args.mutations else ("claims", "all"))
             if getattr(args, f, False)]
    if tiers and (args.mutations or args.coverage):
        raise ValueError(f"{' '.join(tiers)} do(es) not apply with --{'mutations' if args.mutations else 'coverage'} "
                         "(it runs the theorem-kind checks" + (" at reduced sizes)" if args.mutations else
                                                               "; --full for their full sizes)"))
    if args.mutations:
        return cmd_mutations(args)
    for flag in ("only_paper", "catalogue", "markdown", "vectors", "with_claims"):
        if getattr(args, flag):
            raise ValueError(f"--{flag.replace('_', '-')} applies only with --mutations")
    from refimpl.tools.verify import format_table, run_checks, write_json
    only = [s.strip() for s in args.only.split(",")] if args.only else None
    if args.coverage:
        return _verify_coverage(args, only)
    import time as _time
    from refimpl.tools.verify import cpu_seconds, peak_rss_mb, selection
    ids, quick, name = selection(only, full=args.full, both=args.all, claims=args.claims)
    t0, c0 = _time.perf_counter(), cpu_seconds()
    from refimpl.tools.verify import recorded_cost
    total = recorded_cost(ids, quick)
    # the bar advances by each check's recorded seconds: its estimate of the time left is that of
    # the work left, not of the count of checks left (the longest run first)
    with progress(args, total, name + " (recorded check-seconds)", "s") as bar:
        records = run_checks(ids, quick=quick, progress=bar, executor=args.executor, workers=args.workers,
                             scheduler=args.scheduler)
        bar("", n=total)
    print(format_table(records, wide=args.wide))
    if args.profile:
        from refimpl.tools.verify import TARGETS, format_profile
        print()
        print(format_profile(records, _time.perf_counter() - t0, cpu_seconds() - c0, peak_rss_mb(),
                             None if only else TARGETS.get(name)))
    if args.json:
        write_json(records, args.json)
    from refimpl.tools.verify import claims_line, failing, record_claims, unreproduced
    record_claims(records, quick)
    claims = unreproduced(records)
    if claims:
        say(f"claims of the papers not reproduced here (reported, see the table): {', '.join(claims)}")
    if only is None and not any(r.details.get("kind") == "claim" for r in records):
        import textwrap
        print("\n".join(textwrap.wrap(claims_line(), 100)))       # the 100 columns of the table above
    fatal = failing(records, args.strict)
    if fatal:
        say(f"checks not holding: {', '.join(fatal)}")
        return 1
    return 0


def _verify_coverage(args, only):
    """verify --coverage: the theorem-kind checks in this process under a line tracer; the table of
    what they execute per module (and, with --json, the lines no check executes)."""
    from refimpl.tools.verify import failing, format_coverage, format_table, run_coverage
    given = [f for f, default in (("executor", "local"), ("workers", None), ("scheduler", None), ("profile", False))
             if getattr(args, f, default) != default]
    if given:
        raise ValueError(f"--{given[0]} does not apply with --coverage (the checks run in this process, traced)")
    with progress(args, None, "verify --coverage", "check") as bar:
        records, rows = run_coverage(not args.full, bar, only)
    print(format_table(records))
    print()
    print(format_coverage(rows))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"checks": [r.id for r in records], "quick": not args.full, "modules": rows}, fh, indent=1)
    fatal = failing(records, args.strict)
    if fatal:
        say(f"checks not holding: {', '.join(fatal)}")
        return 1
    return 0


def cmd_mutations(args):
    from refimpl.tools import mutations as MU
    ids = [i.strip() for i in args.only.split(",")] if args.only else None
    try:       # --only: just those entries are validated against the source
        cat = MU.load_catalogue(args.catalogue or MU.CATALOGUE, only=None if ids is None else set(ids), compiled=False)
    except ValueError as exc:
        if ids is not None and ": no mutation [" in str(exc):
            raise ValueError(f"--only: unknown mutation ids {str(exc).split(': no mutation ')[1]}") from None
        raise
    if args.only_paper:
        papers = [p.strip() for p in args.only_paper.split(",")]
        bad = [p for p in papers if p not in MU.PAPERS]
        if bad:
            raise ValueError(f"--only-paper {args.only_paper}: unknown {bad}; allowed {', '.join(MU.PAPERS)}")
        cat = [m for m in cat if m.paper in papers]
        outside = sorted(set(ids or ()) - {m.id for m in cat})
        if outside:
            raise ValueError(f"--only: mutation ids {outside} are not of --only-paper {args.only_paper}")
    from refimpl.tools.engine import resolve_workers
    args.workers = resolve_workers(args.workers, len(cat), "mutations")
    if not args.quiet:
        say(f"{len(cat)} mutations, {args.workers} at a time; each runs its paper's theorem checks (quick) on a mutated copy")
    vectors_dir = None
    if getattr(args, "vectors", False):
        import tempfile
        from refimpl.conformance.vectors import export
        vectors_dir = tempfile.mkdtemp(prefix="refimpl-vectors-")
        export(vectors_dir)
        if not args.quiet:
            say("each mutated copy runs the conformance vectors exported from the unmutated package instead")
    with progress(args, len(cat), "mutations", "mutation") as bar:
        results = MU.run_catalogue(cat, workers=args.workers, progress=bar, vectors_dir=vectors_dir,
                                   claims=bool(args.with_claims))
    if vectors_dir is not None:
        import shutil
        shutil.rmtree(vectors_dir, ignore_errors=True)
    print(MU.format_table(results))
    if args.json:
        MU.write_json(results, args.json)
    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write(MU.format_markdown(results))
    missed = [r.id for r in results if not r.caught]
    if vectors_dir is not None:
        # a report: mutations of code no vector calls (kernels, runners, clocks) pass the vectors
        if missed:
            say(f"mutations no vector catches ({len(missed)}): {', '.join(missed)}")
        return 0
    if missed:
        say(f"mutations no theorem check caught: {', '.join(missed)}")
        return 1
    return 0
