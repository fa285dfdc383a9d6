"""Command line of refimpl: run, compare, bound, sweep, sweep-summary, reproduce, report, verify, bench,
crosscheck, diagnose, vectors, check-schedule (``refimpl COMMAND --help`` for each)."""
from __future__ import annotations

import argparse
import math
import json
import os
import sys

import numpy as np


def _say(msg):
    print(msg, file=sys.stderr, flush=True)


def _progress(args, total=None, desc="", unit="it"):
    """The progress display of a long command: a bar on a terminal, the plain lines elsewhere,
    nothing with --quiet (refimpl.core.progress)."""
    from refimpl.core.progress import Progress
    return Progress(total, desc, unit, quiet=getattr(args, "quiet", False))


def _info(args, msg):
    """A progress or where-it-went line; ``--quiet`` silences it (errors and warnings still print)."""
    if not getattr(args, "quiet", False):
        _say(msg)


class _Formatter(argparse.ArgumentDefaultsHelpFormatter):
    def __init__(self, prog):
        super().__init__(prog, max_help_position=37, width=130)

    def _get_help_string(self, action):
        text = action.help or ""
        d = action.default
        if d is None or d is False or (isinstance(d, str) and d == "") or d is argparse.SUPPRESS or "default" in text:
            return text
        return text + " (default: %(default)s)"


class _EpilogFormatter(_Formatter):
    """Defaults shown, and the epilog's lines kept as written (a table of definitions)."""

    def _fill_text(self, text, width, indent):
        return "".join(indent + line for line in text.splitlines(keepends=True))


_COMMON = (("out", "directory for trace.npz, trace.json, trace.png"),
           ("config", "TOML/JSON of option values (a sweep spec's [fixed] keys); flags override it"),
           ("data", "FILE.npz with X_train, y_train, X_test, y_test (default: embedded MNIST)"),
           ("data_dir", "directory with MNIST-format IDX files"))


def _add_algorithm_parser(sub, algorithm):
    """``refimpl run ALGORITHM``: only that algorithm's options, each with its help and default."""
    from refimpl import papers
    paper = papers.of_algorithm(algorithm)
    text = paper.algorithms[algorithm]
    p = sub.add_parser(algorithm, help=text, description=text,
                       usage=f"refimpl run {algorithm} [options]", formatter_class=_Formatter)
    for opt, default in paper.options_for(algorithm):
        _add_option(p, opt, default)
    for flag, text in paper.replay_args:
        p.add_argument("--" + flag.replace("_", "-"), dest=flag, help=text)
    for dest, text in _COMMON:
        if dest.startswith("data") and paper.data_note:
            text += f" ({paper.data_note})"
        p.add_argument("--" + dest.replace("_", "-"), dest=dest, help=text)
    p.add_argument("--label-base", type=int, choices=(0, 1), default=0,
                   help="--data labels start at 0, or at 1 (MATLAB)")
    p.add_argument("--overwrite", action="store_true", help="replace a result already in --out")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(fn=cmd_run, algorithm=algorithm, family=paper.key)
    return p


def _add_option(p, opt, default, shown=True):
    """One option of a config field; ``shown=False`` leaves the default to the Config (None here)."""
    kw = {"help": opt.help, "dest": opt.field, "default": default if shown else None}
    if opt.flag:
        p.add_argument(opt.name, action="store_true", **kw)
        return
    if opt.choices:
        kw["choices"] = opt.choices
        if opt.metavar:
            kw["metavar"] = opt.metavar
    elif not opt.text:
        kw["type"] = opt.kind or (float if default is None else type(default))
        kw["metavar"] = opt.field.upper() if len(opt.field) <= 12 else "X"
    else:
        kw["metavar"] = opt.field.upper() if len(opt.field) <= 12 else "X"
    p.add_argument(opt.name, **kw)


def _add_compare_args(g, family, skip):
    """Every option of a paper for ``refimpl compare`` (unset options keep the Config's defaults;
    replay inputs and dumps belong to one run, not to a comparison of several)."""
    from refimpl import papers
    paper = papers.get(family)
    for opt, default in paper.options_for():
        if opt.field not in skip and opt.field not in paper.run_only:
            _add_option(g, opt, default, shown=False)


def _load_run_config(path, algorithm):
    """Option values from a TOML/JSON file whose keys are config field names."""
    from refimpl import papers
    from .tools.sweep import read_document
    paper = papers.of_algorithm(algorithm)
    doc = read_document(path)
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: expected a table of option values")
    if "fixed" in doc and set(doc) <= {"fixed", "runner", "seeds", "grid", "description"}:
        # a sweep spec: its [fixed] table is a set of run options; the rest would be dropped
        dropped = sorted(set(doc) - {"fixed", "description"} - ({"runner"} if doc.get("runner") == algorithm else set()))
        if dropped:
            raise ValueError(f"{path} is a sweep spec: {dropped} are not options of one run (a run has one "
                             f"runner, one seed and no grid); run it with `refimpl sweep {path}`, or give --config "
                             f"a file of run options (a spec with only [fixed] is read as one)")
        doc = doc["fixed"]
        if not isinstance(doc, dict):
            raise ValueError(f"{path}: [fixed] must be a table of option values")
    allowed = {o.field: o for o, _ in paper.options_for(algorithm)}
    # replay files that are not Config fields (SSCA's --init / --batches); the others' are options
    allowed_extra = {"data", "data_dir", "out"} | {flag for flag, _ in paper.replay_args}
    bad = sorted(set(doc) - set(allowed) - allowed_extra)
    if bad:
        raise ValueError(f"{path}: {bad} do not apply to {algorithm}; allowed keys: {sorted(set(allowed) | allowed_extra)}")
    vals = {}
    from dataclasses import fields as _fields
    from .tools.sweep import typed_value
    cls = paper.config_class()
    typed = {f.name for f in _fields(cls)}
    for k, v in doc.items():
        o = allowed.get(k)
        if isinstance(v, list) and o is not None and o.text:
            v = ",".join(str(x) for x in v)
        elif k in typed and not isinstance(v, list):
            try:
                v = typed_value(cls, k, v)
            except ValueError as exc:
                raise ValueError(f"{path}: {exc}")
        if k == "seed" and isinstance(v, int) and v < 0:
            raise ValueError(f"{path}: seed must be a whole number >= 0, got {v}")
        vals[k] = v
    return vals


def _load_data(args):
    from refimpl.core.data import load_embedded_mnist, load_idx_dir, load_npz_dataset
    if args.data and args.data_dir:
        raise ValueError("give --data or --data-dir, not both")
    if getattr(args, "label_base", 0) and not args.data:
        raise ValueError("--label-base applies to --data FILE.npz only")
    if args.data:
        ds = load_npz_dataset(args.data, label_base=getattr(args, "label_base", 0))
        _info(args, f"note: --data {args.data}: {ds.n_train} training and {len(ds.y_test)} test samples, "
                    f"{ds.n_features} features, {ds.n_classes} classes")
        return ds
    if args.data_dir:
        return load_idx_dir(args.data_dir)
    return load_embedded_mnist()


def _floats(name, text):
    try:
        vals = [float(v) for v in str(text).split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"--{name} takes a number or a comma-separated list of numbers, got {text!r}")
    if not vals:
        raise ValueError(f"--{name} is empty")
    return vals


def _config(args, family, algorithm, **fixed):
    """The family's Config from the parsed options (fields the algorithm does not take keep their
    defaults)."""
    from dataclasses import fields
    from refimpl import papers
    paper = papers.get(family)
    cls = paper.config_class()
    # the command line's own defaults hold for every algorithm of the paper, offered or not
    vals = paper.command_line_defaults()
    vals.update({f.name: getattr(args, f.name) for f in fields(cls) if getattr(args, f.name, None) is not None})
    vals.update(fixed)
    vals[paper.method_field] = algorithm
    return cls(**vals)


def _ints(name, text):
    try:
        return [int(s) for s in str(text).split(",") if s.strip()]
    except ValueError:
        raise ValueError(f"--{name} takes a comma-separated list of integers, got {text!r}")


def _vfl_config(args, method):
    return _config(args, "vfl", method)


def cmd_run_vfl(args):
    from refimpl import vfl
    from refimpl.core.plots import plot_vfl
    cfg = _vfl_config(args, args.algorithm)
    step = max(1, cfg.rounds // 20)
    bar = _progress(args, cfg.rounds, cfg.method, "event" if cfg.method == "async-vfl" else "round")

    def progress(r, tr):
        line = (f"[{cfg.method}] {'event' if cfg.method == 'async-vfl' else 'round'} {r:>5}  "
                f"time {tr.metrics['time'][-1]:9.2f}  test acc {tr.metrics['test_accuracy'][-1]:.4f}")
        if bar.bar_mode:
            bar(f"time {tr.metrics['time'][-1]:.1f} acc {tr.metrics['test_accuracy'][-1]:.4f}", n=r)
        elif r % step == 0 or r == 0:
            bar(line)
    with bar:
        tr = vfl.run(cfg, _load_data(args), progress=progress)
    if tr.config.get("speeds_note"):
        _say(f"note: {tr.config['speeds_note']}")
    if not args.quiet and tr.metrics.get("time"):
        unit = "events" if cfg.method == "async-vfl" else "rounds"
        n = int(tr.metrics["round"][-1]) if tr.metrics.get("round") else len(tr.metrics["time"]) - 1
        _say(f"[{cfg.method}] final: {n} {unit}, simulated time {tr.metrics['time'][-1]:.6g}, "
             f"test accuracy {tr.metrics['test_accuracy'][-1]:.4f}")
    if args.out:
        tr.save(args.out)
        _write_dump_mat(args.out, tr)
        plot_vfl({cfg.method: tr}, os.path.join(args.out, "trace.png"))
        _info(args, f"trace written to {args.out}")
    if not tr.status.startswith("finished"):
        _say(f"refimpl: run stopped: {tr.status}")
        return 3
    return 0


def _write_dump_mat(out_dir, trace):
    """The per-round dumps also as ``dump.mat`` (MATLAB v7, variables r<round>_<name>)."""
    from refimpl.core.replay import dump_arrays, write_dump_mat
    if dump_arrays(trace.arrays):
        write_dump_mat(os.path.join(out_dir, "dump.mat"), trace.arrays)


def cmd_compare(args):
    if args.what == "mfcgd":
        return cmd_compare_mfcgd(args)
    from refimpl.core.plots import plot_vfl
    from refimpl.core.trace import write_csv
    from refimpl.vfl.experiment import compare_vfl
    if args.server_time is not None:
        return cmd_compare_regimes(args)
    if args.protocol is not None:
        raise ValueError("--protocol applies with --server-time (the regime comparison)")
    cfg = _vfl_config(args, "flexvfl")
    if cfg.time_budget is None:
        # every method runs on one simulated clock: the same default budget as the regime comparison
        from dataclasses import replace as _replace
        cfg = _replace(cfg, time_budget=1000.0)
        _info(args, "note: no --time-budget given: every method runs for 1000 units of simulated time")
    targets = _floats("targets", args.targets)
    with _progress(args, 5, "compare vfl", "method") as bar:
        traces, curve, table = compare_vfl(cfg, _load_data(args), targets=targets, progress=bar)
    for row in table:
        print("  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        write_csv(os.path.join(args.out, "accuracy_vs_time.csv"), curve)
        write_csv(os.path.join(args.out, "time_to_target.csv"), table)
        plot_vfl(traces, os.path.join(args.out, "accuracy_vs_time.png"))
        for meth, tr in traces.items():
            tr.save(os.path.join(args.out, meth))
        _info(args, f"comparison written to {args.out}")
    return 0


def cmd_compare_regimes(args):
    """refimpl compare vfl --server-time S1,S2,… --protocol tuned|authors."""
    from refimpl.core.plots import plot_vfl_regimes
    from refimpl.core.trace import write_csv
    from refimpl.vfl import regime as RG
    server_times = RG.parse_server_times(args.server_time)
    protocol = RG.check_protocol(args.protocol or "tuned")
    if args.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
    targets = _floats("targets", args.targets)
    target = targets[len(targets) // 2]
    cfg = _vfl_config(args, "flexvfl")
    if cfg.time_budget is None:
        from dataclasses import replace
        cfg = replace(cfg, time_budget=1000.0)
    out = args.out
    if out:
        _prepare_out(out, getattr(args, "overwrite", False), holds=("regimes.json",))
    traces = {}
    with _progress(args, len(server_times) * len(RG.REGIME_METHODS), f"regimes ({protocol})", "run") as bar:
        rows = RG.regime_table(cfg, _load_data(args), server_times, protocol, target=target, seeds=args.seeds,
                               progress=bar, traces=traces)
    summary = {"protocol": protocol, "target": target, "server_times": server_times, "ratios": {}, "crossover": {}}
    for other in ("sync-vfl", "async-vfl", "pbcd"):
        r = RG.ratios(rows, other)
        summary["ratios"][other] = {str(k): v for k, v in r.items()}
        summary["crossover"][other] = RG.crossover(r)
    print(f"time to {target:g} (protocol {protocol}; S in units of the fastest party's mean step)")
    for S in server_times:
        cells = [f"{r['method']}={'-' if r['time_to_target'] is None else format(r['time_to_target'], '.1f')}"
                 for r in rows if r["server_time"] == S]
        print(f"  S = {S:g}: " + "  ".join(cells))
    for other, c in summary["crossover"].items():
        r = summary["ratios"][other]
        print(f"  {other}/flexvfl: " + ", ".join(f"S={k}: {'-' if v is None else format(v, '.3g')}" for k, v in r.items())
              + ("" if c is None else f"; crossover between S = {c[0]:g} and {c[1]:g}"))
    if out:
        flat = [{k: v for k, v in r.items() if k not in ("grid", "per_seed")} for r in rows]
        write_csv(os.path.join(out, "time_to_target_by_regime.csv"), flat)
        with open(os.path.join(out, "regimes.json"), "w") as fh:
            json.dump({"summary": summary, "rows": rows}, fh, indent=1, default=str)
        plot_vfl_regimes(traces, os.path.join(out, "accuracy_vs_time_by_regime.png"), target)
        _info(args, f"regime comparison written to {out}")
    return 0


def _mfcgd_config(args, method):
    steps = int(args.steps) if getattr(args, "steps", None) is not None else 2000
    eval_every = getattr(args, "eval_every", None)
    return _config(args, "mfcgd", method, eval_every=int(eval_every) if eval_every else max(1, steps // 100))


def cmd_run_mfcgd(args):
    from refimpl import mfcgd
    from refimpl.core.plots import plot_mfcgd
    cfg = _mfcgd_config(args, args.algorithm)
    bar = _progress(args, cfg.steps, cfg.method, "step")

    def progress(t, xb):
        if bar.bar_mode:            # without a terminal the MFCGD runs print no per-step lines
            bar("", n=t)
    with bar:
        tr = mfcgd.run(cfg, _load_data(args) if cfg.problem == "drfl" and (args.data or args.data_dir) else None,
                       progress=progress)
    if not args.quiet:
        th = tr.config.get("theorem_conditions")
        if th and not th["all_met"]:
            _say(f"note: these parameters violate {len(th['failed'])} condition(s) of Theorem {th['theorem']}: "
                 + "; ".join(th["failed"]))
        capped = {k: v for k, v in tr.config.get("capped_steps", {}).items() if v}
        if capped:
            _say("note: α_t, β_t, ϱ_t = c η_t² are capped at 1; the cap was active in steps "
                 + ", ".join(f"1..{v} ({k})" for k, v in capped.items()) + " (outside the theorems' n >= (c k)^3)")
        for k in ("grad_norm", "worst_client_accuracy", "average_accuracy", "post_adaptation_loss"):
            if tr.metrics.get(k):
                _say(f"[{cfg.method}/{cfg.problem}] final {k} = {tr.metrics[k][-1]:.5g}")
        if "fedavg" in tr.extra:
            _say(f"[fedavg/{cfg.problem}] same split: {tr.extra['fedavg']}")
    if args.out:
        if "fedavg" in tr.extra:
            tr.config["fedavg_same_split"] = tr.extra["fedavg"]
        tr.save(args.out)
        _write_dump_mat(args.out, tr)
        plot_mfcgd({cfg.method: tr}, os.path.join(args.out, "trace.png"))
        _info(args, f"trace written to {args.out}")
    if not tr.status.startswith("finished"):
        _say(f"refimpl: run stopped: {tr.status}")
        return 3
    return 0


def cmd_compare_mfcgd(args):
    from dataclasses import replace
    from refimpl.mfcgd.experiment import run_mfcgd_config
    from refimpl.core.plots import plot_mfcgd
    from refimpl.core.trace import write_csv
    base = _mfcgd_config(args, "mfcgd")
    traces, rows = {}, []
    for meth in ("mfcgd", "adamfcgd", "comfedl", "local-scgdm"):
        # AdaMFCGD's step is γη A_t^{-1} with A_t ⪰ ρI: γρ gives it MFCGD's step where A_t ≈ ρI
        tr = run_mfcgd_config(replace(base, method=meth, gamma=base.gamma * base.rho if meth == "adamfcgd" else base.gamma))
        traces[meth] = tr
        for st, g, smp, rnd in zip(*(tr.series(k) for k in ("step", "grad_norm", "samples", "rounds"))):
            rows.append({"method": meth, "step": int(st), "grad_norm": float(g), "samples": int(smp), "rounds": int(rnd)})
        if not args.quiet:
            _say(f"{meth}: final ||∇F|| {tr.series('grad_norm')[-1]:.4g}")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        write_csv(os.path.join(args.out, "grad_norm.csv"), rows)
        plot_mfcgd(traces, os.path.join(args.out, "grad_norm.png"))
        _info(args, f"comparison written to {args.out}")
    return 0


BOUND_CONSTANTS = """constants (the assumptions of [MFCGD], docs/mfcgd.md §3):
  C_f, C_g   Lipschitz constants of the outer map f and the inner map g: ||∇f|| ≤ C_f, ||∇g|| ≤ C_g
             (so every ||∇F(x)|| ≤ C_f·C_g, the cap a right side must be below to say anything)
  L_f, L_g   smoothness constants of f and g (their gradients are L_f-, L_g-Lipschitz)
  sigma      bound on the standard deviation of the stochastic values and gradients of f and g
  delta_f    heterogeneity of the clients' outer maps: how far their gradients ∇f^m differ
  delta_g    heterogeneity of the clients' inner maps: how far the g^m differ (e.g. max ||b_m − b_j||
             on the synthetic problem)
  F_gap      F(x̄_1) − F*, the initial optimality gap
the output ends with the verdict: vacuous or informative, the smallest T at which the right side
drops below the cap with these parameters, and the tightest condition"""


def cmd_bound(args):
    from refimpl.mfcgd.bounds import Constants
    c = Constants.from_json(args.constants)
    try:
        return _bound_report(args, c)
    except (OverflowError, ZeroDivisionError) as exc:
        big = max(c.__dict__.items(), key=lambda kv: abs(float(kv[1])))
        raise ValueError(f"--constants {args.constants}: the theorem's constants overflow the float range "
                         f"(±1.8e308) with these values ({exc}; largest: {big[0]} = {big[1]:g}); "
                         "give constants whose squares and products stay below about 1e150")


def _bound_report(args, c):
    from refimpl.mfcgd.bounds import (bound_verdict, check_run, find_theorem_parameters, theorem_conditions,
                                      TheoremParams)
    if args.theorem == 2 and (args.rho is not None or args.A_rms is not None):
        raise ValueError("--rho and --A-rms belong to Theorem 1 (AdaMFCGD); Theorem 2 has A_t = I, ρ = 1")
    rho = 1.0 if args.theorem == 2 else (0.5 if args.rho is None else args.rho)
    A_rms = None if args.theorem == 2 else (1.0 if args.A_rms is None else args.A_rms)
    q = 10 if args.q is None else args.q
    if args.params:
        from .tools.sweep import read_document
        doc = read_document(args.params)
        try:
            p = TheoremParams(**doc)
        except TypeError:
            raise ValueError(f"--params {args.params}: expected exactly the keys k, n, c1, c2, c3, gamma, q, B; "
                             f"got {sorted(doc) if isinstance(doc, dict) else type(doc).__name__}")
        if args.q is not None and int(args.q) != int(p.q):
            raise ValueError(f"q given twice: --q {args.q} and q = {p.q} in --params {args.params}; give one")
        q = int(p.q)
    check_run(args.T, q, rho, A_rms)
    if not args.params:
        p, info = find_theorem_parameters(c, args.T, q, rho)
        if p is None:
            print(json.dumps({"found": False, **info}, indent=1, default=str))
            return 1
    conds = theorem_conditions(c, p, rho)
    for r in conds:
        print(f"{'met    ' if r['met'] else 'NOT MET'}  {r['name']}:  {r['lhs']:.6g} {r['relation']} {r['rhs']:.6g}")
    report = bound_verdict(c, p, args.T, args.theorem, rho, A_rms, conds)
    print(json.dumps({"theorem": args.theorem, "T": args.T, "params": {k: float(v) for k, v in p.__dict__.items()},
                      **report}, indent=1, ensure_ascii=False))
    print(f"verdict: {report['verdict']}")
    return 0 if all(r["met"] for r in conds) else 1


def cmd_sweep(args):
    from refimpl.tools.sweep import MAX_CELLS, run_sweep
    if args.max_cells is not None and args.max_cells < 1:
        raise ValueError(f"--max-cells must be >= 1, got {args.max_cells}")
    with _progress(args, None, "sweep", "msg") as bar:
        counts = run_sweep(args.spec, args.out, args.executor, args.workers, args.scheduler,
                           progress=bar, overwrite=args.overwrite, max_cells=args.max_cells or MAX_CELLS)
    print(json.dumps(counts))
    return 0 if counts["failed"] == 0 else 1


def cmd_sweep_summary(args):
    from refimpl.tools.sweep import summarize
    if args.top < 1:
        raise ValueError(f"--top must be >= 1 (how many best cells to print), got {args.top}")
    rows, failures = summarize(args.dir, args.criterion, args.metric, args.top)
    written = [f for f in ("summary.csv", "curves.csv", "failures.csv", "best.png") if os.path.exists(os.path.join(args.dir, f))]
    _say(f"written to {args.dir}: {', '.join(written)}")
    for r in rows[:args.top]:
        print(", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()))
    if failures:
        print(f"{len(failures)} failed tasks (see {args.dir}/failures.csv):")
        for f in failures:
            print(f"  {f['task']} cell {f['cell']} seed {f['seed']}: {f['error']}")
    return 0


def cmd_reproduce(args):
    from refimpl.tools.reproduce import reproduce, tune_and_reproduce
    for flag in ("rounds", "seeds"):
        v = getattr(args, flag, None)
        if v is not None and v < 1:
            raise ValueError(f"--{flag} must be >= 1, got {v}")
    if args.tune:
        for flag in ("paper", "quick"):
            if getattr(args, flag):
                raise ValueError(f"--tune runs its own protocol (K = 10, B = 100, T = --rounds or 1000); drop --{flag}")
        with _progress(args, None, f"reproduce {args.name} --tune", "msg") as bar:
            path = tune_and_reproduce(args.name, args.out, args.data_dir, args.seeds, args.rounds, args.resume,
                                      progress=bar, executor=args.executor, workers=args.workers,
                                      scheduler=args.scheduler)
        _info(args, f"reproduction written to {args.out} ({path}; tuned_results.csv)")
        return 0
    with _progress(args, None, f"reproduce {args.name}", "msg") as bar:
        path = reproduce(args.name, args.out, args.data_dir, args.seeds, args.rounds, args.paper, args.resume,
                         args.quick, progress=bar, preset=args.preset, executor=args.executor,
                         workers=args.workers, scheduler=args.scheduler)
    _info(args, f"reproduction written to {args.out} ({path})")
    return 0


def cmd_report(args):
    from refimpl.tools.report import build_report
    with _progress(args, None, "report", "msg") as bar:
        path, records = build_report(args.out, args.quick, args.seeds, progress=bar, executor=args.executor,
                                     workers=args.workers, scheduler=args.scheduler)
    failed = [r.id for r in records if not r.holds]
    print(f"{path}: {len(records) - len(failed)} of {len(records)} checks hold"
          + (f"; not holding: {', '.join(failed)}" if failed else ""))
    return 0


def _prepare_out(out, overwrite, holds=("trace.json", "trace.npz", "tradeoff.csv")):
    """Check (and create) an output directory before any work is done: a run that cannot be
    saved, or would silently replace an earlier one, is refused up front."""
    from .tools.sweep import make_out_dir
    make_out_dir(out)
    found = [h for h in holds if os.path.exists(os.path.join(out, h))]
    if found and not overwrite:
        raise ValueError(f"--out {out} already holds a result ({', '.join(found)}); "
                         "pass --overwrite to replace it, or choose another directory")


#: what a run or a λ/U study writes into --out (--overwrite removes these, and only these)
_RESULT_FILES = ("trace.json", "trace.npz", "trace.png", "dump.mat", "tradeoff.csv", "tradeoff.png")


def _clear_stale_result(out, since):
    """After an --overwrite run has written its result: remove what is left of the previous
    result refimpl wrote into ``out`` and this run did not rewrite (modified before ``since``) —
    a run's files and a λ/U study's ``lam=*`` / ``U=*`` run directories — so that the directory
    holds only the new result. Until then the old result stays whole (a failed run replaces
    nothing); files refimpl did not write are left alone."""
    import shutil
    for name in os.listdir(out):
        path = os.path.join(out, name)
        if name in _RESULT_FILES and os.path.isfile(path) and os.path.getmtime(path) < since:
            os.remove(path)
        elif (name.startswith(("lam=", "U=")) and os.path.isdir(path)
              and os.path.exists(os.path.join(path, "trace.json"))
              and os.path.getmtime(os.path.join(path, "trace.json")) < since):
            shutil.rmtree(path)


def cmd_run(args):
    created = bool(args.out) and not os.path.exists(args.out)
    if args.out:
        _prepare_out(args.out, args.overwrite)
    import time as _time
    since = _time.time()
    try:
        code = _dispatch_run(args)
    except BaseException:
        if created and os.path.isdir(args.out) and not os.listdir(args.out):
            os.rmdir(args.out)              # refused before anything was written: leave no empty directory
        raise
    if args.out and args.overwrite and not created:
        _clear_stale_result(args.out, since)
    if not args.out and not args.quiet:
        _say("note: no --out given, so nothing was saved (pass --out DIR to keep the trace)")
    return code


def _check_preset(args, cfg):
    """A flag given explicitly that the preset also sets is a contradiction: name it."""
    from refimpl.ssca.experiment import preset_values
    given = {tok.split("=", 1)[0] for tok in getattr(args, "argv", []) if tok.startswith("--")}
    from_config = getattr(args, "config_keys", set())
    for key, value in preset_values(cfg.preset, cfg.setting, cfg.algorithm, cfg.batch).items():
        flag = "--" + key.replace("_", "-")
        if getattr(cfg, key) == value:
            continue
        if flag in given:
            raise ValueError(f"{flag} {getattr(cfg, key)} conflicts with --preset {cfg.preset}, which sets "
                             f"{key} = {value}; drop one of them")
        if key in from_config:
            raise ValueError(f"--config {args.config} sets {key} = {getattr(cfg, key)}, which conflicts with --preset "
                             f"{cfg.preset} ({key} = {value}); drop one of them")


def _dispatch_run(args):
    if args.family == "vfl":
        return cmd_run_vfl(args)
    if args.family == "mfcgd":
        return cmd_run_mfcgd(args)
    data = _load_data(args)
    snaps = _ints("snapshots", args.snapshots)
    lams = _floats("lam", getattr(args, "lam", 0.0))
    Us = _floats("U", getattr(args, "U", 0.13))
    base = _config(args, "ssca", args.algorithm, lam=lams[0], U=Us[0], snapshots=snaps)
    _check_preset(args, base)
    base.resolved()
    from dataclasses import replace as _replace
    for name, values in (("lam", lams), ("U", Us)):      # every value of a list is checked before the first run
        for v in values[1:]:
            try:
                _replace(base, **{name: v}).resolved()
            except ValueError as exc:
                raise ValueError(f"--{name} {getattr(args, name)}: the value {v:g} is not allowed ({exc})")
    init = None
    if args.init and str(args.init).endswith(".mat"):
        from refimpl.core.matfiles import mat_initial_point
        init = mat_initial_point(args.init)
    elif args.init:
        with _np_load("init", args.init) as z:
            if "W1" not in z or "W2" not in z:
                raise ValueError(f"{args.init}: needs arrays W1 and W2")
            init = (z["W1"], z["W2"])
    batches = _np_load("batches", args.batches) if args.batches else None
    sweep = ("U", Us) if len(Us) > 1 else ("lam", lams) if len(lams) > 1 else None
    if sweep is None:
        return _run_one(args, base.resolved(), data, init, batches, args.out)[0]
    from dataclasses import replace
    name, values = sweep
    rows, code = [], 0
    for v in values:
        out = os.path.join(args.out, f"{name}={v:g}") if args.out else None
        c, trace = _run_one(args, replace(base, **{name: v}).resolved(), data, init, batches, out)
        code = max(code, c)
        rows.append(_tradeoff_row(name, v, trace))
    if args.out:
        from refimpl.core.plots import plot_tradeoff
        from refimpl.core.trace import write_csv
        write_csv(os.path.join(args.out, "tradeoff.csv"), rows)
        plot_tradeoff(rows, name, os.path.join(args.out, "tradeoff.png"))
        _info(args, f"trade-off over {name} written to {args.out}/tradeoff.csv")
    for r in rows:
        print(", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()))
    return code


def _np_load(flag, path):
    """np.load of --init / --batches, or a one-line error naming the flag and the file."""
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise
    except (ValueError, OSError, EOFError) as exc:
        raise ValueError(f"--{flag} {path}: not a NumPy .npy/.npz file without pickled objects ({exc})")


def _tradeoff_row(name, value, trace):
    """Final point of a run for the ||ω||² vs training-cost trade-off ([SSCA], Fig. 4); the
    training cost here is the data term (1/N) Σ ℓ, without λ||ω||²."""
    sq = trace.series("sq_norm")[-1]
    lam = trace.config.get("lam", 0.0) if name == "lam" else 0.0
    row = {name: float(value), "round": int(trace.series("round")[-1]),
           "sq_norm": float(sq), "data_loss": float(trace.series("train_cost")[-1] - lam * sq),
           "test_accuracy": float(trace.series("test_accuracy")[-1]), "status": trace.status}
    if "slack" in trace.metrics:
        row["slack"] = float(trace.series("slack")[-1])
    return row


def _report_constraint(args, cfg, trace):
    """Whether the true constraint of (40) holds at the end, recorded in the trace and printed; a
    warning when the surrogate subproblem was feasible (slack 0) while the true constraint is not."""
    value, slack = trace.metrics["constraint_value"][-1], trace.metrics["slack"][-1]
    violation = max(0.0, value - cfg.U)
    check = {"U": cfg.U, "final_constraint_value": value, "holds": violation == 0.0, "violation": violation,
             "final_slack": slack}
    trace.config["constraint_check"] = check
    if violation == 0.0:
        _info(args, f"constraint of (40): final data loss {value:.4g} <= U = {cfg.U:g}: holds")
        return
    _say(f"constraint of (40): final data loss {value:.4g} > U = {cfg.U:g}: violated by {violation:.3g}")
    if slack == 0.0:
        _say("warning: the surrogate subproblem was feasible (slack 0) while the true constraint is not: the iterate "
             "has not reached a feasible point of (40) yet (more rounds, or a larger U)")


def _run_one(args, cfg, data, init, batches, out_dir):
    from refimpl import ssca
    from refimpl.core.plots import plot_trace
    step = max(1, cfg.rounds // 20)
    if cfg.algorithm.startswith("ssca") and not args.quiet:
        from refimpl.core.schedules import PowerLaw, check_step_sizes
        failed = [c.name for c in check_step_sizes(PowerLaw(cfg.rho_a, cfg.rho_alpha),
                                                    PowerLaw(cfg.gamma_a, cfg.gamma_alpha)) if not c.met]
        if failed:
            _say(f"note: ρ_t = {cfg.rho_a:g}/t^{cfg.rho_alpha:g}, γ_t = {cfg.gamma_a:g}/t^{cfg.gamma_alpha:g} "
                 f"violate {', '.join(failed)} of (4)/(6): the run is outside Theorems 1–4's assumptions")

    bar = _progress(args, cfg.rounds, f"{cfg.algorithm}/{cfg.setting}", "round")

    def progress(t, m):
        if bar.bar_mode:
            bar(f"cost {m['train_cost']:.4f} acc {m['test_accuracy']:.4f}", n=t)
        elif t % step == 0 or t in (0, cfg.rounds):
            extra = (f"  constraint {m['constraint_value']:.4f} (U {cfg.U:g})  slack {m['slack']:.3g}  "
                     f"ν {m['multiplier']:.4g}" if "slack" in m else "")
            bar(f"[{cfg.algorithm}/{cfg.setting}] round {t:>5}/{cfg.rounds}  "
                f"cost {m['train_cost']:.4f}  test acc {m['test_accuracy']:.4f}{extra}")

    with bar:
        trace = ssca.run(cfg, data, init=init, batches=batches, progress=progress)
    if cfg.algorithm == "ssca-constrained" and trace.metrics.get("constraint_value"):
        _report_constraint(args, cfg, trace)
    if out_dir:
        trace.save(out_dir)
        _write_dump_mat(out_dir, trace)
        png = plot_trace(trace, os.path.join(out_dir, "trace.png"), f"{cfg.algorithm}, {cfg.setting}-based, B={cfg.batch}")
        _info(args, f"trace written to {out_dir}" + ("" if png else " (no PNG: matplotlib not installed)"))
    if not trace.status.startswith("finished"):
        _say(f"refimpl: run stopped: {trace.status}")
        return 3, trace
    if "solver note" in trace.status:
        _say(f"note: {trace.status}")
    return 0, trace


def cmd_mutations(args):
    from refimpl.tools import mutations as MU
    cat = MU.load_catalogue(args.catalogue) if args.catalogue else MU.load_catalogue()
    if args.only_paper:
        papers = [p.strip() for p in args.only_paper.split(",")]
        bad = [p for p in papers if p not in MU.PAPERS]
        if bad:
            raise ValueError(f"--only-paper {args.only_paper}: unknown {bad}; allowed {', '.join(MU.PAPERS)}")
        cat = [m for m in cat if m.paper in papers]
    if args.only:
        ids = [i.strip() for i in args.only.split(",")]
        unknown = sorted(set(ids) - {m.id for m in cat})
        if unknown:
            raise ValueError(f"--only: unknown mutation ids {unknown}")
        cat = [m for m in cat if m.id in ids]
    from refimpl.tools.engine import resolve_workers
    args.workers = resolve_workers(args.workers, len(cat), "mutations")
    if not args.quiet:
        _say(f"{len(cat)} mutations, {args.workers} at a time; each runs its paper's theorem checks (quick) on a mutated copy")
    vectors_dir = None
    if getattr(args, "vectors", False):
        import tempfile
        from refimpl.conformance.vectors import export
        vectors_dir = tempfile.mkdtemp(prefix="refimpl-vectors-")
        export(vectors_dir)
        if not args.quiet:
            _say("each mutated copy runs the conformance vectors exported from the unmutated package instead")
    with _progress(args, len(cat), "mutations", "mutation") as bar:
        results = MU.run_catalogue(cat, workers=args.workers, progress=bar, vectors_dir=vectors_dir)
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
            _say(f"mutations no vector catches ({len(missed)}): {', '.join(missed)}")
        return 0
    if missed:
        _say(f"mutations no theorem check caught: {', '.join(missed)}")
        return 1
    return 0


def cmd_verify(args):
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
    for flag in ("only_paper", "catalogue", "markdown", "vectors"):
        if getattr(args, flag):
            raise ValueError(f"--{flag.replace('_', '-')} applies only with --mutations")
    from refimpl.tools.verify import format_table, run_checks, write_json
    only = [s.strip() for s in args.only.split(",")] if args.only else None
    if args.coverage:
        return _verify_coverage(args, only)
    import time as _time
    from refimpl.tools.verify import cpu_seconds, peak_rss_mb
    ids, quick, name = _verify_selection(args, only)
    t0, c0 = _time.perf_counter(), cpu_seconds()
    with _progress(args, len(ids), name, "check") as bar:
        records = run_checks(ids, quick=quick, progress=bar, executor=args.executor, workers=args.workers,
                             scheduler=args.scheduler)
        bar("", n=len(records))
    print(format_table(records))
    if args.profile:
        from refimpl.tools.verify import TARGETS, format_profile
        print()
        print(format_profile(records, _time.perf_counter() - t0, cpu_seconds() - c0, peak_rss_mb(),
                             None if only else TARGETS.get(name)))
    if args.json:
        write_json(records, args.json)
    from refimpl.tools.verify import claims_line, failing, record_claims
    record_claims(records, quick)
    claims = [r.id for r in records if not r.holds and r.details.get("kind") == "claim"]
    if claims:
        _say(f"claims of the papers not reproduced here (reported, see the table): {', '.join(claims)}")
    if only is None and not any(r.details.get("kind") == "claim" for r in records):
        print(claims_line())
    fatal = failing(records, args.strict)
    if fatal:
        _say(f"checks not holding: {', '.join(fatal)}")
        return 1
    return 0


def _verify_selection(args, only):
    """(check ids, quick sizes?, command name) of a verify command: the theorem-kind tier by
    default; ``--claims`` the papers' experimental claims; ``--all`` both tiers; ``--full`` both
    tiers at full sizes; ``--only`` the ids given (at full sizes with ``--full``)."""
    from refimpl.tools.verify import tier_ids
    quick = not args.full
    if only is not None:
        return only, quick, "verify"
    if args.full:
        return tier_ids(), False, "verify --full"
    if args.all:
        return tier_ids(), True, "verify --all"
    if args.claims:
        return tier_ids(("claim",)), True, "verify --claims"
    return tier_ids(("theorem",)), True, "verify"


def _verify_coverage(args, only):
    """verify --coverage: the theorem-kind checks in this process under a line tracer; the table of
    what they execute per module (and, with --json, the lines no check executes)."""
    from refimpl.tools.verify import failing, format_coverage, format_table, run_coverage
    given = [f for f, default in (("executor", "local"), ("workers", None), ("scheduler", None), ("profile", False))
             if getattr(args, f, default) != default]
    if given:
        raise ValueError(f"--{given[0]} does not apply with --coverage (the checks run in this process, traced)")
    with _progress(args, None, "verify --coverage", "check") as bar:
        records, rows = run_coverage(not args.full, bar, only)
    print(format_table(records))
    print()
    print(format_coverage(rows))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"checks": [r.id for r in records], "quick": not args.full, "modules": rows}, fh, indent=1)
    fatal = failing(records, args.strict)
    if fatal:
        _say(f"checks not holding: {', '.join(fatal)}")
        return 1
    return 0


def _batch_list(text):
    try:
        out = [int(b) for b in text.split(",")]
    except ValueError:
        raise ValueError(f"--batches {text}: expected comma-separated whole numbers, e.g. 10,100,600")
    if any(b < 1 for b in out):
        raise ValueError(f"--batches {text}: batch sizes must be >= 1")
    return out


def cmd_bench(args):
    if args.breakdown and args.what != "ssca":
        raise ValueError("--breakdown applies to bench ssca only")
    if args.repeats < 1:
        raise ValueError(f"--repeats must be >= 1, got {args.repeats}")
    from refimpl.tools.bench import bench_constrained, bench_ssca, bench_vfl, format_bench, format_constrained, format_vfl
    if args.full and args.what != "verify":
        raise ValueError("--full applies to bench verify only")
    if (args.claims or args.cold) and args.what != "verify":
        raise ValueError("--claims and --cold apply to bench verify only")
    if args.what == "verify":
        from refimpl.tools.bench import bench_verify
        tier = "--full" if args.full else "--claims" if args.claims else ""
        with _progress(args, None, "bench verify", "msg") as bar:
            out = bench_verify(tier, cold=args.cold, progress=bar)
        print(out["table"])
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({k: v for k, v in out.items() if k != "table"}, fh, indent=1)
        return 0 if out["returncode"] in (0, 1) else out["returncode"]
    from refimpl.tools.bench import bench_conditions, load_average
    load_before = load_average()
    if args.what == "threads":
        from refimpl.tools.bench import bench_threads, format_threads
        with _progress(args, None, "bench threads", "msg") as bar:
            res = bench_threads(repeats=max(args.repeats, 5), progress=bar)
        print(format_threads(res))
        for line in bench_conditions(load_before, load_average()):
            print(line)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(res, fh, indent=1)
        return 0
    if args.what == "vfl":
        with _progress(args, None, "bench vfl", "msg") as bar:
            rows = bench_vfl(repeats=args.repeats, progress=bar)
        print(format_vfl(rows))
    elif args.what == "paper-scale":
        from refimpl.tools.bench import bench_paper_scale
        rows = bench_paper_scale(args.data_dir, progress=None)
        print(json.dumps(rows, indent=1))
    elif args.what == "mfcgd":
        from refimpl.tools.bench import bench_mfcgd, format_mfcgd
        with _progress(args, None, "bench mfcgd", "msg") as bar:
            rows = bench_mfcgd(repeats=args.repeats, progress=bar)
        print(format_mfcgd(rows))
    elif args.what == "ssca" and args.breakdown:
        from refimpl.tools.bench import bench_ssca_breakdown, format_breakdown
        with _progress(args, None, "bench ssca --breakdown", "msg") as bar:
            rows = bench_ssca_breakdown(batches=_batch_list(args.batches), repeats=args.repeats, progress=bar)
        print(format_breakdown(rows))
    elif args.what == "ssca":
        with _progress(args, None, "bench ssca", "msg") as bar:
            rows = bench_ssca(batches=_batch_list(args.batches), repeats=args.repeats,
                              progress=bar)
        print(format_bench(rows))
    else:
        with _progress(args, None, "bench constrained", "msg") as bar:
            rows = bench_constrained(repeats=args.repeats, progress=bar)
        print(format_constrained(rows))
    for line in bench_conditions(load_before, load_average(), args.what == "ssca" and not args.breakdown, rows):
        print(line)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


def cmd_diagnose(args):
    """refimpl diagnose OURS THEIRS: the first (round, quantity) where the dumps part, and why: a
    baseline rerun from THEIR inputs, then each convention switch (and pairs). Exit codes:
    refimpl.tools.diagnose.EXIT (0 everything compared agrees, 1 differ or left uncompared,
    3 explained by a switch, 4 by the inputs, 5 reruns that could not run; 2 bad input)."""
    import math
    from refimpl.tools import diagnose as DG
    if not (isinstance(args.tol, float) and math.isfinite(args.tol) and args.tol >= 0):
        raise ValueError(f"--tol must be a finite number >= 0 (a relative difference), got {args.tol}")
    allowed = tuple(n.strip() for n in (args.allow_missing or "").split(",") if n.strip())
    ours = DG.load_side(args.ours)
    theirs = DG.load_side(args.theirs, DG.parse_map(args.map))
    cmp_ = DG.compare_dumps(ours, theirs, args.tol)
    rows, verdict, inputs = [], None, None
    if cmp_.divergence is not None and not args.no_rerun and DG._trace_config(args.ours) is not None:
        _info(args, "rerunning refimpl from THEIR inputs (where their dump holds them; OURS's otherwise): "
                    "first without a switch (the baseline), then under each convention switch")
        from refimpl import papers
        doc = DG._trace_config(args.ours)
        paper = papers.get(cmp_.paper)
        algorithm = doc.get(paper.method_field)
        takes = {o.field for o, _ in paper.options_for(algorithm)} if algorithm in paper.algorithms else set()
        data = _load_data(args) if (args.data or args.data_dir) else DG.run_data(args.ours)
        if data is not None:
            _info(args, f"reruns on {data.name} ({data.n_train} training samples"
                        + (", from --data" if (args.data or args.data_dir) else ", the data OURS's run used") + ")")
        rows, verdict = DG.try_switches(args.ours, args.theirs, theirs, cmp_.paper, args.tol, takes,
                                        progress=None if args.quiet else _say, data=data)
        if verdict["kind"] == "inputs":
            inputs = DG.differing_inputs(args.ours, args.theirs, cmp_.paper)
    lines = DG.describe(cmp_, args.tol, verdict, allowed, inputs)
    for ln in lines:
        print(ln)
    if args.report:
        png = DG.write_report(args.report, cmp_, lines, rows)
        _info(args, f"report written to {args.report}" + ("" if png else " (no PNG: matplotlib not installed)"))
    return DG.verdict_code(cmp_, verdict, allowed)


def cmd_vectors(args):
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
    _info(args, f"{n} vector files ({args.format}) with schemas and manifest.json written to {args.dir}")
    return 0


def cmd_crosscheck(args):
    from refimpl.core.trace import Trace, crosscheck

    def load(path):
        if not str(path).endswith(".mat"):
            return Trace.load(path)
        from refimpl.core.matfiles import mat_snapshots, parse_map
        tr = Trace(config={"source": str(path)})
        tr.snapshots = mat_snapshots(path, parse_map(args.map), args.round)
        return tr
    a, b = load(args.a), load(args.b)
    differ = [f"{k}: {a.config.get(k)!r} vs {b.config.get(k)!r}" for k in
              ("algorithm", "method", "setting", "batch", "clients", "seed", "activation", "bias", "hidden")
              if k in a.config and k in b.config and a.config[k] != b.config[k]]
    if differ:
        _say("note: the two runs were configured differently (" + "; ".join(differ) + "); differences below may "
             "come from that")
    if not (math.isfinite(args.tol) and args.tol >= 0):
        raise ValueError(f"--tol must be a finite number >= 0 (a relative difference), got {args.tol}")
    rows = crosscheck(a, b)
    if not rows:
        _say("refimpl: the traces share no snapshot round and no metric")
        return 2
    if not any("@" in r["what"] for r in rows):
        _say("refimpl: no iterates were compared (the traces share no snapshot round); only metrics"
             + ("" if args.metrics_only else " — exit 1 (pass --metrics-only to accept that)"))
    bad = not args.metrics_only and not any("@" in r["what"] for r in rows)
    allowed = {n.strip() for n in (args.allow_missing or "").split(",") if n.strip()}
    from refimpl.core.trace import shifted_agreement
    shifts, uncompared = set(), []
    for r in rows:
        if r.get("skipped"):
            print(f"{r['what']:<22} {r['note']}")
            if r["what"] not in allowed and not r.get("iterates_only"):
                uncompared.append(r["what"])
            continue
        if r.get("one_sided") and r["what"] not in allowed:
            uncompared.append(f"{r['what']} at {len(r['one_sided'])} round{'s' if len(r['one_sided']) > 1 else ''} "
                              "(NaN on one side: not evaluated there)")
        ok = r["rel"] <= args.tol
        bad |= not ok
        note = r.get("note")
        if not ok and "@" in r["what"]:
            rnd = int(r["what"].split("@")[1])
            s = shifted_agreement(a, b, rnd, args.tol)
            if s is not None:
                shifts.add(s)
                note = f"equals the second trace's round {rnd + s}"
        print(f"{r['what']:<22} max|Δ| {r['abs']:.3e}  relative {r['rel']:.3e}  {'ok' if ok else 'DIFFERS'}"
              + (f"  ({note})" if note else ""))
    if len(shifts) == 1:
        s = shifts.pop()
        _say(f"note: the snapshots agree under a shift of one round (first trace's W_r = second's W_{{r{s:+d}}}): "
             "an off-by-one snapshot convention (is round 0 the initial point in both?)")
    if uncompared:
        print("not compared: " + "; ".join(uncompared) + " (exit 1; --allow-missing NAME,… to accept)")
    n_snap = sum(1 for r in rows if "@" in r["what"] and not r.get("skipped"))
    n_met = [r for r in rows if "@" not in r["what"] and not r.get("skipped")]
    print(f"compared {n_snap} snapshot arrays and {len(n_met)} metrics "
          f"({sum(r['rounds'] for r in n_met)} metric values)")
    return 1 if bad or uncompared else 0


def cmd_partition_stats(args):
    """Per-client sizes and label counts of a sample-based split, and the client × label heat map."""
    from refimpl.core.partition import partition_stats
    from refimpl.core.plots import plot_partition
    from refimpl.core.trace import write_csv
    from refimpl.ssca.experiment import RunConfig, client_partition
    data = _load_data(args)
    cfg = RunConfig(clients=args.clients, partition=args.partition, partition_file=args.partition_file,
                    seed=args.seed).resolved()
    stats = partition_stats(client_partition(cfg, data), data.y_train, data.n_classes)
    header = "client  size  " + " ".join(f"{c:>5}" for c in range(data.n_classes))
    print(header)
    for k, (n, row) in enumerate(zip(stats["sizes"], stats["label_counts"])):
        print(f"{k:>6}  {n:>4}  " + " ".join(f"{int(v):>5}" for v in row))
    if args.out:
        from .tools.sweep import make_out_dir
        make_out_dir(args.out)
        rows = [{"client": k, "size": n, **{f"label_{c}": int(v) for c, v in enumerate(row)}}
                for k, (n, row) in enumerate(zip(stats["sizes"], stats["label_counts"]))]
        write_csv(os.path.join(args.out, "partition_stats.csv"), rows)
        png = plot_partition(stats["label_counts"], os.path.join(args.out, "partition.png"),
                             cfg.partition_file or cfg.partition)
        _info(args, f"written to {args.out}: partition_stats.csv" + (", partition.png" if png else ""))
    return 0


def cmd_check_schedule(args):
    from refimpl.core.schedules import PowerLaw, check_step_sizes
    made = []
    for sym, given, a, alpha in (("rho", args.rho, args.rho_a, args.rho_alpha),
                                 ("gamma", args.gamma, args.gamma_a, args.gamma_alpha)):
        if given is not None:
            if alpha is not None:
                raise ValueError(f"--{sym} {given} and --{sym}-alpha {alpha:g} both give {sym}_t: give one")
            made.append(_user_sequence(sym, given, args.T))
            continue
        if alpha is None:
            raise ValueError(f"give {sym}_t as a power law (--{sym}-alpha, with --{sym}-a) or as --{sym} FILE.npy|EXPR")
        try:
            made.append(PowerLaw(a, alpha))
        except ValueError as exc:
            raise ValueError(f"--{sym}-a {a:g} / --{sym}-alpha {alpha:g} (the schedule {sym}_t = a / t^alpha): {exc}")
    rho, gamma = made
    print(f"rho_t: {rho.describe()}; gamma_t: {gamma.describe()}")
    conds = check_step_sizes(rho, gamma)
    for c in conds:
        print(f"{c.equation} {c.name:<22} {'met' if c.met else 'NOT MET'}  {c.reason}")
    failed = [c.name for c in conds if not c.met]
    print("verdict: " + ("every condition of (4) and (6) is met" if not failed
                         else f"not met: {', '.join(failed)}"))
    return 0 if not failed else 1


def _user_sequence(sym, given, T):
    """--rho / --gamma: a .npy of values s_1, s_2, … or a Python expression in t (NumPy as np),
    evaluated at t = 1..T."""
    import numpy as np
    from refimpl.core.schedules import Sequence
    if str(given).endswith(".npy"):
        if not os.path.isfile(given):
            raise ValueError(f"--{sym} {given}: no such file (a .npy of step sizes, or an expression in t)")
        vals = _np_load(sym, given)
        if vals.dtype.kind not in "iuf":
            raise ValueError(f"--{sym} {given}: holds {vals.dtype}; expected real step sizes")
    else:
        t = np.arange(1, T + 1, dtype=np.float64)
        try:
            vals = eval(given, {"__builtins__": {}}, {"t": t, "np": np, "log": np.log, "sqrt": np.sqrt,  # noqa: S307
                                                       "exp": np.exp, "minimum": np.minimum, "maximum": np.maximum})
        except Exception as exc:      # the user's own expression: any error is theirs to see, in one line
            raise ValueError(f"--{sym} {given!r}: not an expression in t ({type(exc).__name__}: {exc}); "
                             "e.g. '0.9 * t**-0.9' or 'np.minimum(1, 2 / t)'")
        vals = np.broadcast_to(np.asarray(vals, dtype=np.float64), t.shape)
    try:
        return Sequence(vals, check_range=False, label=given)
    except ValueError as exc:
        raise ValueError(f"--{sym} {given}: {exc}")


RUN_PARSERS = {}


def _foreign_option(argv):
    """``refimpl run ALGORITHM --option`` where the option belongs to other algorithms: say whose it is."""
    from refimpl import papers
    if len(argv) < 2 or argv[0] != "run" or argv[1] not in papers.algorithms():
        return 0
    paper = papers.of_algorithm(argv[1])
    own = {o.name for o, _ in paper.options_for(argv[1])} | {"--" + d.replace("_", "-") for d, _ in _COMMON}
    own |= {"--" + f.replace("_", "-") for f, _ in paper.replay_args} | {"--quiet", "--help", "--overwrite"}
    for tok in argv[2:]:
        name = tok.split("=", 1)[0]
        if name.startswith("--") and name not in own:
            who = papers.owners(name)
            if who:
                _say(f"refimpl: error: {name} does not apply to {argv[1]}; it is an option of {', '.join(who)} "
                     f"(see refimpl run {argv[1]} --help)")
                return 2
    return 0


def _engine_options(p, workers_help="worker processes; default: the number of cores"):
    """--executor, --workers, --scheduler of the task engine (refimpl.tools.engine)."""
    p.add_argument("--executor", choices=["local", "dask"], default="local",
                   help="local process pool, or Dask (a LocalCluster, or --scheduler)")
    p.add_argument("--workers", type=int, default=None, help=workers_help)
    p.add_argument("--scheduler", default=None, help="Dask scheduler address (tcp://host:8786)")


class _Parser(argparse.ArgumentParser):
    """No prefix matching of long options (``--ta`` is not ``--tau``): an abbreviation is an
    error, never a silent guess; the subcommands' parsers inherit the class."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


def build_parser():
    p = _Parser(prog="refimpl", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    from refimpl import papers
    r = sub.add_parser("run", help="run one algorithm and write its trace",
                       description="Run one algorithm; `refimpl run ALGORITHM --help` lists its options.")
    algs = r.add_subparsers(dest="algorithm", required=True, metavar="ALGORITHM")
    for alg in papers.algorithms():
        RUN_PARSERS[alg] = _add_algorithm_parser(algs, alg)
    cp = sub.add_parser("compare", help="run several methods on the same data, speeds and seed")
    cp.add_argument("what", choices=["vfl", "mfcgd"])
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
    _add_compare_args(cp.add_argument_group("vfl"), "vfl", {"rounds", "batch", "hidden", "seed", "eval_every",
                                                           "server_time", "protocol"})
    rg = cp.add_argument_group("vfl regimes")
    rg.add_argument("--server-time", help="vfl: comma list of server round trips S (units of the fastest party's mean "
                                          "step), e.g. 1,10,50: one panel and one table block per value")
    rg.add_argument("--protocol", choices=["tuned", "authors"], default=None,
                    help="vfl with --server-time: tuned (each method's best η, grid widened until interior) or "
                         "authors (one η, momentum 0.9 re-initialised per round, plain-SGD async, server τ = Q, free "
                         "server compute); default tuned")
    rg.add_argument("--seeds", type=int, default=1, help="vfl with --server-time: seeds per time to target")
    _add_compare_args(cp.add_argument_group("mfcgd"), "mfcgd", {"seed", "eval_every", "backend", "clients", "eta", "diverge_cost_factor",
                                                                 "diverge_sq_norm"})
    cp.set_defaults(fn=cmd_compare, time_budget=None)
    bd = sub.add_parser("bound", help="Theorem 1/2 conditions and right-hand side for given constants",
                        formatter_class=_EpilogFormatter, epilog=BOUND_CONSTANTS)
    bd.add_argument("what", choices=["mfcgd"])
    bd.add_argument("--constants", required=True, help="JSON with C_f, C_g, L_f, L_g, sigma, delta_f, delta_g, F_gap "
                                                       "(defined below)")
    bd.add_argument("--params", help="JSON with k, n, c1, c2, c3, gamma, q, B (default: the parameters meeting every "
                                     "condition with the smallest G, searched)")
    bd.add_argument("--theorem", type=int, choices=[1, 2], default=2,
                    help="1: AdaMFCGD, right side (14); 2: MFCGD (A_t = I), right side (16)")
    bd.add_argument("--T", type=int, default=10000, help="number of steps")
    bd.add_argument("--q", type=int, default=None, help="communication period (default 10, or the q of --params; "
                                                        "giving both with different values is an error)")
    bd.add_argument("--rho", type=float, default=None, help="Theorem 1: ρ of Assumption 5, A_t ⪰ ρI (default 0.5)")
    bd.add_argument("--A-rms", type=float, default=None, help="Theorem 1: sqrt((1/T) Σ E||A_t||²) (default 1)")
    bd.set_defaults(fn=cmd_bound)
    sw = sub.add_parser("sweep", help="run a hyper-parameter grid × seeds (resumable)")
    sw.add_argument("spec", help="TOML or JSON sweep specification")
    sw.add_argument("--out", required=True)
    _engine_options(sw)
    sw.add_argument("--overwrite", action="store_true", help="discard the tasks of another spec in --out")
    sw.add_argument("--max-cells", type=int, default=None,
                    help="run a grid larger than the limit of 10,000 cells (a typo in a range is refused otherwise)")
    sw.add_argument("--quiet", action="store_true")
    sw.set_defaults(fn=cmd_sweep)
    ss = sub.add_parser("sweep-summary", help="per-cell mean and spread over seeds; best cells")
    ss.add_argument("dir")
    ss.add_argument("--criterion", default="final:train_cost",
                    help="final:METRIC (min), -final:METRIC (max), first:METRIC<=V or first:METRIC>=V")
    ss.add_argument("--metric", default=None, help="metric plotted for the best cells")
    ss.add_argument("--top", type=int, default=3)
    ss.set_defaults(fn=cmd_sweep_summary)
    rp = sub.add_parser("reproduce", help="the papers' figures, averaged over seeds")
    rp.add_argument("name", choices=[n for p in papers.papers() for n in p.reproductions])
    rp.add_argument("--out", required=True)
    rp.add_argument("--data-dir", default=None)
    rp.add_argument("--seeds", type=int, default=3)
    rp.add_argument("--rounds", type=int, default=None, help="rounds (steps for mfcgd-rates); default per NAME")
    rp.add_argument("--paper", action="store_true", help="the paper's batch sizes and T = 1000 (needs --data-dir)")
    rp.add_argument("--quick", action="store_true", help="short runs (tests, the quick report)")
    rp.add_argument("--preset", choices=sorted({v for p in papers.papers() for v in p.reproduction_presets}),
                    default="paper",
                    help="SSCA settings: the paper's table, or the authors' scripts (ReLU, bias, their a1/a2/α/τ, A = τ)")
    rp.add_argument("--resume", action="store_true", help="continue an interrupted reproduction in --out")
    rp.add_argument("--tune", action="store_true",
                    help="ssca-sample/-feature with --data-dir: per-method grids on a validation split, then the best")
    _engine_options(rp)
    rp.add_argument("--quiet", action="store_true")
    rp.set_defaults(fn=cmd_reproduce)
    rr = sub.add_parser("report", help="verification suite + reproductions in one REPORT.md")
    rr.add_argument("--out", required=True)
    rr.add_argument("--quick", action="store_true")
    rr.add_argument("--seeds", type=int, default=2)
    _engine_options(rr)
    rr.add_argument("--quiet", action="store_true")
    rr.set_defaults(fn=cmd_report)
    v = sub.add_parser("verify", help="run the verification checks")
    v.add_argument("--quick", action="store_true",
                   help="the checks' reduced sizes: the default of every tier (kept for scripts); --full for full sizes")
    v.add_argument("--claims", action="store_true",
                   help="run the papers' experimental claims (reproductions of experiments, minutes) instead of the "
                        "theorem-kind checks (seconds)")
    v.add_argument("--all", action="store_true", help="both tiers: the theorem-kind checks and the claims")
    v.add_argument("--full", action="store_true", help="both tiers at the checks' full sizes (several minutes)")
    v.add_argument("--list", action="store_true", help="list the checks (id, paper, kind, claim) and exit")
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
    _engine_options(v, "processes running checks (or mutations) at a time; default: the number of cores")
    v.add_argument("--markdown", help="with --mutations: also write the tables as Markdown to this file")
    v.add_argument("--coverage", action="store_true",
                   help="run the theorem-kind checks traced in this process; print the lines they execute per module")
    v.add_argument("--profile", action="store_true",
                   help="also print each check's wall, CPU and Numba seconds and the totals against the target")
    v.set_defaults(fn=cmd_verify)
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
    b.set_defaults(fn=cmd_bench)
    vx = sub.add_parser("vectors", help="conformance vectors for other implementations (docs/conformance.md)")
    vsub = vx.add_subparsers(dest="vectors_cmd", required=True)
    ve = vsub.add_parser("export", help="write the vectors, a JSON Schema per file and a checksummed manifest")
    ve.add_argument("dir")
    ve.add_argument("--paper", default=None, help="comma list of core, ssca, vfl, mfcgd (default: all)")
    ve.add_argument("--format", default="json", choices=("json", "npz", "mat"))
    ve.add_argument("--overwrite", action="store_true", help="write into a non-empty directory")
    ve.add_argument("--quiet", action="store_true")
    ve.set_defaults(fn=cmd_vectors)
    dg = sub.add_parser("diagnose", help="where and why two implementations' per-round dumps part")
    dg.add_argument("ours", help="refimpl's trace (directory or trace.npz) with --dump-rounds")
    dg.add_argument("theirs", help="their dump: a trace, .npz or .mat with r<round>_<name> arrays (docs/guide.md)")
    dg.add_argument("--map", default="", help="their names for ours: OURS=THEIRS,… (e.g. omega=w)")
    dg.add_argument("--tol", type=float, default=1e-10, help="largest relative difference that still agrees")
    dg.add_argument("--report", default=None, help="directory for diagnose.md and diagnose.png")
    dg.add_argument("--no-rerun", action="store_true", help="compare only; do not try refimpl's convention switches")
    dg.add_argument("--data", default=None, help="FILE.npz for the reruns (default: the data OURS's trace records)")
    dg.add_argument("--data-dir", default=None, help="MNIST-format IDX directory for the reruns (instead of --data)")
    dg.add_argument("--allow-missing", default="",
                    help="quantities that may be dumped on one side only (comma-separated; 'rounds' for rounds); "
                         "anything else left uncompared makes the exit 1")
    dg.add_argument("--quiet", action="store_true")
    dg.set_defaults(fn=cmd_diagnose)
    c = sub.add_parser("crosscheck", help="compare two traces (iterate snapshots and metrics)")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("--tol", type=float, default=1e-8, help="largest allowed relative difference")
    c.add_argument("--metrics-only", action="store_true", help="accept a comparison without common iterate snapshots")
    c.add_argument("--allow-missing", default="",
                   help="metrics that may be recorded by one trace only or at other rounds (comma-separated); anything "
                        "else left uncompared makes the exit 1")
    c.add_argument("--map", default="W1=Theta1a,W2=Theta2a",
                   help=".mat inputs: the variables holding W1 and W2 (snapshots as NAME_<round>); the default "
                        "names the authors' iterate (their Theta1/Theta2 are the surrogate minimiser ω̄)")
    c.add_argument("--round", type=int, default=None, help=".mat inputs: the round of plain NAME variables")
    c.set_defaults(fn=cmd_crosscheck)
    ps = sub.add_parser("partition-stats", help="per-client sizes and label counts of a sample-based split",
                        formatter_class=_Formatter)
    ps.add_argument("--partition", default="contiguous",
                    help="contiguous | iid | label_skew | dirichlet:α[:MIN_SIZE] | quantity:σ")
    ps.add_argument("--partition-file", default=None, help="JSON file, one list of sample ids per client")
    ps.add_argument("--clients", type=int, default=None, help="number of clients K (default: 10, or the file's)")
    ps.add_argument("--seed", type=int, default=0, help="the run's seed (the same split as refimpl run --seed)")
    ps.add_argument("--data", help="FILE.npz (default: the embedded MNIST subset)")
    ps.add_argument("--data-dir", help="directory with MNIST-format IDX files")
    ps.add_argument("--out", help="directory for partition_stats.csv and partition.png")
    ps.add_argument("--quiet", action="store_true")
    ps.set_defaults(fn=cmd_partition_stats)
    s = sub.add_parser("check-schedule", help="which conditions of (4) and (6) the step sizes ρ_t and γ_t meet",
                       formatter_class=_Formatter,
                       description="Each of ρ_t (surrogate weights, (4)) and γ_t (iterate steps, (6)) is a power "
                                   "law a/t^alpha or any sequence of your own (a .npy of values, or an expression in "
                                   "t). A finite sequence's decay is estimated from its second half (a log-log fit).")
    s.add_argument("--rho-a", type=float, default=1.0, help="ρ_t = a / t^alpha: the scale a")
    s.add_argument("--rho-alpha", type=float, default=None, help="ρ_t = a / t^alpha: the exponent alpha")
    s.add_argument("--rho", default=None, help="ρ_t instead as FILE.npy (values ρ_1, ρ_2, …) or an expression in t, "
                                               "e.g. 'np.minimum(1, 2 / t**0.6)'")
    s.add_argument("--gamma-a", type=float, default=0.3, help="γ_t = a / t^alpha: the scale a")
    s.add_argument("--gamma-alpha", type=float, default=None, help="γ_t = a / t^alpha: the exponent alpha")
    s.add_argument("--gamma", default=None, help="γ_t instead as FILE.npy or an expression in t, e.g. '0.9 * t**-0.9'")
    s.add_argument("--T", type=int, default=100000, help="the length at which an expression is evaluated")
    s.set_defaults(fn=cmd_check_schedule)
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
    code = _foreign_option(argv)
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
            loaded = _load_run_config(args.config, args.algorithm)
            RUN_PARSERS[args.algorithm].set_defaults(**loaded)
            args = parser.parse_args(argv)
            args.argv = argv
            args.config_keys = set(loaded)
        from refimpl.core.threads import blas_threads
        with blas_threads():               # one BLAS thread unless the environment says otherwise
            return args.fn(args)
    except (ValueError, FileNotFoundError, SolverError, RuntimeError) as exc:
        _say(f"refimpl: error: {exc}")
        return 2
    except OSError as exc:             # a directory given as a file, a file given as --out, …
        what = f"{exc.filename}: " if exc.filename else ""
        _say(f"refimpl: error: {what}{exc.strerror or exc}")
        return 2
    except KeyboardInterrupt:
        hint = {"reproduce": "; finished runs are kept, continue with --resume",
                "report": "; finished reproduction runs are kept, rerun the same command to continue",
                "sweep": "; finished tasks are kept, rerun the same command to continue"}.get(args.command, "")
        _say(f"refimpl: interrupted{hint}")
        return 130
    finally:
        restore()
