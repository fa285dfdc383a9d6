"""Independent transcriptions of the papers' updates, written apart from refimpl's algorithm code
(no import of it): THEIR side for the checks of the checkers (``tools.diagnose``) and for the
tests of ``refimpl diagnose``. Each writes its own dump in the documented per-round names."""
from __future__ import annotations

import numpy as np


def net_grad(W1, W2, X, y, w, activation="swish"):
    """Loss Σ w_n ℓ_n and gradient (W1 then W2, row-major) of the two-layer net, transcribed here."""
    Z = X @ W1.T
    if activation == "swish":
        S = 1 / (1 + np.exp(-Z))
        A, dA = Z * S, S * (1 + Z * (1 - S))
    else:                                          # ReLU, the SSCA authors' activation
        A, dA = np.maximum(Z, 0.0), (Z > 0).astype(float)
    O = A @ W2.T
    P = np.exp(O - O.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    loss = float(np.sum(w * -np.log(P[np.arange(len(y)), y])))
    P[np.arange(len(y)), y] -= 1
    P *= w[:, None]
    return loss, np.concatenate([(((P @ W2) * dA).T @ X).ravel(), (P.T @ A).ravel()])


def their_ssca(ds, rng, J, K, B, T, tau, curvature="fixed", gamma_alpha=0.65, activation="swish", inputs=True):
    """THEIR side, transcribed here: T rounds of sample-based SSCA (no bias) from their own
    initial point and batches, dumped in refimpl's per-round names (``r<t>_batch`` and
    ``r<t>_omega`` included: the documented replay inputs) and, with ``inputs``, also under the
    top-level names W1_0, W2_0, batches. ``curvature`` "fixed": A^t = τ (the SSCA authors' code);
    "recursive": A^t = (1 − ρ_t)A^{t−1} + ρ_t τ from A^0 = 0 (the paper's). ``activation``:
    "swish" (the paper's) or "relu" (the authors')."""
    W1, W2 = rng.uniform(-0.1, 0.1, (J, ds.n_features)), rng.uniform(-0.3, 0.3, (10, J))
    per = ds.n_train // K
    batches = np.array([[k * per + rng.choice(per, B, replace=False) for k in range(K)] for _ in range(T)])
    om, Av, Bv = np.concatenate([W1.ravel(), W2.ravel()]), 0.0, 0.0
    arrays = {"W1_0": W1, "W2_0": W2, "batches": batches} if inputs else {}
    for t in range(1, T + 1):
        idx = batches[t - 1].ravel()
        lh, gh = net_grad(om[:W1.size].reshape(W1.shape), om[W1.size:].reshape(W2.shape), ds.X_train[idx],
                           ds.y_train[idx], np.full(idx.size, 1.0 / idx.size), activation)
        rho, gamma = 0.8 / t ** 0.6, 0.5 / t ** gamma_alpha
        Av = tau if curvature == "fixed" else (1 - rho) * Av + rho * tau
        Bv = (1 - rho) * Bv + rho * (gh - 2 * tau * om)
        bar = -Bv / (2 * Av)
        nxt = (1 - gamma) * om + gamma * bar
        arrays.update({f"r{t}_omega": om, f"r{t}_grad_hat": gh, f"r{t}_A": np.array(Av), f"r{t}_B": Bv,
                       f"r{t}_omega_bar": bar, f"r{t}_omega_next": nxt})
        if not inputs:
            arrays[f"r{t}_batch"] = batches[t - 1]
        om = nxt
    return arrays, W1, W2, batches
