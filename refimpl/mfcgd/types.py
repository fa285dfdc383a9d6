"""The parameters and the result of [MFCGD] Algorithm 1, in their own module: the NumPy runners
(:mod:`refimpl.mfcgd.algorithm`) and the Numba kernels (:mod:`refimpl.mfcgd.kernels`) both use
them, and neither imports the other's module for them."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from refimpl.core import validate as V


@dataclass(frozen=True)
class MFCGDParams:
    """Step sizes and constants of Algorithm 1 with the schedules of Theorems 1–2."""

    k: float = 1.0
    n: float = 8.0
    c1: float = 1.0
    c2: float = 1.0
    c3: float = 1.0
    gamma: float = 0.5
    q: int = 5
    C_g: float = 10.0
    C_f: float = 10.0

    def __post_init__(self):
        for f in ("k", "gamma", "C_g", "C_f", "n"):
            V.positive(f, getattr(self, f))
        for f in ("c1", "c2", "c3"):
            V.positive(f, getattr(self, f))
        if int(self.q) != self.q or self.q < 1:
            raise ValueError(f"q must be an integer >= 1, got {self.q}")

    def eta(self, t):
        return self.k / (self.n + t) ** (1.0 / 3.0)

    def momentum(self, t):
        """(α_{t+1}, β_{t+1}, ϱ_{t+1}) = (c1, c2, c3) η_t², each capped at 1."""
        e2 = self.eta(t) ** 2
        return min(1.0, self.c1 * e2), min(1.0, self.c2 * e2), min(1.0, self.c3 * e2)

    def capped_steps(self, T):
        """For α, β and ϱ: the steps t ≤ T at which c η_t² > 1, so the cap at 1 was used (η_t
        decreases, so these are the first steps 1..S; S = 0: never). Under the theorems'
        condition n ≥ (c k)³ the cap never binds."""
        t = np.arange(1, int(T) + 1)
        e2 = self.k ** 2 / (self.n + t) ** (2.0 / 3.0)
        return {name: int(np.sum(c * e2 > 1.0)) for name, c in (("alpha", self.c1), ("beta", self.c2), ("rho", self.c3))}


@dataclass
class MFCGDResult:
    x_bar: np.ndarray          # (T, d): x̄_t for t = 1..T
    grad_norm: np.ndarray      # (T,): ||∇F(x̄_t)||
    lemma2_lhs: np.ndarray     # (T,): ||w̄_t − ∇F(x̄_t)||²
    lemma2_rhs: np.ndarray     # (T,): right side of (13) with the exact quantities
    samples: np.ndarray        # (T,): samples drawn up to step t (all clients)
    rounds: np.ndarray         # (T,): communication rounds up to step t
    output: np.ndarray         # x̄_τ, τ uniform on 1..T
    A_norm: np.ndarray = None  # (T,): ||A_t|| (spectral norm of the diagonal matrix)
    bound_u: int = 0           # client-steps at which Π_{C_g} changed u (NumPy runner only)
    bound_v: int = 0           # client-steps at which Π_{C_f} changed v (NumPy runner only)
    states: dict = None        # record_states: per step t the state (X, H, U, V) before the update,
                               # x_{t+1} (X_next) and the diagonal of A_t
    dumps: dict = None         # dump_steps: {t: {name: array}}

    @classmethod
    def empty(cls, T, d):
        return cls(np.empty((T, d)), np.empty(T), np.full(T, np.nan), np.full(T, np.nan),
                   np.empty(T, dtype=np.int64), np.empty(T, dtype=np.int64), None, np.empty(T))
