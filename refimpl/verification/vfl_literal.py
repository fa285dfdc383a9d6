"""A second, literal transcription of [FlexVFL]'s round-based methods, used as the oracle of
``vfl.round_literal``: Algorithm 1 (Flex-VFL), Algorithm 2 (its adaptive step sizes, the paper's
rule and the authors' code's), synchronous VFL and P-BCD, written from the paper's text for linear
party encoders and a linear server head, one loop per round and per local step. It shares no code
with :mod:`refimpl.vfl` (not the policies, the local optimizers, the models or the Numba kernels),
so a misreading there would have to be made twice, in two different shapes.

The conventions it implements are refimpl's documented ones (docs/flexvfl.md): Θ^{r,0} gives the
exchanged embeddings H; the server's τ_0 steps use H as it is; party k's steps use its own fresh
embedding and the round-start server head and other embeddings (labels at every party) or the
∂l/∂h_k the server sent at the round start (labels at the server only); a local momentum buffer is
reset at each round start unless it persists; the paper's adaptive rule takes round 1's rate from
a dummy round 0 on the first row of the step times.
"""
from __future__ import annotations

import math

import numpy as np


def _xent_grads(W0, H, y):
    """Mean softmax cross-entropy of the head W0 (bias in column 0) on H: (∂/∂W0, ∂/∂H)."""
    n, C = H.shape[0], W0.shape[0]
    dO = np.zeros((n, C))
    for i in range(n):
        o = [W0[c, 0] + float(np.dot(W0[c, 1:], H[i])) for c in range(C)]
        m = max(o)
        e = [math.exp(v - m) for v in o]
        s = sum(e)
        for c in range(C):
            dO[i, c] = (e[c] / s - (1.0 if c == y[i] else 0.0)) / n
    gW0 = np.zeros_like(W0)
    gW0[:, 0] = dO.sum(axis=0)
    gW0[:, 1:] = dO.T @ H
    return gW0, dO @ W0[:, 1:]


def _embed(W, X):
    return X @ W[:, 1:].T + W[:, 0]


def _max_weight(opt, param, tau, eta):
    """w̄ = max_t w^t of (8), from the weights written out: momentum (1 − ρ^{τ−t})/(1 − ρ),
    proximal (1 − ημ)^{τ−1−t}, SGD 1."""
    ws = []
    for t in range(tau):
        if opt == "momentum":
            ws.append((1 - param ** (tau - t)) / (1 - param))
        elif opt == "proximal":
            ws.append((1 - eta * param) ** (tau - 1 - t))
        else:
            ws.append(1.0)
    return max(ws)


def steps_literal(method, s, timeout=None, Q=1, server_steps=None):
    """τ_k of one round from the step times s_k: ⌊timeout/s_k⌋ but at least one (Flex-VFL and its
    adaptive variant), Q (synchronous VFL), 1 (P-BCD); the authors' fixed server count on top."""
    if method in ("flex", "adaptive"):
        t = [max(1, math.floor(timeout / s[k])) for k in range(len(s))]
    elif method == "sync":
        t = [Q] * len(s)
    else:                                      # P-BCD
        t = [1] * len(s)
    if server_steps is not None:
        t[0] = server_steps
    return t


def run_literal(W, Xs, y, batches, step_times, *, method, eta, timeout=None, Q=1, opt="sgd", param=0.0,
                labels="all", persistent=False, A=None, rule="paper", server_steps=None, taus=None, buffers=None,
                lr_den=None):
    """R rounds (R = len(batches)) from the blocks W = [W0, W1, …, WK] (matrices, bias column 0);
    Xs: the parties' feature blocks, y: labels, batches (R, B), step_times (rows, K+1) with row 0
    the dummy round of the paper's adaptive rule. ``taus`` (R, K+1): given step counts instead of
    the method's rule; ``buffers``: momentum buffers at the start (zeros by default). Returns
    (final blocks, τ per round, η per round) and, with ``buffers`` given, the final buffers too."""
    K1 = len(W)
    W = [w.copy() for w in W]
    given_buffers = buffers is not None
    buffers = [np.zeros_like(w) for w in W] if buffers is None else [np.array(b, dtype=float) for b in buffers]
    R = len(batches)
    rows = step_times[1:] if (method == "adaptive" and rule == "paper") else step_times

    def taus_of(s):
        return steps_literal(method, s, timeout, Q, server_steps)
    if method == "adaptive" and rule == "paper":
        t0 = [max(1, math.floor(timeout / step_times[0][k])) for k in range(K1)]
        eta_r = [A[k] / (t0[k] * _max_weight(opt, param, t0[k], A[k] / t0[k])) for k in range(K1)]
    elif method == "adaptive" and rule == "authors":      # lr/d with d the utilisation's 10·max(1 − cpu) + 1
        eta_r, prev = [A[k] / lr_den[k] for k in range(K1)], [math.floor(lr_den[k]) for k in range(K1)]
    elif method == "adaptive":                             # authors-taumax: lr/τ^max of the schedule
        tau_max = [max(taus_of(rows[r])[k] for r in range(R)) for k in range(K1)]
        eta_r, prev = [A[k] / tau_max[k] for k in range(K1)], list(tau_max)
    else:
        eta_r = list(eta)
    all_tau, all_eta = [], []
    for r in range(R):
        tau = [int(t) for t in taus[r]] if taus is not None else taus_of(rows[r])
        idx = batches[r]
        Xb, yb = [X[idx] for X in Xs], y[idx]
        H = np.hstack([_embed(W[k + 1], Xb[k]) for k in range(K1 - 1)])
        cols = np.cumsum([0] + [W[k].shape[0] for k in range(1, K1)])
        sent = _xent_grads(W[0], H, yb)[1]
        start = [w.copy() for w in W]
        new = []
        for k in range(K1):
            th = start[k].copy()
            u = buffers[k] if persistent else np.zeros_like(th)
            for t in range(tau[k]):
                if k == 0:
                    g = _xent_grads(th, H, yb)[0]
                else:
                    if labels == "server":
                        dh = sent[:, cols[k - 1]:cols[k]]
                    else:
                        Hk = H.copy()
                        Hk[:, cols[k - 1]:cols[k]] = _embed(th, Xb[k - 1])
                        dh = _xent_grads(start[0], Hk, yb)[1][:, cols[k - 1]:cols[k]]
                    g = np.zeros_like(th)
                    g[:, 0] = dh.sum(axis=0)
                    g[:, 1:] = dh.T @ Xb[k - 1]
                if opt == "momentum":
                    u = param * u + g
                    th = th - eta_r[k] * u
                elif opt == "proximal":
                    th = th - eta_r[k] * (g + param * (th - start[k]))
                else:
                    th = th - eta_r[k] * g
            new.append(th)
            buffers[k] = u
        W = new
        all_tau.append(list(tau))
        all_eta.append(list(eta_r))
        if method == "adaptive" and rule == "paper":
            eta_r = [A[k] / (tau[k] * _max_weight(opt, param, tau[k], eta_r[k])) for k in range(K1)]
        elif method == "adaptive":
            eta_r = [eta_r[k] * prev[k] / tau[k] for k in range(K1)]
            prev = list(tau)
    if given_buffers:
        return W, np.array(all_tau, dtype=float), np.array(all_eta), buffers
    return W, np.array(all_tau, dtype=float), np.array(all_eta)


def async_literal(W, Xs, y, parties, batches, eta):
    """The asynchronous baseline's arithmetic, event by event, from its description (docs/flexvfl.md):
    the server's table holds every party's embedding of every training sample, filled once from the
    initial blocks; at an event of party k on the batch b, party k's fresh embedding of b replaces
    its rows of the table, the server takes one SGD step on W0 with the table's rows of b, and
    party k one SGD step on W_k with the ∂l/∂h_k the server computed before its own step. ``parties``
    and ``batches``: the events in order. Returns the final blocks and the floats sent
    (2·|b|·O_k an event: the embedding up, ∂l/∂h_k down)."""
    W = [w.copy() for w in W]
    cols = np.cumsum([0] + [w.shape[0] for w in W[1:]])
    table = np.hstack([_embed(W[k], Xs[k - 1]) for k in range(1, len(W))])
    floats = 0
    for k, b in zip(parties, batches):
        b = np.asarray(b)
        Xb = Xs[k - 1][b]
        table[b, cols[k - 1]:cols[k]] = _embed(W[k], Xb)
        g0, dH = _xent_grads(W[0], table[b], y[b])
        dh = dH[:, cols[k - 1]:cols[k]]
        g = np.zeros_like(W[k])
        g[:, 0] = dh.sum(axis=0)
        g[:, 1:] = dh.T @ Xb
        W[0] = W[0] - eta[0] * g0
        W[k] = W[k] - eta[k] * g
        floats += 2 * len(b) * (cols[k] - cols[k - 1])
    return W, floats
