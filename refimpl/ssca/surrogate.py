"""Mini-batch SSCA server math, [SSCA] (docs/ssca.md): surrogate state, recursion,
unconstrained closed form and the move. Shared by Algorithms 1–4.

The surrogate of the data term after round t is the quadratic
    q^t(ω) = A^t ||ω||² + ⟨B^t, ω⟩ + C^t,
the ρ-weighted running average of the per-round linearisations plus τ||ω − ω^t||² (example (7)).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from refimpl.core import validate as V


@dataclass(frozen=True)
class SurrogateState:
    """(A^t, B^t, C^t); A^0 = 0, B^0 = 0, C^0 = 0."""

    A: float
    B: np.ndarray
    C: float

    @classmethod
    def zeros(cls, n_params):
        return cls(0.0, np.zeros(n_params), 0.0)

    def value(self, omega):
        """q^t(ω)."""
        return self.A * float(omega @ omega) + float(self.B @ omega) + self.C

    def gradient(self, omega):
        """∇q^t(ω) = 2 A^t ω + B^t."""
        return 2.0 * self.A * omega + self.B


CURVATURES = ("recursive", "fixed")


def check_curvature(curvature):
    if curvature not in CURVATURES:
        raise ValueError(f"curvature must be one of {CURVATURES} ('recursive': the paper's A-recursion from A^0 = 0; "
                         f"'fixed': A^t = τ as in the authors' code), got {curvature!r}")
    return curvature


def surrogate_update(state: SurrogateState, loss_hat, grad_hat, omega, rho, tau,
                     curvature="recursive") -> SurrogateState:
    """Surrogate recursion, [SSCA] (3), (7)–(9), (35)–(37), (42):

        A^t = (1 − ρ_t) A^{t−1} + ρ_t τ            (curvature "recursive", the paper's analysis)
        A^t = τ                                    (curvature "fixed", the authors' MATLAB code)
        B^t = (1 − ρ_t) B^{t−1} + ρ_t (ĝ^t − 2τ ω^t)
        C^t = (1 − ρ_t) C^{t−1} + ρ_t (ℓ̂^t − ⟨ĝ^t, ω^t⟩ + τ ||ω^t||²)

    The two curvatures agree exactly when ρ_1 = 1 (then the recursion gives A^t = τ for all t)."""
    V.unit_interval("rho_t", rho)
    V.positive("tau", tau)
    B = (1.0 - rho) * state.B
    B += rho * (grad_hat - 2.0 * tau * omega)
    A = tau if check_curvature(curvature) == "fixed" else (1.0 - rho) * state.A + rho * tau
    C = (1.0 - rho) * state.C + rho * (loss_hat - float(grad_hat @ omega) + tau * float(omega @ omega))
    return SurrogateState(A, B, C)


def unconstrained_step(state: SurrogateState, lam):
    """ω̄^t = argmin_ω q^t(ω) + λ||ω||² = −B^t / (2 (A^t + λ)), [SSCA] (10), (24), (38)–(39)."""
    V.positive("lambda", lam, allow_zero=True)
    if state.A + lam <= 0:
        raise ValueError("A^t + λ must be > 0 (run at least one surrogate update, or use λ > 0)")
    return state.B / (-2.0 * (state.A + lam))


def move(omega, omega_bar, gamma):
    """ω^{t+1} = (1 − γ_t) ω^t + γ_t ω̄^t, [SSCA] (5), (18)."""
    V.unit_interval("gamma_t", gamma)
    return (1.0 - gamma) * omega + gamma * omega_bar


def momentum_form_step(v_prev, omega, grad_hat, rho, gamma_prev, gamma, tau, lam):
    """Remark 2 of [SSCA] (docs/ssca.md): SSCA with A^t ≡ τ written as momentum SGD,

        v^t = (1 − ρ_t)(1 − γ_{t−1}) v^{t−1} + ρ_t (ĝ^t + 2λω^t)
        ω^{t+1} = ω^t − γ_t / (2(τ + λ)) · v^t

    Returns ``(v^t, ω^{t+1})``. Derivation: v^t = 2(τ+λ)(ω^t − ω̄^t) = 2(τ+λ)ω^t + B^t;
    substitute the B recursion and ω^t = ω^{t−1} − γ_{t−1} v^{t−1} / (2(τ+λ)).
    """
    v = (1.0 - rho) * (1.0 - gamma_prev) * v_prev + rho * (grad_hat + 2.0 * lam * omega)
    return v, omega - gamma / (2.0 * (tau + lam)) * v
