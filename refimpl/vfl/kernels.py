"""Numba kernel of Flex-VFL's local phase (docs/flexvfl.md): a linear-encoder party's τ local steps
(SGD, local momentum or proximal) in one kernel. Its NumPy twin is
:func:`refimpl.vfl.flexvfl.party_local_phase` (checked by ``kernels.numba_numpy`` and the
``vfl.weights_*`` checks)."""
from __future__ import annotations

import numpy as np
from numba import njit

from refimpl.vfl.local_optimizers import LocalMomentum, Proximal


@njit(cache=True)
def _linear_party_loop_nb(X, W, W0k, base, y, tau, eta, kind, param, U0, rec):
    # X: B×D (C-contiguous), W: O×(D+1) (bias col 0), W0k: L×O, base: B×L logits from the other
    # parties and the fusion bias. Products go to BLAS (np.dot on contiguous arrays); the
    # softmax, the bias and the optimizer updates are fused loops; no Python between steps.
    # U0: O×(D+1) momentum buffer to start from (zeros: a reset); rec: (τ, 3, O, D+1) receives
    # θ^t, g^t and the buffer after step t when it has τ rows (a dump), nothing when it has none.
    B, D = X.shape
    O = W.shape[0]
    L = W0k.shape[0]
    Ww = np.ascontiguousarray(W[:, 1:])
    b = W[:, 0].copy()
    Ww0, b0 = Ww.copy(), b.copy()
    Uw = np.ascontiguousarray(U0[:, 1:]).copy()
    Ub = U0[:, 0].copy()
    keep = rec.shape[0] > 0
    XT = np.ascontiguousarray(X.T)
    WT0k = np.ascontiguousarray(W0k.T)
    for t in range(tau):
        h = np.dot(X, Ww.T)
        for i in range(B):
            for o in range(O):
                h[i, o] += b[o]
        P = base + np.dot(h, WT0k)
        for i in range(B):
            mx = P[i, 0]
            for l in range(1, L):
                if P[i, l] > mx:
                    mx = P[i, l]
            z = 0.0
            for l in range(L):
                P[i, l] = np.exp(P[i, l] - mx)
                z += P[i, l]
            for l in range(L):
                P[i, l] = P[i, l] / (z * B)
            P[i, y[i]] -= 1.0 / B
        dh = np.dot(P, W0k)
        Gw = np.dot(dh.T, X)
        Gb = np.zeros(O)
        for i in range(B):
            for o in range(O):
                Gb[o] += dh[i, o]
        if keep:
            rec[t, 0, :, 0] = b
            rec[t, 0, :, 1:] = Ww
            rec[t, 1, :, 0] = Gb
            rec[t, 1, :, 1:] = Gw
        if kind == 1:
            Uw = param * Uw + Gw
            Ub = param * Ub + Gb
            Ww -= eta * Uw
            b -= eta * Ub
        elif kind == 2:
            Ww -= eta * (Gw + param * (Ww - Ww0))
            b -= eta * (Gb + param * (b - b0))
        else:
            Ww -= eta * Gw
            b -= eta * Gb
        if keep:
            rec[t, 2, :, 0] = Ub
            rec[t, 2, :, 1:] = Uw
    out = np.empty((O, D + 1))
    out[:, 0] = b
    out[:, 1:] = Ww
    U = np.empty((O, D + 1))
    U[:, 0] = Ub
    U[:, 1:] = Uw
    return out, U


def linear_party_phase_nb(model, k, theta_k, theta0_snap, H, Xb, yb, opt, eta, tau, state=None, dump=None):
    """Numba twin of :func:`party_local_phase` for a linear encoder with SGD, local momentum or
    proximal steps (labels at every party): the whole τ-step loop in one kernel. ``state`` (a
    momentum buffer to start from) and ``dump`` as for :func:`party_local_phase`; returns
    (θ_k^{r,τ}, the final state)."""
    enc = model.encoders[k - 1]
    o0, o1 = model.offsets[k - 1], model.offsets[k]
    W0 = theta0_snap.reshape(model.fusion.n_classes, -1)
    W0k = np.ascontiguousarray(W0[:, 1 + o0:1 + o1])
    base = H @ W0[:, 1:].T + W0[:, 0] - H[:, o0:o1] @ W0k.T
    kind, param = (1, opt.rho) if isinstance(opt, LocalMomentum) else (2, opt.mu) if isinstance(opt, Proximal) else (0, 0.0)
    shape = (enc.n_out, enc.n_inputs + 1)
    U0 = np.zeros(shape) if state is None else np.ascontiguousarray(state.reshape(shape))
    rec = np.zeros((tau if dump is not None else 0, 3) + shape)
    W, U = _linear_party_loop_nb(np.ascontiguousarray(Xb), theta_k.reshape(shape), W0k,
                                 np.ascontiguousarray(base), yb.astype(np.int64), int(tau), float(eta), kind,
                                 float(param), U0, rec)
    if dump is not None:
        dump.extend((r[0].ravel(), r[1].ravel(), r[2].ravel() if kind == 1 else None) for r in rec)
    return W.ravel(), (U.ravel() if kind == 1 else None)


def warm():
    """Compile this module's kernel at the one signature :func:`linear_party_phase_nb` calls it
    with, or load it from Numba's on-disk cache (:func:`refimpl.papers.warm_kernels`)."""
    from numba import types as nt
    F2 = nt.float64[:, ::1]
    _linear_party_loop_nb.compile((F2, F2, F2, F2, nt.int64[::1], nt.int64, nt.float64, nt.int64, nt.float64, F2,
                                   nt.float64[:, :, :, ::1]))
    return [_linear_party_loop_nb]
