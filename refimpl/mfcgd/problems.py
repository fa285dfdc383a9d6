"""Problem classes for federated compositional optimisation, [MFCGD] problem (5):

    min_x F(x) = (1/M) Σ_m E_ξ f^m( E_ζ g^m(x; ζ); ξ ),   ∇F(x) = (1/M) Σ_m ∇g^m(x)ᵀ ∇f^m(g^m(x))

Every class supplies hand-derived stochastic oracles — g^m(x; ζ), its Jacobian ∇g^m(x; ζ) (p×d),
∇f^m(y; ξ) — and the exact versions g^m(x), ∇g^m(x), ∇f^m(y), F(x), ∇F(x) for measurements.
A "sample" ζ or ξ is an integer seed-free index drawn by the caller's Generator (``draw_*``), so
that two implementations can be fed the same samples.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from refimpl.core.kernels import softmax_xent_np


def _phi(z):
    """φ(z) = z / sqrt(1 + z²) = d/dz sqrt(1 + z²)."""
    return z / np.sqrt(1.0 + z * z)


class _SqrtOuter:
    """What the two synthetic families share: the outer map f^m(y; ξ) = Σ_i sqrt(1 + (y_i − c_{m,i})²)
    + ⟨ξ, y⟩ (ξ uniform on the sphere of radius r_f), the sizes M, p, d and the heterogeneity
    constants δ_g = max ||b_m − b_j|| (shared A) and δ_f = max ||min(2, |c_m − c_j|)||."""

    @property
    def M(self):
        return self.b.shape[0]

    @property
    def p(self):
        return self.A.shape[0]

    @property
    def d(self):
        return self.A.shape[1]

    def draw_xi(self, rng, shape):
        z = rng.standard_normal(tuple(shape) + (self.p,))
        return self.r_f * z / np.linalg.norm(z, axis=-1, keepdims=True)

    def grad_f(self, m, y, xi):
        return _phi(y - self.c[m]) + xi

    def grad_f_exact(self, m, y):
        return _phi(y - self.c[m])

    def _deltas(self):
        diff_b = self.b[:, None, :] - self.b[None, :, :]
        diff_c = np.minimum(2.0, np.abs(self.c[:, None, :] - self.c[None, :, :]))
        return float(np.max(np.linalg.norm(diff_c, axis=-1))), float(np.max(np.linalg.norm(diff_b, axis=-1)))


@dataclass(frozen=True)
class SyntheticComposition(_SqrtOuter):
    """Synthetic family with analytically known constants (docs/mfcgd.md):

        g^m(x; ζ) = A x + b_m + ζ,         ζ ~ N(0, s_g² I_p)       (∇g^m = A for every sample)
        f^m(y; ξ) = Σ_i sqrt(1 + (y_i − c_{m,i})²) + ⟨ξ, y⟩,  ξ uniform on the sphere of radius r_f

    Constants (Assumptions 1–3, 6), derived:
      ∇f^m(y; ξ) = φ(y − c_m) + ξ with |φ| < 1  ⇒  ||∇f|| ≤ sqrt(p) + r_f =: C_f;
      ||∇g|| = ||A||_F =: C_g (Frobenius: the projection Π_{C_g} is a Frobenius ball);
      φ' = (1 + z²)^{-3/2} ≤ 1  ⇒  L_f = 1;  ∇g constant  ⇒  L_g = 0;
      σ² = max(p s_g², r_f²) (value noise of g; ∇f noise E||ξ||² = r_f²; Jacobian noise 0);
      δ_g = max_{m,j} ||b_m − b_j|| (the clients share A, so ||g^m(x) − g^j(x)|| is bounded);
      δ_f = max_{m,j} sup_y ||φ(y − c_m) − φ(y − c_j)|| ≤ max ||min(2, |c_m − c_j|)||;
      F is convex (sqrt(1 + z²) of an affine map) with F ≥ p: F* computed by L-BFGS.
    """

    A: np.ndarray
    b: np.ndarray          # M × p
    c: np.ndarray          # M × p
    s_g: float = 0.1
    r_f: float = 0.1

    @classmethod
    def random(cls, M=10, p=5, d=20, heterogeneity=0.5, s_g=0.1, r_f=0.1, rng=None):
        rng = rng or np.random.default_rng(0)
        A = rng.standard_normal((p, d)) / np.sqrt(d)
        b = heterogeneity * rng.standard_normal((M, p))
        c = heterogeneity * rng.standard_normal((M, p))
        return cls(A, b, c, s_g, r_f)

    # -- noise ------------------------------------------------------------------------------
    def draw_zeta(self, rng, shape):
        return self.s_g * rng.standard_normal(tuple(shape) + (self.p,))

    # -- stochastic oracles -------------------------------------------------------------------
    def g(self, m, x, zeta):
        return self.A @ x + self.b[m] + zeta

    def jac_g(self, m, x, zeta):
        return self.A

    # -- exact ----------------------------------------------------------------------------------
    def g_exact(self, m, x):
        return self.A @ x + self.b[m]

    def jac_g_exact(self, m, x):
        return self.A

    def F(self, x):
        Y = (self.A @ x)[None, :] + self.b - self.c
        return float(np.mean(np.sum(np.sqrt(1.0 + Y * Y), axis=1)))

    def grad_F(self, x):
        Y = (self.A @ x)[None, :] + self.b - self.c
        return self.A.T @ np.mean(_phi(Y), axis=0)

    def constants(self):
        p = self.p
        delta_f, delta_g = self._deltas()
        from scipy.optimize import minimize      # imported where used: it costs 0.3 s to import
        res = minimize(lambda x: (self.F(x), self.grad_F(x)), np.zeros(self.d), jac=True, method="L-BFGS-B",
                       options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10000})
        return {"C_f": float(np.sqrt(p) + self.r_f), "C_g": float(np.linalg.norm(self.A)),
                "L_f": 1.0, "L_g": 0.0, "sigma": float(np.sqrt(max(p * self.s_g ** 2, self.r_f ** 2))),
                "delta_f": delta_f, "delta_g": delta_g, "F_star": float(res.fun)}


@dataclass(frozen=True)
class DistributionallyRobustFL:
    """Distributionally robust FL ([MFCGD] (3), docs/mfcgd.md): client m's expected loss is the inner
    function, g^m(x; ζ) = mean cross-entropy of a multinomial logistic model x (L×(D+1), bias in
    column 0) on the mini-batch ζ of client m (p = 1: min(batch, n_m) distinct samples drawn by
    ``default_rng(ζ).choice(n_m, ·, replace=False)``), ∇g^m its gradient (1×d); the outer
    f(u) = λ softplus((u − u0)/λ) (deterministic, monotone, f' = sigmoid((u − u0)/λ) ∈ (0, 1)),
    a smoothed (u − u0)_+ that emphasises clients whose loss exceeds u0."""

    Xs: tuple              # per-client features
    ys: tuple              # per-client labels
    n_classes: int = 10
    lam: float = 0.1
    u0: float = 0.3
    batch: int = 32

    @property
    def M(self):
        return len(self.Xs)

    @property
    def p(self):
        return 1

    @property
    def d(self):
        return self.n_classes * (self.Xs[0].shape[1] + 1)

    def draw_zeta(self, rng, shape):
        return rng.integers(0, 2 ** 31, size=tuple(shape))

    def draw_xi(self, rng, shape):
        return np.zeros(tuple(shape) + (1,))

    def _batch(self, m, zeta):
        n = len(self.ys[m])
        idx = np.random.default_rng(int(zeta)).choice(n, min(self.batch, n), replace=False)
        return self.Xs[m][idx], self.ys[m][idx]

    def _loss_grad(self, x, X, y):
        """Mean softmax cross-entropy of the linear model and its gradient (the shared
        cancellation-free kernel twin)."""
        W = x.reshape(self.n_classes, -1)
        loss, D2 = softmax_xent_np(X @ W[:, 1:].T, W[:, 0], y, np.full(len(y), 1.0 / len(y)))
        G = np.empty_like(W)
        G[:, 0] = D2.sum(axis=0)
        G[:, 1:] = D2.T @ X
        return loss, G.ravel()

    def g(self, m, x, zeta):
        return np.array([self._loss_grad(x, *self._batch(m, zeta))[0]])

    def jac_g(self, m, x, zeta):
        return self._loss_grad(x, *self._batch(m, zeta))[1][None, :]

    def grad_f(self, m, y, xi):
        return 1.0 / (1.0 + np.exp(-(y - self.u0) / self.lam))

    def g_exact(self, m, x):
        return np.array([self._loss_grad(x, self.Xs[m], self.ys[m])[0]])

    def jac_g_exact(self, m, x):
        return self._loss_grad(x, self.Xs[m], self.ys[m])[1][None, :]

    def grad_f_exact(self, m, y):
        return self.grad_f(m, y, None)

    def F(self, x):
        u = np.array([self.g_exact(m, x)[0] for m in range(self.M)])
        return float(np.mean(self.lam * np.logaddexp(0.0, (u - self.u0) / self.lam)))

    def grad_F(self, x):
        return np.mean([self.jac_g_exact(m, x)[0] * self.grad_f_exact(m, self.g_exact(m, x))[0]
                        for m in range(self.M)], axis=0)

    def client_accuracy(self, x, Xs, ys):
        W = x.reshape(self.n_classes, -1)
        return [float(np.mean(np.argmax(X @ W[:, 1:].T + W[:, 0], axis=1) == y)) for X, y in zip(Xs, ys)]


@dataclass(frozen=True)
class LeastSquaresMAML:
    """Task-distributed MAML ([MFCGD] (2), docs/mfcgd.md) on linear-regression tasks: client m is task
    m with data y = zᵀ a_m + noise; ℓ^m(x; ζ) = (1/2B) ||Z x − Y||² on a mini-batch ζ;

        g^m(x; ζ) = x − η_in ∇ℓ^m(x; ζ) = x − η_in Zᵀ(Z x − Y)/B       (p = d)
        ∇g^m(x; ζ) = I − η_in ZᵀZ/B                                      (explicit Hessian)
        ∇f^m(y; ξ) = Z_ξᵀ(Z_ξ y − Y_ξ)/B  on a fresh batch ξ.
    Exact versions use the population moments E[zzᵀ] = I, E[zy] = a_m (noise variance s²)."""

    a: np.ndarray          # M × d task vectors
    eta_in: float = 0.1
    noise: float = 0.1
    batch: int = 10

    @classmethod
    def random(cls, M=10, d=10, spread=1.0, rng=None, **kw):
        rng = rng or np.random.default_rng(0)
        center = rng.standard_normal(d)
        return cls(center + spread * rng.standard_normal((M, d)) / np.sqrt(d), **kw)

    @property
    def M(self):
        return self.a.shape[0]

    @property
    def p(self):
        return self.a.shape[1]

    @property
    def d(self):
        return self.a.shape[1]

    def _data(self, m, seed, a=None):
        r = np.random.default_rng(int(seed))
        Z = r.standard_normal((self.batch, self.d))
        return Z, Z @ (self.a[m] if a is None else a) + self.noise * r.standard_normal(self.batch)

    def draw_zeta(self, rng, shape):
        return rng.integers(0, 2 ** 31, size=tuple(shape))

    def draw_xi(self, rng, shape):
        return rng.integers(0, 2 ** 31, size=tuple(shape))

    def g(self, m, x, zeta):
        Z, Y = self._data(m, zeta)
        return x - self.eta_in * Z.T @ (Z @ x - Y) / self.batch

    def jac_g(self, m, x, zeta):
        Z, _ = self._data(m, zeta)
        return np.eye(self.d) - self.eta_in * Z.T @ Z / self.batch

    def grad_f(self, m, y, xi):
        Z, Y = self._data(m, xi)
        return Z.T @ (Z @ y - Y) / self.batch

    def g_exact(self, m, x):
        return x - self.eta_in * (x - self.a[m])

    def jac_g_exact(self, m, x):
        return (1.0 - self.eta_in) * np.eye(self.d)

    def grad_f_exact(self, m, y):
        return y - self.a[m]

    def F(self, x):
        return float(np.mean([0.5 * np.sum((self.g_exact(m, x) - self.a[m]) ** 2) for m in range(self.M)])
                     + 0.5 * self.noise ** 2)

    def grad_F(self, x):
        return np.mean([self.jac_g_exact(m, x).T @ self.grad_f_exact(m, self.g_exact(m, x))
                        for m in range(self.M)], axis=0)

    def post_adaptation_loss(self, x, tasks, rng, support=10, query=100):
        """Held-out tasks a: one inner step on a support batch, squared error on a query batch."""
        out = []
        for a in tasks:
            Z, Y = self._data(0, rng.integers(2 ** 31), a)
            Z, Y = Z[:support], Y[:support]
            xa = x - self.eta_in * Z.T @ (Z @ x - Y) / len(Y)
            Zq = rng.standard_normal((query, self.d))
            Yq = Zq @ a + self.noise * rng.standard_normal(query)
            out.append(0.5 * float(np.mean((Zq @ xa - Yq) ** 2)))
        return float(np.mean(out))


def _dphi(z):
    """φ'(z) = (1 + z²)^{-3/2} ∈ (0, 1]."""
    return (1.0 + z * z) ** -1.5


# max_z |φ''(z)| = |−3z(1 + z²)^{-5/2}| at z = 1/2: 1.5 · 1.25^{-5/2}
PHI2_MAX = 1.5 * 1.25 ** -2.5


@dataclass(frozen=True)
class NonlinearComposition(_SqrtOuter):
    """Synthetic family whose inner Jacobian depends on x and on the sample, so that every
    recursion of Algorithm 1 — h (7), u (8), v (9) — acts; its projections act at radii below the
    a-priori bounds C_g, C_f (``--radius-scale``), not at those bounds (docs/mfcgd.md):

        g^m(x; ζ) = (A + E) φ(x) + b_m + ε,     ζ = (ε, E): ε ~ N(0, s_g² I_p),
                                                E uniform on the Frobenius sphere of radius r_g (p×d)
        ∇g^m(x; ζ) = (A + E) diag(φ'(x))        φ(z) = z/sqrt(1 + z²) element-wise, φ' ∈ (0, 1]
        f^m(y; ξ) = Σ_i sqrt(1 + (y_i − c_{m,i})²) + ⟨ξ, y⟩,  ξ uniform on the sphere of radius r_f

    Constants, derived (each verified on samples by ``mfcgd.nonlinear_constants``):
      ||∇g(x; ζ)||_F ≤ ||A + E||_F ≤ ||A||_F + r_g =: C_g     (|φ'| ≤ 1; also g(·; ζ) is C_g-Lipschitz);
      ||∇g(x) − ∇g(y)||_F = ||A diag(φ'(x) − φ'(y))||_F ≤ max_j ||A_{:,j}|| · max|φ''| · ||x − y||
          and, per sample, with A + E: ≤ (||A||_F + r_g) max|φ''| ||x − y|| =: L_g ||x − y||,
          max|φ''| = 1.5 · 1.25^{-5/2} (at z = 1/2);
      ∇f as in :class:`SyntheticComposition`: C_f = sqrt(p) + r_f, L_f = 1;
      σ² = max(r_g² + p s_g², r_g², r_f²): E||E φ(x)||² = (r_g²/(pd)) · p ||φ(x)||² ≤ r_g² (|φ| < 1),
          E||E diag(φ')||_F² ≤ r_g², E||ξ||² = r_f²;
      δ_g = max_{m,j} ||b_m − b_j|| (shared A), δ_f as for the synthetic family;
      F ≥ p (every term sqrt(1 + ·) ≥ 1): F* is replaced by this lower bound, which can only
      enlarge F(x̄_1) − F* and so keeps the theorems' right sides valid.
    The exact Jacobian norm sup_x ||A diag(φ'(x))||_F = ||A||_F is reached at x = 0.
    """

    A: np.ndarray
    b: np.ndarray          # M × p
    c: np.ndarray          # M × p
    s_g: float = 0.1
    r_g: float = 0.5
    r_f: float = 0.1

    @classmethod
    def random(cls, M=6, p=4, d=8, heterogeneity=0.3, s_g=0.1, r_g=0.5, r_f=0.1, scale=1.5, rng=None):
        rng = rng or np.random.default_rng(0)
        A = scale * rng.standard_normal((p, d)) / np.sqrt(d)
        b = heterogeneity * rng.standard_normal((M, p))
        c = heterogeneity * rng.standard_normal((M, p)) + rng.standard_normal(p)
        return cls(A, b, c, s_g, r_g, r_f)

    # -- noise: ζ packs (ε, vec E) ----------------------------------------------------------------
    def draw_zeta(self, rng, shape):
        p, d = self.p, self.d
        eps = self.s_g * rng.standard_normal(tuple(shape) + (p,))
        E = rng.standard_normal(tuple(shape) + (p * d,))
        E = self.r_g * E / np.linalg.norm(E, axis=-1, keepdims=True)
        return np.concatenate([eps, E], axis=-1)

    def _split(self, zeta):
        return zeta[:self.p], zeta[self.p:].reshape(self.p, self.d)

    # -- stochastic oracles -------------------------------------------------------------------
    def g(self, m, x, zeta):
        eps, E = self._split(zeta)
        return (self.A + E) @ _phi(x) + self.b[m] + eps

    def jac_g(self, m, x, zeta):
        _, E = self._split(zeta)
        return (self.A + E) * _dphi(x)[None, :]

    # -- exact ----------------------------------------------------------------------------------
    def g_exact(self, m, x):
        return self.A @ _phi(x) + self.b[m]

    def jac_g_exact(self, m, x):
        return self.A * _dphi(x)[None, :]

    def F(self, x):
        Y = (self.A @ _phi(x))[None, :] + self.b - self.c
        return float(np.mean(np.sum(np.sqrt(1.0 + Y * Y), axis=1)))

    def grad_F(self, x):
        Y = (self.A @ _phi(x))[None, :] + self.b - self.c
        return _dphi(x) * (self.A.T @ np.mean(_phi(Y), axis=0))

    def constants(self):
        p = self.p
        nA = float(np.linalg.norm(self.A))
        C_g = nA + self.r_g
        delta_f, delta_g = self._deltas()
        return {"C_f": float(np.sqrt(p) + self.r_f), "C_g": C_g, "L_f": 1.0, "L_g": C_g * PHI2_MAX,
                "sigma": float(np.sqrt(max(self.r_g ** 2 + p * self.s_g ** 2, self.r_f ** 2))),
                "delta_f": delta_f, "delta_g": delta_g, "F_star": float(p),
                "sup_exact_jacobian": nA}
