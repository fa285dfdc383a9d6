"""``refimpl diagnose OURS THEIRS``: the first (round, quantity) where two implementations' dumps part, and why (refimpl.tools.diagnose)."""
from __future__ import annotations

from refimpl.cli.common import info, load_data, prepare_out, say


def add_parser(sub):
    dg = sub.add_parser("diagnose", help="where and why two implementations' per-round dumps part")
    dg.add_argument("ours", help="refimpl's trace (directory or trace.npz) with --dump-rounds")
    dg.add_argument("theirs", help="their dump: a trace, .npz or .mat with r<round>_<name> arrays (docs/guide.md)")
    dg.add_argument("--map", default="", help="their names for ours: OURS=THEIRS,… (e.g. omega=w)")
    dg.add_argument("--tol", type=float, default=1e-10, help="largest relative difference that still agrees")
    dg.add_argument("--report", default=None, help="directory for diagnose.md and diagnose.png")
    dg.add_argument("--overwrite", action="store_true", help="replace an earlier report in --report")
    dg.add_argument("--no-rerun", action="store_true", help="compare only; do not try refimpl's convention switches")
    dg.add_argument("--data", default=None, help="FILE.npz for the reruns (default: the data OURS's trace records)")
    dg.add_argument("--data-dir", default=None, help="MNIST-format IDX directory for the reruns (instead of --data)")
    dg.add_argument("--allow-missing", default="",
                    help="quantities that may be dumped on one side only (comma-separated; 'rounds' for rounds); "
                         "anything else left uncompared makes the exit 1")
    dg.add_argument("--quiet", action="store_true")
    dg.set_defaults(fn=run)


def run(args):
    """refimpl diagnose OURS THEIRS: the first (round, quantity) where the dumps part, and why: a
    baseline rerun from THEIR inputs, then each convention switch (and pairs). Exit codes:
    refimpl.tools.diagnose.EXIT (0 everything compared agrees, 1 differ or left uncompared,
    3 explained by a switch, 4 by the inputs, 5 reruns that could not run; 2 bad input)."""
    import math
    from refimpl.tools import diagnose as DG
    if not (isinstance(args.tol, float) and math.isfinite(args.tol) and args.tol >= 0):
        raise ValueError(f"--tol must be a finite number >= 0 (a relative difference), got {args.tol}")
    allowed = tuple(n.strip() for n in (args.allow_missing or "").split(",") if n.strip())
    if args.report:        # checked (and created) before any rerun: a report that cannot be written is refused now
        prepare_out(args.report, args.overwrite, holds=("diagnose.md", "diagnose.png"), flag="--report")
    ours = DG.load_side(args.ours)
    theirs = DG.load_side(args.theirs, DG.parse_map(args.map))
    cmp_ = DG.compare_dumps(ours, theirs, args.tol)
    rows, verdict, inputs, sources, schedule, data = [], None, None, None, None, None
    from refimpl import papers
    paper, doc = papers.get(cmp_.paper), DG._trace_config(args.ours)
    if cmp_.divergence is not None and not args.no_rerun and doc is not None:
        try:
            replay = DG.their_replay(args.theirs, paper)           # read once, for every use below
        except (ValueError, OSError) as exc:
            replay = (str(exc), None, {})
        their_arrays = replay[1] or {}
        sources = DG.sources_line(*DG.replay_sources(their_arrays, paper))
        info(args, f"rerunning refimpl ({sources}): first without a switch (the baseline), then under each "
                    "convention switch")
        algorithm = doc.get(paper.method_field)
        takes = {o.field for o, _ in paper.options_for(algorithm)} if algorithm in paper.algorithms else set()
        data = load_data(args) if (args.data or args.data_dir) else DG.run_data(args.ours)
        if data is not None:
            info(args, f"reruns on {data.name} ({data.n_train} training samples"
                        + (", from --data" if (args.data or args.data_dir) else ", the data OURS's run used") + ")")
        schedule = DG.their_schedule_hint(their_arrays, paper, doc, getattr(data, "n_train", None))
        rows, verdict = DG.try_switches(args.ours, args.theirs, theirs, cmp_.paper, args.tol, takes,
                                        progress=None if args.quiet else say, data=data,
                                        replay=replay if replay[1] is not None else None)
        if verdict["kind"] == "inputs":
            inputs = DG.differing_inputs(args.ours, args.theirs, cmp_.paper)
    elif cmp_.divergence is not None and doc is not None:
        try:                       # only to name the differing entry in the paper's terms
            data = load_data(args) if (args.data or args.data_dir) else DG.run_data(args.ours)
        except (ValueError, OSError):
            data = None
    lines = DG.describe(cmp_, args.tol, verdict, allowed, inputs, entry_words=_entry_words(paper, doc, data))
    for extra in (sources, schedule):
        if extra is not None:
            lines.insert(-1, extra)
    for ln in lines:
        print(ln)
    if args.report:
        png = DG.write_report(args.report, cmp_, lines, rows)
        info(args, f"report written to {args.report}" + ("" if png else " (no PNG: matplotlib not installed)"))
    return DG.verdict_code(cmp_, verdict, allowed)


def _entry_words(paper, doc, data):
    """The paper's names of a dumped entry, from OURS's recorded configuration and its data (None
    without a configuration; without the data an entry keeps its array index alone)."""
    if doc is None:
        return None

    def words(quantity, index):
        try:
            return paper.entry_words(quantity, index, doc, data)
        except (ValueError, TypeError, KeyError):
            return None
    return words
