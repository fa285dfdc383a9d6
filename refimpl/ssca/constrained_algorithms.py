"""Algorithms 2 (sample-based) and 4 (feature-based) of [SSCA]: constrained mini-batch SSCA for
problem (40), minimise ||ω||² subject to (1/N) Σ_n ℓ(ω; x_n, y_n) ≤ U, through the transformed
problem with slack s ≥ 0 and penalty c (Problems 4–5, (41)), docs/ssca.md

Per round: collect (ℓ̂^t, ĝ^t) (Step 1), update the constraint surrogate(s) (Step 2, the same
recursion as the unconstrained algorithms), solve the round's convex problem for (ω̄^t, s̄^t, ν^t)
(Step 3: closed form of Lemma 1, or the cvxpy QCQP), move (Step 4).

``per_client=True`` (sample-based only) replaces the single constraint by one per client:
client k's data loss (1/N_k) Σ_{n∈k} ℓ_n ≤ U_k — a fairness-constrained variant; each client's
surrogate is built from its own mini-batch means and the QCQP has K constraints.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from refimpl.core import validate as V
from refimpl.ssca.algorithms import DivergenceError, Evaluator, _check_finite, _estimates, _n_samples
from refimpl.ssca.constrained import ConstrainedStep, QCQPStep, SolverError, closed_form_step
from refimpl.core.model import full_gradient
from refimpl.ssca.protocols import SampleBasedProtocol
from refimpl.ssca.surrogate import SurrogateState, check_curvature, move, surrogate_update

SOLVERS = ("closed-form", "cvxpy")


@dataclass(frozen=True)
class ConstrainedState:
    omega: np.ndarray
    surrogates: tuple
    nu: np.ndarray
    slack: np.ndarray
    loss_hat: float = np.nan
    fallbacks: int = 0
    note: str = ""


class ConstrainedSSCA:
    """Constrained mini-batch SSCA (Algorithms 2 and 4).

    ``U``: loss bound (> 0; a sequence of K bounds with ``per_client``); ``c``: slack penalty;
    ``solver``: "closed-form" (one constraint, no extra constraints) or "cvxpy"; ``ball_radius``:
    optional extra constraint ||ω|| ≤ r (cvxpy only). When the cvxpy solver fails and the closed
    form applies, the round uses the closed form and ``state.fallbacks``/``state.note`` say so.
    """

    def __init__(self, protocol, rho, gamma, tau, U, c, solver="closed-form", per_client=False,
                 ball_radius=None, cvxpy_solver="CLARABEL", curvature="recursive"):
        self.protocol, self.rho, self.gamma = protocol, rho, gamma
        self.tau = V.positive("tau", tau)
        self.curvature = check_curvature(curvature)
        if solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
        self.per_client = bool(per_client)
        if self.per_client and not isinstance(protocol, SampleBasedProtocol):
            raise ValueError("per-client constraints need the sample-based protocol (every "
                             "feature-based client holds all samples)")
        m = len(protocol.parts) if self.per_client else 1
        U = np.asarray(U, dtype=np.float64)
        U = np.full(m, float(U)) if U.ndim == 0 else U
        if U.shape != (m,):
            raise ValueError(f"U must be one bound or {m} bounds (one per constraint), got shape {U.shape}")
        if not np.all(np.isfinite(U)) or np.any(U <= 0):
            raise ValueError(f"loss bound U must be finite and > 0, got {U.tolist()}")
        self.U = U
        self.c = V.positive("penalty c", c)
        self.closed_form_applies = m == 1 and ball_radius is None
        if solver == "closed-form" and not self.closed_form_applies:
            raise ValueError("the closed form covers one constraint without extra constraints; "
                             "use solver='cvxpy' for per-client constraints or a norm ball")
        self.solver = solver
        self.qcqp = (QCQPStep(protocol.model.n_params, self.c, m, ball_radius, cvxpy_solver)
                     if solver == "cvxpy" else None)

    @property
    def n_constraints(self):
        return self.U.size

    def init(self, theta0):
        m, P = self.n_constraints, theta0.size
        return ConstrainedState(theta0.copy(), tuple(SurrogateState.zeros(P) for _ in range(m)),
                                np.zeros(m), np.zeros(m))

    def step(self, surrogates) -> tuple[ConstrainedStep, str]:
        """Step 3: the round's convex problem; returns the solution and a note on fallbacks."""
        if self.qcqp is None:
            return closed_form_step(surrogates[0], self.U[0], self.c), ""
        try:
            return self.qcqp.solve(surrogates, self.U), ""
        except SolverError as exc:
            if not self.closed_form_applies:
                raise
            return closed_form_step(surrogates[0], self.U[0], self.c), f"{exc}; used the closed form"

    def apply(self, state, t, batch):
        rho, gamma = self.rho(t), self.gamma(t)
        if self.per_client:
            ests, msgs = self.protocol.collect_per_client(state.omega, batch)
            loss_hat = float(sum(w * l for w, (l, _) in zip(self.protocol.client_weight, ests)))
        else:
            loss_hat, g, msgs = self.protocol.collect(state.omega, batch)
            ests = [(loss_hat, g)]
        for l, g in ests:
            _check_finite(t, mini_batch_loss=l, mini_batch_gradient=g)
        surs = tuple(surrogate_update(s, l, g, state.omega, rho, self.tau, self.curvature)
                     for s, (l, g) in zip(state.surrogates, ests))
        sol, note = self.step(surs)
        omega = move(state.omega, sol.omega_bar, gamma)
        _check_finite(t, omega=omega)
        return (ConstrainedState(omega, surs, sol.nu, sol.slack, loss_hat,
                                 state.fallbacks + bool(note), note or state.note),
                msgs, _n_samples(batch))

    def dump_round(self, state, t, batch, new):
        """As :meth:`SSCA.dump_round`, with one surrogate per constraint (A, B, C stacked over
        constraints), the step's ω̄^t (the same solver again on the round's surrogates), the
        multiplier ν^t and the slack s^t."""
        out = _estimates(self.protocol, state.omega, batch)
        sol, _ = self.step(new.surrogates)
        out.update(rho=np.array(self.rho(t)), gamma=np.array(self.gamma(t)),
                   A=np.array([s.A for s in new.surrogates]), B=np.array([s.B for s in new.surrogates]),
                   C=np.array([s.C for s in new.surrogates]), omega_bar=sol.omega_bar,
                   multiplier=np.asarray(new.nu, dtype=np.float64), slack=np.asarray(new.slack, dtype=np.float64),
                   omega_next=new.omega)
        return out


def kkt_residuals(model, theta, nu, X, y, U, parts=None):
    """KKT residuals of (40) (or of its per-client variant when ``parts`` is given) at (ω, ν),
    with full-data losses f_k and gradients ∇f_k:
    stationarity ||2ω + Σ_k ν_k ∇f_k(ω)|| (and relative to ||2ω|| + Σ_k ν_k ||∇f_k(ω)||), feasibility max_k (f_k(ω) − U_k)_+,
    complementary slackness max_k |ν_k (f_k(ω) − U_k)|. Returns (residuals, f values)."""
    groups = [np.arange(X.shape[0])] if parts is None else parts
    U = np.broadcast_to(np.asarray(U, dtype=np.float64), (len(groups),))
    g = 2.0 * theta
    scale = 2.0 * np.linalg.norm(theta)
    f = np.empty(len(groups))
    for k, idx in enumerate(groups):
        f[k] = model.loss(theta, X[idx], y[idx])
        gk = full_gradient(model, theta, X[idx], y[idx], 0.0)
        g = g + nu[k] * gk
        scale += nu[k] * np.linalg.norm(gk)
    viol = f - U
    return {"kkt_stationarity": float(np.linalg.norm(g)),
            "kkt_stationarity_rel": float(np.linalg.norm(g) / max(scale, 1e-300)),
            "kkt_feasibility": float(max(0.0, viol.max())),
            "kkt_complementarity": float(np.max(np.abs(nu * viol)))}, f


@dataclass(frozen=True)
class ConstrainedEvaluator(Evaluator):
    """Adds, per evaluation: constraint value(s) on the full training set, slack and multiplier
    (sums over constraints), ||ω||², the KKT residuals and the count of solver fallbacks."""

    U: np.ndarray = None
    parts: list = None

    def __call__(self, theta, state=None):
        out = super().__call__(theta, state)
        res, f = kkt_residuals(self.model, theta, state.nu, self.X_train, self.y_train, self.U, self.parts)
        out.update(res)
        out.update(constraint_value=float(f.max()), slack=float(state.slack.sum()),
                   multiplier=float(state.nu.sum()), solver_fallbacks=state.fallbacks)
        return out
