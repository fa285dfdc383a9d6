"""MFCGD and AdaMFCGD, [MFCGD] Algorithm 1 (docs/mfcgd.md), and its baselines (docs/mfcgd.md §4).

State per client m: x^m (d), h^m (p), u^m (p×d), v^m (p), w^m = (u^m)ᵀ v^m (d). Step t = 1..T:
  - t mod q = 0 (communication): w̄_t, x̄_t averaged; A_t from the adaptive-matrix rule;
    x^m_{t+1} = x̄_{t+1} = x̄_t − γ η_t A_t^{-1} w̄_t  (line 7);
  - otherwise x^m_{t+1} = x^m_t − γ η_t A_t^{-1} w^m_t, A_{t+1} = A_t  (line 11, (10));
  - every client draws ξ_{t+1}, ζ_{t+1} and runs the STORM recursions (7)–(9):
        h_{t+1} = g(x_{t+1}; ζ) + (1 − α_{t+1})(h_t − g(x_t; ζ))
        u_{t+1} = Π_{C_g}[∇g(x_{t+1}; ζ) + (1 − β_{t+1})(u_t − ∇g(x_t; ζ))]
        v_{t+1} = Π_{C_f}[∇f(h_{t+1}; ξ) + (1 − ϱ_{t+1})(v_t − ∇f(h_t; ξ))]
        w_{t+1} = u_{t+1}ᵀ v_{t+1}
Schedules of Theorems 1–2: η_t = k/(n + t)^{1/3}, α_{t+1} = c1 η_t², β_{t+1} = c2 η_t², ϱ_{t+1} = c3 η_t².
The trajectory x̄_t = (1/M) Σ_m x^m_t is kept for every t; the output is x̄_τ, τ uniform on 1..T.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from refimpl.core import validate as V
from refimpl.mfcgd.kernels import (MATRIX_KIND, run_local_scgd_synthetic_nb,  # noqa: F401  (beside their NumPy twins)
                                   run_mfcgd_synthetic_nb)
from refimpl.mfcgd.types import MFCGDParams, MFCGDResult  # noqa: F401  (re-exported)


# ----------------------------------------------------------------------------- adaptive matrices

@dataclass(frozen=True)
class Identity:
    """MFCGD: A_t = I."""

    name = "identity"

    def init(self, d):
        return None

    def update(self, state, w_bar):
        return state, None          # None stands for I


@dataclass(frozen=True)
class _Adaptive:
    """ρ (Assumption 5: A_t ⪰ ρI) and ϑ of the adaptive-matrix rules; their defaults are
    ``refimpl run adamfcgd``'s (ρ = 0.2, ϑ = 0.9)."""

    rho: float = 0.2
    theta: float = 0.9

    def __post_init__(self):
        if not (np.isfinite(self.rho) and self.rho > 0):
            raise ValueError(f"ρ of the adaptive matrix must be > 0 (Assumption 5), got {self.rho}")
        if not 0.0 < self.theta <= 1.0:
            raise ValueError(f"ϑ must be in (0, 1], got {self.theta}")


@dataclass(frozen=True)
class AdamType(_Adaptive):
    """Line 6: a_t = ϑ a_{t−1} + (1 − ϑ) w̄_t² (a_0 = 0), A_t = diag(sqrt(a_t) + ρ)."""

    name = "adam"

    def init(self, d):
        return np.zeros(d)

    def update(self, a, w_bar):
        a = self.theta * a + (1 - self.theta) * w_bar * w_bar
        return a, np.sqrt(a) + self.rho


@dataclass(frozen=True)
class NormType(_Adaptive):
    """(6): a_t = ϑ a_{t−1} + (1 − ϑ) ||w̄_t||, A_t = (a_t + ρ) I."""

    name = "norm"

    def init(self, d):
        return 0.0

    def update(self, a, w_bar):
        a = self.theta * a + (1 - self.theta) * float(np.linalg.norm(w_bar))
        return a, np.full(w_bar.size, a + self.rho)


@dataclass(frozen=True)
class AMSGradType(_Adaptive):
    """Adam type with a_t replaced by its running maximum: â_t = max(â_{t−1}, a_t)."""

    name = "amsgrad"

    def init(self, d):
        return (np.zeros(d), np.zeros(d))

    def update(self, state, w_bar):
        a, amax = state
        a = self.theta * a + (1 - self.theta) * w_bar * w_bar
        amax = np.maximum(amax, a)
        return (a, amax), np.sqrt(amax) + self.rho


def make_matrix(kind, rho=0.2, theta=0.9):
    table = {"identity": lambda: Identity(), "adam": lambda: AdamType(rho, theta),
             "norm": lambda: NormType(rho, theta), "amsgrad": lambda: AMSGradType(rho, theta)}
    if kind not in table:
        raise ValueError(f"adaptive matrix must be one of {sorted(table)}, got {kind!r}")
    return table[kind]()


def project_ball(v, radius):
    """Π onto {||v|| ≤ radius} (Frobenius norm for a matrix)."""
    nrm = np.linalg.norm(v)
    return v if nrm <= radius else v * (radius / nrm)


# ----------------------------------------------------------------------------- Algorithm 1 (NumPy)

def is_evaluation_step(t, T, eval_every):
    """Whether step ``t`` of 1..T evaluates ||∇F(x̄_t)|| (and calls ``on_eval``): every
    ``eval_every``-th, the first and the last — for every runner, backend and trace."""
    return t % eval_every == 0 or t in (1, T)


def evaluation_steps(T, eval_every):
    """The steps 1..T at which a run evaluates (:func:`is_evaluation_step`)."""
    return [t for t in range(1, int(T) + 1) if is_evaluation_step(t, T, eval_every)]


def _record_step(out, problem, X, t, T, eval_every, on_eval):
    """x̄_t into the result; ||∇F(x̄_t)|| (and ``on_eval``) at :func:`evaluation_steps`."""
    xb = X.mean(axis=0)
    out.x_bar[t - 1] = xb
    if is_evaluation_step(t, T, eval_every):
        out.grad_norm[t - 1] = np.linalg.norm(problem.grad_F(xb))
        if on_eval is not None:
            on_eval(t, xb)
    else:
        out.grad_norm[t - 1] = np.nan
    return xb


def lemma2_sides(problem, x_bar, W, H, Us, Vs, C_f, C_g, L_f):
    """Both sides of Lemma 2 (13) at x̄ with clients' (w, h, u, v) and the exact g, ∇g, ∇f."""
    M = problem.M
    lhs = float(np.sum((W.mean(axis=0) - problem.grad_F(x_bar)) ** 2))
    rhs = 0.0
    for m in range(M):
        gx = problem.g_exact(m, x_bar)
        rhs += (2 * C_f ** 2 * np.sum((Us[m] - problem.jac_g_exact(m, x_bar)) ** 2)
                + 4 * C_g ** 2 * np.sum((Vs[m] - problem.grad_f_exact(m, H[m])) ** 2)
                + 4 * C_g ** 2 * L_f ** 2 * np.sum((H[m] - gx) ** 2))
    return lhs, rhs / M


def check_problem(problem, x1, rng):
    """Shapes of the oracles at x1: g (p,), ∇g (p, d), ∇f (p,) — a mismatch is a clear error."""
    x1 = np.asarray(x1, dtype=np.float64)
    if x1.shape != (problem.d,):
        raise ValueError(f"x1 must have shape ({problem.d},), got {x1.shape}")
    g = np.asarray(problem.g(0, x1, problem.draw_zeta(rng, ())))
    J = np.asarray(problem.jac_g(0, x1, problem.draw_zeta(rng, ())))
    f = np.asarray(problem.grad_f(0, g, problem.draw_xi(rng, ())))
    if g.shape != (problem.p,) or J.shape != (problem.p, problem.d) or f.shape != (problem.p,):
        raise ValueError(f"oracle shapes do not match p = {problem.p}, d = {problem.d}: g {g.shape}, "
                         f"∇g {J.shape} (need (p, d)), ∇f {f.shape}")
    return x1


def storm_update(problem, m, x_new, x_old, h, u, v, zeta, xi, alpha, beta, varrho, C_g, C_f):
    """One client's recursions (7)–(9) on the new sample (ζ_{t+1}, ξ_{t+1}), both oracles of each
    difference evaluated on the same sample:

        h' = g(x_{t+1}; ζ) + (1 − α)(h − g(x_t; ζ))
        u' = Π_{C_g}[∇g(x_{t+1}; ζ) + (1 − β)(u − ∇g(x_t; ζ))]
        v' = Π_{C_f}[∇f(h'; ξ) + (1 − ϱ)(v − ∇f(h; ξ))]
    Returns (h', u', v', u projected?, v projected?)."""
    h_new = problem.g(m, x_new, zeta) + (1 - alpha) * (h - problem.g(m, x_old, zeta))
    u_pre = problem.jac_g(m, x_new, zeta) + (1 - beta) * (u - problem.jac_g(m, x_old, zeta))
    v_pre = problem.grad_f(m, h_new, xi) + (1 - varrho) * (v - problem.grad_f(m, h, xi))
    u_new, v_new = project_ball(u_pre, C_g), project_ball(v_pre, C_f)
    return h_new, u_new, v_new, u_new is not u_pre, v_new is not v_pre


def draw_storm_samples(problem, T, q, rng):
    """The samples Algorithm 1 consumes, drawn as :func:`run_mfcgd` draws them:
    (zeta0 (M, q, …), xi0 (M, q, …), zeta (T, M, …), xi (T, M, …))."""
    M = problem.M
    return (problem.draw_zeta(rng, (M, q)), problem.draw_xi(rng, (M, q)),
            problem.draw_zeta(rng, (T, M)), problem.draw_xi(rng, (T, M)))


def run_mfcgd(problem, x1, T, params: MFCGDParams, matrix, rng, noise=None, L_f=1.0, lemma2=False,
              eval_every=1, on_eval=None, record_states=False, estimators=None, dump_steps=()):
    """Algorithm 1 in NumPy, generic over the problem class. ``noise``: optional pre-drawn samples
    (zeta0 (M, q, …), xi0 (M, q, …), zeta (T, M, …), xi (T, M, …)) so another implementation can
    be fed the same; otherwise drawn from ``rng``. Samples counted: 2q per client at start, then 2
    per client per step ([MFCGD], Remark 1). ``eval_every``: ||∇F(x̄_t)|| is computed every that many
    steps (NaN elsewhere) and ``on_eval(t, x̄_t)`` called there (expensive problems).
    ``estimators``: optional initial (h (M, p), u (M, p, d), v (M, p)) replacing the q-sample
    mini-batch estimates of line 1 (zeta0/xi0 are then not used). ``dump_steps``: steps whose
    intermediate quantities go to ``out.dumps`` {t: {name: array}} (docs/guide.md)."""
    M, d, q = problem.M, problem.d, int(params.q)
    x1 = check_problem(problem, x1, np.random.default_rng(0))
    if noise is None:
        noise = draw_storm_samples(problem, T, q, rng)
    z0, x0n, Z, Xi = noise
    X = np.tile(np.asarray(x1, dtype=np.float64), (M, 1))
    if estimators is None:
        H = np.stack([np.mean([problem.g(m, X[m], z0[m, j]) for j in range(q)], axis=0) for m in range(M)])
        Us = np.stack([np.mean([problem.jac_g(m, X[m], z0[m, j]) for j in range(q)], axis=0) for m in range(M)])
        Vs = np.stack([np.mean([problem.grad_f(m, H[m], x0n[m, j]) for j in range(q)], axis=0) for m in range(M)])
    else:
        H, Us, Vs = (np.array(a, dtype=np.float64) for a in estimators)
    W = np.einsum("mpd,mp->md", Us, Vs)
    dump_steps = set(int(t) for t in dump_steps)
    dumps = {}
    state = matrix.init(d)
    state, Adiag = matrix.update(state, W.mean(axis=0))      # A_1 from w̄_1
    Adiag = np.ones(d) if Adiag is None else Adiag
    out = MFCGDResult.empty(T, d)
    states = None
    if record_states:
        p = problem.p
        states = {"X": np.empty((T, M, d)), "X_next": np.empty((T, M, d)), "H": np.empty((T, M, p)),
                  "U": np.empty((T, M, p, d)), "V": np.empty((T, M, p)), "A": np.empty((T, d))}
        out.states = states
    samples, rounds = 2 * q * M, 0
    for t in range(1, T + 1):
        xb = _record_step(out, problem, X, t, T, eval_every, on_eval)
        if lemma2:
            out.lemma2_lhs[t - 1], out.lemma2_rhs[t - 1] = lemma2_sides(problem, xb, W, H, Us, Vs,
                                                                         params.C_f, params.C_g, L_f)
        step = params.gamma * params.eta(t)
        if t % q == 0:
            state, new = matrix.update(state, W.mean(axis=0))
            Adiag = np.ones(d) if new is None else new
        out.A_norm[t - 1] = Adiag.max()
        if t % q == 0:
            X_new = np.tile(xb - step * W.mean(axis=0) / Adiag, (M, 1))
            rounds += 1
        else:
            X_new = X - step * W / Adiag
        a, b, r = params.momentum(t)
        if states is not None:
            states["X"][t - 1], states["H"][t - 1], states["U"][t - 1], states["V"][t - 1] = X, H, Us, Vs
            states["X_next"][t - 1], states["A"][t - 1] = X_new, Adiag
        if t in dump_steps:
            dumps[t] = {"x": X.copy(), "h": H.copy(), "u": Us.copy(), "v": Vs.copy(), "w": W.copy(),
                        "x_bar": xb.copy(), "w_bar": W.mean(axis=0), "communication": np.array(t % q == 0),
                        "A": Adiag.copy(), "eta": np.array(params.eta(t)), "alpha": np.array(a),
                        "beta": np.array(b), "varrho": np.array(r), "zeta": np.asarray(Z[t - 1]),
                        "xi": np.asarray(Xi[t - 1]), "x_next": X_new.copy()}
        for m in range(M):
            H[m], Us[m], Vs[m], bu, bv = storm_update(problem, m, X_new[m], X[m], H[m], Us[m], Vs[m],
                                                      Z[t - 1, m], Xi[t - 1, m], a, b, r, params.C_g, params.C_f)
            out.bound_u += bu
            out.bound_v += bv
        W = np.einsum("mpd,mp->md", Us, Vs)
        X = X_new
        samples += 2 * M
        out.samples[t - 1], out.rounds[t - 1] = samples, rounds
        if not np.all(np.isfinite(X)):
            raise FloatingPointError(f"step {t}: x is not finite (diverged)")
    out.output = out.x_bar[rng.integers(T)]
    out.dumps = dumps
    return out


# ----------------------------------------------------------------------------- baselines

def draw_scgd_samples(problem, T, rng):
    """The samples :func:`run_local_scgd` consumes, in its order: zeta0 (M, …) for y's start, then
    per step and client ζ, ζ' and ξ — returned as (zeta0, zeta (T, M, …), zeta2 (T, M, …), xi (T, M, …))."""
    M = problem.M
    z0 = np.stack([problem.draw_zeta(rng, ()) for _ in range(M)])
    per = [[(problem.draw_zeta(rng, ()), problem.draw_zeta(rng, ()), problem.draw_xi(rng, ())) for _ in range(M)]
           for _ in range(T)]
    return (z0, np.array([[c[0] for c in row] for row in per]), np.array([[c[1] for c in row] for row in per]),
            np.array([[c[2] for c in row] for row in per]))


def run_local_scgd(problem, x1, T, q, eta, beta, alpha=None, rng=None, eval_every=1, on_eval=None, samples=None,
                   dump_steps=()):
    """ComFedL-style local SCGD (``alpha`` None) and Local-SCGDM (momentum ``alpha``), re-implemented
    from their published update rules (not the authors' code). Per client and step:

        y ← (1 − β) y + β g(x; ζ)                       (tracking of the inner value)
        d = ∇g(x; ζ')ᵀ ∇f(y; ξ)                         (ζ' a second, independent sample)
        ComFedL:      x ← x − η d
        Local-SCGDM:  m ← (1 − α) m + α d,  x ← x − η m
    every q steps the server averages x (Local-SCGDM: x, y and m). Three samples per client per
    step. With q = 1 and one client this is single-machine SCGD (with momentum: SCGDM).
    ``samples``: (zeta0, zeta, zeta2, xi) as :func:`draw_scgd_samples` returns them (a replay);
    ``dump_steps``: steps whose x, y, m (before the step), d and the averaged values go to
    ``out.dumps``."""
    rng = rng or np.random.default_rng(0)
    M, d = problem.M, problem.d
    for name, v in (("eta", eta), ("beta", beta)):
        if not (np.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be > 0, got {v}")
    V.positive_int("q (communication period)", q)
    X = np.tile(np.asarray(x1, dtype=np.float64), (M, 1))
    if samples is None:
        Y = np.stack([problem.g(m, X[m], problem.draw_zeta(rng, ())) for m in range(M)])
    else:
        Y = np.stack([problem.g(m, X[m], samples[0][m]) for m in range(M)])
    Mom = np.zeros((M, d))
    out = MFCGDResult.empty(T, d)
    out.A_norm[:] = 1.0
    out.dumps = {}
    dump_steps = set(int(t) for t in dump_steps)
    n_samples, rounds = M, 0
    for t in range(1, T + 1):
        xb = _record_step(out, problem, X, t, T, eval_every, on_eval)
        dump = None
        if t in dump_steps:
            dump = out.dumps[t] = {"x": X.copy(), "y": Y.copy(), "m": Mom.copy(), "x_bar": xb.copy(),
                                   "d": np.empty((M, d))}
        for m in range(M):
            if samples is None:
                z1, z2 = problem.draw_zeta(rng, ()), problem.draw_zeta(rng, ())
                xi = problem.draw_xi(rng, ())
            else:
                z1, z2, xi = samples[1][t - 1, m], samples[2][t - 1, m], samples[3][t - 1, m]
            Y[m] = (1 - beta) * Y[m] + beta * problem.g(m, X[m], z1)
            dm = problem.jac_g(m, X[m], z2).T @ problem.grad_f(m, Y[m], xi)
            if dump is not None:
                dump["d"][m] = dm
            if alpha is None:
                X[m] = X[m] - eta * dm
            else:
                Mom[m] = (1 - alpha) * Mom[m] + alpha * dm
                X[m] = X[m] - eta * Mom[m]
        n_samples += 3 * M
        if t % q == 0:
            X[:] = X.mean(axis=0)
            if alpha is not None:
                Y[:] = Y.mean(axis=0)
                Mom[:] = Mom.mean(axis=0)
            rounds += 1
        if dump is not None:
            dump.update(x_next=X.copy(), communication=np.array(t % q == 0))
        out.samples[t - 1], out.rounds[t - 1] = n_samples, rounds
        if not np.all(np.isfinite(X)):
            raise FloatingPointError(f"step {t}: x is not finite (diverged)")
    out.output = out.x_bar[rng.integers(T)]
    return out
