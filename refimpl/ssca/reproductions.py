"""[SSCA]'s reproductions: the run plans of ``refimpl reproduce ssca-sample | ssca-feature |
ssca-tradeoff`` (Figs. 2–4) and the tuning grids of ``--tune``. Each plan is a list of
``(label, paper key, Config)``; :mod:`refimpl.tools.reproduce` runs and aggregates them."""
from __future__ import annotations

from refimpl.ssca.experiment import RunConfig


def fedavg_local_steps(n_train, clients, batch):
    """FedAvg's local steps E at batch B: at most 5, and E·B distinct samples per client and
    round, so E = min(5, ⌊N_k / B⌋) with N_k = ⌊n / K⌋ (FedAvg runs only where E >= 2)."""
    return min(5, (n_train // clients) // batch)


def convergence_plan(setting, quick, rounds, paper, n_train=4000, clients=10, preset="paper"):
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
        E = fedavg_local_steps(n_train, clients, B)
        if setting == "sample" and E >= 2:
            plan.append((f"FedAvg E={E} B={B}", "ssca", RunConfig("sgd", lr=0.3, lr_decay=0.3, local_steps=E, **base)))
    return plan, ("round", ("train_cost", "test_accuracy"))


def tradeoff_plan(quick, rounds, paper, preset="paper"):
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



TUNE_POINTS = 6          # grid points per method: the same budget for every method


def tune_grids(setting, batch, rounds, every, n_train=None, clients=10):
    """Per method, ``TUNE_POINTS`` configurations around the paper's settings (all other settings
    as in the paper's MNIST experiments). SSCA: τ × a2 (γ_t = a2/t^(α+0.05)); SGD and FedAvg: η0
    (η_t = η0/t^0.3); SGD-m: η0 × momentum. FedAvg (sample-based only) takes the reproduction's
    E = :func:`fedavg_local_steps` on ``n_train`` samples (5 when ``n_train`` is None) and is left
    out where E < 2, as in :func:`convergence_plan`."""
    base = dict(setting=setting, batch=batch, rounds=rounds, eval_every=every)
    lrs = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)
    grids = {
        "SSCA": [RunConfig("ssca", tau=tau, gamma_a=a2, **base) for tau in (0.01, 0.05, 0.2) for a2 in (0.3, 0.9)],
        "SGD": [RunConfig("sgd", lr=lr, lr_decay=0.3, **base) for lr in lrs],
        "SGD-m": [RunConfig("sgdm", lr=lr, momentum=m, lr_decay=0.3, **base) for lr in (0.1, 0.3, 1.0)
                  for m in (0.5, 0.9)],
    }
    local_steps = 5 if n_train is None else fedavg_local_steps(n_train, clients, batch)
    if setting == "sample" and local_steps >= 2:
        grids[f"FedAvg E={local_steps}"] = [RunConfig("sgd", lr=lr, lr_decay=0.3, local_steps=local_steps, **base)
                                            for lr in lrs]
    assert all(len(g) == TUNE_POINTS for g in grids.values())
    return grids


def tuned_settings(cfg):
    c = cfg.resolved()
    keys = ("tau", "gamma_a") if c.algorithm == "ssca" else ("lr", "momentum") if c.algorithm == "sgdm" else ("lr",)
    return {k: getattr(c, k) for k in keys}
