"""The SSCA server step fused into one Numba pass over ω, with its NumPy twin.

Steps 2–4 of a round for the unconstrained problem — the surrogate recursion, the closed form and
the move — touch each coordinate of ω once; the tests assert the kernel equals its twin and
the composition of :mod:`refimpl.ssca.surrogate`'s functions. ``error_model="numpy"`` lets LLVM
vectorise the pass (no division-by-zero check; the denominator −2(A + λ) is nonzero because A^t > 0
after the first update: A^t = τ (fixed) or, from A^0 = 0, (1 − ρ_t)A^{t−1} + ρ_t τ ≥ ρ_t τ > 0 with
ρ_t ∈ (0, 1] and τ > 0 validated — A^1 = ρ_1 τ can be below τ).
"""
from __future__ import annotations

import numpy as np
from numba import njit


# ----------------------------------------------------------------------------------------------
# SSCA server round (docs/ssca.md steps 2–4 for the unconstrained problem), fused into one pass
# ----------------------------------------------------------------------------------------------

@njit(cache=True, error_model="numpy")
def _ssca_round_nb(B_prev, g, w, rho, tau, gamma, denom, B_new, w_new):
    gw = 0.0
    ww = 0.0
    nn = 0.0
    for i in range(w.size):
        wi = w[i]
        gw += g[i] * wi
        ww += wi * wi
        b = (1.0 - rho) * B_prev[i] + rho * (g[i] - 2.0 * tau * wi)
        B_new[i] = b
        x = (1.0 - gamma) * wi + gamma * (b / denom)
        w_new[i] = x
        nn += x * x
    return gw, ww, nn


def ssca_round_np(A_prev, B_prev, C_prev, loss_hat, g, w, rho, tau, gamma, lam, fixed=False):
    """NumPy twin of :func:`ssca_round_nb`: surrogate recursion, ω̄ = −B/(2(A+λ)), move.
    ``fixed``: A^t = τ (the authors' curvature) instead of the A-recursion.

    Returns ``(A, B, C, ω^{t+1}, ||ω^{t+1}||²)`` (the last for a cheap finiteness check)."""
    A = tau if fixed else (1.0 - rho) * A_prev + rho * tau
    B = (1.0 - rho) * B_prev + rho * (g - 2.0 * tau * w)
    C = (1.0 - rho) * C_prev + rho * (loss_hat - float(g @ w) + tau * float(w @ w))
    w_new = (1.0 - gamma) * w + gamma * (-B / (2.0 * (A + lam)))
    return A, B, C, w_new, float(w_new @ w_new)


def ssca_round_nb(A_prev, B_prev, C_prev, loss_hat, g, w, rho, tau, gamma, lam, fixed=False):
    """One pass over ω: the three recursions of (3)/(7)–(9), the closed form (10) and the move (5)."""
    A = tau if fixed else (1.0 - rho) * A_prev + rho * tau
    B_new = np.empty_like(w)
    w_new = np.empty_like(w)
    gw, ww, nn = _ssca_round_nb(B_prev, g, w, float(rho), float(tau), float(gamma), float(-2.0 * (A + lam)),
                                B_new, w_new)
    C = (1.0 - rho) * C_prev + rho * (loss_hat - gw + tau * ww)
    return A, B_new, C, w_new, nn


SERVER_KERNELS = {"numba": ssca_round_nb, "numpy": ssca_round_np}


def warm():
    """Compile this module's kernel at the one signature :func:`ssca_round_nb` calls it with, or
    load it from Numba's on-disk cache (:func:`refimpl.papers.warm_kernels`)."""
    from numba import types as nt
    F1, f = nt.float64[::1], nt.float64
    _ssca_round_nb.compile((F1, F1, F1, f, f, f, f, F1, F1))
    return [_ssca_round_nb]
