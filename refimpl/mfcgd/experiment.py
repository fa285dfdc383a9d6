"""Runs of MFCGD, AdaMFCGD and the baselines on the three problem classes (CLI layer below
``refimpl run mfcgd|adamfcgd|comfedl|local-scgdm``, ``refimpl compare mfcgd``)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from refimpl.mfcgd.problems import DistributionallyRobustFL, LeastSquaresMAML, SyntheticComposition
from refimpl.core.divergence import DivergenceRule
from refimpl.core.data import load_embedded_mnist
from refimpl.mfcgd.algorithm import (MFCGDParams, make_matrix, run_local_scgd, run_local_scgd_synthetic_nb, run_mfcgd,
                    run_mfcgd_synthetic_nb)
from refimpl.core.partition import sample_partition
from refimpl.core.trace import Trace

METHODS = ("mfcgd", "adamfcgd", "comfedl", "local-scgdm", "scgd", "storm")
SINGLE_MACHINE = ("scgd", "storm")
PROBLEMS = ("synthetic", "drfl", "maml")


@dataclass
class MFCGDConfig:
    method: str = "mfcgd"
    problem: str = "synthetic"
    clients: int = 10
    dim: int = 20
    steps: int = 2000
    q: int = 10
    k: float = 1.0
    n: float = 1000.0
    c: float = 10.0                  # c1 = c2 = c3
    gamma: float = 0.5
    matrix: str = "adam"             # adamfcgd: adam | norm | amsgrad
    rho: float = 0.2
    theta: float = 0.9
    eta: float = 0.1                 # baselines
    beta: float = 0.5
    alpha: float = 0.2
    heterogeneity: float = 0.5
    eval_every: int = 10
    seed: int = 0
    backend: str = "numba"
    diverge_cost_factor: float = 1e3   # diverged: ||∇F(x̄_t)|| above this × its value at step 1

    def validate(self):
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.problem not in PROBLEMS:
            raise ValueError(f"problem must be one of {PROBLEMS}, got {self.problem!r}")
        for f in ("clients", "dim", "steps", "q", "eval_every"):
            if int(getattr(self, f)) < 1:
                raise ValueError(f"{f} must be >= 1, got {getattr(self, f)}")
        return self


def build_problem(cfg: MFCGDConfig, rng, ds=None):
    if cfg.problem == "synthetic":
        return SyntheticComposition.random(M=cfg.clients, p=5, d=cfg.dim, heterogeneity=cfg.heterogeneity, rng=rng)
    if cfg.problem == "maml":
        return LeastSquaresMAML.random(M=cfg.clients, d=cfg.dim, rng=rng)
    ds = ds if ds is not None else load_embedded_mnist()
    parts = sample_partition(ds.n_train, cfg.clients, "label_skew", rng, ds.y_train)
    test_parts = sample_partition(len(ds.y_test), cfg.clients, "label_skew", np.random.default_rng(cfg.seed + 1),
                                  ds.y_test)
    pr = DistributionallyRobustFL(tuple(ds.X_train[p] for p in parts), tuple(ds.y_train[p] for p in parts))
    return pr, tuple(ds.X_test[p] for p in test_parts), tuple(ds.y_test[p] for p in test_parts)


def run_mfcgd_config(cfg: MFCGDConfig, ds=None, progress=None):
    """Returns a Trace with metrics step, grad_norm, samples, rounds (and, for DRFL, worst/average
    client test accuracy; for MAML, post-adaptation loss on held-out tasks)."""
    cfg.validate()
    if cfg.method in SINGLE_MACHINE and cfg.clients != 1:
        # SCGD and the STORM-compositional estimator are single-machine methods: M = 1 (as their
        # papers define them), not M clients averaging every step
        cfg = replace(cfg, clients=1)
    rng_prob, rng_run, rng_eval = (np.random.default_rng(s) for s in np.random.SeedSequence(cfg.seed).spawn(3))
    built = build_problem(cfg, rng_prob, ds)
    pr, test = (built[0], built[1:]) if isinstance(built, tuple) else (built, None)
    x1 = np.zeros(pr.d)
    extra = {}
    held_out = None
    if cfg.problem == "maml":
        held_out = pr.a.mean(axis=0) + rng_prob.standard_normal((20, pr.d)) * np.std(pr.a, axis=0)

    def on_eval(t, xb):
        if cfg.problem == "drfl":
            acc = pr.client_accuracy(xb, *test)
            extra.setdefault(t, {}).update(worst_client_accuracy=min(acc), average_accuracy=float(np.mean(acc)))
        elif cfg.problem == "maml":
            extra.setdefault(t, {}).update(post_adaptation_loss=pr.post_adaptation_loss(xb, held_out, np.random.default_rng(7)))
        if progress:
            progress(t, xb)

    numba = cfg.backend == "numba" and cfg.problem == "synthetic"
    if cfg.method in ("mfcgd", "adamfcgd", "storm"):
        C_g, C_f = _projection_radii(pr)
        q = 1 if cfg.method == "storm" else cfg.q
        par = MFCGDParams(k=cfg.k, n=cfg.n, c1=cfg.c, c2=cfg.c, c3=cfg.c, gamma=cfg.gamma, q=q, C_g=C_g, C_f=C_f)
        mat = make_matrix(cfg.matrix if cfg.method == "adamfcgd" else "identity", cfg.rho, cfg.theta)
        if numba:
            r = run_mfcgd_synthetic_nb(pr, x1, cfg.steps, par, mat, rng_run)
            for t in range(cfg.eval_every, cfg.steps + 1, cfg.eval_every):
                on_eval(t, r.x_bar[t - 1])
            gn, smp, rnd = r.grad_norm, r.samples, r.rounds
        else:
            r = run_mfcgd(pr, x1, cfg.steps, par, mat, rng_run, eval_every=cfg.eval_every, on_eval=on_eval)
            gn, smp, rnd = r.grad_norm, r.samples, r.rounds
    else:
        q = 1 if cfg.method == "scgd" else cfg.q
        alpha = cfg.alpha if cfg.method == "local-scgdm" else None
        if numba:
            gn, smp, rnd = run_local_scgd_synthetic_nb(pr, x1, cfg.steps, q, cfg.eta, cfg.beta, alpha, rng_run)
        else:
            r = run_local_scgd(pr, x1, cfg.steps, q, cfg.eta, cfg.beta, alpha, rng_run, cfg.eval_every, on_eval)
            gn, smp, rnd = r.grad_norm, r.samples, r.rounds
    tr = Trace(config={**asdict(cfg)})
    if cfg.method in ("mfcgd", "adamfcgd", "storm"):
        # both kernels use min(1, c η_t²): record the steps where the cap was active
        tr.config["capped_steps"] = par.capped_steps(cfg.steps)
    if cfg.problem == "synthetic" and cfg.method in ("mfcgd", "adamfcgd", "storm"):
        tr.config["theorem_conditions"] = theorem_report(pr, cfg, x1)
    rule = DivergenceRule(cost_factor=cfg.diverge_cost_factor)
    tr.status = "finished"
    for t in range(1, cfg.steps + 1):
        if t % cfg.eval_every == 0 or t in (1, cfg.steps):
            # the runs above are kernels without early exit: a blow-up is found here, and the
            # trace keeps the evaluations before it
            reason = rule.cost("||grad F(x_bar)||", gn[t - 1], gn[0]) if t > 1 else None
            if reason:
                tr.status = f"diverged: step {t}: {reason}; trace holds steps 1..{t - 1}"
                break
            vals = dict(step=t, grad_norm=gn[t - 1], samples=smp[t - 1], rounds=rnd[t - 1])
            vals.update(extra.get(t, {}))
            tr.record(**vals)
    if cfg.problem == "drfl":
        tr.extra["fedavg"] = fedavg_drfl(pr, test, cfg, np.random.default_rng(cfg.seed))
    return tr


def theorem_report(pr, cfg, x1):
    """Which conditions of Theorem 2 (MFCGD) or Theorem 1 (AdaMFCGD, ρ) the run's parameters meet
    on the synthetic problem (its constants are known); B is taken at its smallest admissible value."""
    from refimpl.mfcgd.bounds import Constants, TheoremParams, _B_lower, theorem_conditions
    C = pr.constants()
    c = Constants(C["C_f"], C["C_g"], C["L_f"], C["L_g"], C["sigma"], C["delta_f"], C["delta_g"], pr.F(x1) - C["F_star"])
    rho = cfg.rho if cfg.method == "adamfcgd" else 1.0
    q = 1 if cfg.method == "storm" else cfg.q
    p = TheoremParams(cfg.k, cfg.n, cfg.c, cfg.c, cfg.c, cfg.gamma, q, 0.0)
    p = TheoremParams(cfg.k, cfg.n, cfg.c, cfg.c, cfg.c, cfg.gamma, q, _B_lower(c, p, rho))
    conds = theorem_conditions(c, p, rho)
    return {"theorem": 1 if cfg.method == "adamfcgd" else 2, "rho": rho,
            "failed": [r["name"] for r in conds if not r["met"]], "all_met": all(r["met"] for r in conds)}


def _projection_radii(pr):
    if isinstance(pr, SyntheticComposition):
        C = pr.constants()
        return C["C_g"], C["C_f"]
    if isinstance(pr, DistributionallyRobustFL):
        # ||∇ loss|| ≤ sqrt(2) (||x_n|| + 1) for softmax cross-entropy; f' ∈ (0, 1)
        return float(np.sqrt(2.0) * (max(np.linalg.norm(X, axis=1).max() for X in pr.Xs) + 1.0)), 1.0
    # MAML: finite radii large enough not to bind in practice (the Gaussian design is unbounded)
    return 100.0, 100.0


def fedavg_drfl(pr, test, cfg, rng):
    """FedAvg on the same label-skewed split (average of the clients' losses, no f): q local SGD
    steps of size ``cfg.eta`` per round; returns worst-client and average test accuracy."""
    x = np.zeros(pr.d)
    for r in range(max(1, cfg.steps // cfg.q)):
        xs = []
        for m in range(pr.M):
            xm = x.copy()
            for _ in range(cfg.q):
                xm -= cfg.eta * pr.jac_g(m, xm, rng.integers(2 ** 31))[0]
            xs.append(xm)
        x = np.mean(xs, axis=0)
    acc = pr.client_accuracy(x, *test)
    return {"worst_client_accuracy": min(acc), "average_accuracy": float(np.mean(acc))}
