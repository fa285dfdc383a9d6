"""``refimpl run mfcgd | adamfcgd | comfedl | local-scgdm | scgd | storm`` and ``refimpl compare
mfcgd``: what the command line does for [MFCGD] beyond the generic run (:mod:`refimpl.cli.run`).

``ui`` is the command line's shared toolbox (:mod:`refimpl.cli.common`), handed in: this module
imports nothing above the core."""
from __future__ import annotations

import os

KEY = "mfcgd"
FEDERATED = ("mfcgd", "adamfcgd", "comfedl", "local-scgdm")     # the methods `compare mfcgd` runs


def mfcgd_config(args, ui, method):
    """The Config from the options: T = 2000 steps and an evaluation every T/100 unless given."""
    steps = int(args.steps) if getattr(args, "steps", None) is not None else 2000
    eval_every = getattr(args, "eval_every", None)
    return ui.config(args, KEY, method, eval_every=int(eval_every) if eval_every else max(1, steps // 100))


def check_data_options(data, data_dir, problem):
    """Whether the run reads the data the options name: --data and --data-dir are read by --problem
    drfl only (refused, naming them, for another problem); a drfl run without them uses its default
    data (False)."""
    given = [f for f, v in (("--data", data), ("--data-dir", data_dir)) if v]
    if given and problem != "drfl":
        raise ValueError(f"{' and '.join(given)} change(s) nothing for --problem {problem}: only --problem drfl "
                         "(the distributionally robust classifier) reads data; the other problems are drawn from --seed")
    return bool(given)


def run_notes(tr):
    """What a finished run adds below its theorem note: the steps in which the cap min(1, c η_t²)
    of each of α, β, ϱ acted (none: no line)."""
    capped = {k: v for k, v in tr.config.get("capped_steps", {}).items() if v}
    if not capped:
        return []
    return ["note: α_t, β_t, ϱ_t = c η_t² are capped at 1; the cap was active in steps "
            + ", ".join(f"1..{v} ({k})" for k, v in capped.items()) + " (outside the theorems' n >= (c k)^3)"]


def run(args, ui):
    """One run of a compositional method; the theorems' conditions it breaks are noted."""
    from refimpl import mfcgd
    from refimpl.core.plots import plot_mfcgd
    cfg = mfcgd_config(args, ui, args.algorithm)
    reads = check_data_options(args.data, args.data_dir, cfg.problem)
    bar = ui.progress(args, cfg.steps, cfg.method, "step")

    def progress(t, xb):
        if bar.bar_mode:            # without a terminal the MFCGD runs print no per-step lines
            bar("", n=t)
    with bar:
        tr = mfcgd.run(cfg, ui.load_data(args) if reads else None, progress=progress,
                       dump_writer=ui.dump_writer(args, cfg))
    if not args.quiet:
        th = tr.config.get("theorem_conditions")
        if th and not th["all_met"]:
            ui.say(f"note: these parameters violate {len(th['failed'])} condition(s) of Theorem {th['theorem']}: "
                 + "; ".join(th["failed"]))
        for line in run_notes(tr):
            ui.say(line)
        for k in ("grad_norm", "worst_client_accuracy", "average_accuracy", "post_adaptation_loss"):
            if tr.metrics.get(k):
                ui.say(f"[{cfg.method}/{cfg.problem}] final {k} = {tr.metrics[k][-1]:.5g}")
        if "fedavg" in tr.extra:
            ui.say(f"[fedavg/{cfg.problem}] same split: {tr.extra['fedavg']}")
    if args.out and "fedavg" in tr.extra:
        tr.config["fedavg_same_split"] = tr.extra["fedavg"]
    return ui.finish_run(args, tr, args.out, lambda path: plot_mfcgd({cfg.method: tr}, path))


def add_compare_arguments(parser, ui):
    """The options of ``refimpl compare mfcgd``."""
    ui.add_compare_args(parser.add_argument_group("mfcgd"), KEY, {"seed", "eval_every", "backend", "clients", "eta", "diverge_cost_factor",
                                                                 "diverge_sq_norm"})


def compared_configs(base):
    """``[(method, Config)]`` of ``refimpl compare mfcgd``: each federated method on ``base``, AdaMFCGD's
    γ scaled by ρ (its step is γη A_t^{-1} with A_t ⪰ ρI: γρ gives it MFCGD's step where A_t ≈ ρI)."""
    from dataclasses import replace
    return [(meth, replace(base, method=meth, gamma=base.gamma * base.rho if meth == "adamfcgd" else base.gamma))
            for meth in FEDERATED]


def compare(args, ui):
    """``refimpl compare mfcgd``: MFCGD, AdaMFCGD and the two federated baselines from one configuration."""
    from refimpl.mfcgd.experiment import run_mfcgd_config
    from refimpl.core.plots import plot_mfcgd
    from refimpl.core.trace import write_csv
    traces, rows = {}, []
    for meth, cfg in compared_configs(mfcgd_config(args, ui, "mfcgd")):
        tr = run_mfcgd_config(cfg)
        traces[meth] = tr
        for st, g, smp, rnd in zip(*(tr.series(k) for k in ("step", "grad_norm", "samples", "rounds"))):
            rows.append({"method": meth, "step": int(st), "grad_norm": float(g), "samples": int(smp), "rounds": int(rnd)})
        if not args.quiet:
            ui.say(f"{meth}: final ||∇F|| {tr.series('grad_norm')[-1]:.4g}")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        write_csv(os.path.join(args.out, "grad_norm.csv"), rows)
        plot_mfcgd(traces, os.path.join(args.out, "grad_norm.png"))
        ui.info(args, f"comparison written to {args.out}")
    return 0
