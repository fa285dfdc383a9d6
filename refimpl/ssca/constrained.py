"""Constrained mini-batch SSCA step, [SSCA] Problems 4–5 / (41) (docs/ssca.md):

    minimise_{ω, s ≥ 0}  ||ω||² + c Σ_k s_k   subject to  q_k^t(ω) ≤ U_k + s_k,  k = 1..m

with q_k^t(ω) = A_k ||ω||² + ⟨B_k, ω⟩ + C_k the surrogates of the constraint functions. For one
constraint (the paper's problem (40)) :func:`closed_form_step` solves it exactly (Lemma 1,
reconstructed); :class:`QCQPStep` solves any m, with optional extra convex constraints, as a
parametrised cvxpy problem built once and re-solved every round.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

import numpy as np

from refimpl.core import validate as V
from refimpl.ssca.surrogate import SurrogateState


@dataclass(frozen=True)
class ConstrainedStep:
    """Solution of the round's convex problem: ω̄^t, slacks s̄^t, multipliers ν* (one per
    constraint), the objective ||ω̄||² + c Σ s̄, and which branch/solver produced it."""

    omega_bar: np.ndarray
    slack: np.ndarray
    nu: np.ndarray
    objective: float
    branch: str
    ball_multiplier: float = 0.0


class SolverError(RuntimeError):
    """A QCQP solver failed or returned an inaccurate status."""


def closed_form_step(state: SurrogateState, U, c) -> ConstrainedStep:
    """Lemma 1 of [SSCA], (43)–(45), reconstructed from the dual (docs/ssca.md).

    Dual function on 0 ≤ ν ≤ c:  g(ν) = −ν² b / (4(1 + νA)) + ν(C − U),  b = ||B||².
      - C ≤ U: ν* = 0, ω̄ = 0 (feasible and minimises ||ω||²), s̄ = 0;
      - else with d = 4A(C − U): if b > d, ν° solves g'(ν) = 0,
        ν° = (sqrt(b/(b − d)) − 1)/A = d / (A (b − d)(sqrt(b/(b − d)) + 1))  (second form: no
        cancellation when d ≪ b); if b ≤ d (b = 0 included), g is increasing and ν° = ∞;
        ν* = min(ν°, c).
    Then ω̄ = −ν* B / (2(1 + ν* A)) and s̄ = max(0, q(ω̄) − U). At an active constraint ν* is
    raised by as many ulps as it takes for the float64 ω̄ to be feasible (:func:`_feasible_on_path`),
    so rounding never turns into a slack that the penalty c multiplies.
    """
    U, c = _check_Uc(U, c)
    A, Bv, C = state.A, state.B, state.C
    if A <= 0:
        raise ValueError("surrogate A^t must be > 0 (run at least one surrogate update)")
    if C <= U:
        w = np.zeros_like(Bv)
        return ConstrainedStep(w, np.zeros(1), np.zeros(1), 0.0, "C<=U")
    b = float(Bv @ Bv)
    d = 4.0 * A * (C - U)
    if b > d:
        x = np.sqrt(b / (b - d))
        nu_o = d / (A * (b - d) * (x + 1.0))
    else:
        nu_o = np.inf
    if nu_o <= c:
        nu, branch = nu_o, "constraint-active"
    else:
        nu, branch = c, ("b=0" if b == 0.0 else "slack-active")
    w = Bv * (-nu / (2.0 * (1.0 + nu * A)))
    if branch == "constraint-active":
        nu, w = _feasible_on_path(state, U, nu, c, w)
    # evaluated in every branch: a rounding-level violation at an active constraint shows as slack
    s = max(0.0, state.value(w) - U)
    return ConstrainedStep(w, np.array([s]), np.array([nu]), float(w @ w) + c * s, branch)


def _feasible_on_path(state, U, nu, c, w):
    """At an active constraint ν° makes q(ω̄) = U in exact arithmetic; in float64 q(ω̄) can exceed U
    by a rounding error, which the objective ||ω||² + c·s then charges c times. Along the
    multiplier path ω(ν) = −νB/(2(1 + νA)) the surrogate q decreases as ν grows (dq/dν < 0 for
    ν ≥ 0), so raising ν by a few ulps reaches the nearest feasible float64 point of the path.
    Returns (ν, ω̄); unchanged when already feasible, or when no ν ≤ c within 60 doublings of the
    step is feasible (the slack then reports the excess)."""
    if state.value(w) <= U:
        return nu, w
    step = max(abs(nu), np.finfo(float).tiny) * np.finfo(float).eps
    Bv, A = state.B, state.A
    for _ in range(60):
        trial = min(nu + step, c)
        cand = Bv * (-trial / (2.0 * (1.0 + trial * A)))
        if state.value(cand) <= U:
            return trial, cand
        if trial == c:
            break
        step *= 2.0
    return nu, w


def _check_Uc(U, c):
    U = np.asarray(U, dtype=np.float64)
    if not np.all(np.isfinite(U)) or np.any(U <= 0):
        raise ValueError(f"loss bound U must be finite and > 0, got {U.tolist()}")
    c = float(c)
    if not (np.isfinite(c) and c > 0):
        raise ValueError(f"penalty c must be finite and > 0, got {c}")
    return (float(U) if U.ndim == 0 else U), c


#: largest ω dimension for the full-space DPP formulation: cvxpy's DPP canonicalisation of a
#: second-order cone over n variables builds an index array of about n² entries (measured: 77 GiB
#: at n = 101,770), so larger models use the exact span reduction below.
FULL_FORMULATION_MAX_N = 5000

#: Clarabel settings used by default: tolerances near double precision and extra iterative
#: refinement. Clarabel then often stops with "almost solved" (cvxpy: optimal_inaccurate); such a
#: result is kept only after the QCQP's KKT conditions are verified independently (see solve).
CLARABEL_TIGHT = {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12, "max_iter": 400,
                  "iterative_refinement_reltol": 1e-16, "iterative_refinement_abstol": 1e-16,
                  "iterative_refinement_max_iter": 50}


class QCQPStep:
    """The round's QCQP as one DPP cvxpy problem, built once (canonicalised on the first solve)
    and re-solved with new (A_k, B_k, C_k) every round.

    ``n_constraints`` quadratic constraints (e.g. one per client); ``ball_radius`` adds
    ||ω||² ≤ r² as an extra convex constraint. ``solver`` is any installed cvxpy solver
    (default Clarabel, with duality-gap tolerance 1e-10); ``solver_options`` replace those.
    Status handling: 'optimal' is accepted. Otherwise the problem is re-solved once with the
    solver's own default tolerances; an 'optimal_inaccurate' result is accepted only when the
    KKT conditions of the QCQP, evaluated here independently of the solver, hold to ``kkt_tol``
    (the step's ``branch`` then says so); anything else raises :class:`SolverError` naming the
    solver and the statuses.

    ``formulation``:
      - ``"full"``: variables ω ∈ R^n, s ∈ R^m, ρ ≥ ||ω||²; objective ||ω||² + c Σ s;
        constraints A_k ρ + ⟨B_k, ω⟩ + C_k ≤ U_k + s_k (as A_k ≥ 0 this is exact);
      - ``"span"``: the same problem restricted to span{B_1..B_m}, which contains the solution
        (the component of ω orthogonal to every B_k adds to ||ω||² and to each q_k and changes no
        ⟨B_k, ω⟩, so it is 0 at the optimum). With G = [⟨B_i, B_j⟩] = V Λ Vᵀ and M = V Λ^{1/2},
        ω = Bᵀ V Λ^{−1/2} z gives ||ω||² = ||z||² and ⟨B_k, ω⟩ = (M z)_k: m variables instead of n;
      - ``"auto"`` (default): span. It is exact, has m variables whatever n is, and its
        multipliers are the more accurate (``ssca.lemma1_vs_cvxpy``: ~1e-7 against the closed
        form, ~1e-6 for the full-space formulation's dual); "full" remains for cross-checks.
    """

    def __init__(self, n, c, n_constraints=1, ball_radius=None, solver="CLARABEL", solver_options=None,
                 formulation="auto", kkt_tol=1e-4):
        import cvxpy as cp
        self.cp = cp
        if solver not in cp.installed_solvers():
            raise ValueError(f"solver {solver!r} is not installed; available: {cp.installed_solvers()}")
        _, self.c = _check_Uc(1.0, c)
        m = V.positive_int("n_constraints", n_constraints)
        n = V.positive_int("n", n)
        if formulation == "auto":
            formulation = "span"
        if formulation not in ("full", "span"):
            raise ValueError(f"formulation must be 'auto', 'full' or 'span', got {formulation!r}")
        if formulation == "full" and n > FULL_FORMULATION_MAX_N:
            raise ValueError(f"the full-space DPP formulation is limited to n <= {FULL_FORMULATION_MAX_N} "
                             f"(cvxpy needs ~n² index entries; n = {n}); use formulation='span'")
        self.n, self.m, self.solver, self.formulation = n, m, solver, formulation
        self.kkt_tol = V.positive("kkt_tol", kkt_tol)
        self.options = dict(solver_options) if solver_options else (dict(CLARABEL_TIGHT) if solver == "CLARABEL" else {})
        dim = n if formulation == "full" else m
        self.x = cp.Variable(dim)
        self.r = cp.Variable(nonneg=True)
        self.s = cp.Variable(m, nonneg=True)
        self.A = cp.Parameter(m, nonneg=True)
        self.B = cp.Parameter((m, dim))
        self.C = cp.Parameter(m)
        self.U = cp.Parameter(m, pos=True)
        sq = cp.sum_squares(self.x)
        self.cost = cp.Parameter(m, nonneg=True)          # c σ_k (σ_k: row scaling, see solve)
        self.ball_con = None
        rad2 = None if ball_radius is None else V.positive("ball_radius", ball_radius) ** 2
        if formulation == "full":
            self.cons = [self.A[k] * sq + self.B[k] @ self.x + self.C[k] <= self.U[k] + self.s[k]
                         for k in range(m)]
            extra = []
            if rad2 is not None:
                self.ball_con = sq <= rad2
                extra.append(self.ball_con)
            objective = sq + self.cost @ self.s
        else:
            # epigraph r ≥ ||z||² in the quadratic constraints (A_k ≥ 0, so r = ||z||² wherever
            # a constraint binds); the objective and the ball use ||z||² itself
            self.cons = [self.A[k] * self.r + self.B[k] @ self.x + self.C[k] <= self.U[k] + self.s[k]
                         for k in range(m)]
            extra = [sq <= self.r]
            if rad2 is not None:
                self.ball_con = sq <= rad2
                extra.append(self.ball_con)
            objective = sq + self.cost @ self.s
        self.ball_radius = ball_radius
        self.problem = cp.Problem(cp.Minimize(objective), self.cons + extra)
        assert self.problem.is_dpp()

    def solve(self, states, U) -> ConstrainedStep:
        states = list(states)
        if len(states) != self.m:
            raise ValueError(f"QCQP built for {self.m} constraints, got {len(states)} surrogates")
        U = np.broadcast_to(np.asarray(_check_Uc(U, self.c)[0], dtype=np.float64), (self.m,))
        Bm = np.stack([s.B for s in states])
        Av, Cv = np.array([s.A for s in states]), np.array([s.C for s in states])
        # row scaling: constraint k divided by σ_k (its multiplier is then ν_k σ_k; undone below),
        # which keeps the interior-point iterations well scaled when ||B_k|| or C_k is large
        sigma = np.maximum.reduce([np.ones(self.m), np.linalg.norm(Bm, axis=1), np.abs(Cv), np.asarray(U)])
        if self.formulation == "full":
            self.B.value = Bm / sigma[:, None]
        else:
            lam, Vec = np.linalg.eigh(Bm @ Bm.T)
            keep = lam > max(lam.max(), 0.0) * 1e-13
            root = np.where(keep, np.sqrt(np.where(keep, lam, 1.0)), 0.0)
            self.B.value = (Vec * root) / sigma[:, None]
        keep_root = (keep, root, Vec) if self.formulation == "span" else None
        self.A.value = Av / sigma
        self.C.value = Cv / sigma
        self.U.value = np.asarray(U) / sigma
        self.cost.value = self.c * sigma
        statuses = []
        for opts in ((self.options, {}) if self.options else ({},)):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)   # the status is checked below
                    self.problem.solve(solver=self.solver, **opts)
            except self.cp.error.SolverError as exc:
                statuses.append(f"failed ({exc})")
                continue
            status = self.problem.status
            statuses.append(status)
            if status not in (self.cp.OPTIMAL, self.cp.OPTIMAL_INACCURATE):
                continue
            step = self._read(states, U, Bm, sigma, keep_root)
            if status == self.cp.OPTIMAL:
                return step
            # 'optimal_inaccurate' is kept only when the KKT conditions of this QCQP, evaluated
            # independently of the solver, hold to kkt_tol
            worst = self._kkt_worst(step, states, U)
            if worst <= self.kkt_tol:
                return replace(step, branch=step.branch + f":inaccurate-status-kkt-verified({worst:.1e})")
            statuses[-1] += f" (KKT residual {worst:.2e} > {self.kkt_tol:g})"
        raise SolverError(f"cvxpy solver {self.solver} returned {' then '.join(map(str, statuses))} "
                          "(need 'optimal', or 'optimal_inaccurate' with verified KKT conditions)")

    def _read(self, states, U, Bm, sigma, keep_root):
        x = np.asarray(self.x.value, dtype=np.float64)
        if self.formulation == "full":
            w = x
        else:
            keep, root, Vec = keep_root
            inv = np.divide(1.0, root, out=np.zeros_like(root), where=keep)
            w = Bm.T @ (Vec @ (inv * x))
        s = np.maximum(np.asarray(self.s.value, dtype=np.float64), 0.0) * sigma
        nu = np.array([float(np.ravel(con.dual_value)[0]) for con in self.cons]) / sigma
        mu = 0.0 if self.ball_con is None else float(np.ravel(self.ball_con.dual_value)[0])
        return ConstrainedStep(w, s, nu, float(w @ w) + self.c * float(s.sum()),
                               f"cvxpy:{self.solver}:{self.formulation}", mu)

    def _kkt_worst(self, step, states, U):
        return kkt_worst(subproblem_kkt_residuals(step, states, U, self.c, self.ball_radius), U, step.nu, self.c)


def kkt_worst(res, U, nu, c):
    """The largest of a QCQP's KKT residuals ``res`` (:func:`subproblem_kkt_residuals`), each on its
    own scale: stationarity as it is (already relative), primal infeasibility over max(1, max U),
    complementary slackness over max(1, max ν), slack complementarity and dual infeasibility over
    the slack penalty c — what an 'optimal_inaccurate' solve must bring below ``kkt_tol``."""
    return max(res["stationarity"], res["primal"] / max(1.0, float(np.max(U))),
               res["complementarity"] / max(1.0, float(np.max(nu))),
               res["slack_complementarity"] / c, res["dual"] / c)


def subproblem_kkt_residuals(step: ConstrainedStep, states, U, c, ball_radius=None):
    """KKT residuals of the round's QCQP at ``step`` (no extra constraints):
    stationarity ||2ω + Σ ν_k ∇q_k(ω)|| / (2||ω|| + Σ ν_k (2A_k||ω|| + ||B_k||)) (relative to the
    size of the terms that cancel: with ν = c = 1e5 they are 1e4 times ||ω||), primal infeasibility
    max_k (q_k(ω) − U_k − s_k)_+, complementary slackness max_k |ν_k (q_k(ω) − U_k − s_k)|,
    slack complementarity max_k |(c − ν_k) s_k|, dual infeasibility max_k (−ν_k, ν_k − c)_+.
    With ``ball_radius`` r the constraint ||ω||² ≤ r² and its multiplier μ enter stationarity
    (+2μω), feasibility and complementary slackness."""
    w = step.omega_bar
    U = np.broadcast_to(np.asarray(U, dtype=np.float64), (len(states),))
    grads = [s.gradient(w) for s in states]
    g = 2.0 * w + sum(nu * gk for nu, gk in zip(step.nu, grads))
    nw = np.linalg.norm(w)
    scale = 2 * nw + sum(abs(nu) * (2 * s.A * nw + np.linalg.norm(s.B)) for nu, s in zip(step.nu, states))
    viol = np.array([s.value(w) - u - sk for s, u, sk in zip(states, U, step.slack)])
    mu = step.ball_multiplier
    if ball_radius is not None:
        g = g + 2.0 * mu * w
        scale += 2.0 * abs(mu) * nw
        ball_viol = nw * nw - ball_radius ** 2
        viol_all = np.append(viol, ball_viol)
        mult_all = np.append(step.nu, mu)
    else:
        viol_all, mult_all = viol, step.nu
    return {"stationarity": float(np.linalg.norm(g) / max(scale, 1e-300)),
            "primal": float(max(0.0, viol_all.max())),
            "complementarity": float(np.max(np.abs(mult_all * viol_all))),
            "slack_complementarity": float(np.max(np.abs((c - step.nu) * step.slack))),
            "dual": float(max(0.0, (-mult_all).max(), (step.nu - c).max()))}
