"""Vertical FL models of [FlexVFL] (Flex-VFL), docs/flexvfl.md: per-party embedding models
h_k(θ_k; x_k) ∈ R^{O_k} with hand-derived gradients, and the server's fusion model θ_0.

Every parameter vector is flat (float64); bias terms are column 0 of each weight matrix.

- ``LinearEncoder``:  h = X W[:, 1:]ᵀ + W[:, 0]                      (W: O × (D_k + 1))
- ``SwishEncoder``:   z = X W1[:, 1:]ᵀ + W1[:, 0],  a = swish(z),  h = a W2[:, 1:]ᵀ + W2[:, 0]
- ``LinearFusion``:   logits = H W0[:, 1:]ᵀ + W0[:, 0],  H = [h_1, …, h_K]  (W0: L × (Σ O_k + 1))

Loss: mean softmax cross-entropy over the mini-batch.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from refimpl.core import validate as V
from refimpl.core.kernels import activation_nb, softmax_xent_nb


def _torch_linear(rng, n_out, n_in):
    """An O × (D + 1) block (bias column 0) drawn as torch does: the weights first, then the bias."""
    bound = 1.0 / np.sqrt(n_in)
    W = np.empty((n_out, n_in + 1))
    W[:, 1:] = rng.uniform(-bound, bound, (n_out, n_in))
    W[:, 0] = rng.uniform(-bound, bound, n_out)
    return W


def _affine(X, W):
    return X @ W[:, 1:].T + W[:, 0]


def _affine_grad(X, dY):
    g = np.empty((dY.shape[1], X.shape[1] + 1))
    g[:, 0] = dY.sum(axis=0)
    np.matmul(dY.T, X, out=g[:, 1:])
    return g


@dataclass(frozen=True)
class LinearEncoder:
    n_inputs: int
    n_out: int

    def __post_init__(self):
        V.positive_int("n_inputs", self.n_inputs)
        V.positive_int("n_out", self.n_out)

    @property
    def n_params(self):
        return self.n_out * (self.n_inputs + 1)

    def init(self, rng):
        eps = np.sqrt(6.0 / (self.n_inputs + self.n_out))
        return rng.uniform(-eps, eps, self.n_params)

    def init_torch(self, rng):
        """PyTorch's ``nn.Linear`` default: weights and bias ~ U(−1/√D, 1/√D), D = fan-in."""
        return _torch_linear(rng, self.n_out, self.n_inputs).ravel()

    def forward(self, theta, X):
        """Returns (h, cache)."""
        return _affine(X, theta.reshape(self.n_out, -1)), X

    def backward(self, theta, cache, dh):
        """∂(loss)/∂θ given dh = ∂(loss)/∂h."""
        return _affine_grad(cache, dh).ravel()


@dataclass(frozen=True)
class SwishEncoder:
    n_inputs: int
    n_out: int
    n_hidden: int = 32

    def __post_init__(self):
        for f in ("n_inputs", "n_out", "n_hidden"):
            V.positive_int(f, getattr(self, f))

    @property
    def n_params(self):
        return self.n_hidden * (self.n_inputs + 1) + self.n_out * (self.n_hidden + 1)

    def _split(self, theta):
        n1 = self.n_hidden * (self.n_inputs + 1)
        return theta[:n1].reshape(self.n_hidden, -1), theta[n1:].reshape(self.n_out, -1)

    def init(self, rng):
        e1 = np.sqrt(6.0 / (self.n_inputs + self.n_hidden))
        e2 = np.sqrt(6.0 / (self.n_hidden + self.n_out))
        return np.concatenate([rng.uniform(-e1, e1, self.n_hidden * (self.n_inputs + 1)),
                               rng.uniform(-e2, e2, self.n_out * (self.n_hidden + 1))])

    def init_torch(self, rng):
        """PyTorch's ``nn.Linear`` default for both layers (U(−1/√fan-in, 1/√fan-in))."""
        return np.concatenate([_torch_linear(rng, self.n_hidden, self.n_inputs).ravel(),
                               _torch_linear(rng, self.n_out, self.n_hidden).ravel()])

    def forward(self, theta, X):
        W1, W2 = self._split(theta)
        Z = X @ W1[:, 1:].T
        A, dA = activation_nb(Z, W1[:, 0], "swish")
        return _affine(A, W2), (X, A, dA)

    def backward(self, theta, cache, dh):
        X, A, dA = cache
        W2 = self._split(theta)[1]
        g2 = _affine_grad(A, dh)
        dZ = (dh @ W2[:, 1:]) * dA
        g1 = _affine_grad(X, dZ)
        return np.concatenate([g1.ravel(), g2.ravel()])


@dataclass(frozen=True)
class LinearFusion:
    """The server's model θ_0 on the concatenated embeddings."""

    n_in: int
    n_classes: int = 10

    @property
    def n_params(self):
        return self.n_classes * (self.n_in + 1)

    def init(self, rng):
        eps = np.sqrt(6.0 / (self.n_in + self.n_classes))
        return rng.uniform(-eps, eps, self.n_params)

    def init_torch(self, rng):
        """The authors' server head: weights ~ N(0, 0.01²), bias 0 (``fc.weight.data.normal_(0, 0.01)``,
        ``fc.bias.data.zero_()`` in their ``main_flex*.py``)."""
        W = np.zeros((self.n_classes, self.n_in + 1))
        W[:, 1:] = rng.normal(0.0, 0.01, (self.n_classes, self.n_in))
        return W.ravel()

    def loss_grads(self, theta0, H, y):
        """Mean cross-entropy, ∂/∂θ_0 and ∂/∂H."""
        W0 = theta0.reshape(self.n_classes, -1)
        B = H.shape[0]
        loss, D2 = softmax_xent_nb(H @ W0[:, 1:].T, W0[:, 0], y, np.full(B, 1.0 / B))
        return loss, _affine_grad(H, D2).ravel(), D2 @ W0[:, 1:]

    def logits(self, theta0, H):
        return _affine(H, theta0.reshape(self.n_classes, -1))


@dataclass(frozen=True)
class VerticalModel:
    """Θ = [θ_0, θ_1, …, θ_K] with the party encoders and the server's fusion model."""

    encoders: tuple
    fusion: LinearFusion

    @property
    def K(self):
        return len(self.encoders)

    @property
    def offsets(self):
        """Column offsets of each party's embedding inside H."""
        return np.concatenate([[0], np.cumsum([e.n_out for e in self.encoders])])

    def init(self, rng, scheme="glorot"):
        """Θ^{1,0}: "glorot" (Glorot-uniform everywhere, refimpl's default) or "torch" (PyTorch's
        layer defaults at the parties, the authors' N(0, 0.01²) head at the server)."""
        if scheme == "torch":
            return [self.fusion.init_torch(rng)] + [e.init_torch(rng) for e in self.encoders]
        if scheme != "glorot":
            raise ValueError(f"init scheme must be 'glorot' or 'torch', got {scheme!r}")
        return [self.fusion.init(rng)] + [e.init(rng) for e in self.encoders]

    def param_shapes(self):
        """Per block k = 0..K: (n_k, the matrix shape a single-matrix block may also be given in)."""
        out = [(self.fusion.n_params, (self.fusion.n_classes, self.fusion.n_in + 1))]
        for e in self.encoders:
            out.append((e.n_params, (e.n_out, e.n_inputs + 1) if isinstance(e, LinearEncoder) else None))
        return out

    def embeddings(self, thetas, Xs):
        return [e.forward(th, X)[0] for e, th, X in zip(self.encoders, thetas[1:], Xs)]

    def loss(self, thetas, Xs, y, chunk=4096):
        tot = 0.0
        for s in range(0, len(y), chunk):
            H = np.hstack(self.embeddings(thetas, [X[s:s + chunk] for X in Xs]))
            tot += self.fusion.loss_grads(thetas[0], H, y[s:s + chunk])[0] * len(y[s:s + chunk])
        return tot / len(y)

    def accuracy(self, thetas, Xs, y):
        return self.accuracy_of_embeddings(thetas[0], self.embeddings(thetas, Xs), y)

    def accuracy_of_embeddings(self, theta0, hs, y):
        """Accuracy of the fusion model θ_0 on the parties' embeddings ``hs`` = [h_1, …, h_K] of
        the same rows (:meth:`accuracy` computes them first)."""
        return float(np.mean(np.argmax(self.fusion.logits(theta0, np.hstack(hs)), axis=1) == y))

    def block_gradients(self, thetas, Xs, y):
        """∇_k F(Θ) for k = 0..K on the given rows (full-batch partial derivatives)."""
        caches, hs = [], []
        for e, th, X in zip(self.encoders, thetas[1:], Xs):
            h, c = e.forward(th, X)
            hs.append(h)
            caches.append(c)
        loss, g0, dH = self.fusion.loss_grads(thetas[0], np.hstack(hs), y)
        off = self.offsets
        grads = [g0] + [e.backward(th, c, dH[:, off[k]:off[k + 1]])
                        for k, (e, th, c) in enumerate(zip(self.encoders, thetas[1:], caches))]
        return loss, grads
