"""``refimpl run ssca | ssca-constrained | sgd | sgdm``: what a run of [SSCA] adds to the generic
run command (:mod:`refimpl.cli.run`) — the preset's contradictions, the step-size note, the
replay files, the λ / U trade-off study of a comma list, the constraint's verdict.

``ui`` is the command line's shared toolbox (:mod:`refimpl.cli.common`), handed in: this module
imports nothing above the core."""
from __future__ import annotations

import os
from dataclasses import replace

import numpy as np

KEY = "ssca"


def check_preset(args, cfg):
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


def replay_inputs(args, ui):
    """--init (a .npz with W1, W2 or the authors' .mat) and --batches (a .npy, a .npz or .mat with an
    array ``batches``, or a trace; 0-based ids unless --index-base 1)."""
    init = None
    if args.init and str(args.init).endswith(".mat") and "Theta1" in os.path.basename(str(args.init)):
        from refimpl.core.matfiles import mat_initial_point
        init = mat_initial_point(args.init)         # the authors' initial_Theta1.mat (and its Theta2 sibling)
    elif args.init:
        from refimpl.core.replay import read_arrays
        z = read_arrays(args.init, "--init")
        pair = next(((a, b) for a, b in (("W1", "W2"), ("W1_0", "W2_0")) if a in z and b in z), None)
        if pair is not None:
            init = (z[pair[0]], z[pair[1]])
        elif "omega_0" in z or "" in z:
            init = np.asarray(z.get("omega_0", z.get("")))   # the flat ω^0 (W1 then W2, row-major)
            if init.ndim == 2 and 1 in init.shape:           # MATLAB saves a vector as a 1×P or P×1 matrix
                init = init.reshape(-1)
        else:
            raise ValueError(f"--init {args.init}: needs arrays W1 and W2 (a trace's W1_0 and W2_0, or one flat "
                             f"vector omega_0, W1 then W2 row-major; or the authors' initial_Theta1.mat); found "
                             f"{sorted(z) or 'none'}")
    batches = None
    if args.batches:
        from refimpl.core.replay import read_one, sample_ids
        batches = sample_ids(read_one(args.batches, ("batches",), "--batches"), f"--batches {args.batches}")
    return init, batches


def run(args, ui):
    """One run, or the λ / U trade-off study when --lam or --U is a comma list."""
    data = ui.load_data(args)
    snaps = ui.ints("snapshots", args.snapshots)
    lams = ui.floats("lam", getattr(args, "lam", 0.0))
    Us = ui.floats("U", getattr(args, "U", 0.13))
    base = ui.config(args, KEY, args.algorithm, lam=lams[0], U=Us[0], snapshots=snaps)
    check_preset(args, base)
    base.resolved()
    for name, values in (("lam", lams), ("U", Us)):      # every value of a list is checked before the first run
        for v in values[1:]:
            try:
                replace(base, **{name: v}).resolved()
            except ValueError as exc:
                raise ValueError(f"--{name} {getattr(args, name)}: the value {v:g} is not allowed ({exc})")
    init, batches = replay_inputs(args, ui)
    if batches is not None:
        from refimpl.core.replay import from_index_base, one_based_hint
        batches = from_index_base(batches, getattr(args, "index_base", None), f"--batches {args.batches}")
        if getattr(args, "index_base", None) in (None, 0, "0"):
            hint = one_based_hint(batches, data.n_train)
            if hint:
                raise ValueError(f"--batches {args.batches}: sample id {data.n_train} is out of range (0-based ids run "
                                 f"0..{data.n_train - 1}){hint}")
    study = tradeoff_study(lams=lams, Us=Us)
    if study is None:
        return run_one(args, ui, base.resolved(), data, init, batches, args.out)[0]
    name, values = study
    rows, code = [], 0
    for v in values:
        out = os.path.join(args.out, f"{name}={v:g}") if args.out else None
        c, trace = run_one(args, ui, replace(base, **{name: v}).resolved(), data, init, batches, out)
        code = max(code, c)
        rows.append(tradeoff_row(name, v, trace))
    if args.out:
        from refimpl.core.plots import plot_tradeoff
        from refimpl.core.trace import write_csv
        write_csv(os.path.join(args.out, "tradeoff.csv"), rows)
        plot_tradeoff(rows, name, os.path.join(args.out, "tradeoff.png"))
        ui.info(args, f"trade-off over {name} written to {args.out}/tradeoff.csv")
    for r in rows:
        print(", ".join(f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()))
    return code


def tradeoff_study(lams, Us):
    """The trade-off study a run is ([SSCA], Fig. 4): ("U", values) when --U is a list of more than one
    value, else ("lam", values) when --lam is, else None (one run)."""
    return ("U", Us) if len(Us) > 1 else ("lam", lams) if len(lams) > 1 else None


def tradeoff_row(name, value, trace):
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


def report_constraint(args, ui, cfg, trace):
    """Whether the true constraint of (40) holds at the end of a constrained run that evaluated it,
    recorded in the trace and printed; a warning when the surrogate subproblem was feasible (slack 0)
    while the true constraint is not. Other runs: nothing."""
    if cfg.algorithm != "ssca-constrained" or not trace.metrics.get("constraint_value"):
        return
    value, slack = trace.metrics["constraint_value"][-1], trace.metrics["slack"][-1]
    violation = max(0.0, value - cfg.U)
    check = {"U": cfg.U, "final_constraint_value": value, "holds": violation == 0.0, "violation": violation,
             "final_slack": slack}
    trace.config["constraint_check"] = check
    if violation == 0.0:
        ui.info(args, f"constraint of (40): final data loss {value:.4g} <= U = {cfg.U:g}: holds")
        return
    ui.say(f"constraint of (40): final data loss {value:.4g} > U = {cfg.U:g}: violated by {violation:.3g}")
    if slack == 0.0:
        ui.say("warning: the surrogate subproblem was feasible (slack 0) while the true constraint is not: the iterate "
               "has not reached a feasible point of (40) yet (more rounds, or a larger U)")


def step_size_note(cfg):
    """The conditions (4)/(6) that SSCA's ρ_t and γ_t break, as a note (None when all hold)."""
    from refimpl.core.schedules import PowerLaw, check_step_sizes
    failed = [c.name for c in check_step_sizes(PowerLaw(cfg.rho_a, cfg.rho_alpha),
                                                PowerLaw(cfg.gamma_a, cfg.gamma_alpha)) if not c.met]
    if failed:
        return (f"note: ρ_t = {cfg.rho_a:g}/t^{cfg.rho_alpha:g}, γ_t = {cfg.gamma_a:g}/t^{cfg.gamma_alpha:g} "
                f"violate {', '.join(failed)} of (4)/(6): the run is outside Theorems 1–4's assumptions, and its "
                f"training cost may spike in the early rounds (as at the paper's ρ_t = 1/t^0.1 with B = 100)")
    return None


def run_one(args, ui, cfg, data, init, batches, out_dir):
    """One run of a resolved configuration; returns (exit code, trace)."""
    from refimpl import ssca
    from refimpl.core.plots import plot_trace
    if cfg.algorithm in ("ssca", "ssca-constrained") and not args.quiet:
        note = step_size_note(cfg)
        if note:
            ui.say(note)
    bar = ui.progress(args, cfg.rounds, f"{cfg.algorithm}/{cfg.setting}", "round")
    with bar:
        trace = ssca.run(cfg, data, init=init, batches=batches, progress=round_reporter(cfg, bar),
                         dump_writer=ui.dump_writer(args, cfg, out_dir))
    report_constraint(args, ui, cfg, trace)
    title = f"{cfg.algorithm}, {cfg.setting}-based, B={cfg.batch}"
    code = ui.finish_run(args, trace, out_dir, lambda path: plot_trace(trace, path, title))
    for line in status_notes(code, trace):
        ui.say(line)
    return code, trace


def round_reporter(cfg, bar):
    """The ``progress(t, metrics)`` of one run, reporting to ``bar``
    (:class:`refimpl.core.progress.Progress`): on a terminal each evaluation moves the bar, cost and
    accuracy its postfix; otherwise one line at round 0, every max(1, rounds // 20) rounds and at
    the last round (:func:`refimpl.core.progress.line_due`), with the constraint, slack and ν of a
    constrained run."""
    from refimpl.core.progress import line_due

    def progress(t, m):
        if bar.bar_mode:
            bar(f"cost {m['train_cost']:.4f} acc {m['test_accuracy']:.4f}", n=t)
        elif line_due(t, cfg.rounds):
            extra = (f"  constraint {m['constraint_value']:.4f} (U {cfg.U:g})  slack {m['slack']:.3g}  "
                     f"ν {m['multiplier']:.4g}" if "slack" in m else "")
            bar(f"[{cfg.algorithm}/{cfg.setting}] round {t:>5}/{cfg.rounds}  "
                f"cost {m['train_cost']:.4f}  test acc {m['test_accuracy']:.4f}{extra}")
    return progress


def status_notes(code, trace):
    """The lines a run adds after it is saved: its status when a solver note qualifies a run that
    otherwise finished (exit code 0); none for a run that exits 3, which says why instead."""
    return [f"note: {trace.status}"] if code == 0 and "solver note" in trace.status else []
