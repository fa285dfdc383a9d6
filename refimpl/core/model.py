"""Two-layer network of [SSCA], (28), with hand-derived gradients (docs/ssca.md).

    z = W1 x,  a = act(z),  o = W2 a,  p = softmax(o),  ℓ(ω; x, y) = −log p_y

Batch layout: samples are rows, X ∈ R^{B×D}, so Z = X W1ᵀ (B×J), O = A W2ᵀ (B×L). With weights
w_n per sample (w_n = 1/B for a mini-batch mean), the gradient of Σ_n w_n ℓ_n is

    Δ2 = w ⊙ (P − Y)                (B×L)
    ∇W2 = Δ2ᵀ A                     (L×J)
    Δ1 = (Δ2 W2) ⊙ act'(Z)          (B×J)
    ∇W1 = Δ1ᵀ X                     (J×D)

``bias=True`` follows the authors' MATLAB layout: column 0 of W1 (J×(D+1)) and of W2 (L×(J+1))
is the bias. The parameter vector ω is one flat float64 array; ``unpack`` returns views.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from refimpl.core import validate as V
from refimpl.core.kernels import KERNELS


ACTIVATIONS = ("swish", "relu")    # the hidden activations: the paper's swish, the authors' ReLU


@dataclass(frozen=True)
class TwoLayerNet:
    """Shape and options of the network; holds no parameters (ω is passed in explicitly)."""

    n_inputs: int
    n_hidden: int = 128
    n_classes: int = 10
    activation: str = "swish"
    bias: bool = False
    backend: str = "numba"

    def __post_init__(self):
        for f in ("n_inputs", "n_hidden", "n_classes"):
            V.positive_int(f, getattr(self, f))
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be 'swish' or 'relu', got {self.activation!r}")
        if self.backend not in KERNELS:
            raise ValueError(f"backend must be one of {sorted(KERNELS)}, got {self.backend!r}")

    # -- parameter layout ----------------------------------------------------------------------
    @cached_property
    def shape_W1(self):
        return (self.n_hidden, self.n_inputs + int(self.bias))

    @cached_property
    def shape_W2(self):
        return (self.n_classes, self.n_hidden + int(self.bias))

    @cached_property
    def n_params(self):
        return int(np.prod(self.shape_W1) + np.prod(self.shape_W2))

    def unpack(self, theta):
        """Views ``(W1, W2)`` into the flat parameter vector ω."""
        if theta.shape != (self.n_params,):
            raise ValueError(f"parameter vector must have shape ({self.n_params},), "
                             f"got {theta.shape}")
        n1 = int(np.prod(self.shape_W1))
        return theta[:n1].reshape(self.shape_W1), theta[n1:].reshape(self.shape_W2)

    def pack(self, W1, W2):
        W1 = V.finite_array("W1", W1, shape=self.shape_W1)
        W2 = V.finite_array("W2", W2, shape=self.shape_W2)
        return np.concatenate([W1.ravel(), W2.ravel()])

    def init_params(self, rng: np.random.Generator, eps=None):
        """i.i.d. uniform on [−ε, ε], ε = sqrt(6 / (D + L)) as in the authors' code (784 + 10)."""
        if eps is None:
            eps = np.sqrt(6.0 / (self.n_inputs + self.n_classes))
        return rng.uniform(-eps, eps, size=self.n_params)

    # -- forward / backward --------------------------------------------------------------------
    def _split_bias(self, W):
        if self.bias:
            return W[:, 1:], W[:, 0]
        return W, np.zeros(W.shape[0])

    def head(self, theta, Z, y, weights):
        """Everything after the first-layer product, given Z = Σ_k W1,k X_kᵀ (no bias).

        Returns ``(loss, grad_W2, Delta1, grad_b1)`` where loss = Σ_n w_n ℓ_n, grad_W2 has the
        shape of W2 (bias in column 0 when ``bias``), Delta1 = (Δ2 W2) ⊙ act'(Z) and grad_b1 is
        Σ_n Delta1[n] (zeros without bias). This is the designated client's work in the
        feature-based protocol (docs/ssca.md step 2) and the tail of :meth:`loss_grad`.
        """
        act, xent = KERNELS[self.backend]
        W1, W2 = self.unpack(theta)
        b1 = self._split_bias(W1)[1]
        W2w, b2 = self._split_bias(W2)
        A, dA = act(Z, b1, self.activation)
        loss, D2 = xent(A @ W2w.T, b2, y, weights)
        gW2 = np.empty(self.shape_W2)
        if self.bias:
            gW2[:, 0] = D2.sum(axis=0)
            np.matmul(D2.T, A, out=gW2[:, 1:])
        else:
            np.matmul(D2.T, A, out=gW2)
        D1 = D2 @ W2w
        D1 *= dA
        gb1 = D1.sum(axis=0) if self.bias else None
        return loss, gW2, D1, gb1

    def loss_grad(self, theta, X, y, weights=None, out=None):
        """``(Σ_n w_n ℓ(ω; x_n, y_n), gradient)``; default weights 1/B (the mini-batch mean).

        ``out``: an array of shape (n_params,) to receive the gradient (saves an allocation
        of the size of ω in hot loops)."""
        B = X.shape[0]
        w = np.full(B, 1.0 / B) if weights is None else weights
        W1 = self.unpack(theta)[0]
        W1w = self._split_bias(W1)[0]
        loss, gW2, D1, gb1 = self.head(theta, X @ W1w.T, y, w)
        grad = np.empty(self.n_params) if out is None else out
        gW1, gW2v = self.unpack(grad)
        gW2v[...] = gW2
        if self.bias:
            gW1[:, 0] = gb1
            np.matmul(D1.T, X, out=gW1[:, 1:])
        else:
            np.matmul(D1.T, X, out=gW1)
        return loss, grad

    def logits(self, theta, X):
        act = KERNELS[self.backend][0]
        W1, W2 = self.unpack(theta)
        W1w, b1 = self._split_bias(W1)
        W2w, b2 = self._split_bias(W2)
        A, _ = act(X @ W1w.T, b1, self.activation)
        return A @ W2w.T + b2

    def loss_sum(self, theta, X, y):
        """Σ_n ℓ(ω; x_n, y_n) over the rows of X: one chunk of :meth:`loss`. Every term is ≥ 0 (the
        kernel adds log(1 + Σ_{l≠m} e^{o_l − o_m}) ≥ 0 and o_m − o_y ≥ 0, m the largest logit), so
        a partial sum over some rows is a lower bound on the sum over all of them."""
        O = self.logits(theta, X)
        return KERNELS[self.backend][1](O, np.zeros(O.shape[1]), y, np.ones(O.shape[0]))[0]

    def loss(self, theta, X, y, chunk=8192):
        """Mean cross-entropy over all rows of X (evaluated in chunks to bound memory)."""
        total = 0.0
        for s in range(0, X.shape[0], chunk):
            total += self.loss_sum(theta, X[s:s + chunk], y[s:s + chunk])
        return total / X.shape[0]

    def one_vs_all_cost(self, theta, X, y, chunk=8192):
        """The cost the SSCA authors' scripts record: with p = softmax(logits),
        J = (1/N) Σ_n Σ_l [−y_{nl} log p_{nl} − (1 − y_{nl}) log(1 − p_{nl})] (y one-hot), the
        one-vs-all cross-entropy applied to the softmax outputs. It is not the training cost (32)
        (the softmax cross-entropy, its first term alone), so their saved curves are compared
        with this metric (docs/ssca.md §7)."""
        total = 0.0
        for s in range(0, X.shape[0], chunk):
            O = self.logits(theta, X[s:s + chunk])
            O = O - O.max(axis=1, keepdims=True)
            logp = O - np.log(np.exp(O).sum(axis=1, keepdims=True))
            log1m = np.log1p(-np.exp(logp))
            rows = np.arange(O.shape[0])
            yb = y[s:s + chunk]
            total += float(-logp[rows, yb].sum() - log1m.sum() + log1m[rows, yb].sum())
        return total / X.shape[0]

    def predict(self, theta, X):
        return np.argmax(self.logits(theta, X), axis=1)

    def accuracy(self, theta, X, y):
        return float(np.mean(self.predict(theta, X) == y))


def objective(model: TwoLayerNet, theta, X, y, lam):
    """Training cost of [SSCA], (32): F(ω) = (1/N) Σ_n ℓ(ω; x_n, y_n) + λ ||ω||²."""
    return model.loss(theta, X, y) + lam * float(theta @ theta)


def full_gradient(model: TwoLayerNet, theta, X, y, lam, chunk=8192):
    """∇F(ω) of (32) on the whole data set (chunked)."""
    N = X.shape[0]
    g = np.zeros_like(theta)
    for s in range(0, N, chunk):
        Xc, yc = X[s:s + chunk], y[s:s + chunk]
        g += model.loss_grad(theta, Xc, yc, np.full(Xc.shape[0], 1.0 / N))[1]
    return g + 2.0 * lam * theta
