"""Gradient collection of [SSCA] (docs/ssca.md): who computes what, and the message ledger.

Both protocols return the server's mini-batch estimates (ℓ̂^t, ĝ^t) of the data term at ω^t and
the list of messages of the round. A message's ``floats`` counts the scalars it carries (sample
ids count one each).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from refimpl.core.kernels import GATHER
from refimpl.core.model import TwoLayerNet

SERVER = "server"
ALL_CLIENTS = "all clients"


@dataclass(frozen=True)
class Message:
    sender: str
    receiver: str
    payload: str
    floats: int


def client(k):
    return f"client {k}"


def ledger_floats(messages):
    return int(sum(m.floats for m in messages))


def sample_round_messages(n_params, n_clients):
    """The ledger of one sample-based round: ω down (one broadcast), K × (dim ω + 1) up."""
    msgs = [Message(SERVER, ALL_CLIENTS, "omega", n_params)]
    return msgs + [Message(client(k), SERVER, "grad_sum+loss_sum", n_params + 1) for k in range(n_clients)]


SAMPLINGS = ("per-client", "pooled")


class _BatchRows:
    """``X[idx]``, gathered once and reused while the ids repeat in the same order.

    With every client's whole shard as its batch (Theorem 1's and Theorem 2's checks, full-batch
    runs) each round asks for the same rows: the round then reads the array the first round
    gathered, so its products are the same, bit for bit, without copying X again. Callers only
    read the rows."""

    def __init__(self, X, backend):
        self.X, self.gather = X, GATHER[backend]
        self.ids, self.rows = None, None

    def __call__(self, idx):
        if self.ids is None or self.ids.shape != idx.shape or not np.array_equal(self.ids, idx):
            self.rows = self.gather(self.X, idx)
            self.ids = np.array(idx, copy=True)
        return self.rows


class SampleBasedProtocol:
    """Algorithms 1–2: client k holds samples ``parts[k]``.

    Round: the server broadcasts ω^t; client k draws its batch B_k^t and returns
    Σ_{n∈B_k} ∇ℓ_n and Σ_{n∈B_k} ℓ_n; the server forms the unbiased estimates
    ĝ^t = Σ_k (N_k/N)(1/B) Σ_{n∈B_k} ∇ℓ_n and ℓ̂^t likewise.
    Ledger: dim ω down (one broadcast), K × (dim ω + 1) up.

    ``sampling="pooled"`` (the authors' scripts): the round's batch is K·B ids drawn from the
    whole training set, and the estimates are plain means over it, (1/(K B)) Σ_n ∇ℓ_n; each
    client contributes the sums over the ids it holds (same ledger).
    """

    def __init__(self, model: TwoLayerNet, X, y, parts, sampling="per-client"):
        if sampling not in SAMPLINGS:
            raise ValueError(f"sampling must be one of {SAMPLINGS}, got {sampling!r}")
        self.model, self.X, self.y, self.parts = model, X, y, parts
        N = sum(len(p) for p in parts)
        self.client_weight = np.array([len(p) / N for p in parts])
        self.batch_rows = _BatchRows(X, model.backend)
        self.pooled = sampling == "pooled"
        if self.pooled:
            self.owner = np.empty(N, dtype=np.int64)
            for k, p in enumerate(parts):
                self.owner[np.asarray(p)] = k

    def pooled_groups(self, batch):
        """The pooled batch's ids grouped by the client that holds them (a client may hold none)."""
        own = self.owner[np.asarray(batch)]
        return [np.asarray(batch)[own == k] for k in range(len(self.parts))]

    def client_sums(self, theta, k, batch):
        """Client k's work, alone: (Σ ℓ_n, Σ ∇ℓ_n) over its batch."""
        return self.model.loss_grad(theta, self.X[batch], self.y[batch], np.ones(len(batch)))

    def collect(self, theta, batches):
        """One round of gradient collection.

        The K clients' weighted sums are evaluated in one stacked pass over the K·B samples, each
        sample carrying its client's weight N_k/(N B): the same sum Σ_k (N_k/N)(1/B) Σ_n ∇ℓ_n
        as K separate client passes followed by the server's weighting (equal up to rounding;
        ``tests/test_ssca.py`` checks it against :meth:`client_sums`), with one product per layer
        instead of K.
        """
        if self.pooled:
            # the authors' sampling: one batch of K·B ids drawn from the whole training set; every
            # client returns the sums over the ids it holds and the server takes the plain mean
            idx = np.asarray(batches)
            Xb = self.batch_rows(idx)
            loss_hat, grad_hat = self.model.loss_grad(theta, Xb, self.y[idx], np.full(idx.size, 1.0 / idx.size))
            return loss_hat, grad_hat, sample_round_messages(self.model.n_params, len(self.parts))
        msgs = sample_round_messages(self.model.n_params, len(batches))
        sizes = np.array([len(b) for b in batches])
        idx = np.concatenate([np.asarray(b) for b in batches])
        w = np.repeat(self.client_weight / sizes, sizes)
        Xb = self.batch_rows(idx)
        loss_hat, grad_hat = self.model.loss_grad(theta, Xb, self.y[idx], w)
        return loss_hat, grad_hat, msgs


    def collect_per_client(self, theta, batches):
        """Per-client estimates for per-client constraints: client k's mini-batch means
        (ℓ̂_k, ĝ_k) = (1/B) Σ_{n∈B_k} (ℓ_n, ∇ℓ_n), each computed by the client alone, plus the
        round's messages (same ledger as :meth:`collect`)."""
        P = self.model.n_params
        msgs = [Message(SERVER, ALL_CLIENTS, "omega", P)]
        ests = []
        for k, batch in enumerate(batches):
            lsum, gsum = self.client_sums(theta, k, batch)
            msgs.append(Message(client(k), SERVER, "grad_sum+loss_sum", P + 1))
            ests.append((lsum / len(batch), gsum / len(batch)))
        return ests, msgs


def _as_slice(cols):
    """``cols`` (sorted indices) as a slice when they are a contiguous run, else unchanged."""
    cols = np.asarray(cols)
    if cols.size and np.array_equal(cols, np.arange(cols[0], cols[0] + cols.size)):
        return slice(int(cols[0]), int(cols[0]) + cols.size)
    return cols


class FeatureBasedProtocol:
    """Algorithms 3–4: client k holds feature block ``blocks[k]`` of every sample and W1,k.

    Round (docs/ssca.md): the server sends each client its block W1,k (the designated client also W2,
    and the first-layer bias when ``bias``) and the batch ids;
      1. client k sends Z_k = X_k^B W1,kᵀ (B×J) to the designated client d;
      2. d forms Z = Σ_k Z_k, finishes the forward pass, sends ∇W2 (and ∇b1) and ℓ̂ to the
         server and Δ1 (B×J) to every other client;
      3. client k sends ∇W1,k = Δ1ᵀ X_k^B to the server.
    """

    def __init__(self, model: TwoLayerNet, X, y, blocks, designated=0, collection="three-step"):
        if not 0 <= designated < len(blocks):
            raise ValueError(f"designated client must be in 0..{len(blocks) - 1}, got {designated}")
        if collection not in ("three-step", "one-step"):
            raise ValueError(f"collection must be 'three-step' (Algorithm 3) or 'one-step' (Remark 4), got {collection!r}")
        self.collection = collection
        self.model, self.X, self.y, self.blocks, self.d = model, X, y, blocks, designated
        self.X_blocks = [np.ascontiguousarray(X[:, b]) for b in blocks]
        self.col = [b + int(model.bias) for b in blocks]     # columns of W1 owned by client k
        self._at = [_as_slice(c) for c in self.col]          # …as a slice where contiguous (a view, no copy)
        # contiguous feature blocks (the default split): the batch rows are gathered once for all
        # clients and each client's X_k^B is a view of its columns (the same products, bit for bit)
        self._x_at = [_as_slice(b) for b in blocks]
        self._one_gather = all(isinstance(a, slice) for a in self._x_at)
        self.batch_rows = _BatchRows(X, model.backend)

    def collect(self, theta, batch):
        if self.collection == "one-step":
            return self._collect_one_step(theta, batch)
        m, d, B = self.model, self.d, len(batch)
        J, L = m.n_hidden, m.n_classes
        W1, W2 = m.unpack(theta)
        msgs = []
        for k, cols in enumerate(self.col):
            extra = W2.size + (J if m.bias else 0) if k == d else 0
            msgs.append(Message(SERVER, client(k), "W1_block+batch_ids" + ("+W2" if k == d else ""),
                                J * len(cols) + B + extra))
        # 1. partial pre-activations (each client gathers its rows X_k^B once for steps 1 and 3)
        if self._one_gather:
            rows = self.batch_rows(np.asarray(batch))
            Xb = [rows[:, at] for at in self._x_at]
        else:
            Xb = [np.take(Xk, batch, axis=0) for Xk in self.X_blocks]
        Zs = [Xb[k] @ W1[:, at].T for k, at in enumerate(self._at)]
        Z = Zs[d].copy()
        for k, Zk in enumerate(Zs):
            if k != d:
                Z += Zk
                msgs.append(Message(client(k), client(d), "Z_k", J * B))
        # 2. designated client: rest of the forward pass and Δ1
        loss, gW2, D1, gb1 = m.head(theta, Z, self.y[batch], np.full(B, 1.0 / B))
        grad = np.empty(m.n_params)
        gW1, gW2v = m.unpack(grad)
        gW2v[...] = gW2
        msgs.append(Message(client(d), SERVER, "grad_W2+loss" + ("+grad_b1" if m.bias else ""),
                            gW2.size + 1 + (J if m.bias else 0)))
        if m.bias:
            gW1[:, 0] = gb1
        for k in range(len(self.col)):
            if k != d:
                msgs.append(Message(client(d), client(k), "Delta1", J * B))
        # 3. block gradients
        for k, cols in enumerate(self.col):
            gW1[:, self._at[k]] = D1.T @ Xb[k]
            msgs.append(Message(client(k), SERVER, "grad_W1_block", J * len(cols)))
        return loss, grad, msgs

    def _collect_one_step(self, theta, batch):
        """Remark 4 of [SSCA] (reconstructed): every client sends its partial pre-activations
        Z_k = X_k^B W1,kᵀ and its feature block X_k^B straight to the server, which forms
        Z = Σ_k Z_k and computes the whole gradient — one message per client, B(J + D_k) floats
        against about 2JB + JD_k in Algorithm 3 (fewer when B < J, the paper's regime), and the raw
        features leave the clients (the higher privacy risk the remark names). Same gradient as the
        three-step collection. The text of [SSCA] we worked from lost the message's formula; this
        reading follows the remark's footnote ("exposes raw data")."""
        m, B = self.model, len(batch)
        J = m.n_hidden
        W1, W2 = m.unpack(theta)
        msgs = [Message(SERVER, client(k), "W1_block+batch_ids", J * len(cols) + B) for k, cols in enumerate(self.col)]
        Z = np.zeros((B, J))
        Xb = []
        for k, cols in enumerate(self.col):
            Xk = self.X_blocks[k][batch]
            Z += Xk @ W1[:, cols].T
            Xb.append(Xk)
            msgs.append(Message(client(k), SERVER, "Z_k+X_k", B * (J + len(cols))))
        loss, gW2, D1, gb1 = m.head(theta, Z, self.y[batch], np.full(B, 1.0 / B))
        grad = np.empty(m.n_params)
        gW1, gW2v = m.unpack(grad)
        gW2v[...] = gW2
        if m.bias:
            gW1[:, 0] = gb1
        for k, cols in enumerate(self.col):
            gW1[:, cols] = D1.T @ Xb[k]
        return loss, grad, msgs
