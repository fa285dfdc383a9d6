"""``refimpl run flexvfl | adaptive-flexvfl | sync-vfl | async-vfl | pbcd`` and ``refimpl compare
vfl``: what the command line does for [FlexVFL] beyond the generic run (:mod:`refimpl.cli.run`).

``ui`` is the command line's shared toolbox (:mod:`refimpl.cli.common`), handed in: this module
imports nothing above the core."""
from __future__ import annotations

import json
import os

KEY = "vfl"


def _timeout_and_q_apply(args, cfg):
    """--timeout and --Q set (to other than their defaults) where they change nothing are refused,
    saying where they apply:
    --Q sets synchronous VFL's steps, Flex-VFL's server steps under --protocol authors and, with
    --timeout, the unit of S under --server-time-unit timeout-over-Q (the authors' protocol's);
    --timeout sets Flex-VFL's τ and that unit."""
    from refimpl.vfl.experiment import VFLConfig, conventions
    unit_q = conventions(cfg)["server_time_unit"] == "timeout-over-Q"
    flex = cfg.method in ("flexvfl", "adaptive-flexvfl")
    used = {"Q": unit_q or cfg.method == "sync-vfl" or (flex and cfg.protocol == "authors"),
            "timeout": unit_q or flex}
    for name, why in (("Q", "synchronous VFL's local steps, Flex-VFL's server steps under --protocol authors"),
                      ("timeout", "Flex-VFL's round timeout")):
        value = getattr(args, name, None)        # the command line shows the Config's default: any other was given
        if value is not None and value != VFLConfig.__dataclass_fields__[name].default and not used[name]:
            raise ValueError(f"--{name} changes nothing in this {cfg.method} run: it sets {why}, and the unit of "
                             "the server time S under --server-time-unit timeout-over-Q (the authors' protocol's)")
    eta = getattr(args, "eta", None)
    if cfg.method == "adaptive-flexvfl" and eta is not None and eta != VFLConfig.__dataclass_fields__["eta"].default:
        raise ValueError("--eta changes nothing in an adaptive-flexvfl run: both adaptive rules set every rate from "
                         "the constants --A (the paper's: η_k = A_k / (τ_k w̄_k), round 1's from a dummy round; the "
                         "authors': A_k as lr_k)")


def _unit(cfg):
    """What one progress step of a run is: an event (asynchronous VFL) or a round."""
    return "event" if cfg.method == "async-vfl" else "round"


def round_reporter(cfg, bar):
    """The ``progress(r, trace)`` of one run, reporting to ``bar``
    (:class:`refimpl.core.progress.Progress`): on a terminal every round (event) moves the bar, the
    latest time and test accuracy its postfix; otherwise one line at round 0 and every
    max(1, rounds // 20) rounds (:func:`refimpl.core.progress.line_due`; a time budget may end the
    run before its last round, so that one is not added)."""
    from refimpl.core.progress import line_due
    unit = _unit(cfg)

    def progress(r, tr):
        if bar.bar_mode:
            bar(f"time {tr.metrics['time'][-1]:.1f} acc {tr.metrics['test_accuracy'][-1]:.4f}", n=r)
        elif line_due(r, cfg.rounds, last=False):
            bar(f"[{cfg.method}] {unit} {r:>5}  time {tr.metrics['time'][-1]:9.2f}  "
                f"test acc {tr.metrics['test_accuracy'][-1]:.4f}")
    return progress


def run(args, ui):
    """One run of a Flex-VFL-family method on the simulated clock."""
    from refimpl import vfl
    from refimpl.core.plots import plot_vfl
    cfg = ui.config(args, KEY, args.algorithm)
    _timeout_and_q_apply(args, cfg)
    bar = ui.progress(args, cfg.rounds, cfg.method, _unit(cfg))
    with bar:
        tr = vfl.run(cfg, ui.load_data(args), progress=round_reporter(cfg, bar), dump_writer=ui.dump_writer(args, cfg))
    if tr.config.get("speeds_note"):
        ui.say(f"note: {tr.config['speeds_note']}")
    if not args.quiet and tr.metrics.get("time"):
        unit = _unit(cfg) + "s"
        n = int(tr.metrics["round"][-1]) if tr.metrics.get("round") else len(tr.metrics["time"]) - 1
        ui.say(f"[{cfg.method}] final: {n} {unit}, simulated time {tr.metrics['time'][-1]:.6g}, "
             f"test accuracy {tr.metrics['test_accuracy'][-1]:.4f}")
    code = ui.finish_run(args, tr, args.out, lambda path: plot_vfl({cfg.method: tr}, path))
    if code == 0 and "are used up" in tr.status:
        # a replayed event schedule shorter than the time budget: the run ended before its budget
        ui.say(f"refimpl: run stopped before the time budget: {tr.status[len('finished: '):]} at simulated time "
               f"{tr.metrics['time'][-1]:.6g} of {cfg.time_budget:g} (give --batches with more rows)")
        return 3
    return code


def add_compare_arguments(parser, ui):
    """The options of ``refimpl compare vfl`` (the regime comparison's among them)."""
    ui.add_compare_args(parser.add_argument_group("vfl"), KEY, {"rounds", "batch", "hidden", "seed", "eval_every",
                                                           "server_time", "protocol"})
    rg = parser.add_argument_group("vfl regimes")
    rg.add_argument("--server-time", help="vfl: comma list of server round trips S (units of the fastest party's mean "
                                          "step), e.g. 1,10,50: one panel and one table block per value")
    rg.add_argument("--protocol", choices=["tuned", "authors"], default=None,
                    help="vfl with --server-time: tuned (each method's best η, grid widened until interior) or "
                         "authors (one η, momentum 0.9 re-initialised per round, plain-SGD async, server τ = Q, free "
                         "server compute); default tuned")
    rg.add_argument("--seeds", type=int, default=1, help="vfl with --server-time: seeds per time to target")


def compare(args, ui):
    """``refimpl compare vfl``: every method on one clock; with --server-time, the regime comparison."""
    from refimpl.core.plots import plot_vfl
    from refimpl.core.trace import write_csv
    from refimpl.vfl.experiment import compare_vfl
    if args.server_time is not None:
        return compare_regimes(args, ui)
    if args.protocol is not None:
        raise ValueError("--protocol applies with --server-time (the regime comparison)")
    cfg = ui.config(args, KEY, "flexvfl")
    if cfg.time_budget is None:
        # every method runs on one simulated clock: the same default budget as the regime comparison
        from dataclasses import replace as _replace
        cfg = _replace(cfg, time_budget=1000.0)
        ui.info(args, "note: no --time-budget given: every method runs for 1000 units of simulated time")
    targets = ui.floats("targets", args.targets)
    with ui.progress(args, 5, "compare vfl", "method") as bar:
        traces, curve, table = compare_vfl(cfg, ui.load_data(args), targets=targets, progress=bar)
    for row in table:
        print("  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        write_csv(os.path.join(args.out, "accuracy_vs_time.csv"), curve)
        write_csv(os.path.join(args.out, "time_to_target.csv"), table)
        plot_vfl(traces, os.path.join(args.out, "accuracy_vs_time.png"))
        for meth, tr in traces.items():
            tr.save(os.path.join(args.out, meth))
        ui.info(args, f"comparison written to {args.out}")
    return 0


def regime_request(args, ui):
    """What ``compare vfl --server-time`` asks of the regime table, decided before any run: the
    Flex-VFL configuration (a time budget of 1000 unless given), the table's arguments (the server
    times S, the protocol (tuned unless given), the target: the middle one of --targets, the seeds)
    and the progress total (one run per S and method)."""
    from refimpl.vfl import regime as RG
    server_times = RG.parse_server_times(args.server_time)
    protocol = RG.check_protocol(args.protocol or "tuned")
    RG.check_seeds(args.seeds)
    targets = ui.floats("targets", args.targets)
    cfg = ui.config(args, KEY, "flexvfl")
    if cfg.time_budget is None:
        from dataclasses import replace
        cfg = replace(cfg, time_budget=1000.0)
    table = dict(server_times=server_times, protocol=protocol, target=targets[len(targets) // 2], seeds=args.seeds)
    return cfg, table, len(server_times) * len(RG.REGIME_METHODS)


def regime_summary(rows, table):
    """The regime table's summary (per baseline: its time to target over Flex-VFL's at each S, and the
    crossover) and the lines ``compare vfl --server-time`` prints: one per S with each method's time
    (- where not reached), one per baseline with its ratios."""
    from refimpl.vfl import regime as RG
    protocol, target, server_times = table["protocol"], table["target"], table["server_times"]
    summary = {"protocol": protocol, "target": target, "server_times": server_times, "ratios": {}, "crossover": {}}
    for other in ("sync-vfl", "async-vfl", "pbcd"):
        r = RG.ratios(rows, other)
        summary["ratios"][other] = {str(k): v for k, v in r.items()}
        summary["crossover"][other] = RG.crossover(r)
    lines = [f"time to {target:g} (protocol {protocol}; S in units of the fastest party's mean step)"]
    for S in server_times:
        cells = [f"{r['method']}={'-' if r['time_to_target'] is None else format(r['time_to_target'], '.1f')}"
                 for r in rows if r["server_time"] == S]
        lines.append(f"  S = {S:g}: " + "  ".join(cells))
    for other, c in summary["crossover"].items():
        r = summary["ratios"][other]
        lines.append(f"  {other}/flexvfl: " + ", ".join(f"S={k}: {'-' if v is None else format(v, '.3g')}"
                                                        for k, v in r.items())
                     + ("" if c is None else f"; crossover between S = {c[0]:g} and {c[1]:g}"))
    return summary, lines


def compare_regimes(args, ui):
    """refimpl compare vfl --server-time S1,S2,… --protocol tuned|authors."""
    from refimpl.core.plots import plot_vfl_regimes
    from refimpl.core.trace import write_csv
    from refimpl.vfl import regime as RG
    cfg, table, total = regime_request(args, ui)
    protocol, target = table["protocol"], table["target"]
    out = args.out
    if out:
        ui.prepare_out(out, getattr(args, "overwrite", False), holds=("regimes.json",))
    traces = {}
    with ui.progress(args, total, f"regimes ({protocol})", "run") as bar:
        rows = RG.regime_table(cfg, ui.load_data(args), **table, progress=bar, traces=traces)
    summary, lines = regime_summary(rows, table)
    for line in lines:
        print(line)
    if out:
        flat = [{k: v for k, v in r.items() if k not in ("grid", "per_seed")} for r in rows]
        write_csv(os.path.join(out, "time_to_target_by_regime.csv"), flat)
        with open(os.path.join(out, "regimes.json"), "w") as fh:
            json.dump({"summary": summary, "rows": rows}, fh, indent=1, default=str)
        plot_vfl_regimes(traces, os.path.join(out, "accuracy_vs_time_by_regime.png"), target)
        ui.info(args, f"regime comparison written to {out}")
    return 0
