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
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic


# ----------------------------------------------------------------------------------------------
# exp on x ≤ 0, in arithmetic LLVM can vectorise
# ----------------------------------------------------------------------------------------------
# Numba's exp is a call to the C library, one element at a time, and NumPy has a SIMD float64 exp
# only on AVX-512 machines; at 4–7 ns an element it was the largest element-wise cost of a round.
# exp_nonpos evaluates e^x for x ≤ 0 the textbook way: x = k ln2 + r with k = round(x / ln2) and
# |r| ≤ ln2/2 (Cody–Waite two-part ln2, so r is exact to ~1e-20), e^r by its Taylor polynomial of
# degree 13 (truncation < 4.2e-18 relative), and 2^k built from bits, in two factors 2^{k1} 2^{k2}
# so that results down to the smallest subnormal round once, in the last multiply. Every step is
# branch-free arithmetic on one element, so the loops that call it vectorise (4 lanes on AVX2).
# Measured against the C library on 10^6 arguments over [−746, 0] (tests/test_model.py): at most
# 1 unit in the last place apart, bit-equal for ~94 % of arguments. x < −746 gives 0 (the true
# value rounds to 0 below −745.14); NaN gives 0 too, so callers propagate NaN through x itself.

_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01           # ln 2 to 32 bits: k · _LN2_HI is exact for |k| < 2^20
_LN2_LO = 1.90821492927058770002e-10           # ln 2 − _LN2_HI
_SHIFT = 6755399441055744.0                    # 1.5 · 2^52: t + _SHIFT rounds t to an integer, kept in the low bits
_EXP_FLOOR = -746.0
_C = tuple(1.0 / float(np.prod(np.arange(1, n + 1))) for n in range(14))     # 1/n!, n = 0..13


@intrinsic
def _bits_of(typingctx, x):
    """The IEEE-754 bits of a float64 as an int64 (an LLVM bitcast: no arithmetic)."""
    if not isinstance(x, types.Float):
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return types.int64(types.float64), codegen


@intrinsic
def _float_of(typingctx, n):
    """The float64 whose IEEE-754 bits are the int64 n (an LLVM bitcast)."""
    if not isinstance(n, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return types.float64(types.int64), codegen


_BIAS_OF_SHIFT = 0x4338000000000000 - 1023     # bits of _SHIFT minus the exponent bias


@njit(inline="always", error_model="numpy")
def _pow2(k):
    """2^k for an integer-valued float k in [−1022, 1023]: the exponent field set from k."""
    return _float_of((_bits_of(k + _SHIFT) - _BIAS_OF_SHIFT) << 52)


@njit(inline="always", error_model="numpy")
def exp_nonpos(x):
    """e^x for x ≤ 0 (see the comment above); ≤ 1 ulp from the C library's exp."""
    x = x if x > _EXP_FLOOR else _EXP_FLOOR
    k = (x * _LOG2E + _SHIFT) - _SHIFT          # round(x / ln 2), exactly, as a float
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = _C[13]
    p = p * r + _C[12]
    p = p * r + _C[11]
    p = p * r + _C[10]
    p = p * r + _C[9]
    p = p * r + _C[8]
    p = p * r + _C[7]
    p = p * r + _C[6]
    p = p * r + _C[5]
    p = p * r + _C[4]
    p = p * r + _C[3]
    p = p * r + _C[2]
    p = p * r + 1.0
    p = p * r + 1.0
    k1 = np.floor(0.5 * k)                      # k = k1 + k2, both ≥ −538: 2^{k1}, 2^{k2} are normal
    return (p * _pow2(k1)) * _pow2(k - k1)


# The kernels that call exp_nonpos let LLVM contract a·b + c into one fused multiply-add
# (fastmath={"contract"} and nothing else): the Horner steps then round once instead of twice —
# faster, and closer to the true value (bit-equal to the C library for ~94 % of arguments, ~90 %
# without). On a CPU without FMA the compiler keeps the separate operations.
_CONTRACT = {"contract"}


@njit(cache=True, error_model="numpy", fastmath=_CONTRACT)
def _exp_nonpos_nb(X, out):
    for i in range(X.size):
        out[i] = exp_nonpos(X[i])


def exp_nonpos_nb(X):
    """Element-wise :func:`exp_nonpos` over an array of values ≤ 0 (its NumPy twin is ``np.exp``)."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    out = np.empty_like(X)
    _exp_nonpos_nb(X.reshape(-1), out.reshape(-1))
    return out


# ----------------------------------------------------------------------------------------------
# activation: A = act(Z + b), dA = act'(Z + b)   (docs/ssca.md; swish(z) = z σ(z))
# ----------------------------------------------------------------------------------------------

@njit(cache=True, error_model="numpy", fastmath=_CONTRACT)
def _exp_neg_abs_nb(Z, b, E):
    n, m = Z.shape
    for i in range(n):
        for j in range(m):
            E[i, j] = exp_nonpos(-abs(Z[i, j] + b[j]))


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
    """Activation and derivative in one call: ``(act(Z + b), act'(Z + b))``."""
    A = np.empty_like(Z)
    dA = np.empty_like(Z)
    b = np.ascontiguousarray(b)          # a bias column W[:, 0] is strided: the loop would not vectorise
    if kind == "swish":
        # two passes, exp then the rest: measured faster than one fused pass (the fused loop
        # vectorises worse), and the second pass is the same arithmetic as with the C library's exp
        E = np.empty_like(Z)
        _exp_neg_abs_nb(Z, b, E)
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
    loss = _softmax_xent_nb(O, np.ascontiguousarray(b), y, w, D2)
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


def warm():
    """Compile this module's kernels at the one signature each is called with, or load them from
    Numba's on-disk cache (:func:`refimpl.papers.warm_kernels`): the wrappers pass C-contiguous
    float64 arrays and int64 labels and ids."""
    from numba import types as nt
    F1, F2, I1 = nt.float64[::1], nt.float64[:, ::1], nt.int64[::1]
    _exp_nonpos_nb.compile((F1, F1))
    _exp_neg_abs_nb.compile((F2, F1, F2))
    _swish_from_exp_nb.compile((F2, F1, F2, F2, F2))
    _relu_nb.compile((F2, F1, F2, F2))
    _softmax_xent_nb.compile((F2, F1, I1, F1, F2))
    _gather_rows_nb.compile((F2, I1, F2))
    return [_exp_nonpos_nb, _exp_neg_abs_nb, _swish_from_exp_nb, _relu_nb, _softmax_xent_nb, _gather_rows_nb]
