"""Numba kernels of the MFCGD family (docs/mfcgd.md): Algorithm 1 and the Local-SCGD baselines on
the synthetic problem class, each the whole step loop in one kernel. Their NumPy twins are
:func:`refimpl.mfcgd.algorithm.run_mfcgd` and :func:`refimpl.mfcgd.algorithm.run_local_scgd`
(checked against them by ``mfcgd.algorithm1_literal`` and tests/test_mfcgd.py)."""
from __future__ import annotations

import numpy as np
from numba import njit

from refimpl.mfcgd.types import MFCGDParams, MFCGDResult

# ----------------------------------------------------------------------------- Algorithm 1 (Numba)

MATRIX_KIND = {"identity": 0, "adam": 1, "norm": 2, "amsgrad": 3}


@njit(cache=True)
def _phi_nb(z):
    return z / np.sqrt(1.0 + z * z)


@njit(cache=True, inline="always")
def _fill_xi_nb(xi, r_f, draw, given):
    """ξ uniform on the sphere of radius r_f (drawn here), or copied from ``given``."""
    p = xi.size
    if draw:
        nz = 0.0
        for i in range(p):
            xi[i] = np.random.standard_normal()
            nz += xi[i] * xi[i]
        for i in range(p):
            xi[i] *= r_f / np.sqrt(nz)
    else:
        for i in range(p):
            xi[i] = given[i]


@njit(cache=True, fastmath=True)
def _mfcgd_synthetic_nb(A, b, c, x1, T, q, k, n, c1, c2, c3, gamma, C_g, C_f, kind, rho, theta,
                        z0, xi0, Z, Xi, s_g, r_f, seed, lemma2):
    # Scalar loops throughout: at d ≤ 100, p ≈ 5 every temporary array would cost more than the
    # arithmetic. Same operations, same order of samples as run_mfcgd; fastmath lets LLVM
    # vectorise the reductions (sums reassociated: agreement with NumPy is to ~1e-14, not bitwise).
    M, p = b.shape
    d = A.shape[1]
    draw = Z.shape[0] == 0
    if draw:
        np.random.seed(seed)
    X = np.empty((M, d))
    Xn = np.empty((M, d))
    for m in range(M):
        X[m, :] = x1
    H = np.zeros((M, p))
    U = np.zeros((M, p, d))
    Vv = np.zeros((M, p))
    Wm = np.zeros((M, d))
    AX = np.empty((M, p))         # A x^m_t, carried from the step that produced x^m_t
    AXn = np.empty((M, p))
    zeta = np.empty(p)
    xi = np.empty(p)
    gx = np.empty(p)
    gxn = np.empty(p)
    hn = np.empty(p)
    vn = np.empty(p)
    for m in range(M):
        for i in range(p):
            s = 0.0
            for j in range(d):
                s += A[i, j] * X[m, j]
            AX[m, i] = s
            gx[i] = s + b[m, i]
        for jj in range(q):
            for i in range(p):
                zeta[i] = s_g * np.random.standard_normal() if draw else z0[m, jj, i]
            for i in range(p):
                H[m, i] += (gx[i] + zeta[i]) / q
        for i in range(p):
            for j in range(d):
                U[m, i, j] = A[i, j]
        for jj in range(q):
            _fill_xi_nb(xi, r_f, draw, xi0[m, jj])
            for i in range(p):
                Vv[m, i] += (_phi_nb(H[m, i] - c[m, i]) + xi[i]) / q
        for j in range(d):
            s = 0.0
            for i in range(p):
                s += U[m, i, j] * Vv[m, i]
            Wm[m, j] = s
    a = np.zeros(d)
    amax = np.zeros(d)
    a_norm = 0.0
    Adiag = np.ones(d)
    wbar = np.empty(d)
    xb = np.empty(d)
    gF = np.empty(d)
    Ax = np.empty(p)
    xbar_out = np.empty((T, d))
    gnorm = np.empty(T)
    anorm = np.empty(T)
    lhs = np.full(T, np.nan)
    rhs = np.full(T, np.nan)
    for t in range(0, T + 1):
        for j in range(d):
            s = 0.0
            for m in range(M):
                s += Wm[m, j]
            wbar[j] = s / M
        if t == 0 or t % q == 0:
            # A_1 from w̄_1 (t = 0 stands for the initialisation), then at every communication step
            if kind == 1 or kind == 3:
                for j in range(d):
                    a[j] = theta * a[j] + (1 - theta) * wbar[j] * wbar[j]
                    if a[j] > amax[j]:
                        amax[j] = a[j]
                    Adiag[j] = np.sqrt(amax[j] if kind == 3 else a[j]) + rho
            elif kind == 2:
                nw = 0.0
                for j in range(d):
                    nw += wbar[j] * wbar[j]
                a_norm = theta * a_norm + (1 - theta) * np.sqrt(nw)
                for j in range(d):
                    Adiag[j] = a_norm + rho
        if t == 0:
            continue
        for j in range(d):
            s = 0.0
            for m in range(M):
                s += X[m, j]
            xb[j] = s / M
            xbar_out[t - 1, j] = xb[j]
        for i in range(p):
            s = 0.0
            for j in range(d):
                s += A[i, j] * xb[j]
            Ax[i] = s
        for j in range(d):
            gF[j] = 0.0
        lacc = 0.0
        for i in range(p):
            mp = 0.0
            for m in range(M):
                mp += _phi_nb(Ax[i] + b[m, i] - c[m, i])
            mp /= M
            for j in range(d):
                gF[j] += A[i, j] * mp
        for m in range(M):
            for i in range(p):
                if lemma2:
                    dv = Vv[m, i] - _phi_nb(H[m, i] - c[m, i])
                    dh = H[m, i] - Ax[i] - b[m, i]
                    du = 0.0
                    for j in range(d):
                        du += (U[m, i, j] - A[i, j]) ** 2
                    lacc += 2 * C_f ** 2 * du + 4 * C_g ** 2 * dv * dv + 4 * C_g ** 2 * dh * dh
        ng = 0.0
        ll = 0.0
        for j in range(d):
            ng += gF[j] * gF[j]
            ll += (wbar[j] - gF[j]) ** 2
        gnorm[t - 1] = np.sqrt(ng)
        amx = 0.0
        for j in range(d):
            if Adiag[j] > amx:
                amx = Adiag[j]
        anorm[t - 1] = amx
        if lemma2:
            lhs[t - 1] = ll
            rhs[t - 1] = lacc / M
        eta = k / (n + t) ** (1.0 / 3.0)
        step = gamma * eta
        if t % q == 0:
            for j in range(d):
                Xn[0, j] = xb[j] - step * wbar[j] / Adiag[j]
            for i in range(p):
                s = 0.0
                for j in range(d):
                    s += A[i, j] * Xn[0, j]
                AXn[0, i] = s
            for m in range(1, M):
                Xn[m, :] = Xn[0, :]
                AXn[m, :] = AXn[0, :]
        else:
            for m in range(M):
                for j in range(d):
                    Xn[m, j] = X[m, j] - step * Wm[m, j] / Adiag[j]
                for i in range(p):
                    s = 0.0
                    for j in range(d):
                        s += A[i, j] * Xn[m, j]
                    AXn[m, i] = s
        e2 = eta * eta
        al, be, ro = min(1.0, c1 * e2), min(1.0, c2 * e2), min(1.0, c3 * e2)
        for m in range(M):
            for i in range(p):
                zeta[i] = s_g * np.random.standard_normal() if draw else Z[t - 1, m, i]
            if draw:
                _fill_xi_nb(xi, r_f, True, xi)
            else:
                _fill_xi_nb(xi, r_f, False, Xi[t - 1, m])
            for i in range(p):
                gxn[i] = AXn[m, i] + b[m, i] + zeta[i]
                gx[i] = AX[m, i] + b[m, i] + zeta[i]
                hn[i] = gxn[i] + (1 - al) * (H[m, i] - gx[i])
            nu = 0.0
            for i in range(p):
                for j in range(d):
                    v = A[i, j] + (1 - be) * (U[m, i, j] - A[i, j])
                    U[m, i, j] = v
                    nu += v * v
            if np.sqrt(nu) > C_g:
                f = C_g / np.sqrt(nu)
                for i in range(p):
                    for j in range(d):
                        U[m, i, j] *= f
            nv = 0.0
            for i in range(p):
                vn[i] = (_phi_nb(hn[i] - c[m, i]) + xi[i]) + (1 - ro) * (Vv[m, i] - (_phi_nb(H[m, i] - c[m, i]) + xi[i]))
                nv += vn[i] * vn[i]
            f = C_f / np.sqrt(nv) if np.sqrt(nv) > C_f else 1.0
            for i in range(p):
                Vv[m, i] = vn[i] * f
                H[m, i] = hn[i]
            for j in range(d):
                s = 0.0
                for i in range(p):
                    s += U[m, i, j] * Vv[m, i]
                Wm[m, j] = s
        X, Xn = Xn, X
        AX, AXn = AXn, AX
    return xbar_out, gnorm, lhs, rhs, anorm


def _f64(a):
    return np.ascontiguousarray(a, dtype=np.float64)


def run_mfcgd_synthetic_nb(problem, x1, T, params: MFCGDParams, matrix, rng=None, noise=None, lemma2=False):
    """Numba twin of :func:`run_mfcgd` for :class:`~refimpl.mfcgd.problems.SyntheticComposition`:
    the whole step loop in one kernel. With ``noise`` it uses the given samples (equal to the NumPy
    implementation to rounding); without, it draws them inside the kernel from a seed taken from
    ``rng`` (fast long runs). The output x̄_τ takes τ from ``rng``; with the samples given and no
    ``rng``, from ``numpy.random.default_rng(0)`` (a run without a generator is reproducible)."""
    M, p, q = problem.M, problem.p, int(params.q)
    kind = MATRIX_KIND[matrix.name]
    rho = getattr(matrix, "rho", 1.0)
    theta = getattr(matrix, "theta", 1.0)
    if noise is None:
        empty = np.zeros((0, M, p))
        z0 = xi0 = np.zeros((M, q, p))
        Z = Xi = empty
        seed = int(rng.integers(2 ** 31))
    else:
        z0, xi0, Z, Xi = (_f64(a) for a in noise)
        seed = 0
    # every scalar cast to the kernel's one signature (warm): an integer-valued k or c1 would
    # otherwise compile (and cache) a second specialisation of the same kernel
    f = float
    xb, gn, lhs, rhs, an = _mfcgd_synthetic_nb(
        _f64(problem.A), _f64(problem.b), _f64(problem.c), _f64(x1), int(T), q,
        f(params.k), f(params.n), f(params.c1), f(params.c2), f(params.c3), f(params.gamma), f(params.C_g),
        f(params.C_f), int(kind), f(rho), f(theta), z0, xi0, Z, Xi, f(problem.s_g), f(problem.r_f), int(seed),
        bool(lemma2))
    t = np.arange(1, T + 1)
    out = MFCGDResult(xb, gn, lhs, rhs, 2 * q * M + 2 * M * t, t // q, None, an)
    out.output = xb[(rng or np.random.default_rng(0)).integers(T)]
    return out


@njit(cache=True, fastmath=True)
def _local_scgd_synthetic_nb(A, b, c, x1, T, q, eta, beta, alpha, momentum, s_g, r_f, seed, Z0, Z, XI):
    """With ``Z0`` (M, p), ``Z`` (T, M, p), ``XI`` (T, M, p) non-empty: the given samples ζ for y's
    start, ζ and ξ per step and client (problem units: ξ on the sphere of radius r_f); else drawn."""
    np.random.seed(seed)
    given = Z.shape[0] > 0
    M, p = b.shape
    d = A.shape[1]
    X = np.empty((M, d))
    for m in range(M):
        X[m, :] = x1
    Y = np.empty((M, p))
    Mom = np.zeros((M, d))
    AX = np.empty(p)
    xi = np.empty(p)
    zs = np.empty(p)
    dm = np.empty(d)
    for m in range(M):
        for i in range(p):
            s = 0.0
            for j in range(d):
                s += A[i, j] * X[m, j]
            Y[m, i] = s + b[m, i] + (Z0[m, i] if given else s_g * np.random.standard_normal())
    gnorm = np.empty(T)
    xsq = np.empty(T)
    xb = np.empty(d)
    for t in range(1, T + 1):
        sq = 0.0
        for j in range(d):
            s = 0.0
            for m in range(M):
                s += X[m, j]
            xb[j] = s / M
            sq += xb[j] * xb[j]
        xsq[t - 1] = sq
        ng = 0.0
        gF = np.zeros(d)
        for i in range(p):
            s = 0.0
            for j in range(d):
                s += A[i, j] * xb[j]
            mp = 0.0
            for m in range(M):
                mp += _phi_nb(s + b[m, i] - c[m, i])
            mp /= M
            for j in range(d):
                gF[j] += A[i, j] * mp
        for j in range(d):
            ng += gF[j] * gF[j]
        gnorm[t - 1] = np.sqrt(ng)
        for m in range(M):
            # the samples as standard normals scaled below (ξ by r_f/||ξ||, ζ by s_g), drawn in the
            # stream's order ξ, ζ, ζ'; given samples are already scaled: factors 1 (r_f/sqrt(r_f²))
            if given:
                xi[:] = XI[t - 1, m]
                zs[:] = Z[t - 1, m]
                nz, zf = r_f * r_f, 1.0
            else:
                nz, zf = 0.0, s_g
                for i in range(p):
                    xi[i] = np.random.standard_normal()
                    nz += xi[i] * xi[i]
                for i in range(p):
                    zs[i] = np.random.standard_normal()
                np.random.standard_normal(p)          # ζ' (∇g is the constant A: drawn, not used)
            for i in range(p):
                s = 0.0
                for j in range(d):
                    s += A[i, j] * X[m, j]
                Y[m, i] = (1 - beta) * Y[m, i] + beta * (s + b[m, i] + zf * zs[i])
            for j in range(d):
                dm[j] = 0.0
            for i in range(p):
                gf = _phi_nb(Y[m, i] - c[m, i]) + r_f * xi[i] / np.sqrt(nz)
                for j in range(d):
                    dm[j] += A[i, j] * gf
            for j in range(d):
                if momentum:
                    Mom[m, j] = (1 - alpha) * Mom[m, j] + alpha * dm[j]
                    X[m, j] -= eta * Mom[m, j]
                else:
                    X[m, j] -= eta * dm[j]
        if t % q == 0:
            for j in range(d):
                s = 0.0
                sm = 0.0
                for m in range(M):
                    s += X[m, j]
                    sm += Mom[m, j]
                for m in range(M):
                    X[m, j] = s / M
                    if momentum:
                        Mom[m, j] = sm / M
            if momentum:
                for i in range(p):
                    s = 0.0
                    for m in range(M):
                        s += Y[m, i]
                    for m in range(M):
                        Y[m, i] = s / M
    return gnorm, xsq


def run_local_scgd_synthetic_nb(problem, x1, T, q, eta, beta, alpha=None, rng=None, sq_norms=False, samples=None):
    """Numba version of :func:`run_local_scgd` for the synthetic class (samples drawn in-kernel, or
    ``samples`` = (zeta0, zeta, zeta2, xi) of :func:`~refimpl.mfcgd.algorithm.draw_scgd_samples`;
    ζ' is not read: ∇g is the constant A); returns ``(grad_norm, samples, rounds)`` per step, and
    with ``sq_norms`` also ||x̄_t||² per step (the divergence rule's iterate test)."""
    rng = rng or np.random.default_rng(0)
    if samples is None:
        Z0, Z, XI = np.zeros((0, 0)), np.zeros((0, 0, 0)), np.zeros((0, 0, 0))
    else:
        Z0, Z, _, XI = (np.ascontiguousarray(a, dtype=np.float64) for a in samples)
        if Z.shape[0] < T or XI.shape[0] < T:
            raise ValueError(f"given samples hold {min(Z.shape[0], XI.shape[0])} steps, the run needs {T}")
    gn, xsq = _local_scgd_synthetic_nb(_f64(problem.A), _f64(problem.b), _f64(problem.c), _f64(x1), int(T),
                                       int(q), float(eta),
                                       float(beta), float(alpha or 0.0), alpha is not None, float(problem.s_g),
                                       float(problem.r_f), int(rng.integers(2 ** 31)), Z0, Z, XI)
    t = np.arange(1, T + 1)
    out = (gn, problem.M * (1 + 3 * t), t // int(q))
    return out + (xsq,) if sq_norms else out


#: kernels only other kernels call: compiled as their callees, never alone (see :func:`warm`)
CALLEES = ("_phi_nb",)


def warm():
    """Compile this module's kernels at the one signature each is called with (the wrappers cast
    every argument to it), or load them from Numba's on-disk cache (:func:`refimpl.papers.warm_kernels`)."""
    from numba import types as nt
    f, i = nt.float64, nt.int64
    F1, F2, F3 = nt.float64[::1], nt.float64[:, ::1], nt.float64[:, :, ::1]
    # _phi_nb (CALLEES) is compiled as the callee of the first kernel, as a run compiles it: compiled
    # alone first, the kernels that call it round differently (measured: 1.1e-15 against 1.6e-15 from
    # the NumPy twin in mfcgd.algorithm1_literal), so a run's figures would depend on who compiled
    _mfcgd_synthetic_nb.compile((F2, F2, F2, F1, i, i) + (f,) * 8 + (i, f, f, F3, F3, F3, F3, f, f, i, nt.boolean))
    _local_scgd_synthetic_nb.compile((F2, F2, F2, F1, i, i, f, f, f, nt.boolean, f, f, i, F2, F3, F3))
    return [_mfcgd_synthetic_nb, _local_scgd_synthetic_nb]
