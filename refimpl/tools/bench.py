"""``refimpl bench ssca``: one sample-based SSCA round (K = 10, 784-128-10, swish) against the
matrix products it cannot avoid, and against a straightforward PyTorch CPU round when torch is
installed. All timings come from the same process and run; ratios, not seconds, are the result.
``gather_seconds`` is the copy of the round's K·B batch rows out of the training set, which the
products need contiguous (reported beside the floor, not in it).
``torch_floor_ratio`` is the time of the same five products in torch (its own BLAS) over ours:
below 1 means torch's matrix products alone are faster than NumPy's BLAS on this machine.

The floor of a round is the five products of the forward/backward pass over the round's K·B
samples, with the batch already gathered and preallocated outputs: Z = X_b W1ᵀ, O = A W2ᵀ,
∇W2 = Δ2ᵀ A, G = Δ2 W2, ∇W1 = Δ1ᵀ X_b (one product each over the stacked clients, as the
round computes them; see :meth:`refimpl.ssca.protocols.SampleBasedProtocol.collect`).
"""
from __future__ import annotations

import os
import time

import numpy as np

from refimpl.ssca.algorithms import SSCA
from refimpl.core.model import TwoLayerNet
from refimpl.core.partition import sample_based_schedule, sample_partition
from refimpl.ssca.protocols import SampleBasedProtocol
from refimpl.core.schedules import PowerLaw

K, D, J, L = 10, 784, 128, 10


def blas_threads():
    """The BLAS threads NumPy's products use here: ``OPENBLAS_NUM_THREADS`` (or ``OMP_NUM_THREADS``)
    when set, else one per core. PyTorch is given as many intra-op threads, so that both sides of
    a comparison use the same cores."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        v = os.environ.get(var, "")
        if v.isdigit() and int(v) >= 1:
            return int(v)
    return os.cpu_count() or 1


def _timings(fn, repeats):
    """Seconds of ``repeats`` calls of ``fn`` after one warm-up call (JIT, caches, thread pools)."""
    fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return ts


def _best(fn, repeats):
    return min(_timings(fn, repeats))


def _floor(Xs, W1, W2, repeats):
    B = Xs[0].shape[0]
    Z, O, G = np.empty((B, J)), np.empty((B, L)), np.empty((B, J))
    gW1, gW2 = np.empty((J, D)), np.empty((L, J))
    A, D2 = np.random.default_rng(0).random((B, J)), np.random.default_rng(1).random((B, L))

    def products():
        for Xb in Xs:
            np.matmul(Xb, W1.T, out=Z)
            np.matmul(A, W2.T, out=O)
            np.matmul(D2.T, A, out=gW2)
            np.matmul(D2, W2, out=G)
            np.matmul(G.T, Xb, out=gW1)
    return _best(products, repeats)


def _torch_floor(Xb, repeats):
    """The same five products in torch (its own BLAS), for context."""
    try:
        import torch
    except ImportError:
        return None
    rng = np.random.default_rng(2)
    n = Xb.shape[0]
    X = torch.from_numpy(Xb)
    W1, W2 = torch.from_numpy(rng.random((J, D))), torch.from_numpy(rng.random((L, J)))
    A, D2 = torch.from_numpy(rng.random((n, J))), torch.from_numpy(rng.random((n, L)))

    def products():
        X @ W1.T
        A @ W2.T
        D2.T @ A
        G = D2 @ W2
        G.T @ X
    return _best(products, repeats)


def _torch_round(X, y, batches, theta, repeats):
    try:
        import torch
    except ImportError:
        return None
    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(blas_threads())
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    W1 = torch.from_numpy(theta[:J * D].reshape(J, D).copy()).requires_grad_()
    W2 = torch.from_numpy(theta[J * D:].reshape(L, J).copy()).requires_grad_()
    Bs = torch.zeros(theta.size, dtype=torch.float64)
    idx = [torch.from_numpy(b) for b in batches]
    tau, rho, gamma = 0.05, 0.9, 0.3

    def one_round():
        nonlocal Bs
        grads = torch.zeros(theta.size, dtype=torch.float64)
        for b in idx:
            xb, yb = Xt[b], yt[b]
            z = xb @ W1.T
            out = (z * torch.sigmoid(z)) @ W2.T
            loss = torch.nn.functional.cross_entropy(out, yb, reduction="sum")
            g1, g2 = torch.autograd.grad(loss, (W1, W2))
            grads += torch.cat([g1.reshape(-1), g2.reshape(-1)]) / (len(b) * len(idx))
        with torch.no_grad():
            omega = torch.cat([W1.reshape(-1), W2.reshape(-1)])
            Bs = (1 - rho) * Bs + rho * (grads - 2 * tau * omega)
            new = (1 - gamma) * omega + gamma * (-Bs / (2 * tau))
            W1.copy_(new[:J * D].reshape(J, D))
            W2.copy_(new[J * D:].reshape(L, J))
    return _best(one_round, repeats)


def _round_setup(B):
    """The benchmark's round: K = 10 clients of max(B, 600) random samples, 784-128-10 swish,
    SSCA with τ = 0.05, state after round 1 (which has ρ_1 = 1), the round-2 batches."""
    rng = np.random.default_rng(B)
    n_per = max(B, 600)
    X = rng.random((K * n_per, D))
    y = rng.integers(0, L, K * n_per)
    model = TwoLayerNet(D, J, L)
    parts = sample_partition(X.shape[0], K)
    protocol = SampleBasedProtocol(model, X, y, parts)
    algo = SSCA(protocol, PowerLaw(1.0, 0.1), PowerLaw(0.3, 0.15), tau=0.05)
    batch = sample_based_schedule(parts, 1, B, rng).indices[0]
    theta = model.init_params(rng)
    state = algo.apply(algo.init(theta), 1, batch)[0]
    return X, y, model, protocol, algo, batch, theta, state


def bench_ssca(batches=(10, 100, 600), repeats=5, progress=None):
    rows = []
    for B in batches:
        X, y, model, protocol, algo, batch, theta, state = _round_setup(B)
        t_round = _best(lambda: algo.apply(state, 2, batch), repeats)
        W1, W2 = model.unpack(theta)
        idx = np.concatenate(batch)
        Xb = X[idx]
        t_floor = _floor([Xb], W1, W2, repeats)
        from refimpl.core.kernels import gather_rows_nb
        t_gather = _best(lambda: gather_rows_nb(X, idx), repeats)
        t_torch = _torch_round(X, y, batch, theta, repeats)
        t_torch_floor = _torch_floor(Xb, repeats)
        row = {"batch_per_client": B, "seconds_per_round": t_round, "floor_seconds": t_floor,
               "ratio_to_floor": t_round / t_floor, "gather_seconds": t_gather,
               "ratio_to_floor_plus_gather": t_round / (t_floor + t_gather),
               "ratio_to_torch": None if t_torch is None else t_round / t_torch,
               "torch_floor_ratio": None if t_torch_floor is None else t_torch_floor / t_floor}
        rows.append(row)
        if progress:
            progress(f"batch {B}: {t_round * 1e3:.2f} ms/round, floor {t_floor * 1e3:.2f} ms")
    return rows


# ----------------------------------------------------------------------------- phase breakdown

def plain_numpy_round(X, y, batches, W1, W2, Bsur, tau, rho, gamma):
    """The obvious transcription of one sample-based SSCA round (swish, no bias, recursive
    curvature after round 1 is irrelevant to the cost), written as a reader would from the paper:
    gather, forward, softmax–cross-entropy, backward, mean over clients, surrogate recursion of
    the linear term, closed form, move. A reference point for speed, not used by the library;
    ``tests/test_bench.py`` checks it computes the library's gradient."""
    K = len(batches)
    idx = np.concatenate(batches)
    w = np.repeat(1.0 / (K * np.array([len(b) for b in batches])), [len(b) for b in batches])
    Xb, yb = X[idx], y[idx]
    Z = Xb @ W1.T
    S = 1.0 / (1.0 + np.exp(-Z))
    A = Z * S
    O = A @ W2.T
    O = O - O.max(axis=1, keepdims=True)
    P = np.exp(O)
    P /= P.sum(axis=1, keepdims=True)
    loss = float(np.sum(w * -np.log(P[np.arange(len(yb)), yb])))
    P[np.arange(len(yb)), yb] -= 1.0
    D2 = P * w[:, None]
    g2 = D2.T @ A
    D1 = (D2 @ W2) * (S * (1.0 + Z * (1.0 - S)))
    g1 = D1.T @ Xb
    g = np.concatenate([g1.ravel(), g2.ravel()])
    omega = np.concatenate([W1.ravel(), W2.ravel()])
    Bnew = (1.0 - rho) * Bsur + rho * (g - 2.0 * tau * omega)
    omega_new = (1.0 - gamma) * omega + gamma * (-Bnew / (2.0 * tau))
    return loss, g, omega_new, Bnew


def _torch_stacked_round(X, y, batches, theta, repeats):
    """PyTorch, float64, the K clients stacked into one batch and one autograd call (per-sample
    weights 1/(K B)), then the same server update."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(blas_threads())
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    W1 = torch.from_numpy(theta[:J * D].reshape(J, D).copy()).requires_grad_()
    W2 = torch.from_numpy(theta[J * D:].reshape(L, J).copy()).requires_grad_()
    Bs = torch.zeros(theta.size, dtype=torch.float64)
    idx = torch.from_numpy(np.concatenate(batches))
    tau, rho, gamma = 0.05, 0.9, 0.3

    def one_round():
        nonlocal Bs
        xb, yb = Xt[idx], yt[idx]
        z = xb @ W1.T
        out = (z * torch.sigmoid(z)) @ W2.T
        loss = torch.nn.functional.cross_entropy(out, yb, reduction="sum") / (len(idx))
        g1, g2 = torch.autograd.grad(loss, (W1, W2))
        with torch.no_grad():
            grads = torch.cat([g1.reshape(-1), g2.reshape(-1)])
            omega = torch.cat([W1.reshape(-1), W2.reshape(-1)])
            Bs = (1 - rho) * Bs + rho * (grads - 2 * tau * omega)
            new = (1 - gamma) * omega + gamma * (-Bs / (2 * tau))
            W1.copy_(new[:J * D].reshape(J, D))
            W2.copy_(new[J * D:].reshape(L, J))
    return _best(one_round, repeats)


PHASES = ("gather", "Z = X W1^T", "activation", "O = A W2^T", "softmax-xent", "gW2 = D2^T A", "G = D2 W2",
          "D1 = G * act'", "gW1 = D1^T X", "server step", "rest")
PRODUCTS = ("Z = X W1^T", "O = A W2^T", "gW2 = D2^T A", "G = D2 W2", "gW1 = D1^T X")


def round_breakdown(model, protocol, algo, state, batch, repeats):
    """Each phase of :meth:`SSCA.apply` timed alone on the round's own inputs (best of
    ``repeats``); ``rest`` = the round minus the phases (Python dispatch, allocations, the
    weight vector, the message ledger, validation)."""
    from refimpl.core.kernels import GATHER, KERNELS
    act, xent = KERNELS[model.backend]
    gather = GATHER[model.backend]
    theta = state.omega
    W1, W2 = model.unpack(theta)
    idx = np.concatenate([np.asarray(b) for b in batch])
    sizes = np.array([len(b) for b in batch])
    w = np.repeat(protocol.client_weight / sizes, sizes)
    Xb = gather(protocol.X, idx)
    yb = protocol.y[idx]
    b1, b2 = np.zeros(J), np.zeros(L)
    Z = Xb @ W1.T
    A, dA = act(Z, b1, model.activation)
    O = A @ W2.T
    loss, D2 = xent(O, b2, yb, w)
    G = D2 @ W2
    n = idx.size
    outs = {"Z": np.empty((n, J)), "O": np.empty((n, L)), "gW2": np.empty((L, J)), "G": np.empty((n, J)),
            "gW1": np.empty((J, D))}
    _, g, _ = protocol.collect(theta, batch)
    s = state.surrogate
    t = {
        "gather": _best(lambda: gather(protocol.X, idx), repeats),
        "Z = X W1^T": _best(lambda: np.matmul(Xb, W1.T, out=outs["Z"]), repeats),
        "activation": _best(lambda: act(Z, b1, model.activation), repeats),
        "O = A W2^T": _best(lambda: np.matmul(A, W2.T, out=outs["O"]), repeats),
        "softmax-xent": _best(lambda: xent(O, b2, yb, w), repeats),
        "gW2 = D2^T A": _best(lambda: np.matmul(D2.T, A, out=outs["gW2"]), repeats),
        "G = D2 W2": _best(lambda: np.matmul(D2, W2, out=outs["G"]), repeats),
        "D1 = G * act'": _best(lambda: np.multiply(G, dA, out=outs["G"]), repeats),
        "gW1 = D1^T X": _best(lambda: np.matmul(G.T, Xb, out=outs["gW1"]), repeats),
        "server step": _best(lambda: algo._round(s.A, s.B, s.C, loss, g, theta, 0.5, algo.tau, 0.3, algo.lam,
                                                 algo.fixed), repeats),
    }
    return t


def round_in_sequence(model, protocol, algo, state, batch, repeats):
    """The round's phases run in the round's order on the round's data, a clock read between
    consecutive phases: each phase's time *inside* a round (caches as the previous phases left
    them), where :func:`round_breakdown` times each alone and hot. The median of ``repeats``
    rounds after one warm-up. The operations are those of :meth:`SampleBasedProtocol.collect`,
    :meth:`TwoLayerNet.loss_grad` and :meth:`SSCA.apply` without bias (the benchmark's network),
    in the same order; returns ``(seconds per phase, loss, gradient)`` so a test can check the
    sequence computes the library's round to the bit."""
    from refimpl.core.kernels import GATHER, KERNELS
    if model.bias:
        raise ValueError("round_in_sequence follows the bias-free network of the benchmark")
    act, xent = KERNELS[model.backend]
    gather = GATHER[model.backend]
    theta, s = state.omega, state.surrogate
    W1, W2 = model.unpack(theta)
    b1, b2 = np.zeros(W1.shape[0]), np.zeros(W2.shape[0])
    names = [p for p in PHASES if p != "rest"]
    laps = np.zeros((repeats, len(names)))
    clock = time.perf_counter
    for rep in range(repeats + 1):
        t0 = clock()
        sizes = np.array([len(b) for b in batch])
        idx = np.concatenate([np.asarray(b) for b in batch])
        w = np.repeat(protocol.client_weight / sizes, sizes)
        Xb = gather(protocol.X, idx)
        t1 = clock()
        Z = Xb @ W1.T
        t2 = clock()
        A, dA = act(Z, b1, model.activation)
        t3 = clock()
        O = A @ W2.T
        t4 = clock()
        loss, D2 = xent(O, b2, protocol.y[idx], w)
        t5 = clock()
        gW2 = np.empty(model.shape_W2)
        np.matmul(D2.T, A, out=gW2)
        t6 = clock()
        D1 = D2 @ W2
        t7 = clock()
        D1 *= dA
        t8 = clock()
        grad = np.empty(model.n_params)
        gW1, gW2v = model.unpack(grad)
        gW2v[...] = gW2
        np.matmul(D1.T, Xb, out=gW1)
        t9 = clock()
        algo._round(s.A, s.B, s.C, loss, grad, theta, 0.5, algo.tau, 0.3, algo.lam, algo.fixed)
        t10 = clock()
        if rep:
            laps[rep - 1] = np.diff([t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, t10])
    return dict(zip(names, np.median(laps, axis=0).tolist())), loss, grad


def bench_ssca_breakdown(batches=(10, 100, 600), repeats=20, progress=None):
    """``refimpl bench ssca --breakdown``: per batch size, the round's time split into phases, and
    the ratios of the round to the floor (the five products), floor + gather, the plain-NumPy
    round, PyTorch with the K clients stacked (one autograd call) and PyTorch per client — all
    measured in this one process and run."""
    rows = []
    threads = blas_threads()
    for B in batches:
        X, y, model, protocol, algo, batch, _, state = _round_setup(B)
        t_round = _best(lambda: algo.apply(state, 2, batch), repeats)
        phases = round_breakdown(model, protocol, algo, state, batch, repeats)
        phases["rest"] = max(0.0, t_round - sum(phases.values()))
        in_round = round_in_sequence(model, protocol, algo, state, batch, repeats)[0]
        t_round_median = float(np.median(_timings(lambda: algo.apply(state, 2, batch), repeats)))
        in_round["rest"] = max(0.0, t_round_median - sum(in_round.values()))
        floor = sum(phases[p] for p in PRODUCTS)
        W1, W2 = model.unpack(state.omega)
        Bsur = state.surrogate.B
        t_plain = _best(lambda: plain_numpy_round(X, y, batch, W1, W2, Bsur, 0.05, 0.5, 0.3), repeats)
        t_stacked = _torch_stacked_round(X, y, batch, state.omega, repeats)
        t_torch = _torch_round(X, y, batch, state.omega, repeats)
        row = {"batch_per_client": B, "round_s": t_round, "phases_s": phases,
               "phase_share": {k: v / t_round for k, v in phases.items()},
               "round_median_s": t_round_median, "in_round_s": in_round,
               "blas_threads": threads, "torch_threads": threads,
               "floor_s": floor, "plain_numpy_s": t_plain, "torch_stacked_s": t_stacked, "torch_per_client_s": t_torch,
               "ratio_to_floor": t_round / floor,
               "ratio_to_floor_plus_gather": t_round / (floor + phases["gather"]),
               "ratio_to_plain_numpy": t_round / t_plain,
               "ratio_to_torch_stacked": None if t_stacked is None else t_round / t_stacked,
               "ratio_to_torch_per_client": None if t_torch is None else t_round / t_torch}
        rows.append(row)
        if progress:
            progress(f"batch {B}: {t_round * 1e3:.2f} ms/round, floor+gather {(floor + phases['gather']) * 1e3:.2f} ms")
    return rows


def format_breakdown(rows):
    def r2(x):
        return "-" if x is None else f"{x:.2f}"
    head = (["phase"] + [f"B={r['batch_per_client']} ms" for r in rows] + [f"B={r['batch_per_client']} %" for r in rows]
            + [f"B={r['batch_per_client']} in round ms" for r in rows])
    lines = [f"BLAS threads: {rows[0]['blas_threads'] if rows else '-'}; 'ms', '%': each phase alone, best of the "
             "repeats; 'in round': inside a round, median", " | ".join(head), "-|-".join("-" * len(h) for h in head)]
    for p in PHASES:
        lines.append(" | ".join([p] + [f"{r['phases_s'][p] * 1e3:.3f}" for r in rows]
                                + [f"{100 * r['phase_share'][p]:.1f}" for r in rows]
                                + [f"{r['in_round_s'][p] * 1e3:.3f}" for r in rows]))
    lines.append(" | ".join(["round"] + [f"{r['round_s'] * 1e3:.3f}" for r in rows] + ["100.0" for _ in rows]
                            + [f"{r['round_median_s'] * 1e3:.3f}" for r in rows]))
    lines.append("")
    keys = [("floor (5 products)", "ratio_to_floor"), ("floor + gather", "ratio_to_floor_plus_gather"),
            ("plain NumPy round", "ratio_to_plain_numpy"), ("torch, clients stacked", "ratio_to_torch_stacked"),
            ("torch, per-client loop", "ratio_to_torch_per_client")]
    lines.append(" | ".join(["round time / ..."] + [f"B={r['batch_per_client']}" for r in rows]))
    lines.append("-|-".join(["-" * 16] + ["-" * 6 for _ in rows]))
    for name, k in keys:
        lines.append(" | ".join([name] + [r2(r[k]) for r in rows]))
    return "\n".join(lines)


def format_bench(rows):
    out = ["batch/client | ms/round | floor ms | ratio to floor | gather ms | ratio to floor+gather | "
           "ratio to torch | torch products / ours",
           "-------------+----------+----------+----------------+-----------+-----------------------+"
           "----------------+----------------------"]
    for r in rows:
        tt = "-" if r["ratio_to_torch"] is None else f"{r['ratio_to_torch']:.2f}"
        tf = "-" if r["torch_floor_ratio"] is None else f"{r['torch_floor_ratio']:.2f}"
        out.append(f"{r['batch_per_client']:>12} | {r['seconds_per_round'] * 1e3:8.2f} | "
                   f"{r['floor_seconds'] * 1e3:8.2f} | {r['ratio_to_floor']:14.2f} | {r['gather_seconds'] * 1e3:9.2f} | "
                   f"{r['ratio_to_floor_plus_gather']:21.2f} | {tt:>14} | {tf:>20}")
    return "\n".join(out)


def bench_constrained(repeats=5, progress=None):
    """``refimpl bench ssca-constrained``: the constrained step (Step 3) at the MNIST model size
    (784-128-10, about 1e5 variables) and at a small model (49-16-10), as ratios to one
    unconstrained sample-based round (K = 10, B = 100 per client) of the same model.

    Timed: the Lemma 1 closed form; the cvxpy QCQP's first solve (building the DPP problem,
    canonicalisation, solve) and its re-solves with new parameters — span formulation at both
    sizes, full-space formulation only at the small size (cvxpy's DPP canonicalisation of a cone
    over 1e5 variables needs an index array of ~1e10 entries).
    """
    from refimpl.ssca.constrained import QCQPStep, SolverError, closed_form_step
    from refimpl.ssca.surrogate import SurrogateState, surrogate_update
    rows = []
    for D_, J_ in ((784, 128), (49, 16)):
        rng = np.random.default_rng(D_)
        X = rng.random((K * 600, D_))
        y = rng.integers(0, L, K * 600)
        model = TwoLayerNet(D_, J_, L)
        parts = sample_partition(X.shape[0], K)
        protocol = SampleBasedProtocol(model, X, y, parts)
        algo = SSCA(protocol, PowerLaw(1.0, 0.1), PowerLaw(0.3, 0.15), tau=0.05)
        batch = sample_based_schedule(parts, 1, 100, rng).indices[0]
        theta = model.init_params(rng)
        state = algo.apply(algo.init(theta), 1, batch)[0]
        t_round = _best(lambda: algo.apply(state, 2, batch), repeats)
        loss, g, _ = protocol.collect(theta, batch)
        sur = surrogate_update(SurrogateState.zeros(theta.size), loss, g, theta, 1.0, 0.05)
        U = 0.5 * loss
        t_closed = _best(lambda: closed_form_step(sur, U, 1e5), repeats)
        row = {"model": f"{D_}-{J_}-{L}", "n_params": model.n_params, "unconstrained_round_s": t_round,
               "closed_form_s": t_closed, "closed_form_ratio": t_closed / t_round}
        forms = ("span",) if model.n_params > 5000 else ("span", "full")
        for form in forms:
            t0 = time.perf_counter()
            q = QCQPStep(model.n_params, 1e5, formulation=form)
            q.solve([sur], U)
            first = time.perf_counter() - t0
            failures = []

            def resolve_once():
                try:
                    q.solve([SurrogateState(sur.A, sur.B * rng.uniform(0.98, 1.02), sur.C)], U)
                except SolverError as exc:
                    failures.append(str(exc))
            resolve = _best(resolve_once, repeats)
            row[f"cvxpy_{form}_resolve_failures"] = len(failures)
            row[f"cvxpy_{form}_first_s"] = first
            row[f"cvxpy_{form}_resolve_s"] = resolve
            row[f"cvxpy_{form}_first_ratio"] = first / t_round
            row[f"cvxpy_{form}_resolve_ratio"] = resolve / t_round
        rows.append(row)
        if progress:
            progress(f"{row['model']}: round {t_round * 1e3:.2f} ms, closed form {t_closed * 1e6:.1f} µs")
    return rows


def format_constrained(rows):
    out = []
    for r in rows:
        out.append(f"model {r['model']} ({r['n_params']} parameters): unconstrained round "
                   f"{r['unconstrained_round_s'] * 1e3:.2f} ms")
        out.append(f"  closed form (Lemma 1)        {r['closed_form_s'] * 1e3:9.3f} ms   ratio {r['closed_form_ratio']:.3f}")
        for form in ("span", "full"):
            if f"cvxpy_{form}_first_s" in r:
                out.append(f"  cvxpy {form:<4} first solve      {r[f'cvxpy_{form}_first_s'] * 1e3:9.3f} ms   "
                           f"ratio {r[f'cvxpy_{form}_first_ratio']:.3f}")
                out.append(f"  cvxpy {form:<4} re-solve         {r[f'cvxpy_{form}_resolve_s'] * 1e3:9.3f} ms   "
                           f"ratio {r[f'cvxpy_{form}_resolve_ratio']:.3f}"
                           + (f"   ({r[f'cvxpy_{form}_resolve_failures']} solver failures)"
                              if r[f"cvxpy_{form}_resolve_failures"] else ""))
    return "\n".join(out)


def bench_vfl(repeats=5, progress=None):
    """``refimpl bench vfl``: one party's local phase (linear encoder, 196 inputs → 16, B = 64,
    10 classes) for τ = 1, 10, 50 local steps: the Numba kernel (whole loop jitted) against the
    NumPy loop, same inputs, in one run. Returns rows with both times and the speed-up."""
    from refimpl.vfl.flexvfl import linear_party_phase_nb, party_local_phase
    from refimpl.vfl.local_optimizers import SGD, LocalMomentum
    from refimpl.vfl.models import LinearEncoder, LinearFusion, VerticalModel
    rng = np.random.default_rng(0)
    m = VerticalModel(tuple(LinearEncoder(196, 16) for _ in range(4)), LinearFusion(64, 10))
    thetas = m.init(rng)
    Xb = [rng.random((64, 196)) for _ in range(4)]
    yb = rng.integers(0, 10, 64)
    H = np.hstack(m.embeddings(thetas, Xb))
    rows = []
    for opt in (SGD(), LocalMomentum(0.9)):
        for tau in (1, 10, 50):
            t_nb = _best(lambda: linear_party_phase_nb(m, 1, thetas[1], thetas[0], H, Xb[0], yb, opt, 0.05, tau), repeats)
            t_np = _best(lambda: party_local_phase(m, 1, thetas[1], thetas[0], H, Xb[0], yb, opt, 0.05, tau), repeats)
            rows.append({"optimizer": opt.name, "tau": tau, "numba_seconds": t_nb, "numpy_seconds": t_np,
                         "speedup": t_np / t_nb})
            if progress:
                progress(f"{opt.name} τ={tau}: numba {t_nb * 1e3:.3f} ms, numpy {t_np * 1e3:.3f} ms")
    return rows


def format_vfl(rows):
    out = ["optimizer | tau | numba ms | numpy ms | speed-up", "----------+-----+----------+----------+---------"]
    for r in rows:
        out.append(f"{r['optimizer']:>9} | {r['tau']:>3} | {r['numba_seconds'] * 1e3:8.3f} | "
                   f"{r['numpy_seconds'] * 1e3:8.3f} | {r['speedup']:7.2f}")
    return "\n".join(out)


def bench_mfcgd(repeats=3, steps=2000, progress=None):
    """``refimpl bench mfcgd``: Algorithm 1 on the synthetic problem (M = 10, p = 5), the Numba
    kernel against the NumPy implementation, d = 20 and 100, same run length; steps per second."""
    from refimpl.mfcgd.problems import SyntheticComposition
    from refimpl.mfcgd.algorithm import Identity, MFCGDParams, run_mfcgd, run_mfcgd_synthetic_nb
    rows = []
    for d in (20, 100):
        pr = SyntheticComposition.random(M=10, p=5, d=d, rng=np.random.default_rng(0))
        par = MFCGDParams(k=1, n=1000, c1=10, c2=10, c3=10, gamma=0.5, q=10, C_g=10.0, C_f=10.0)
        t_np = _best(lambda: run_mfcgd(pr, np.zeros(d), steps, par, Identity(), np.random.default_rng(1)), repeats)
        t_nb = _best(lambda: run_mfcgd_synthetic_nb(pr, np.zeros(d), steps, par, Identity(), np.random.default_rng(1)),
                     repeats)
        rows.append({"d": d, "M": 10, "steps": steps, "numpy_seconds": t_np, "numba_seconds": t_nb,
                     "speedup": t_np / t_nb, "numba_steps_per_second": steps / t_nb})
        if progress:
            progress(f"d={d}: numpy {t_np:.3f} s, numba {t_nb:.4f} s")
    return rows


def format_mfcgd(rows):
    out = ["   d |  M | steps | numpy s | numba s | speed-up | numba steps/s", "-" * 66]
    for r in rows:
        out.append(f"{r['d']:>4} | {r['M']:>2} | {r['steps']:>5} | {r['numpy_seconds']:7.3f} | {r['numba_seconds']:7.4f} | "
                   f"{r['speedup']:8.1f} | {r['numba_steps_per_second']:13.0f}")
    return "\n".join(out)


def bench_paper_scale(data_dir=None, rounds=1000, eval_every=10, progress=None):
    """``refimpl bench paper-scale``: the sample-based SSCA run at the paper's size — 60,000
    training samples, K = 10, B = 100 per client, 784-128-10 swish, T = 1000 rounds, training
    cost (32) on all 60,000 samples every 10 rounds. Data: MNIST-format files from ``data_dir``
    (e.g. Debian's Fashion-MNIST), else 60,000 random images (timing is data-independent).
    Reports wall time and the process's peak resident memory."""
    import resource
    from refimpl.core.data import Dataset, load_idx_dir
    from refimpl.ssca.experiment import RunConfig, run_experiment
    if data_dir:
        ds = load_idx_dir(data_dir)
    else:
        rng = np.random.default_rng(0)
        ds = Dataset(rng.random((60000, 784)), rng.integers(0, 10, 60000), rng.random((10000, 784)),
                     rng.integers(0, 10, 10000), 10, "random-60k")
    cfg = RunConfig("ssca", "sample", batch=100, rounds=rounds, clients=10, eval_every=eval_every)
    t0 = time.perf_counter()
    tr = run_experiment(cfg, ds, progress=(lambda t, m: progress(f"round {t}: cost {m['train_cost']:.4f}"))
                        if progress else None)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0      # KiB on Linux → MiB
    return {"data": ds.name, "n_train": ds.n_train, "rounds": rounds, "eval_every": eval_every,
            "wall_seconds": wall, "peak_rss_mib": peak, "final_train_cost": tr.series("train_cost")[-1],
            "final_test_accuracy": tr.series("test_accuracy")[-1], "status": tr.status}


def load_average():
    """The 1-minute load average (None where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except OSError:                    # not every platform has one
        return None


def bench_conditions(load_before, load_after, torch_columns=False, rows=()):
    """The lines under a bench table: the machine's load (a warning when other work was running,
    which slows every figure), and why torch columns show "-"."""
    from refimpl.core.threads import blas_choice, current_blas_threads
    cores = os.cpu_count() or 1
    n, why = blas_choice()
    now = ", ".join(f"{k}: {v}" for k, v in current_blas_threads().items()) or "none loaded"
    out = [f"BLAS threads during this bench: {now}; refimpl's work uses "
           f"{'the configured count' if n is None else n} — {why} (refimpl bench threads measures the choice)"]
    if load_before is not None:
        out.append(f"load average {load_before:.2f} before, {load_after:.2f} after, on {cores} cores")
        if load_before >= 0.5 * cores:
            out.append(f"warning: the machine was busy before the bench started (load {load_before:.2f} on {cores} "
                       "cores): these timings are slower than on an idle machine; rerun when it is idle")
    if torch_columns and rows and all(r.get("ratio_to_torch") is None for r in rows):
        out.append('torch columns show "-": torch is not installed (pip install -e ".[torch]" adds the comparison: the pinned CPU build)')
    return out


def bench_verify(tier="", cold=False, progress=None):
    """``refimpl bench verify``: the main job timed as a user runs it, a whole process from the
    interpreter's start (imports, the worker pool, Numba's cache, every check): ``refimpl verify``
    (the theorem-kind tier), or ``tier`` = "--claims" / "--full". ``cold``: with an empty Numba
    cache directory, so every kernel compiles as on a fresh install. Returns wall and CPU seconds
    (the command and every process it started), the peak memory of its largest process, the target
    of the README's Speed table and the per-check profile (from the command's own --json)."""
    import json
    import resource
    import subprocess
    import sys
    import tempfile
    from refimpl.tools.verify import TARGETS, format_profile
    from refimpl.verification.registry import CheckRecord
    name = ("verify " + tier).strip()
    with tempfile.TemporaryDirectory(prefix="refimpl-bench-verify-") as tmp:
        env = dict(os.environ, REFIMPL_CACHE_DIR=os.path.join(tmp, "cache"))
        if cold:
            env["NUMBA_CACHE_DIR"] = os.path.join(tmp, "numba")
        js = os.path.join(tmp, "records.json")
        cmd = [sys.executable, "-m", "refimpl", *name.split(), "--json", js, "--quiet"]
        if progress:
            progress(f"timing `refimpl {name}`{' with an empty Numba cache' if cold else ''} ...")
        load_before = load_average()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        rss = after.ru_maxrss / 1024
        try:
            with open(js) as fh:
                records = [CheckRecord(**d) for d in json.load(fh)]
        except (OSError, ValueError) as exc:
            raise RuntimeError(f"`refimpl {name}` wrote no records (exit {proc.returncode}): "
                               f"{(proc.stderr or str(exc)).strip().splitlines()[-1:]}")
    target = TARGETS.get(name + (" (cold)" if cold else ""), TARGETS.get(name))
    lines = [format_profile(records, wall, cpu, rss, target),
             f"`refimpl {name}`{' (cold: empty Numba cache)' if cold else ''}: exit {proc.returncode}, "
             f"{len(records)} checks, BLAS threads of a worker: 1 (the pool pins them)"]
    lines += bench_conditions(load_before, load_average())
    return {"command": f"refimpl {name}", "cold": bool(cold), "wall_seconds": wall, "cpu_seconds": cpu,
            "peak_rss_mb": rss, "target_seconds": target, "returncode": proc.returncode,
            "checks": {r.id: {k: r.details.get(k) for k in ("seconds", "cpu_seconds", "jit_seconds")}
                       for r in records},
            "table": "\n".join(lines)}


def bench_threads(repeats=20, progress=None):
    """``refimpl bench threads``: the products and rounds refimpl's work makes, timed with one
    BLAS thread and with one per core (threadpoolctl, inside this process), on the machine as it
    is and with one other process spinning (a shared machine), so the choice of
    :mod:`refimpl.core.threads` can be checked here. Rows: what, shape, busy, seconds at 1 and at
    N threads, and N-thread seconds / 1-thread seconds (> 1: one thread is faster)."""
    from threadpoolctl import threadpool_limits
    from refimpl.core.threads import blas_choice, current_blas_threads
    rng = np.random.default_rng(0)
    cores = os.cpu_count() or 1
    cases = []
    for rows_ in (100, 1000, 4000):
        X = rng.random((rows_, D))
        W1 = rng.random((J, D))
        dZ = rng.random((rows_, J))
        cases.append((f"forward X W1ᵀ + backward Δᵀ X", f"{rows_}×{D}·{D}×{J}",
                      lambda X=X, W1=W1, dZ=dZ: (X @ W1.T, dZ.T @ X)))
    Xv = rng.random((1000, 196))
    Wv = rng.random((8, 196))
    cases.append(("Flex-VFL party embedding (full data)", "1000×196·196×8", lambda: Xv @ Wv.T))
    for B in (10, 100):
        _, _, _, _, algo, batch, _, state = _round_setup(B)
        cases.append((f"SSCA round, 10 clients × B = {B}", "784-128-10", lambda a=algo, s=state, b=batch: a.apply(s, 2, b)))
    out = []
    for busy in (False, True):
        # busy: one other process spinning, as on a shared machine or beside a second run
        spin = None
        if busy:
            import subprocess
            import sys
            spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            for what, shape, fn in cases:
                with threadpool_limits(limits=1, user_api="blas"):
                    t1 = _best(fn, repeats)
                with threadpool_limits(limits=cores, user_api="blas"):
                    tn = _best(fn, repeats)
                out.append({"what": what, "shape": shape, "busy": busy, "seconds_1_thread": t1,
                            "seconds_n_threads": tn, "threads": cores, "n_over_1": tn / t1})
                if progress:
                    progress(f"{what}{' (one other process busy)' if busy else ''}: {t1 * 1e3:.3f} ms with 1 thread, "
                             f"{tn * 1e3:.3f} ms with {cores}")
        finally:
            if spin is not None:
                spin.kill()
                spin.wait()
    n, why = blas_choice()
    return {"rows": out, "choice": n, "why": why, "blas_now": current_blas_threads()}


def format_threads(res):
    rows = [("product or round", "shape", "machine", "1 thread ms", "N threads ms", "N/1")]
    for r in res["rows"]:
        rows.append((r["what"], r["shape"], "1 other busy" if r["busy"] else "as it is",
                     f"{r['seconds_1_thread'] * 1e3:.3f}", f"{r['seconds_n_threads'] * 1e3:.3f} ({r['threads']})",
                     f"{r['n_over_1']:.2f}"))
    w = [max(len(r[i]) for r in rows) for i in range(6)]
    lines = [" | ".join(c.ljust(n) for c, n in zip(r, w)) for r in rows]
    lines.insert(1, "-+-".join("-" * n for n in w))
    choice = "left as configured" if res["choice"] is None else f"{res['choice']}"
    lines.append(f"BLAS threads for refimpl's work: {choice} — {res['why']}; N/1 > 1: one thread is faster "
                 "(why one: refimpl.core.threads)")
    return "\n".join(lines)
