"""``refimpl reproduce NAME``: the papers' figures, averaged over seeds with a spread band.

Each reproduction is a list of labelled runs × seeds. A (run, seed) is written to
``OUT/runs/<label>/seed<k>/`` through a temporary directory and a rename, so an interrupted
reproduction keeps its finished seeds and ``--resume`` continues from them. Outputs: CSV of the
curves (mean and standard deviation over seeds), PNG figures, and ``reproduction.json`` with the
exact configuration, the seeds and the package versions.
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import sys
from dataclasses import asdict, replace

import numpy as np

from refimpl.core.trace import Trace, write_csv
from refimpl.tools.sweep import make_out_dir

NAMES = ("ssca-sample", "ssca-feature", "ssca-tradeoff", "vfl-time", "mfcgd-rates")


def versions():
    import cvxpy
    import numba
    import scipy
    from refimpl import __version__
    return {"python": platform.python_version(), "numpy": np.__version__, "numba": numba.__version__,
            "scipy": scipy.__version__, "cvxpy": cvxpy.__version__, "refimpl": __version__}


# ----------------------------------------------------------------------------- run plans

def _ssca_plan(setting, quick, rounds, paper, n_train=4000, clients=10, preset="paper"):
    from refimpl.ssca.experiment import RunConfig
    if setting == "sample":
        batches = (10, 100, 6000) if paper else (10, 100)
    else:
        batches = (10, 100, 1000) if paper else (10, 100)
    T = rounds or (1000 if paper else (60 if quick else 300))
    every = max(1, T // 50)
    plan = []
    for B in batches:
        base = dict(setting=setting, batch=B, rounds=T, eval_every=every, preset=preset)
        plan.append((f"SSCA B={B}", "ssca", RunConfig("ssca", **base)))
        plan.append((f"SGD B={B}", "ssca", RunConfig("sgd", lr=0.3, lr_decay=0.3, **base)))
        plan.append((f"SGD-m B={B}", "ssca", RunConfig("sgdm", lr=1.0, momentum=0.5, lr_decay=0.3, **base)))
        E = min(5, (n_train // clients) // B)       # E local steps need E·B distinct samples per client
        if setting == "sample" and E >= 2:
            plan.append((f"FedAvg E={E} B={B}", "ssca", RunConfig("sgd", lr=0.3, lr_decay=0.3, local_steps=E, **base)))
    return plan, ("round", ("train_cost", "test_accuracy"))


def _tradeoff_plan(quick, rounds, paper, preset="paper"):
    from refimpl.ssca.experiment import RunConfig
    T = rounds or (1000 if paper else (80 if quick else 300))
    every = max(5, T // 50)
    plan = []
    # 400: a client's whole data here (not a batch of the authors' scripts)
    batches = (10, 100, 6000) if paper else ((10, 100) if preset == "authors" else (10, 100, 400))
    for B in batches:
        plan.append((f"SSCA B={B}", "ssca", RunConfig("ssca", batch=B, rounds=T, eval_every=every, preset=preset)))
    # Fig. 4 compares end points, so both problems use one schedule meeting (4) and (6)
    conv = dict(rounds=T, eval_every=every, rho_alpha=0.55, gamma_a=0.5, gamma_alpha=0.6, preset=preset)
    for U in (0.1, 0.2, 0.3, 0.5):
        plan.append((f"constrained U={U}", "ssca", RunConfig("ssca-constrained", U=U, **conv)))
    for lam in (1e-4, 1e-3, 1e-2):
        plan.append((f"regularised lam={lam}", "ssca", RunConfig("ssca", lam=lam, **conv)))
    return plan, ("round", ("train_cost", "test_accuracy", "sq_norm", "comm_floats", "grad_evals"))


def _vfl_plan(quick, rounds, paper):
    from refimpl.vfl.experiment import VFLConfig
    budget = 300.0 if quick else 1500.0
    R = rounds or (200 if quick else 1000)
    base = VFLConfig(rounds=R, time_budget=budget, eta="0.03")
    plan = [(m, "vfl", replace(base, method=m, eta="0.1" if m == "async-vfl" else base.eta))
            for m in ("flexvfl", "adaptive-flexvfl", "sync-vfl", "async-vfl", "pbcd")]
    return plan, ("time", ("test_accuracy",))


def _mfcgd_plan(quick, rounds, paper):
    from refimpl.mfcgd.experiment import MFCGDConfig
    T = rounds or (3000 if quick else 30000)
    base = MFCGDConfig(steps=T, eval_every=max(1, T // 200), heterogeneity=0.1)
    plan = [("MFCGD", "mfcgd", replace(base, method="mfcgd")),
            ("AdaMFCGD", "mfcgd", replace(base, method="adamfcgd", gamma=0.1)),
            ("ComFedL", "mfcgd", replace(base, method="comfedl", eta=0.1, beta=0.5)),
            ("Local-SCGDM", "mfcgd", replace(base, method="local-scgdm", eta=0.1, beta=0.5))]
    return plan, ("samples", ("grad_norm", "rounds"))


def plan_for(name, quick=True, rounds=None, paper=False, n_train=4000, preset="paper"):
    if preset != "paper" and not name.startswith("ssca"):
        raise ValueError(f"--preset {preset} exists for the SSCA reproductions (ssca-sample, ssca-feature, "
                         f"ssca-tradeoff), not for {name}")
    if name == "ssca-sample":
        return _ssca_plan("sample", quick, rounds, paper, n_train, preset=preset)
    if name == "ssca-feature":
        return _ssca_plan("feature", quick, rounds, paper, n_train, preset=preset)
    if name == "ssca-tradeoff":
        return _tradeoff_plan(quick, rounds, paper, preset)
    if name == "vfl-time":
        return _vfl_plan(quick, rounds, paper)
    if name == "mfcgd-rates":
        return _mfcgd_plan(quick, rounds, paper)
    raise ValueError(f"unknown reproduction {name!r}; one of {NAMES}")


def _run_one(family, cfg, ds):
    if family == "ssca":
        from refimpl.ssca.experiment import run_experiment
        return run_experiment(cfg, ds)
    if family == "vfl":
        from refimpl.vfl.experiment import run_vfl
        return run_vfl(cfg, ds)
    from refimpl.mfcgd.experiment import run_mfcgd_config
    return run_mfcgd_config(cfg, ds)


def _planned_config(family, cfg):
    """The configuration a run of the plan records (SSCA runs record their resolved settings)."""
    return asdict(cfg.resolved()) if family == "ssca" else asdict(cfg)


def _preflight(plan, ds):
    """Every run of the plan can start on this data: checked before the first run, not after four."""
    for label, family, cfg in plan:
        if family != "ssca":
            continue
        c = cfg.resolved()
        per_round = c.batch * c.local_steps
        room = ds.n_train // c.clients if c.setting == "sample" else ds.n_train
        if per_round > room:
            raise ValueError(f"reproduction run {label!r} needs batches of {per_round} samples but the data give "
                             f"{'each client' if c.setting == 'sample' else 'the server'} only {room}; use larger data "
                             "(--data-dir) or another reproduction")


def _check_resumable(runs_dir, plan, seeds):
    """--resume reuses a finished run only when its whole configuration matches the plan's."""
    diffs = []
    for label, family, cfg in plan:
        for s in range(seeds):
            final = os.path.join(runs_dir, _slug(label), f"seed{s}", "trace.json")
            if not os.path.exists(final):
                continue
            with open(final) as fh:
                saved = json.load(fh).get("config", {})
            want = json.loads(json.dumps(_planned_config(family, replace(cfg, seed=s)), default=str))
            for k, v in want.items():
                if k in saved and saved[k] != v:
                    diffs.append(f"{label} seed {s}: {k} = {saved[k]!r} in the finished run, {v!r} now")
    if diffs:
        more = f" (and {len(diffs) - 5} more)" if len(diffs) > 5 else ""
        raise ValueError("--resume would reuse runs made with other settings: " + "; ".join(diffs[:5]) + more +
                         ". Resume with the original settings, or use another --out")


# ----------------------------------------------------------------------------- driver

def reproduce(name, out, data_dir=None, seeds=3, rounds=None, paper=False, resume=False, quick=False,
              progress=None, preset="paper"):
    """Run (or continue) a reproduction; returns the path of its JSON record."""
    from refimpl.core.data import load_embedded_mnist, load_idx_dir
    ds = load_idx_dir(data_dir) if data_dir else load_embedded_mnist()
    plan, (axis, metrics) = plan_for(name, quick, rounds, paper, ds.n_train, preset)
    runs_dir = os.path.join(out, "runs")
    if os.path.isdir(runs_dir) and any(os.scandir(runs_dir)) and not resume:
        raise ValueError(f"{out} already holds runs of a reproduction; pass --resume to continue it, "
                         "or choose another --out")
    if paper and ds.n_train < 60000 and name.startswith("ssca"):
        raise ValueError("--paper needs the full 60,000-sample training set: give --data-dir with MNIST-format files")
    _preflight(plan, ds)
    if resume:
        _check_resumable(runs_dir, plan, seeds)
    make_out_dir(out, "runs")
    done_before, ran = 0, 0
    for label, family, cfg in plan:
        for s in range(seeds):
            final = os.path.join(runs_dir, _slug(label), f"seed{s}")
            if os.path.isdir(final):
                done_before += 1
                continue
            tr = _run_one(family, replace(cfg, seed=s), ds)
            tmp = final + ".tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            tr.save(tmp)
            os.rename(tmp, final)
            ran += 1
            if progress:
                progress(f"{name}: {label} seed {s} finished ({tr.status})")
    rows = aggregate(out, plan, seeds, axis, metrics)
    record = {"name": name, "preset": preset, "paper_settings": paper, "quick": quick, "seeds": list(range(seeds)),
              "data": ds.name, "n_train": ds.n_train, "versions": versions(), "axis": axis, "metrics": list(metrics),
              "runs": [{"label": label, "family": family, "config": _planned_config(family, cfg)} for label, family, cfg in plan],
              "command": " ".join(sys.argv), "resumed_runs": done_before, "new_runs": ran}
    if name == "ssca-tradeoff":
        record["figure3"] = _figure3(out, plan, seeds)
    if name == "vfl-time":
        record["time_to_target"] = _time_to_target(out, plan, seeds)
    path = os.path.join(out, "reproduction.json")
    with open(path, "w") as fh:
        json.dump(record, fh, indent=1, default=str)
    _plot(out, name, rows, axis, metrics, preset)
    return path


def _slug(label):
    return "".join(c if c.isalnum() or c in "-_=." else "_" for c in label)


def _load(out, label, seeds):
    return [Trace.load(os.path.join(out, "runs", _slug(label), f"seed{s}")) for s in range(seeds)]


def aggregate(out, plan, seeds, axis, metrics):
    """curves.csv: per run label and point of the axis, mean and std of each metric over seeds
    (time-axis runs are interpolated onto a common grid)."""
    rows = []
    for label, _, _ in plan:
        trs = _load(out, label, seeds)
        if axis == "time":
            end = min(tr.series("time")[-1] for tr in trs)
            grid = np.linspace(0.0, end, 60)
            vals = {m: np.array([np.interp(grid, tr.series("time"), tr.series(m)) for tr in trs]) for m in metrics}
            xs = grid
        else:
            n = min(len(tr.series(axis)) for tr in trs)
            xs = trs[0].series(axis)[:n]
            vals = {m: np.array([tr.series(m)[:n] for tr in trs]) for m in metrics if all(m in tr.metrics for tr in trs)}
        for i, x in enumerate(xs):
            row = {"run": label, axis: float(x)}
            for m, v in vals.items():
                row[f"{m}_mean"] = float(np.nanmean(v[:, i]))
                row[f"{m}_std"] = float(np.nanstd(v[:, i]))
            rows.append(row)
    write_csv(os.path.join(out, "curves.csv"), rows)
    return rows


def _figure3(out, plan, seeds, target=None):
    """Communication (floats) and computation (sample-gradient evaluations) to reach a training
    cost, per batch size ([SSCA] Fig. 3). Default target: the largest final training cost among
    the batch sizes (mean over seeds), i.e. a cost every batch size reaches within T."""
    if target is None:
        target = max(float(np.mean([tr.series("train_cost")[-1] for tr in _load(out, label, seeds)]))
                     for label, _, _ in plan if label.startswith("SSCA B="))
    rows = []
    for label, _, cfg in plan:
        if not label.startswith("SSCA B="):
            continue
        hits = []
        for tr in _load(out, label, seeds):
            c = tr.series("train_cost")
            h = np.flatnonzero(c <= target)
            hits.append(None if not h.size else (tr.series("comm_floats")[h[0]], tr.series("grad_evals")[h[0]],
                                                 tr.series("round")[h[0]]))
        ok = [h for h in hits if h is not None]
        rows.append({"batch": cfg.batch, "target_train_cost": target, "seeds_reaching": len(ok),
                     "comm_floats": float(np.mean([h[0] for h in ok])) if ok else None,
                     "grad_evals": float(np.mean([h[1] for h in ok])) if ok else None,
                     "rounds": float(np.mean([h[2] for h in ok])) if ok else None})
    write_csv(os.path.join(out, "figure3_comm_vs_computation.csv"), rows)
    from refimpl.core.plots import _pyplot
    plt = _pyplot()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(5, 4))
        pts = [r for r in rows if r["comm_floats"] is not None]
        ax.loglog([r["grad_evals"] for r in pts], [r["comm_floats"] for r in pts], "o-")
        for r in pts:
            ax.annotate(f"B={r['batch']}", (r["grad_evals"], r["comm_floats"]), fontsize=8)
        ax.set_xlabel("computation: sample gradients")
        ax.set_ylabel("communication: floats")
        ax.set_title(f"to reach training cost {target:.3g}")
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "figure3_comm_vs_computation.png"), dpi=110)
        plt.close(fig)
    # Fig. 4: ||ω||² against training cost, constrained (U) and regularised (λ), last round
    f4 = []
    for label, _, cfg in plan:
        if label.startswith(("constrained", "regularised")):
            trs = _load(out, label, seeds)
            lam = getattr(cfg, "lam", 0.0) if label.startswith("regularised") else 0.0
            sq = [tr.series("sq_norm")[-1] for tr in trs]
            loss = [tr.series("train_cost")[-1] - lam * q for tr, q in zip(trs, sq)]
            f4.append({"run": label, "sq_norm_mean": float(np.mean(sq)), "sq_norm_std": float(np.std(sq)),
                       "data_loss_mean": float(np.mean(loss)), "data_loss_std": float(np.std(loss))})
    write_csv(os.path.join(out, "figure4_norm_vs_cost.csv"), f4)
    if plt is not None and f4:
        fig, ax = plt.subplots(figsize=(5, 4))
        for kind, mark in (("constrained", "o-"), ("regularised", "s--")):
            pts = [r for r in f4 if r["run"].startswith(kind)]
            ax.errorbar([r["data_loss_mean"] for r in pts], [r["sq_norm_mean"] for r in pts],
                        xerr=[r["data_loss_std"] for r in pts], yerr=[r["sq_norm_std"] for r in pts], fmt=mark, label=kind)
        ax.set_xlabel("training cost (1/N) Σ ℓ")
        ax.set_ylabel("||ω||²")
        ax.legend()
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "figure4_norm_vs_cost.png"), dpi=110)
        plt.close(fig)
    return {"figure3": rows, "figure4": f4}


def _time_to_target(out, plan, seeds, targets=(0.8, 0.85)):
    from refimpl.vfl.flexvfl import time_to_target
    rows = []
    for label, _, _ in plan:
        trs = _load(out, label, seeds)
        row = {"method": label}
        for t in targets:
            ts = [time_to_target(tr, t) for tr in trs]
            ok = [x for x in ts if x is not None]
            row[f"time_to_{t:g}_mean"] = float(np.mean(ok)) if ok else None
            row[f"seeds_reaching_{t:g}"] = len(ok)
        rows.append(row)
    write_csv(os.path.join(out, "time_to_target.csv"), rows)
    return rows


def _plot(out, name, rows, axis, metrics, preset="paper"):
    from refimpl.core.plots import _finish, _pyplot, band
    plt = _pyplot()
    if plt is None:
        return
    shown = [m for m in metrics if m not in ("comm_floats", "grad_evals", "rounds", "sq_norm")]
    fig, axes = plt.subplots(1, len(shown), figsize=(5.5 * len(shown), 4), squeeze=False)
    labels = list(dict.fromkeys(r["run"] for r in rows))
    for ax, m in zip(axes[0], shown):
        for lab in labels:
            pts = [r for r in rows if r["run"] == lab and f"{m}_mean" in r]
            if not pts:
                continue
            band(ax, pts, axis, m, lab)
        ax.set_xlabel(axis)
        ax.set_ylabel(m)
        if m in ("train_cost", "grad_norm"):
            ax.set_yscale("log")
        if axis == "samples":
            ax.set_xscale("log")
    fig.suptitle(f"{name} ({preset} settings)")
    _finish(fig, axes[0], os.path.join(out, f"{name}.png"))
