"""Checks of the two-layer network: hand-derived gradients and the Numba kernels."""
from __future__ import annotations

import numpy as np

from refimpl.core.kernels import activation_nb, activation_np, softmax_xent_nb, softmax_xent_np
from refimpl.core.model import TwoLayerNet
from refimpl.verification.registry import check


def fd_relative_error(model, theta, X, y, h=1e-6):
    """||g_fd − g|| / ||g|| with g_fd the central difference in every coordinate."""
    g = model.loss_grad(theta, X, y)[1]
    fd = np.empty_like(theta)
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = h
        fd[i] = (model.loss_grad(theta + e, X, y)[0] - model.loss_grad(theta - e, X, y)[0]) / (2 * h)
    return float(np.linalg.norm(fd - g) / np.linalg.norm(g))


def directional_fd_error(model, theta, X, y, rng, n_dirs, h=1e-5):
    """max over random unit directions v of |D_v ℓ (central FD) − ⟨g, v⟩| / ||g||."""
    g = model.loss_grad(theta, X, y)[1]
    worst = 0.0
    for _ in range(n_dirs):
        v = rng.standard_normal(theta.size)
        v /= np.linalg.norm(v)
        fd = (model.loss_grad(theta + h * v, X, y)[0] - model.loss_grad(theta - h * v, X, y)[0]) / (2 * h)
        worst = max(worst, abs(fd - g @ v) / np.linalg.norm(g))
    return worst


@check("grad.fd", "hand-derived gradients of the two-layer network equal central finite differences",
       "[SSCA] (28); docs/ssca.md")
def grad_fd(quick):
    rng = np.random.default_rng(11)
    errs = {}
    for act in ("swish", "relu"):
        for bias in (False, True):
            m = TwoLayerNet(9, 6, 4, act, bias)
            theta = m.init_params(rng, eps=1.0)
            X = rng.standard_normal((7, 9))
            y = rng.integers(0, 4, 7)
            errs[f"{act},bias={bias},all coordinates"] = fd_relative_error(m, theta, X, y)
    big = TwoLayerNet(784, 128, 10)
    theta = big.init_params(rng)
    X = rng.random((20, 784))
    y = rng.integers(0, 10, 20)
    errs["784-128-10 swish, random directions"] = directional_fd_error(big, theta, X, y, rng, 5 if quick else 30)
    return {"measured": max(errs.values()), "bound": 1e-6, "details": errs}


@check("kernels.numba_numpy", "Numba kernels equal their NumPy twins (incl. |z| up to 1e3)",
       "refimpl/kernels.py")
def kernels_numba_numpy(quick):
    rng = np.random.default_rng(12)
    Z = rng.standard_normal((64, 33)) * 5
    Z[0, :] = np.linspace(-1e3, 1e3, 33)
    b = rng.standard_normal(33)
    diffs = {}
    for kind in ("swish", "relu"):
        A1, d1 = activation_nb(Z, b, kind)
        A2, d2 = activation_np(Z, b, kind)
        diffs[f"{kind} value"] = float(np.max(np.abs(A1 - A2) / np.maximum(1, np.abs(A2))))
        diffs[f"{kind} derivative"] = float(np.max(np.abs(d1 - d2) / np.maximum(1, np.abs(d2))))
        if not (np.all(np.isfinite(A1)) and np.all(np.isfinite(d1))):
            diffs[f"{kind} finite"] = np.inf
    O = rng.standard_normal((64, 10)) * 3
    O[0] = np.linspace(-1e3, 1e3, 10)
    y = rng.integers(0, 10, 64)
    w = rng.random(64)
    l1, D1 = softmax_xent_nb(O, np.zeros(10), y, w)
    l2, D2 = softmax_xent_np(O, np.zeros(10), y, w)
    diffs["xent loss"] = abs(l1 - l2) / max(1.0, abs(l2))
    diffs["xent Delta2"] = float(np.max(np.abs(D1 - D2)))
    return {"measured": max(diffs.values()), "bound": 1e-12, "details": diffs}
