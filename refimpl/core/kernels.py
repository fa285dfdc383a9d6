"""Element-wise and per-sample kernels of the two-layer network, each with a NumPy twin.

The matrix products of a forward/backward pass go to BLAS (``numpy.matmul``); what is left is
element-wise (activation and its derivative) and per-sample (softmax–cross-entropy) work. These
are fused here into one pass each, as Numba kernels, so a round touches each B×J and B×L array
once. Every kernel ``*_nb`` has a plain-NumPy twin ``*_np`` computing the same quantity; the tests
and the ``kernels.numba_numpy`` verification check assert they agree.

Kernels that divide are compiled with ``error_model="numpy"``: Numba's default inserts a
division-by-zero check that keeps LLVM from vectorising the loop (the swish pass was 14× slower
with it, measured by ``refimpl bench ssca --breakdown``); every denominator here is ≥ 1 by
construction (1 + e^{−|z|}, 1 + Σ e^{o_l − o_max}), and the results are the same to the bit.

Numerics: the logistic sigmoid is evaluated as exp(-|z|)-based expressions so that no exp
overflows, and the softmax uses the max-shifted log-sum-exp, so |pre-activation| up to 1e3 (and
beyond) gives finite values.
"""
from __future__ import annotations

import numpy as np
from numba import njit


# ----------------------------------------------------------------------------------------------
# activation: A = act(Z + b), dA = act'(Z + b)   (docs/ssca.md; swish(z) = z σ(z))
# ----------------------------------------------------------------------------------------------

@njit(cache=True)
def _neg_abs_nb(Z, b, E):
    n, m = Z.shape
    for i in range(n):
        for j in range(m):
            E[i, j] = -abs(Z[i, j] + b[j])


@njit(cache=True, error_model="numpy")
def _swish_from_exp_nb(Z, b, E, A, dA):
    n, m = Z.shape
    for i in range(n):
        for j in range(m):
            z = Z[i, j] + b[j]
            e = E[i, j]                        # exp(−|z|) ≤ 1: never overflows
            r = 1.0 / (1.0 + e)
            s = r if z >= 0.0 else e * r       # σ(z)
            sc = e * r if z >= 0.0 else r      # 1 − σ(z) = σ(−z), no cancellation
            A[i, j] = z * s
            dA[i, j] = s * (1.0 + z * sc)      # swish'(z) = σ(z)(1 + z(1 − σ(z)))


@njit(cache=True)
def _relu_nb(Z, b, A, dA):
    n, m = Z.shape
    for i in range(n):
        for j in range(m):
            z = Z[i, j] + b[j]
            if z > 0.0:
                A[i, j] = z
                dA[i, j] = 1.0
            else:
                A[i, j] = 0.0
                dA[i, j] = 0.0


def _sigmoid_pair_np(z):
    """σ(z) and 1 − σ(z) without overflow or cancellation."""
    e = np.exp(-np.abs(z))
    pos = z >= 0
    s = np.where(pos, 1.0 / (1.0 + e), e / (1.0 + e))
    sc = np.where(pos, e / (1.0 + e), 1.0 / (1.0 + e))
    return s, sc


def activation_np(Z, b, kind):
    """NumPy twin of :func:`activation_nb`: returns ``(act(Z + b), act'(Z + b))``."""
    z = Z + b
    if kind == "swish":
        s, sc = _sigmoid_pair_np(z)
        return z * s, s * (1.0 + z * sc)
    if kind == "relu":
        pos = z > 0
        return np.where(pos, z, 0.0), pos.astype(z.dtype)
    raise ValueError(f"activation must be 'swish' or 'relu', got {kind!r}")


def activation_nb(Z, b, kind):
    """Fused activation and derivative (one pass over Z): ``(act(Z + b), act'(Z + b))``."""
    A = np.empty_like(Z)
    dA = np.empty_like(Z)
    if kind == "swish":
        # exp goes to NumPy's SIMD exp (Numba's is scalar and would cost as much as the rest)
        E = np.empty_like(Z)
        _neg_abs_nb(Z, b, E)
        np.exp(E, out=E)
        _swish_from_exp_nb(Z, b, E, A, dA)
    elif kind == "relu":
        _relu_nb(Z, b, A, dA)
    else:
        raise ValueError(f"activation must be 'swish' or 'relu', got {kind!r}")
    return A, dA


# ----------------------------------------------------------------------------------------------
# softmax–cross-entropy: loss = Σ_n w_n (logsumexp(o_n) − o_{n,y_n}),  Δ2 = w_n (softmax(o_n) − e_{y_n}),
# evaluated without cancellation: with m = argmax o and s = Σ_{l≠m} e^{o_l − o_m},
# ℓ = log1p(s) + (o_m − o_y), and for y = m, Δ2_m = −w Σ_{l≠m} p_l (never 1 − p_m)
# ----------------------------------------------------------------------------------------------

@njit(cache=True, error_model="numpy")
def _softmax_xent_nb(O, b, y, w, D2):
    n, m = O.shape
    loss = 0.0
    for i in range(n):
        am = 0
        mx = O[i, 0] + b[0]
        for l in range(1, m):
            v = O[i, l] + b[l]
            if v > mx:
                mx = v
                am = l
        s = 0.0
        for l in range(m):
            if l != am:
                e = np.exp(O[i, l] + b[l] - mx)
                D2[i, l] = e
                s += e
        inv = 1.0 / (1.0 + s)
        yi = y[i]
        loss += w[i] * (np.log1p(s) + (mx - (O[i, yi] + b[yi])))
        tot = 0.0
        for l in range(m):
            if l != am:
                pl = D2[i, l] * inv
                D2[i, l] = w[i] * pl
                tot += pl
        if yi == am:
            D2[i, am] = -w[i] * tot                 # p_m − 1 = −Σ_{l≠m} p_l, without the subtraction
        else:
            D2[i, am] = w[i] * inv
            D2[i, yi] -= w[i]                       # p_y ≤ 1/2 here: no cancellation
    return loss


def softmax_xent_np(O, b, y, w):
    """NumPy twin of :func:`softmax_xent_nb`: weighted cross-entropy and its gradient in O."""
    o = O + b
    rows = np.arange(o.shape[0])
    am = o.argmax(axis=1)
    mx = o[rows, am]
    E = np.exp(o - mx[:, None])
    E[rows, am] = 0.0
    s = E.sum(axis=1)
    loss = float(np.sum(w * (np.log1p(s) + (mx - o[rows, y]))))
    D2 = E / (1.0 + s)[:, None]
    top = y == am
    D2[rows, am] = np.where(top, -D2.sum(axis=1), 1.0 / (1.0 + s))
    D2[rows[~top], y[~top]] -= 1.0
    D2 *= w[:, None]
    return loss, D2


def softmax_xent_nb(O, b, y, w):
    """Fused softmax–cross-entropy: ``(Σ_n w_n ℓ_n, Δ2)`` with Δ2[n] = w_n (p_n − e_{y_n})."""
    D2 = np.empty_like(O)
    loss = _softmax_xent_nb(O, b, y, w, D2)
    return float(loss), D2




# ----------------------------------------------------------------------------------------------
# mini-batch gather: X[idx] (rows)
# ----------------------------------------------------------------------------------------------

@njit(cache=True)
def _gather_rows_nb(X, idx, out):
    for i in range(idx.size):
        out[i, :] = X[idx[i], :]


def gather_rows_nb(X, idx):
    """``X[idx]`` for a C-contiguous 2-d X."""
    out = np.empty((idx.size, X.shape[1]), dtype=X.dtype)
    _gather_rows_nb(X, idx, out)
    return out


def gather_rows_np(X, idx):
    """NumPy twin of :func:`gather_rows_nb`."""
    return X[idx]


KERNELS = {
    "numba": (activation_nb, softmax_xent_nb),
    "numpy": (activation_np, softmax_xent_np),
}
GATHER = {"numba": gather_rows_nb, "numpy": gather_rows_np}
