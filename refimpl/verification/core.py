"""Checks of the two-layer network: hand-derived gradients and the Numba kernels."""
from __future__ import annotations

import numpy as np

from refimpl.core.kernels import activation_nb, activation_np, exp_nonpos_nb, softmax_xent_nb, softmax_xent_np
from refimpl.core.model import ACTIVATIONS, TwoLayerNet
from refimpl.verification.registry import (LineProgress, check, default_of, fact_groups, max_or_nan, raises,
                                           wrong_groups)


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
        worst = max_or_nan(worst, abs(fd - g @ v) / np.linalg.norm(g))
    return worst


@check("grad.fd", "hand-derived gradients of the two-layer network equal central finite differences",
       "[SSCA] (28); docs/ssca.md")
def grad_fd(quick):
    rng = np.random.default_rng(11)
    errs = {}
    for act in ACTIVATIONS:
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
    return {"measured": max_or_nan(*errs.values()), "bound": 1e-6, "details": errs}


def plain_objective_grad(n_hidden, n_classes, theta, X, y, lam, bias=False):
    """∇F(ω) of the SSCA training cost (32) — mean softmax cross-entropy of the two-layer swish
    network (biases in column 0 of W1 and W2 when ``bias``) plus λ||ω||² — written out in plain
    NumPy, sharing nothing with :class:`refimpl.core.model.TwoLayerNet`. The checks measure
    stationarity with it, so that a wrong gradient in the model cannot also hide in the measure."""
    N, D = X.shape
    b = int(bias)
    n1 = n_hidden * (D + b)
    W1 = theta[:n1].reshape(n_hidden, D + b)
    W2 = theta[n1:].reshape(n_classes, n_hidden + b)
    Z = X @ W1[:, b:].T + (W1[:, 0] if bias else 0.0)
    S = 1.0 / (1.0 + np.exp(-Z))
    Hh = Z * S                                             # swish
    O = Hh @ W2[:, b:].T + (W2[:, 0] if bias else 0.0)
    O = O - O.max(axis=1, keepdims=True)
    P = np.exp(O)
    P /= P.sum(axis=1, keepdims=True)
    P[np.arange(N), y] -= 1.0
    P /= N                                                 # ∂(mean loss)/∂O
    Dh = (P @ W2[:, b:]) * (S * (1.0 + Z * (1.0 - S)))     # swish'(z) = σ(z)(1 + z(1 − σ(z)))
    G2, G1 = P.T @ Hh, Dh.T @ X
    if bias:
        G2 = np.hstack([P.sum(axis=0)[:, None], G2])
        G1 = np.hstack([Dh.sum(axis=0)[:, None], G1])
    return np.concatenate([G1.ravel(), G2.ravel()]) + 2.0 * lam * theta


def decimal_loss_grad(model, theta, X, y, digits=50):
    """Reference loss and gradient of ``model.loss_grad`` (mean over the batch) in Python's
    ``decimal`` at ``digits`` significant digits, from the float inputs taken exactly: an
    independent transcription of the forward and backward pass of the two-layer network."""
    from decimal import Decimal, localcontext
    with localcontext() as ctx:
        ctx.prec = digits
        one = Decimal(1)
        W1, W2 = (np.vectorize(lambda v: Decimal(float(v)), otypes=[object])(W) for W in model.unpack(theta))
        Xd = np.vectorize(lambda v: Decimal(float(v)), otypes=[object])(X)
        off = 1 if model.bias else 0
        J, L, B = model.n_hidden, model.n_classes, X.shape[0]

        def act(z):
            if model.activation == "relu":
                return (z, one) if z > 0 else (Decimal(0), Decimal(0))
            s = one / (one + (-z).exp())
            return z * s, s * (one + z * (one - s))

        loss = Decimal(0)
        g1 = np.full(W1.shape, Decimal(0), dtype=object)
        g2 = np.full(W2.shape, Decimal(0), dtype=object)
        for n in range(B):
            x = Xd[n]
            z = [sum((W1[j, off + d] * x[d] for d in range(x.size)), W1[j, 0] if off else Decimal(0)) for j in range(J)]
            a, da = zip(*(act(zj) for zj in z))
            o = [sum((W2[l, off + j] * a[j] for j in range(J)), W2[l, 0] if off else Decimal(0)) for l in range(L)]
            mx = max(o)
            e = [(ol - mx).exp() for ol in o]
            se = sum(e, Decimal(0))
            loss += (se.ln() + mx - o[y[n]]) / B
            d2 = [(e[l] / se - (one if l == y[n] else 0)) / B for l in range(L)]
            for l in range(L):
                if off:
                    g2[l, 0] += d2[l]
                for j in range(J):
                    g2[l, off + j] += d2[l] * a[j]
            for j in range(J):
                d1 = sum((W2[l, off + j] * d2[l] for l in range(L)), Decimal(0)) * da[j]
                if off:
                    g1[j, 0] += d1
                for d in range(x.size):
                    g1[j, off + d] += d1 * x[d]
        return loss, g1, g2


def _relative_to_decimal(computed, reference):
    """max |computed − reference| / max |reference|, the difference taken in decimal."""
    from decimal import Decimal
    diff = max(abs(Decimal(float(c)) - r) for c, r in zip(computed.ravel(), reference.ravel()))
    return float(diff) / max(float(np.max(np.abs(reference.astype(float)))), 1e-300)


def _scaled_instance(model, rng, B, scale):
    """An input batch and weights whose pre-activations and logits have median |·| ≈ scale; half
    of the labels are the predicted class (well-classified samples: tiny losses)."""
    X = rng.random((B, model.n_inputs))
    theta = model.init_params(rng, eps=1.0)
    W1, W2 = model.unpack(theta)
    Xb = np.hstack([np.ones((B, 1)), X]) if model.bias else X
    W1 *= scale / np.median(np.abs(Xb @ W1.T))
    act = activation_np(Xb @ W1.T, 0.0, model.activation)[0]
    Ab = np.hstack([np.ones((B, 1)), act]) if model.bias else act
    W2 *= scale / np.median(np.abs(Ab @ W2.T))
    y = rng.integers(0, model.n_classes, B)
    y[::2] = np.argmax(Ab @ W2.T, axis=1)[::2]
    return model.pack(W1, W2), X, y


@check("grad.high_precision", "loss and gradient of the two-layer network (swish and ReLU, with and without bias, "
       "batch 1/7/100, pre-activations and logits at |·| ≈ 1, 10, 50) equal a 50-digit decimal reference to "
       "1e-12 relative; finite at |·| ≈ 1000", "[SSCA] (28); docs/ssca.md §1")
def grad_high_precision(quick):
    rng = np.random.default_rng(13)
    errs, finite = {}, True
    for act in ACTIVATIONS:
        for bias in (False, True):
            model = TwoLayerNet(12 if quick else 20, 6 if quick else 12, 10, act, bias)
            for B in ((1, 7) if quick else (1, 7, 100)):
                for scale in (1.0, 10.0, 50.0):
                    theta, X, y = _scaled_instance(model, rng, B, scale)
                    loss, g = model.loss_grad(theta, X, y)
                    ref_loss, r1, r2 = decimal_loss_grad(model, theta, X, y)
                    e = [_relative_to_decimal(np.array([loss]), np.array([ref_loss], dtype=object))]
                    e += [_relative_to_decimal(gb, rb) for gb, rb in zip(model.unpack(g), (r1, r2))]
                    errs[f"{act},bias={bias},B={B},|z|~{scale:g}"] = max_or_nan(*e)
                theta, X, y = _scaled_instance(model, rng, 7, 1000.0)
                loss, g = model.loss_grad(theta, X, y)
                finite &= bool(np.isfinite(loss) and np.all(np.isfinite(g)))
    worst = max_or_nan(*errs.values())
    return {"measured": worst, "bound": 1e-12, "holds": worst <= 1e-12 and finite,
            "details": {**errs, "finite at |z| ~ 1000": finite}}


@check("kernels.numba_numpy", "Numba kernels equal their NumPy twins (incl. |z| up to 1e3 and z = 0 exactly)",
       "refimpl/core/kernels.py, refimpl/ssca/kernels.py")
def kernels_numba_numpy(quick):
    rng = np.random.default_rng(12)
    Z = rng.standard_normal((64, 33)) * 5
    Z[0, :] = np.linspace(-1e3, 1e3, 33)
    b = rng.standard_normal(33)
    Z[1, :] = -b                      # pre-activations exactly 0: ReLU's subgradient there (0) on both sides
    diffs = {}
    for kind in ACTIVATIONS:
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
    x = -np.concatenate([np.linspace(0.0, 708.0, 4001), rng.exponential(1.0, 4000)])     # normal results
    diffs["exp_nonpos vs exp (relative)"] = float(np.max(np.abs(exp_nonpos_nb(x) / np.exp(x) - 1.0)))
    return {"measured": max_or_nan(*diffs.values()), "bound": 1e-12, "details": diffs}


@check("kernels.exp_ulps", "the vectorised exp_nonpos is within 1 ulp of the C library's exp on 321,000 points of "
       "[−708, 0] (uniform, near 0, tiny |x|, every k ln 2): a bound in ulps, which a relative 1e-12 is not",
       "refimpl/core/kernels.py (exp_nonpos)")
def kernels_exp_ulps(quick):
    rng = np.random.default_rng(5)
    x = -np.concatenate([rng.uniform(0.0, 708.0, 200000), rng.exponential(1.0, 100000),
                         10.0 ** rng.uniform(-300, -1, 20000), np.arange(0, 1021) * np.log(2), [0.0, 708.0]])
    ref = np.exp(x)
    ulps = np.abs(exp_nonpos_nb(x) - ref) / np.spacing(ref)
    worst = int(np.argmax(ulps))
    return {"measured": float(ulps[worst]), "bound": 1.0,
            "details": {"points": int(x.size), "max_ulps": float(ulps[worst]), "at_x": float(x[worst]),
                        "fraction_not_bit_equal": float(np.mean(ulps > 0)),
                        "reference": "numpy.exp (the C library's exp), one ulp = numpy.spacing(exp(x))"}}


@check("core.chunked_evaluation", "whole-data evaluations over more rows than one chunk (12,000 rows; chunks of "
       "8,192, 5,000 and 999) equal one unchunked pass: the training loss of the two-layer network, the authors' "
       "one-vs-all cost, the full gradient ∇F of (32) and the Flex-VFL model's loss (worst relative difference); "
       "a screened rounds-to-target run, whose evaluations above the target read only the rows that show it, "
       "meets the target in the round the unscreened run does, each screened lower bound in (target, cost], and a "
       "screen without a target or on the authors' cost is refused; "
       "the loss and the one-vs-all cost unchanged when every logit is raised by 800 (softmax's shift invariance)",
       "refimpl/core/model.py (loss, one_vs_all_cost, full_gradient); refimpl/vfl/models.py (loss); "
       "refimpl/ssca/algorithms.py (Evaluator.cost_shown_above)")
def chunked_evaluation(quick):
    from refimpl.core.model import full_gradient
    from refimpl.vfl.models import LinearEncoder, LinearFusion, VerticalModel
    rng = np.random.default_rng(9)
    N, D, L = 12000, 20, 10
    X, y = rng.standard_normal((N, D)), rng.integers(0, L, N)
    model = TwoLayerNet(D, 8, L)
    theta = rng.standard_normal(model.n_params) * 0.3
    O = model.logits(theta, X)                                   # one pass over every row
    O = O - O.max(axis=1, keepdims=True)
    logp = O - np.log(np.exp(O).sum(axis=1, keepdims=True))
    rows = np.arange(N)
    want = {"loss": float(-logp[rows, y].mean()),
            "one_vs_all": float((-logp[rows, y].sum() - np.log1p(-np.exp(logp)).sum()
                                 + np.log1p(-np.exp(logp[rows, y])).sum()) / N),
            "gradient": model.loss_grad(theta, X, y, np.full(N, 1.0 / N))[1] + 2 * 1e-3 * theta}
    vm = VerticalModel((LinearEncoder(12, 3), LinearEncoder(8, 2)), LinearFusion(5, L))
    thetas = vm.init(rng)
    Xs = [X[:, :12], X[:, 12:]]
    want["vfl_loss"] = vm.fusion.loss_grads(thetas[0], np.hstack(vm.embeddings(thetas, Xs)), y)[0]
    errors = {}
    for chunk in (8192, 5000, 999):
        got = {"loss": model.loss(theta, X, y, chunk=chunk), "one_vs_all": model.one_vs_all_cost(theta, X, y, chunk=chunk),
               "gradient": full_gradient(model, theta, X, y, 1e-3, chunk=chunk),
               "vfl_loss": vm.loss(thetas, Xs, y, chunk=chunk)}
        for k, v in got.items():
            w = np.asarray(want[k])
            errors[f"{k}@{chunk}"] = float(np.max(np.abs(np.asarray(v) - w)) / np.max(np.abs(w)))
    # softmax is unchanged by one constant added to every logit: with the output bias raised by 800
    # (e^800 overflows a double) the loss and the one-vs-all cost stay those of the unshifted network
    net = TwoLayerNet(D, 8, L, bias=True)
    th = np.random.default_rng(90).standard_normal(net.n_params) * 0.3
    shifted = th.copy()
    net.unpack(shifted)[1][:, 0] += 800.0
    for k, f in (("loss", net.loss), ("one_vs_all", net.one_vs_all_cost)):
        base = f(th, X[:500], y[:500])
        errors[f"{k}_logits_shifted_by_800"] = abs(f(shifted, X[:500], y[:500]) - base) / abs(base)
    screen = _screened_run(rng)
    errors["screened_run"] = 0.0 if screen["holds"] else 1.0
    worst = max_or_nan(*errors.values())
    return {"measured": worst, "bound": 1e-12,
            "details": {"rows": N, "relative_errors": errors, "screened_run": screen},
            "note": "12,000 rows: 2, 3 and 13 chunks; screened_run: 0 when the screened run agrees, 1 when not"}


def _screened_run(rng):
    """SGD on 2,000 synthetic rows (chunks of 500) to a cost target met two thirds of the way, with
    and without ``screen``: the round that meets it, the fully evaluated costs (equal to the bit)
    and the screened evaluations' lower bounds against the costs the unscreened run recorded; a
    screen without a target, or on the authors' cost, refused."""
    from refimpl.core.data import Dataset
    from refimpl.ssca.experiment import RunConfig, rounds_to_target, run_experiment
    N, D = 2000, 20
    X = rng.standard_normal((N, D))
    y = np.argmax(X @ rng.standard_normal((D, 10)) + 0.5 * rng.standard_normal((N, 10)), axis=1)
    data = Dataset(X, y, X[:50], y[:50])
    cfg = RunConfig("sgd", setting="sample", batch=10, hidden=8, rounds=40, eval_every=2, seed=1, lr=3.0)
    full = run_experiment(cfg, data, test_accuracy=False)
    cost = full.series("train_cost")
    target = float(cost[len(cost) * 2 // 3])
    scr = run_experiment(cfg, data, stop_at_cost=target, test_accuracy=False, screen=True)
    c, lower = scr.series("train_cost"), scr.series("train_cost_lower_bound")
    hit, hit_full = rounds_to_target(scr, target), rounds_to_target(full, target)
    n, cut = len(c), np.isnan(c)
    ok = (hit is not None and hit == hit_full and np.array_equal(scr.series("round"), full.series("round")[:n])
          and np.array_equal(c[~cut], cost[:n][~cut]) and np.array_equal(lower[~cut], cost[:n][~cut])
          and bool(np.all(lower[cut] > target)) and bool(np.all(lower[cut] <= cost[:n][cut])) and cut.sum() >= n // 3
          and not cut[0])                 # round 0 in full: the divergence rule's reference
    # screening needs a target and the plain training cost: without either it is refused
    from dataclasses import replace
    words = "screen applies to a run with stop_at_cost and the plain training-cost Evaluator"
    refused = (raises(lambda: run_experiment(cfg, data, test_accuracy=False, screen=True), words)
               and raises(lambda: run_experiment(replace(cfg, authors_cost=True), data, stop_at_cost=target,
                                                 test_accuracy=False, screen=True), words))
    ok = ok and refused
    return {"holds": bool(ok), "refused_without_target_or_with_authors_cost": refused, "target": target,
            "round_met": hit, "round_met_unscreened": hit_full, "evaluations": n, "screened": int(cut.sum())}


def _cover_wrong(parts, N, nonempty=True):
    """1 unless the parts cover ids 0..N−1 once each (none empty if ``nonempty``), each client's ids
    in increasing order (a batch draws positions within them: docs/guide.md)."""
    allx = np.concatenate(parts)
    return int(allx.size != N or np.unique(allx).size != N or (nonempty and min(len(p) for p in parts) < 1)
               or not all(np.all(np.diff(p) > 0) for p in parts))


def _exact_min_size(N, K, labels):
    """(the smallest client's size, 1 if wrong): a Dirichlet draw whose smallest client holds
    exactly MIN_SIZE is kept, the same split as the one drawn without a minimum."""
    from refimpl.core.partition import sample_partition
    first = sample_partition(N, K, "dirichlet:0.5:0", np.random.default_rng(600), labels)
    least = min(len(p) for p in first)
    kept = sample_partition(N, K, f"dirichlet:0.5:{least}", np.random.default_rng(600), labels)
    return least, int(least < 1 or any(not np.array_equal(a, b) for a, b in zip(first, kept)))


@check("core.partitions", "the sample-based partitions: every sample in exactly one client for every kind, with more "
       "classes than clients (K = 7, L = 10); Dirichlet:α class shares with the variance (1/K)(1 − 1/K)/(Kα + 1) of "
       "Dir(α·1_K) (α = 0.2, 1, 5) and the minimum size kept; quantity:σ log-sizes with standard deviation σ, "
       "non-empty clients even at σ = 5; iid clients' label histograms against the whole set (χ²); the batch "
       "schedules' rows distinct and each id drawn at the rate B/n (feature-based: of all n; sample-based: of its "
       "client's own), partition-stats' client × class counts by hand, quantity:0's equal sizes and an index set "
       "holding the id n refused: each statistical "
       "test at |z| ≤ 4 (false alarm ≈ 6e-5 per test), its power against the nearest wrong convention reported",
       "docs/ssca.md (partitions); refimpl/core/partition.py")
def partitions(quick):
    from math import erf, sqrt
    from refimpl.core.partition import sample_partition
    N, K, L, S = 10000, 7, 10, 30
    rng = np.random.default_rng(12)
    labels = np.sort(rng.integers(0, L, N))               # sorted: a split that forgets to shuffle shows
    det, bad_cover, z = {}, 0, {}

    for kind in ("contiguous", "iid", "label_skew", "dirichlet:1.0", "quantity:0.5", "quantity:5"):
        for s in range(3):
            bad_cover += _cover_wrong(sample_partition(N, K, kind, np.random.default_rng(s), labels), N)
    # the minimum size: at α = 0.1 most unconditioned draws leave a client below 500 samples, so
    # ten draws that all hold ≥ 500 show the redraw rule at work (power: 1 − (1 − rate)^10)
    small = np.mean([min(len(p) for p in sample_partition(N, K, "dirichlet:0.1:0", np.random.default_rng(400 + s),
                                                           labels)) < 500 for s in range(20)])
    for s in range(10):
        parts = sample_partition(N, K, "dirichlet:0.1:500", np.random.default_rng(500 + s), labels)
        bad_cover += _cover_wrong(parts, N) + int(min(len(p) for p in parts) < 500)
    least, wrong = _exact_min_size(N, K, labels)
    bad_cover += wrong
    det["min_size"] = {"unconditioned_draws_below_500": float(small), "power_against_no_redraw":
                       float(1 - (1 - small) ** 10), "draw_at_exactly_min_size_kept": least}
    # Dirichlet: per (seed, class) unit u = (1/K) Σ_k (share_k − 1/K)², E[u] = (1/K)(1 − 1/K)/(Kα + 1)
    for alpha in (0.2, 1.0, 5.0):
        us = []
        for s in range(S):
            parts = sample_partition(N, K, f"dirichlet:{alpha}:0", np.random.default_rng(100 + s), labels)
            counts = np.array([np.bincount(labels[p], minlength=L) for p in parts], dtype=float)   # (K, L)
            share = counts / counts.sum(axis=0)
            us.extend(np.mean((share - 1 / K) ** 2, axis=0))
        us = np.array(us)
        want = (1 / K) * (1 - 1 / K) / (K * alpha + 1)
        se = us.std(ddof=1) / np.sqrt(us.size)
        z[f"dirichlet:{alpha}"] = float((us.mean() - want) / se)
        alt = (1 / K) * (1 - 1 / K) / (alpha + 1)            # the Dir(α/K · 1_K) convention
        det[f"dirichlet:{alpha}"] = {"mean_u": float(us.mean()), "expected": want, "z": z[f"dirichlet:{alpha}"],
                                     "z_under_alpha_over_K": float((alt - want) / se)}
    # quantity: log sizes − their mean, pooled: standard deviation σ (up to the floor's rounding)
    # (N = 10⁵: the log-normal draws are the same at any N, only the floor's rounding of the sizes
    # moves, by < 1/2000 in log size; z 2.3559 at N = 10⁶, 2.3589 here, at a tenth of the time)
    for sigma in (0.5,):
        Kq, dev = 50, []
        for s in range(S):
            sizes = np.array([len(p) for p in sample_partition(10 ** 5, Kq, f"quantity:{sigma}",
                                                                 np.random.default_rng(200 + s), None)])
            lg = np.log(sizes)
            dev.extend(lg - lg.mean())
        dev = np.array(dev)
        sd = float(np.sqrt(np.sum(dev ** 2) / (dev.size - S)))
        se = sigma / np.sqrt(2 * (dev.size - S))
        z[f"quantity:{sigma}"] = (sd - sigma) / se
        det[f"quantity:{sigma}"] = {"sd_log_size": sd, "expected": sigma, "z": z[f"quantity:{sigma}"],
                                    "z_under_sigma_squared": float((sigma ** 2 - sigma) / se)}
    # iid: each client's label histogram against the whole set's proportions; drawn without
    # replacement (hypergeometric), Pearson's χ² has mean and sd (L − 1)·f and sqrt(2(L − 1))·f,
    # f = (N − n)/(N − 1), asymptotically in the counts
    chis = []
    for s in range(S):
        parts = sample_partition(N, K, "iid", np.random.default_rng(300 + s), labels)
        p = np.bincount(labels, minlength=L) / N
        for b in parts:
            e = p * len(b)
            f = (N - len(b)) / (N - 1)
            chis.append(float(np.sum((np.bincount(labels[b], minlength=L) - e) ** 2 / e)) / f)
    chis = np.array(chis)
    z["iid_chi2"] = float((chis.mean() - (L - 1)) / (np.sqrt(2 * (L - 1)) / np.sqrt(chis.size)))
    det["iid_chi2"] = {"mean_over_f": float(chis.mean()), "expected": L - 1, "z": z["iid_chi2"],
                       "z_unshuffled": "contiguous blocks of sorted labels give χ² of order n"}
    bad_cover += _schedule_draws(z, det) + _edge_partitions_wrong(N, K)
    # refimpl partition-stats' table, by hand: clients {0, 2, 5} and {1, 3, 4} of labels 0, 1, 0, 2, 2, 1
    from refimpl.core.partition import partition_stats
    stats = partition_stats([np.array([0, 2, 5]), np.array([1, 3, 4])], [0, 1, 0, 2, 2, 1], 4)
    bad_cover += int(stats["sizes"] != [3, 3] or np.asarray(stats["label_counts"]).tolist() != [[2, 1, 0, 0],
                                                                                               [0, 1, 2, 0]])
    worst = max_or_nan(*(abs(v) for v in z.values()))
    det.update(cover_violations=bad_cover, z=z, false_alarm_per_test=float(1 - erf(4 / sqrt(2))))
    # one cover violation fails the check: measured reaches the bound 1 with it, so holds says so itself
    return {"measured": max_or_nan(worst / 4.0, float(bad_cover)), "bound": 1.0, "details": det,
            "holds": bool(worst <= 4.0 and bad_cover == 0),
            "note": f"max |z| {worst:.2f} (≤ 4), {bad_cover} cover violations"}


def _edge_partitions_wrong(N, K):
    """Wrong answers at the kinds' edges: quantity:0 (σ = 0) gives K clients within K samples of each
    other (each 1 + ⌊(N − K)/K⌋, the remainder to one), covering every sample once; a feature block
    holding the id D of D features is refused, even when the others cover 0..D−1."""
    from refimpl.core.partition import feature_partition, sample_partition
    try:
        parts = sample_partition(N, K, "quantity:0", np.random.default_rng(1), None)
    except ValueError:
        return 1
    sizes = sorted(len(p) for p in parts)
    wrong = _cover_wrong(parts, N) + int(sizes[:-1] != [1 + (N - K) // K] * (K - 1))
    return wrong + int(not raises(lambda: feature_partition(3, blocks=[[0, 1], [2, 3]]), "must lie in 0..2"))


def _schedule_draws(z, det, T=3000, B=2):
    """The batch schedules draw B distinct ids a row, uniformly: the feature-based one from all n = 6
    samples, the sample-based one from each client's own (5 and 7). Each id is in a row with
    probability B/n, so its count over T rows has mean T·B/n and variance T (B/n)(1 − B/n); the
    largest |z| over the ids enters ``z`` (an id never drawn gives |z| ≈ 39). Returns the rows with
    a repeated id plus the sample-based ids outside their client's part."""
    from refimpl.core.partition import feature_based_schedule, sample_based_schedule
    bad = 0
    feat = feature_based_schedule(6, T, B, np.random.default_rng(600)).indices
    parts = [np.arange(0, 5), np.arange(5, 12)]
    samp = sample_based_schedule(parts, T, B, np.random.default_rng(601)).indices
    for name, rows, ids in (("feature", feat, np.arange(6)), ("sample/client 0", samp[:, 0], parts[0]),
                            ("sample/client 1", samp[:, 1], parts[1])):
        bad += int(np.sum(rows[:, 0] == rows[:, 1])) + int(np.sum(~np.isin(rows, ids)))
        q = B / ids.size
        counts = np.array([np.sum(rows == i) for i in ids])
        zs = (counts - T * q) / np.sqrt(T * q * (1 - q))
        z[f"schedule:{name}"] = float(zs[np.argmax(np.abs(zs))])
        det[f"schedule:{name}"] = {"counts": counts.tolist(), "expected": T * q, "max_abs_z_of": int(ids.size)}
    return bad


def _held_wrong(status, got):
    """True unless a stopped run's status names what its trace holds: everything before the
    stopping round, step or event ``got`` ("trace holds events 0..16" for event 17)."""
    import re
    held = re.search(r"trace holds (?:rounds|steps|events) \d+\.\.(\d+)$", status)
    return held is None or got is None or int(held.group(1)) != got - 1


def _memory_stop_case(det):
    """An SGD run whose round 3 runs out of memory stops there, keeping rounds 0..2 (their metrics,
    the last good iterate as its snapshot and its state), and one whose dump of round 2 does, rounds
    0..1 (a planted algorithm raising MemoryError where asked; the iterates those of an unstopped run)."""
    from refimpl.ssca.algorithms import train
    from refimpl.ssca.assembly import run_inputs
    from refimpl.ssca.experiment import RunConfig
    from refimpl.verification.registry import embedded
    cfg = RunConfig("sgd", rounds=4, eval_every=1, hidden=8, batch=20).resolved()
    flat = lambda ws: np.concatenate([np.ravel(w) for w in ws])
    algo, theta0, schedule, evaluator, trace, _, rule = run_inputs(cfg, embedded())
    train(algo, theta0, schedule, cfg.rounds, evaluator, trace, range(5), divergence=rule)
    unstopped = {t: flat(ws) for t, ws in trace.snapshots.items()}
    wrong = []
    for where, t_bad, said in (("apply", 3, "stopped: out of memory in round 3; trace holds rounds 0..2"),
                               ("dump_round", 2, "stopped: out of memory dumping round 2; trace holds rounds 0..1")):
        algo, theta0, schedule, evaluator, trace, snapshots, rule = run_inputs(cfg, embedded())
        kept = getattr(algo, where)

        def failing(state, t, *rest, kept=kept, t_bad=t_bad):
            if t == t_bad:
                raise MemoryError
            return kept(state, t, *rest)
        setattr(algo, where, failing)
        try:
            final = train(algo, theta0, schedule, cfg.rounds, evaluator, trace, snapshots, divergence=rule,
                          dump_rounds=(1, 2))
        except Exception as exc:
            final, trace.status = None, f"{type(exc).__name__}: {exc}"
        right = (trace.status == said and trace.metrics["round"] == list(range(t_bad)) and final is not None
                 and np.array_equal(final.omega, unstopped[t_bad - 1]) and t_bad - 1 in trace.snapshots
                 and np.array_equal(flat(trace.snapshots[t_bad - 1]), unstopped[t_bad - 1]))
        det[f"out of memory in {where}"] = trace.status
        wrong += [where] * int(not right)
    return wrong


@check("core.divergence_reference", "the divergence rule compares each evaluation's training cost with the cost at "
       "the initial point: on a blowing-up SGD run (SSCA family), Flex-VFL run, asynchronous VFL run (an event's "
       "evaluations) and ComFedL run (MFCGD family, "
       "||∇F(x̄_t)|| against step 1, which is never compared with itself, even for a factor of 0.5), the run stops at the "
       "first evaluation whose cost exceeds the factor × the initial cost, computed here from an unstopped run of the "
       "same seed (a factor chosen so that comparing with the previous evaluation would never stop); the SGD run "
       "stops likewise at the first round whose ||ω||² exceeds a limit, and the ComFedL run at the first step past "
       "step 1 whose ||x̄_t||² does (the gradient-norm rule off), Flex-VFL at round 1 and the asynchronous baseline "
       "at event 1 (naming the party) when Σ_k ||θ_k||² exceeds 1e-9, a run evaluated every 4th round recording its last "
       "good round all the same; an SGD run out of memory in a round or in its dump stops there, keeping the rounds "
       "before it and the last good iterate; the rule itself at each edge by hand (a cost "
       "exactly the factor × the initial one kept, also for an initial cost below 1; NaN and inf never kept; a "
       "limit that is not a finite number > 0 refused); 0 mismatches",
       "refimpl/core/divergence.py and the runners that call it")
def divergence_reference(quick):
    import re
    from refimpl.ssca.experiment import RunConfig, run_experiment
    from refimpl.verification.registry import embedded
    from refimpl.vfl import run as run_vfl
    from refimpl.vfl.experiment import VFLConfig
    from refimpl.mfcgd.experiment import MFCGDConfig, run_mfcgd_config
    ds = embedded()
    cases = {
        "ssca-family/sgd": (30.0, lambda f: run_experiment(RunConfig("sgd", lr=20.0, lr_decay=0.0, rounds=8, eval_every=1,
                                                                     hidden=8, batch=20, diverge_cost_factor=f,
                                                                     diverge_sq_norm=1e300), ds), "train_cost"),
        "flexvfl": (500.0, lambda f: run_vfl(VFLConfig(method="flexvfl", rounds=6, eta="3", diverge_cost_factor=f,
                                                       diverge_sq_norm=1e300)), "train_loss"),
        # the asynchronous baseline's evaluations (several an event; the loss grows at most 41× from one to the next)
        "async-vfl": (500.0, lambda f: run_vfl(VFLConfig(method="async-vfl", time_budget=30, eta="1.5",
                                                         diverge_cost_factor=f, diverge_sq_norm=1e300)), "train_loss"),
        # the MFCGD family's rule reads ||∇F(x̄_t)|| against its value at step 1 (unbounded on MAML)
        "mfcgd-family/comfedl": (1000.0, lambda f: run_mfcgd_config(MFCGDConfig(
            method="comfedl", problem="maml", steps=40, eta=2.0, eval_every=1, diverge_cost_factor=f,
            diverge_sq_norm=1e300)), "grad_norm"),
    }
    det, unstopped = {}, {}

    def free_run(name):          # the case's run with the cost rule off (1e12), made once for every fact reading it
        if name not in unstopped:
            unstopped[name] = cases[name][1](1e12)
        return unstopped[name]

    def case(name, factor, make, metric, label=None):
        free = free_run(name)
        c = np.asarray(free.metrics[metric], dtype=float)
        rounds = np.asarray(free.metrics["step"] if len(free.metrics.get("step", [])) else free.metrics["round"])
        over = 1 + np.flatnonzero(c[1:] > factor * c[0])          # the first evaluation is the reference itself
        want = int(rounds[over[0]]) if over.size else None
        prev_rule = np.flatnonzero(c[1:] > factor * c[:-1])
        stopped = make(factor)
        m = re.match(r"diverged: (?:round|step|event) (\d+):", stopped.status)
        got = int(m.group(1)) if m else None
        det[label or name] = {"factor": factor, "costs_unstopped": c.tolist(), "expected_round": want, "stopped_round": got,
                     "status": stopped.status, "previous_evaluation_rule_would_stop_at":
                     int(rounds[prev_rule[0] + 1]) if prev_rule.size else None}
        return [name] * int(want is None or got != want or len(stopped.metrics[metric]) != over[0]
                            or _held_wrong(stopped.status, got))

    def sq_norm_case():
        """||ω||² on the same SGD run: a limit between its 3rd and 4th values stops it at the first above."""
        free = free_run("ssca-family/sgd")
        sq = np.asarray(free.metrics["sq_norm"], dtype=float)
        limit = float(np.sort(sq)[3] + np.sort(sq)[4]) / 2
        want = int(free.metrics["round"][np.flatnonzero(sq > limit)[0]])
        stopped = run_experiment(RunConfig("sgd", lr=20.0, lr_decay=0.0, rounds=8, eval_every=1, hidden=8, batch=20,
                                           diverge_cost_factor=1e12, diverge_sq_norm=limit), ds)
        m = re.match(r"diverged: round (\d+): \|\|omega\|\|\^2", stopped.status)
        got = int(m.group(1)) if m else None
        det["ssca-family/sgd ||omega||^2"] = {"limit": limit, "sq_norm_unstopped": sq.tolist(), "expected_round": want,
                                              "stopped_round": got, "status": stopped.status}
        # a one-round run stopped at its only round says so (its status is not overwritten as finished)
        one = run_experiment(RunConfig("sgd", lr=20.0, lr_decay=0.0, rounds=1, eval_every=1, hidden=8, batch=20,
                                       diverge_cost_factor=1e12, diverge_sq_norm=1e-9), ds)
        det["ssca-family/sgd one round"] = one.status
        # evaluated every 4th round only, a stopped run records its last good round want − 1 (cost and iterate)
        sparse = run_experiment(RunConfig("sgd", lr=20.0, lr_decay=0.0, rounds=8, eval_every=4, hidden=8, batch=20,
                                          diverge_cost_factor=1e12, diverge_sq_norm=limit), ds)
        last_good = (want is not None and sparse.metrics["round"] == [0, want - 1]
                     and sparse.metrics["train_cost"][-1] == free.metrics["train_cost"][want - 1]
                     and max(sparse.snapshots) == want - 1)
        det["ssca-family/sgd ||omega||^2, every 4th round evaluated"] = sparse.metrics["round"]
        return ["||omega||^2"] * int(got != want or not one.status.startswith("diverged: round 1:") or not last_good)

    run = {name: (lambda name=name, args=args: case(name, *args)) for name, args in cases.items()}
    mf = "mfcgd-family/comfedl"            # the rule by hand first, then the runs (the cheapest first)
    mismatches = len(wrong_groups([lambda: det.setdefault("rule_by_hand", _divergence_rule_errors()),
                                   run["ssca-family/sgd"], sq_norm_case, run[mf],
                                   lambda: case(mf, 0.5, cases[mf][1], "grad_norm", f"{mf} factor 0.5"),
                                   lambda: _mfcgd_sq_norm_case(det) + _vfl_sq_norm_case(det) + _memory_stop_case(det),
                                   run["flexvfl"], run["async-vfl"]]))
    stops = [det.get(k, {}).get("stopped_round") for k in ("ssca-family/sgd", "flexvfl", "mfcgd-family/comfedl")]
    return {"measured": float(mismatches), "bound": 0.0, "holds": mismatches == 0, "details": det,
            "note": "SGD stops at round {}, Flex-VFL at round {}, ComFedL at step {}".format(*stops)}


def _vfl_sq_norm_case(det):
    """Σ_k ||θ_k||² above a limit of 1e-9 (the cost rule off): Flex-VFL stops at round 1 and the
    asynchronous baseline at event 1, naming the party served; each trace holds the initial state
    only (the asynchronous one's evaluations before the first event)."""
    import re

    from refimpl.verification.registry import embedded
    from refimpl.vfl.experiment import VFLConfig, run_vfl
    sync = run_vfl(VFLConfig(method="flexvfl", rounds=2, diverge_cost_factor=1e12, diverge_sq_norm=1e-9), embedded())
    asy = run_vfl(VFLConfig(method="async-vfl", time_budget=2, diverge_cost_factor=1e12, diverge_sq_norm=1e-9),
                  embedded())
    det["vfl ||theta||^2 above 1e-9"] = [sync.status, asy.status]
    held = re.search(r"trace holds events 0\.\.0$", asy.status)
    return ["||theta||^2"] * int(not sync.status.startswith("diverged: round 1: sum_k ||theta_k||^2 ")
                                 or sync.metrics["round"] != [0]
                                 or not re.match(r"diverged: event 1 \(party [123]\): sum_k \|\|theta_k\|\|\^2 ",
                                                 asy.status)
                                 or not held or set(asy.metrics["round"]) != {0})


def _mfcgd_sq_norm_case(det):
    """||x̄_t||² on a ComFedL run (MAML, η = 2): a limit between its 3rd and 4th largest values of
    the first 12 steps (read from the dumped x̄_t) stops it at the first step above, whatever
    step that is, with the gradient-norm rule off."""
    import re

    from refimpl.mfcgd.experiment import MFCGDConfig, run_mfcgd_config

    make = lambda limit, **kw: run_mfcgd_config(MFCGDConfig(   # noqa: E731
        method="comfedl", problem="maml", steps=12, eta=2.0, eval_every=1, diverge_cost_factor=1e12,
        diverge_sq_norm=limit, **kw))
    free = make(1e300, dump_rounds="all")
    sq = np.array([float(np.vdot(free.arrays[f"r{t}_x_bar"], free.arrays[f"r{t}_x_bar"])) for t in range(1, 13)])
    limit = float(np.sort(sq)[-4] + np.sort(sq)[-3]) / 2
    want = int(np.flatnonzero(sq > limit)[0]) + 1
    stopped = make(limit)
    m = re.match(r"diverged: step (\d+): \|\|x_bar\|\|\^2", stopped.status)
    got = int(m.group(1)) if m else None
    det["mfcgd-family/comfedl ||x_bar||^2"] = {"limit": limit, "sq_norm_unstopped": sq.tolist(),
                                               "expected_step": want, "stopped_step": got, "status": stopped.status}
    return ["||x_bar||^2"] * int(got != want or want < 2 or len(stopped.metrics["step"]) != want - 1)


def _divergence_rule_errors():
    """The rule itself at its edges, by hand (factor 10, ||ω||² limit 100): a cost exactly 10× the
    initial one is kept, just above it is not, also for an initial cost below 1 (0.01: the limit is
    0.1, not 10); ||ω||² = 100 is kept, 100.001 is not; NaN and inf are never kept; a limit that is
    not a finite number > 0 (NaN, inf, −1, 0, a boolean, text) is refused, by the configurations'
    check and by the rule."""
    from refimpl.core.divergence import DivergenceRule
    rule = DivergenceRule(10.0, 100.0)
    cases = (("cost", (5.0, 0.5), False), ("cost", (5.0000001, 0.5), True), ("cost", (0.11, 0.01), True),
             ("cost", (0.099, 0.01), False), ("cost", (float("nan"), 1.0), True), ("cost", (float("inf"), 1.0), True),
             ("sq_norm", (100.0,), False), ("sq_norm", (100.001,), True), ("sq_norm", (float("inf"),), True),
             ("sq_norm", (float("nan"),), True))
    wrong = []
    for kind, args, diverged in cases:
        reason = getattr(rule, kind)("x", *args)
        if (reason is not None) != diverged:
            wrong.append(f"{kind}{args}: {'diverged' if reason else 'kept'}, want {'diverged' if diverged else 'kept'}")
    # the limits themselves: finite numbers > 0 (a NaN limit would keep every run, a negative one stop it at once)
    from types import SimpleNamespace

    from refimpl.core.divergence import check_limits
    from refimpl.verification.registry import raises
    for bad in (float("nan"), float("inf"), -1.0, 0.0, True, "10"):
        for field in ("diverge_cost_factor", "diverge_sq_norm"):
            cfg = SimpleNamespace(**{"diverge_cost_factor": 10.0, "diverge_sq_norm": 100.0, field: bad})
            if not raises(lambda: check_limits(cfg), f"{field} must be a finite number > 0"):
                wrong.append(f"a limit {field} = {bad!r} accepted")
            rule_field = {"diverge_cost_factor": "cost_factor", "diverge_sq_norm": "max_sq_norm"}[field]
            if not raises(lambda: DivergenceRule(**{"cost_factor": 10.0, "max_sq_norm": 100.0, rule_field: bad}),
                          "must be a finite number > 0"):
                wrong.append(f"a rule with {rule_field} = {bad!r} built")
    return wrong


def _perturbed(value):
    """A different value of a configuration field's kind (None → 1)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1 if value == 0 else value * 2
    if isinstance(value, str):
        return value + "-other"
    if isinstance(value, (list, tuple)):
        return list(value) + [0]
    if isinstance(value, dict):
        return {**value, "other": 0}
    return 1


def _data_file_facts():
    """(what, right): the --data readers on small files written here, each answer by hand: an .npz
    with MATLAB-style labels under --label-base 1, reloaded from the trace's record of it and
    refused once the file changes; a negative float label and a test label no training sample has,
    refused for their reasons; MNIST-format IDX files (one gzip-compressed) with big-endian sizes."""
    import gzip
    import os
    import tempfile

    from refimpl.core.data import MAX_CLASSES, load_idx_dir, load_npz_dataset, load_source
    out = []
    Xtr, Xte = np.arange(12.0).reshape(4, 3), np.arange(6.0).reshape(2, 3)
    with tempfile.TemporaryDirectory(prefix="refimpl-data-") as d:
        path = os.path.join(d, "one_based.npz")
        np.savez(path, X_train=Xtr, y_train=np.array([1, 2, 3, 1]), X_test=Xte, y_test=np.array([3, 2]))
        ds = load_npz_dataset(path, label_base=1)
        out.append(("--label-base 1 reads labels 1,2,3,1 and 3,2 as 0,1,2,0 and 2,1 (3 classes)",
                    ds.y_train.tolist() == [0, 1, 2, 0] and ds.y_test.tolist() == [2, 1] and ds.n_classes == 3))
        try:
            again = load_source(ds.source, "the probe's data").y_train.tolist() == [0, 1, 2, 0]
        except ValueError:
            again = False
        out.append(("the trace's record of that file loads it again, with its label base", again))
        np.savez(path, X_train=Xtr + 1.0, y_train=np.array([1, 2, 3, 1]), X_test=Xte, y_test=np.array([3, 2]))
        out.append(("the same file, changed since the run, is refused by its SHA-256",
                    raises(lambda: load_source(ds.source, "the probe's data"), "has changed since the run")))
        neg, gap = os.path.join(d, "negative.npz"), os.path.join(d, "gap.npz")
        np.savez(neg, X_train=Xtr, y_train=np.array([0.0, -1.0, 1.0, 2.0]), X_test=Xte, y_test=np.array([0.0, 1.0]))
        np.savez(gap, X_train=Xtr, y_train=np.array([0, 1, 2, 0]), X_test=Xte, y_test=np.array([3, 0]))
        out.append(("a label -1.0 is refused, naming y_train[1]",
                    raises(lambda: load_npz_dataset(neg), "y_train[1] = -1.0; labels must be integer class")))
        out.append(("a test label 3 that no training sample has is refused as a class absent from y_train",
                    raises(lambda: load_npz_dataset(gap), "classes [3] never occur in y_train")))
        zero = os.path.join(d, "zero_based.npz")
        np.savez(zero, X_train=Xtr, y_train=np.array([1, 2, 0, 1]), X_test=Xte, y_test=np.array([1, 2]))
        huge = os.path.join(d, "huge.npz")
        np.savez(huge, X_train=Xtr, y_train=np.array([0, 1, 2 * MAX_CLASSES, 1]), X_test=Xte, y_test=np.array([0, 1]))
        out.append(("a label beyond the class limit is refused, naming its entry y_train[2]",
                    raises(lambda: load_npz_dataset(huge), f"y_train[2] = {2 * MAX_CLASSES} is not a class index")))
        out.append(("--label-base 1 on a file holding a label 0 is refused, naming y_train[2]",
                    raises(lambda: load_npz_dataset(zero, label_base=1), "y_train[2] = 0 but --label-base 1")))
        idx = os.path.join(d, "idx")
        os.mkdir(idx)
        images = {"train": np.arange(12).reshape(2, 2, 3), "t10k": 200 + np.arange(6).reshape(1, 2, 3)}
        labels = {"train": np.array([7, 3]), "t10k": np.array([9])}
        for split in ("train", "t10k"):
            for kind, arr in (("images-idx3", images[split]), ("labels-idx1", labels[split])):
                raw = bytes([0, 0, 0x08, arr.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in arr.shape)
                name = os.path.join(idx, f"{split}-{kind}-ubyte")
                gz = split == "train" and kind.startswith("images")
                with (gzip.open(name + ".gz", "wb") if gz else open(name, "wb")) as fh:
                    fh.write(raw + arr.astype(np.uint8).tobytes())
        try:
            ds = load_idx_dir(idx)
            read = (ds.X_train.shape == (2, 6) and np.array_equal(ds.X_train * 255.0, np.arange(12.0).reshape(2, 6))
                    and ds.y_train.tolist() == [7, 3] and ds.X_test.shape == (1, 6) and ds.y_test.tolist() == [9])
        except ValueError:
            read = False
        out.append(("IDX files with big-endian sizes, the training images gzip-compressed, read as 2 and 1 samples "
                    "of 6 pixels / 255", read))
        out += _idx_type_facts(d)
        one = os.path.join(d, "one_class.npz")
        np.savez(one, X_train=Xtr, y_train=np.zeros(4, int), X_test=Xte, y_test=np.zeros(2, int), n_classes=1)
        try:
            single = load_npz_dataset(one).n_classes == 2
        except ValueError:
            single = False
        out.append(("n_classes = 1 (every label 0), a whole number >= 1, is read (as 2 classes: a softmax has at "
                    "least two outputs)", single))
    return out


def _idx_type_facts(d):
    """(what, right): IDX type bytes 08, 09, 0B, 0C, 0D, 0E (unsigned and signed bytes, big-endian
    int16, int32, float32, float64), each file written here byte by byte, read back as its values;
    a magic number whose first or second byte is not 0 refused."""
    import os

    from refimpl.core.data import read_idx
    out, wrong = [], []
    vals = np.array([[1, -2, 3], [100, 0, -7]])
    for code, fmt in ((0x08, "u1"), (0x09, "i1"), (0x0B, ">i2"), (0x0C, ">i4"), (0x0D, ">f4"), (0x0E, ">f8")):
        arr = (np.abs(vals) if code == 0x08 else vals + 0.5 * (code >= 0x0D)).astype(fmt)
        name = os.path.join(d, f"type-{code:02x}-idx2")
        with open(name, "wb") as fh:
            fh.write(bytes([0, 0, code, 2]) + (2).to_bytes(4, "big") + (3).to_bytes(4, "big") + arr.tobytes())
        try:
            got = read_idx(name)
            if not (got.shape == (2, 3) and np.array_equal(got.astype(float), arr.astype(float))):
                wrong.append(f"{code:02x}")
        except (ValueError, TypeError):
            wrong.append(f"{code:02x}")
    out.append(("IDX type bytes 08, 09, 0B, 0C, 0D, 0E read as their big-endian values (wrong: "
                f"{', '.join(wrong) or 'none'})", not wrong))
    for head in ((1, 0), (0, 1)):
        name = os.path.join(d, f"magic-{head[0]}{head[1]}")
        with open(name, "wb") as fh:
            fh.write(bytes([*head, 0x08, 1]) + (2).to_bytes(4, "big") + bytes([5, 6]))
        out.append((f"an IDX magic number starting {head[0]:02x} {head[1]:02x} is refused",
                    raises(lambda: read_idx(name), "bad IDX magic number")))
    short = os.path.join(d, "short-header")        # 3 dimensions announced, the sizes of 2 given: 12 bytes
    with open(short, "wb") as fh:
        fh.write(bytes([0, 0, 0x08, 3]) + (2).to_bytes(4, "big") + (3).to_bytes(4, "big"))
    out.append(("an IDX header shorter than its dimensions' sizes is refused as truncated, with its length",
                raises(lambda: read_idx(short), "truncated IDX header (12 bytes)")))
    return out


@check("core.embedded_data", "the embedded MNIST subset every default run loads is the documented recipe, redone here "
       "from the vendored file: 5,000 images of 784 pixels (500 per class), one permutation drawn from "
       "default_rng(20240601), pixels / 255 as float64, the first 4,000 permuted samples for training and the last "
       "1,000 for testing; two loads share no arrays; the digest a trace records equals a SHA-256 of the four "
       "arrays computed here; the --data readers on small files written here (--label-base 1, a reload from the "
       "trace's record, a changed file, a negative or absent class label, IDX sizes and gzip); 0 facts wrong",
       "refimpl/core/_data/PROVENANCE.md; refimpl/core/data.py")
def embedded_data(quick):
    import hashlib
    import os

    import refimpl.core
    from refimpl.core.data import data_digest, load_embedded_mnist
    with np.load(os.path.join(os.path.dirname(refimpl.core.__file__), "_data", "mnist_5k.npz")) as z:
        images, labels = z["images"], z["labels"]
    wrong = []
    counts = np.bincount(labels, minlength=10).tolist()
    if images.shape != (5000, 784) or images.dtype != np.uint8 or counts != [500] * 10:
        wrong.append(f"the vendored file holds {images.shape} {images.dtype}, classes {counts}")
    perm = np.random.default_rng(20240601).permutation(5000)
    X, y = images[perm] / 255.0, labels[perm].astype(np.int64)
    ds = load_embedded_mnist()
    for name, got, want in (("X_train", ds.X_train, X[:4000]), ("y_train", ds.y_train, y[:4000]),
                            ("X_test", ds.X_test, X[4000:]), ("y_test", ds.y_test, y[4000:])):
        if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
            wrong.append(f"{name}: {got.dtype} {got.shape} differs from the recipe's {want.dtype} {want.shape}")
    other = load_embedded_mnist()
    other.X_train[0, 0] += 1.0
    if load_embedded_mnist().X_train[0, 0] != X[0, 0]:
        wrong.append("an edit of one load's X_train reaches the next load")
    h = hashlib.sha256()
    for a in (X[:4000], y[:4000], X[4000:], y[4000:]):
        a = np.ascontiguousarray(a)
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(a.tobytes())
    if data_digest(ds) != h.hexdigest():
        wrong.append(f"recorded digest {data_digest(ds)[:12]}… is not the arrays' {h.hexdigest()[:12]}…")
    files = _data_file_facts()
    wrong += [what for what, right in files if not right]
    n = 7 + len(files)
    return {"measured": float(len(wrong)), "bound": 0.0, "holds": not wrong,
            "details": {"wrong": wrong, "data_file_facts": [what for what, _ in files]},
            "note": f"{len(wrong)} of {n} facts wrong" + (": " + "; ".join(wrong) if wrong else "")}


@check("core.task_identity", "a run's identity (the name a rerun reuses it by) changes with every field of every "
       "paper's configuration — the seed included — with the data key and with the kind of run, and only with them: "
       "the same configuration built twice, or its fields in another order, is the same run (mismatches: 0)",
       "refimpl's engine (reproduce, report, sweep); docs/guide.md")
def task_identity(quick):
    from dataclasses import asdict, fields

    from refimpl.core.identity import content_id, run_identity
    from refimpl import papers
    configs = {p.key: p.config_class()() for p in papers.papers()}
    data = {"name": "embedded", "validation": None}
    unchanged, same_bad, checked = [], [], 0
    for family, cfg in configs.items():
        base = asdict(cfg)
        ref = content_id(run_identity(family, base, data))
        twice = content_id(run_identity(family, asdict(type(cfg)(**base)), data))
        reordered = content_id(run_identity(family, dict(reversed(list(base.items()))), dict(reversed(data.items()))))
        same_bad += [f"{family}: {what}" for what, other in (("rebuilt", twice), ("fields reordered", reordered))
                     if other != ref]
        for f in fields(cfg):
            checked += 1
            changed = dict(base, **{f.name: _perturbed(base[f.name])})
            if content_id(run_identity(family, changed, data)) == ref:
                unchanged.append(f"{family}.{f.name}")
        for what, doc in (("data", run_identity(family, base, {**data, "name": "other"})),
                          ("family", run_identity("other", base, data)),
                          ("kind", run_identity(family, base, data, kind="other-run"))):
            checked += 1
            if content_id(doc) == ref:
                unchanged.append(f"{family}: {what}")
    bad = len(unchanged) + len(same_bad)
    return {"measured": bad, "bound": 0, "holds": bad == 0,
            "details": {"fields_checked": checked, "identity_unchanged_by": unchanged, "identity_changed_by": same_bad},
            "note": f"{checked} fields and keys over 3 configurations"}


def _select_literal(finished, accuracy, cost):
    """The stated rule, written out: among finished runs with a numeric accuracy, the highest final
    validation accuracy; among those the lowest final training cost; among those the first."""
    ok = [i for i in range(len(accuracy)) if finished[i] and not np.isnan(accuracy[i])]
    if not ok:
        return None
    top = max(accuracy[i] for i in ok)
    ok = [i for i in ok if accuracy[i] == top]
    costs = [cost[i] for i in ok if not np.isnan(cost[i])]
    if not costs:               # a cost that is not a number loses every tie; among such, the first
        return ok[0]
    low = min(costs)
    return [i for i in ok if cost[i] == low][0]


@check("core.tune_selection", "reproduce --tune's choice per method: the finished grid point with the highest final "
       "validation accuracy, ties broken by the lowest final training cost, then by grid order; a diverged run is "
       "never chosen (not even with the best accuracy), and a grid of diverged runs has no choice; a finished run "
       "whose training cost is not a number is chosen by its accuracy and loses a tie: on hand-made "
       "grids and on 5,000 random grids with ties and divergences, against the rule written out (mismatches: 0)",
       "refimpl reproduce --tune; docs/guide.md")
def tune_selection(quick):
    from refimpl.core.identity import select, selection_score
    rng = np.random.default_rng(91)
    hand = (  # (statuses, accuracies, costs, expected index)
        (["finished"] * 3, [0.8, 0.9, 0.85], [1.0, 2.0, 0.5], 1),
        (["finished", "diverged: round 3", "finished"], [0.8, 0.95, 0.8], [1.0, 0.1, 0.7], 2),
        (["finished"] * 3, [0.9, 0.9, 0.9], [0.5, 0.3, 0.3], 1),
        (["diverged: round 2"] * 2, [0.9, 0.8], [1.0, 1.0], None),
        (["finished", "finished"], [float("nan"), 0.1], [1.0, 2.0], 1),
        # a finished run whose cost is not a number still counts by its accuracy, and loses a tie
        (["finished", "finished"], [0.9, 0.8], [float("nan"), 1.0], 0),
        (["finished", "finished"], [0.9, 0.9], [float("nan"), 1.0], 1))
    bad, cases, n_bad = [], 0, 0
    for st, acc, cost, want in hand:
        cases += 1
        got = select([selection_score(s, a, c) for s, a, c in zip(st, acc, cost)])
        if got != want or _select_literal([s == "finished" for s in st], acc, cost) != want:
            n_bad += 1
            bad.append({"statuses": st, "accuracy": acc, "cost": cost, "expected": want, "chosen": got})
    for _ in range(1000 if quick else 5000):
        cases += 1
        n = int(rng.integers(1, 8))
        fin = rng.random(n) < 0.7
        acc = rng.choice([0.7, 0.8, 0.9], n)
        cost = rng.choice([0.2, 0.4, 0.6], n)
        st = ["finished" if f else "diverged: round 1" for f in fin]
        got = select([selection_score(s, a, c) for s, a, c in zip(st, acc, cost)])
        want = _select_literal(fin, acc, cost)
        if got != want:
            n_bad += 1
            if len(bad) < 5:
                bad.append({"statuses": st, "accuracy": acc.tolist(), "cost": cost.tolist(), "expected": want,
                            "chosen": got})
    return {"measured": n_bad, "bound": 0, "holds": n_bad == 0, "details": {"grids": cases, "mismatches": bad}}


def _replay_id_refusals():
    """The replay inputs' refusals of ids and rounds that are not numbers, written out."""
    from refimpl.core.replay import check_index_base, from_index_base, parse_dump_rounds, sample_ids
    text = np.array(["3", "7"])
    return (raises(lambda: sample_ids(text, "batches", "(rounds × B)"),
                   "batches: expected integer sample ids (rounds × B), got dtype <U1")
            and raises(lambda: from_index_base(text, 1, "batches"),
                       "batches: expected integer sample ids, got dtype <U1")
            and raises(lambda: check_index_base(2), "--index-base must be 0 or 1 (the id of the first sample), got 2")
            and check_index_base("1") is None and from_index_base(np.array([1, 4]), "1", "b").tolist() == [0, 3]
            and raises(lambda: parse_dump_rounds("1,x", 5),
                       "--dump-rounds '1,x': expected 'all' or comma-separated round numbers, got 'x'")
            # rounds given out of order and repeated are read sorted, once each; 'all' and '' written out
            and parse_dump_rounds(" 10,2,2 ", 12) == [2, 10] and parse_dump_rounds("all", 3) == [1, 2, 3]
            and parse_dump_rounds("", 3) == [] and parse_dump_rounds(None, 3) == []
            and raises(lambda: parse_dump_rounds("0", 3),
                       "--dump-rounds '0': round 0 is outside the run (rounds 1..3)"))


@check("core.boundary_refusals", "the boundary checks every layer shares refuse exactly what they promise, by hand at "
       "each edge: a class index equal to L (labels lie in 0..L − 1; L − 1 is read), ρ_t or γ_t = 0 ((4), (6): "
       "values in (0, 1]; 1 is accepted), inf as NaN is (naming the first entry), a fractional index (13.5; 13.0 is "
       "read), a boolean where a count or a real number is asked, a given step-size sequence (round t takes s_t; 0 "
       "refused), a partition kind without its parameters or with one it does not take, a batch-schedule file of "
       "floats or pickled objects; the "
       "checks' own fact groups, on planted groups: a plain run runs every group in order, the mutation runner's "
       "stops after the first with a wrong fact; a given batch schedule's shape, id range, repeats and 1-based hint "
       "(a repeat inside one client's batch named with its round, client and sample); an index cover missing or "
       "repeating one index alone or holding one below 0 refused, a client's empty feature block refused, a "
       "feature-block file read as written, a quantity "
       "law wide enough to overflow exp (σ = 800) still giving every client a sample; the checks' maximum keeps a "
       "NaN wherever it stands; a plain run maps a check's parts in order; a snapshot round that is not a whole "
       "number in 0..R refused; refimpl run hands a paper's run to its own command (or, without one, runs it on "
       "its own path); a label-based partition without "
       "the N labels refused; replayed sample ids that are text, an --index-base other than 0 or 1 and a word in "
       "--dump-rounds refused, naming them (wrong answers: 0)",
       "[SSCA] (4), (6); refimpl/core/validate.py; refimpl/verification/registry.py (fact_groups, max_or_nan, "
       "map_parts)")
def boundary_refusals(quick):
    from refimpl.core import validate as V
    from refimpl.core.partition import sample_partition
    from refimpl.core.schedules import PowerLaw, Sequence
    cases = [("a class index equal to L = 10 is refused (the range of the labels named); 9 is read",
              raises(lambda: V.labels("y_train", np.array([0, 10]), 10), "must lie in 0..9, got range 0..10")
              and raises(lambda: V.labels("y_train", np.array([3, 12, 1]), 10), "got range 1..12")
              and V.labels("y_train", np.array([0, 9]), 10).tolist() == [0, 9]),
             ("a power law s_t = a/t^α with a = 0 is refused (s_1 must lie in (0, 1]); a = 1 is read",
              raises(lambda: PowerLaw(0.0, 0.5), "must be in (0, 1]") and PowerLaw(1.0, 0.5).a == 1.0),
             ("a value that must be positive is refused at 0 unless 0 is allowed (λ may be 0, a penalty c not)",
              raises(lambda: V.positive("penalty c", 0.0), "penalty c") and V.positive("lambda", 0.0, allow_zero=True)
              == 0.0 and V.positive("penalty c", 2.0) == 2.0),
             ("SSCA's network refuses a W2 (and a W1) of the wrong shape or holding NaN when packing ω, naming it",
              _pack_refusals_right()),
             ("SSCA's closed-form step refuses A^t + λ = 0 (no surrogate update yet and λ = 0), and divides by it "
              "otherwise: ω̄ = −B / (2 (A^t + λ))", _surrogate_step_edges_right()),
             ("ρ_t = 0 is refused, ρ_t = 1 accepted ((4): ρ_t ∈ (0, 1])",
              raises(lambda: V.unit_interval("rho_t", 0.0), "outside (0, 1]") and V.unit_interval("rho_t", 1.0) == 1.0),
             ("inf is refused as NaN is, naming the first entry",
              raises(lambda: V.finite_array("W1", np.array([[1.0, 2.0], [3.0, np.inf]])), "first at index (1, 1)")
              and raises(lambda: V.finite_array("W1", np.array([np.nan, 1.0])), "first at index (0,)")),
             ("class indices stored as whole floats are read (0.0, 2.0 as 0, 2); a fractional one is refused, never "
              "truncated", V.labels("y", np.array([0.0, 2.0]), 3).dtype == np.int64
              and V.labels("y", np.array([0.0, 2.0]), 3).tolist() == [0, 2]
              and raises(lambda: V.labels("y", np.array([0.5, 1.0]), 3), "y must hold integer class indices")),
             ("booleans are refused where real numbers are asked, unless allowed (data features may be 0/1 flags); "
              "what is read comes back as float64, whatever came in (booleans, integers, float32)",
              raises(lambda: V.finite_array("W1", np.array([True, False])), "W1 holds boolean values")
              and V.finite_array("X_train", np.array([True, False]), allow_bool=True).tolist() == [1.0, 0.0]
              and {V.finite_array("a", x, allow_bool=True).dtype for x in (
                  np.array([True]), np.array([3]), np.array([0.5], np.float32))} == {np.dtype(np.float64)}),
             ("a fractional index is refused naming it; 13.0 is read as 13",
              raises(lambda: V.index_array("batches", np.array([1.0, 13.5])), "entry 1 is 13.5")
              and V.index_array("batches", np.array([1.0, 13.0])).tolist() == [1, 13]),
             ("True is refused where a count is asked; 3 is read",
              raises(lambda: V.positive_int("rounds", True), "positive integer") and V.positive_int("rounds", 3) == 3),
             ("a given step-size sequence: round t takes s_t (the last round the last value); 0 in it is refused, "
              "named by its t",
              Sequence(np.array([0.5, 0.25, 0.1])).values(3).tolist() == [0.5, 0.25, 0.1]
              and raises(lambda: Sequence(np.array([0.5, 0.0])), "step size at t = 2 is 0.0, outside (0, 1]")),
             ("the checks' fact groups: a plain run runs every group in order; the mutation runner's stops after the "
              "first group with a wrong fact", _fact_group_modes()),
             ("the checks' NaN-keeping maximum: a NaN anywhere among the values is the answer (Python's max keeps "
              "its first argument against a NaN)", _max_or_nan_right()),
             ("the checks' independent parts in a plain run: one after another here, in order",
              _plain_map_parts_right()),
             ("a given batch schedule: its shape per client, ids in 0..n − 1 (0 read, −1 and n refused, naming round "
              "and position), the 1-based hint only when every client's ids minus 1 lie in its partition",
              _batch_schedule_refusals()),
             ("--snapshots: a round of 2.5, 'x', True or R + 1 refused naming it; 0 and R read", _snapshot_refusals()),
             ("a label-based partition without labels, or with one label fewer than samples, is refused",
              all(raises(lambda k=k, lab=lab: sample_partition(10, 2, k, np.random.default_rng(0), lab),
                         f"{k.split(':')[0]} partition needs the N training labels")
                  for k in ("label_skew", "dirichlet:1") for lab in (None, np.zeros(9, int)))),
             ("label_skew with more clients than shards (3 clients × 2 classes of 5 samples) is refused, naming the "
              "largest count allowed", raises(lambda: sample_partition(5, 3, "label_skew", np.random.default_rng(0),
                                                                       np.array([0, 0, 1, 1, 2])),
                                              "label_skew with 3 clients needs 6 shards of the 5 samples; allowed: at "
                                              "most 2 clients")),
             ("refimpl run hands each paper's run to the paper's own command (planted: its run answers), and runs "
              "a description without one on its own path", _run_command_dispatch()),
             ("SSCA's exponents of ρ_t = a1/t^α and of γ_t may be 0 (a constant step, outside (4) and (6)); −0.1 "
              "is refused, naming the exponent", _exponent_edges_right()),
             ("replayed sample ids: text refused naming its dtype (also read with --index-base 1), an "
              "--index-base of 2 refused, '1' read; --dump-rounds with a word refused naming it",
              _replay_id_refusals())]
    wrong = [what for what, right in cases if not right]
    return {"measured": len(wrong), "bound": 0, "holds": not wrong,
            "note": f"{len(cases)} edges ({len(cases) - len(wrong)} answered right)",
            "details": {"cases": [what for what, _ in cases], "wrong": wrong}}


def _pack_refusals_right():
    from refimpl.core.model import TwoLayerNet
    m = TwoLayerNet(3, 2, 2)                             # W1 2 × 3, W2 2 × 2
    W1, W2 = np.ones((2, 3)), np.ones((2, 2))
    return (m.pack(W1, W2).shape == (10,) and raises(lambda: m.pack(W1, np.ones((2, 3))), "W2 must have shape (2, 2)")
            and raises(lambda: m.pack(W1, np.full((2, 2), np.nan)), "W2 contains NaN/inf")
            and raises(lambda: m.pack(np.ones((3, 2)), W2), "W1 must have shape (2, 3)"))


def _surrogate_step_edges_right():
    from refimpl.ssca.surrogate import SurrogateState, unconstrained_step
    B = np.array([1.0, -2.0])
    return (raises(lambda: unconstrained_step(SurrogateState(0.0, B, 0.0), 0.0), "A^t + λ must be > 0")
            and unconstrained_step(SurrogateState(0.0, B, 0.0), 0.5).tolist() == [-1.0, 2.0]
            and unconstrained_step(SurrogateState(0.25, B, 0.0), 0.0).tolist() == [-2.0, 4.0])


def _exponent_edges_right():
    from refimpl.ssca.experiment import RunConfig
    right = True
    named = {"rho_alpha": "rho_alpha (α of ρ_t = a1/t^α)", "gamma_alpha": "gamma_alpha (the exponent of γ_t)"}
    for f, words in named.items():
        right &= getattr(RunConfig("ssca", **{f: 0.0}).resolved(), f) == 0.0
        right &= raises(lambda f=f: RunConfig("ssca", **{f: -0.1}).resolved(), f"{words} must be finite and >= 0")
    return right


def _snapshot_refusals():
    """True when RunConfig.resolved refuses each snapshot that is not a whole round 0..R, naming it."""
    from refimpl.ssca.experiment import RunConfig
    right = RunConfig("ssca", rounds=4, snapshots=[0, 4]).resolved().snapshots == [0, 4]
    for bad in (2.5, "x", True, 5):
        right &= raises(lambda b=bad: RunConfig("ssca", rounds=4, snapshots=[1, b]).resolved(),
                        f"--snapshots 1,{bad}: {bad!r} is not a round of this run (allowed: whole numbers 0..4)")
    return right


def _run_command_dispatch():
    """True when ``Paper.run_command`` calls the paper's command module's ``run`` with the arguments
    and toolbox it was given (each module's run replaced here by one that answers)."""
    from refimpl import papers
    right = True
    for paper in papers.papers():
        mod = paper.command()
        kept = mod.run
        mod.run = lambda args, ui, key=paper.key: ("planted", key, args, ui)
        try:
            right &= paper.run_command("ARGS", "UI") == ("planted", paper.key, "ARGS", "UI")
        except Exception:
            right = False
        finally:
            mod.run = kept
    return right and _generic_run_right()


def _generic_run_right():
    """True when a description without a command module runs through ``Paper.run_command``'s own
    path: its Config from the options, a progress display of its length in its unit (rounds: round),
    its run, and the shared tail handed the run's trace."""
    from types import SimpleNamespace
    seen = {}
    probe = _probe_paper("probe-generic", {"probe-generic-run": "nothing"})
    probe.run = lambda cfg, data=None, replay=None, progress=None: seen.setdefault("run", ("trace", cfg.rounds))
    ui = SimpleNamespace(config=lambda args, key, algorithm: probe.config_class()(method=algorithm, rounds=5),
                         load_data=lambda args: None, progress=lambda args, total, desc, unit: seen.setdefault(
                             "progress", (total, desc, unit)) and LineProgress(),
                         finish_run=lambda args, trace, out, plot: (trace, out))
    args = SimpleNamespace(algorithm="probe-generic-run", out="OUT")
    return (probe.command() is None and probe.run_command(args, ui) == (("trace", 5), "OUT")
            and seen.get("progress") == (5, "probe-generic-run", "round") and probe.cost(probe.config_class()())
            == 3e-3)


def _batch_schedule_refusals():
    """True when a replayed batch schedule is refused exactly where it should be: a sample-based one
    of the wrong shape (any of its three axes), a feature-based one holding −1 or n (the message
    naming round 2 and the position; of two, the first), one holding 0 read; a sample-based id
    outside its client's partition named with the client and position (of two, the first), with the
    1-based hint only when every client's ids minus 1 lie in its own partition; a sample drawn twice
    in one batch named with its round."""
    from refimpl.core.partition import BatchSchedule
    parts = [np.array([0, 1, 2]), np.array([3, 4, 5])]
    good = np.array([[[1, 2], [4, 5]], [[2, 3], [5, 6]]])           # every id + 1: 1-based on both clients
    half = np.array([[[1, 2], [4, 5]], [[2, 3], [3, 4]]])           # client 1's ids are 0-based
    right = all(raises(lambda a=a: BatchSchedule(a).validate_sample_based(parts, 2, 2), "must have shape (T, 2, 2)")
                for a in (np.zeros((2, 2), int), np.zeros((2, 3, 2), int), np.zeros((2, 2, 3), int)))
    right &= raises(lambda: BatchSchedule(good).validate_sample_based(parts, 2, 2), "give --index-base 1")
    try:
        BatchSchedule(half).validate_sample_based(parts, 2, 2)
        right = False
    except ValueError as exc:
        right &= "round 2, client 0, position 1 holds sample 3" in str(exc) and "--index-base" not in str(exc)
    two = np.array([[[0, 4], [3, 4]], [[5, 1], [3, 5]]])            # client 0: 4 at round 1, 5 at round 2
    right &= raises(lambda: BatchSchedule(two).validate_sample_based(parts, 2, 2),
                    "round 1, client 0, position 1 holds sample 4")
    for bad, words in ((-1, "round 2, position 1 holds sample -1"), (6, "round 2, position 1 holds sample 6")):
        right &= raises(lambda b=bad: BatchSchedule(np.array([[0, 1], [2, b]])).validate_feature_based(6, 2, 2),
                        words)
    # two ids out of range: the first (round 1, position 0) is named, with the range allowed
    right &= raises(lambda: BatchSchedule(np.array([[-1, 1], [2, 6]])).validate_feature_based(6, 2, 2),
                    "round 1, position 0 holds sample -1; indices must lie in 0..5")
    BatchSchedule(np.array([[0, 1], [2, 5]])).validate_feature_based(6, 2, 2)
    right &= raises(lambda: BatchSchedule(np.array([[2, 5, 5], [0, 1, 3]])).validate_feature_based(6, 2, 3),
                    "round 1, sample 5 appears twice in one mini-batch")
    # per client (T, K, B): the repeated sample of round 2, client 1 is named, not another entry
    twice = np.array([[[0, 1], [3, 4]], [[0, 2], [5, 5]]])
    right &= raises(lambda: BatchSchedule(twice).validate_sample_based(parts, 2, 2),
                    "round 2, client 1, sample 5 appears twice")
    # repeats in rounds 2 and 3: the first one is named
    right &= raises(lambda: BatchSchedule(np.array([[0, 1], [2, 2], [4, 4]])).validate_feature_based(6, 3, 2),
                    "round 2, sample 2 appears twice")
    return bool(right) and _cover_refusals()


def _dirichlet_tries_right():
    """dirichlet:α:MIN draws at most max_tries times (one Dirichlet share per class each), and one
    try is a draw: MIN = 5 of 10 samples for 2 clients fails 3 tries after 3 × 2 shares; MIN = 1
    succeeds at its only try."""
    from refimpl.core.partition import sample_partition

    class Counting:
        def __init__(self):
            self.rng, self.shares = np.random.default_rng(0), 0

        def permutation(self, x):
            return self.rng.permutation(x)

        def dirichlet(self, alpha):          # shares 0.95, 0.05: 4 and 1 of each class's 5 samples
            self.shares += 1
            return np.array([0.95, 0.05])

    labels, bad, good = np.repeat([0, 1], 5), Counting(), Counting()
    refused = raises(lambda: sample_partition(10, 2, "dirichlet:1:5", bad, labels, max_tries=3),
                     "no draw in 3 gave every client at least 5 samples")
    parts = sample_partition(10, 2, "dirichlet:1:1", good, labels, max_tries=1)
    return refused and bad.shares == 6 and good.shares == 2 and sorted(map(len, parts)) == [2, 8]


def _cover_refusals():
    """True when an index cover (feature blocks, partitions) is refused for one index missing alone (the last too),
    for one repeated alone and for one below 0 (named with the range), a client with an empty
    feature block or one that is no list refused (given blocks read as written), a batch schedule
    beyond memory refused before it is built, a file of index lists is read
    as written, as feature blocks and as a partition of the samples, and a quantity law wide enough to
    overflow exp still gives every client a sample; a partition kind that takes parameters given
    none (and one that takes none given one) refused; a saved batch schedule read back, one of
    floats or of pickled objects refused."""
    import json
    import os
    import tempfile

    from refimpl.core.partition import _check_exact_cover, feature_partition, read_feature_blocks, sample_partition
    right = raises(lambda: _check_exact_cover([np.array([0, 1]), np.array([3])], 4, "blocks", "cover"),
                   "cover: 1 missing (first [2]), 0 repeated")
    right &= raises(lambda: _check_exact_cover([np.array([0, 1]), np.array([1, 2, 3])], 4, "blocks", "cover"),
                    "cover: 0 missing (first []), 1 repeated (first [1])")
    right &= raises(lambda: _check_exact_cover([np.array([0, 1]), np.array([2])], 4, "blocks", "cover"),
                    "cover: 1 missing (first [3]), 0 repeated")           # the last index missing
    right &= raises(lambda: _check_exact_cover([np.array([-1, 1]), np.array([2, 3])], 4, "blocks", "cover"),
                    "blocks must lie in 0..3, got -1..3")
    # a client given no feature, beside blocks that cover the rest: refused, and given blocks read as written
    right &= raises(lambda: feature_partition(4, blocks=[[0, 1, 2, 3], []]), "every client's feature block must be "
                    "non-empty")
    right &= [b.tolist() for b in feature_partition(4, blocks=[[3, 1], [0, 2]])] == [[3, 1], [0, 2]]
    right &= raises(lambda: feature_partition(4, blocks=[[0, 1], 2, [3]]), "feature blocks must be a list of index "
                    "lists, one per client, e.g. [[0, 1], [2, 3]]")
    # a batch schedule too large for memory is refused before it is built, saying what to lower
    from refimpl.core.partition import sample_based_schedule
    right &= raises(lambda: sample_based_schedule([np.arange(10 ** 6)] * 100, 10 ** 4, 1000, np.random.default_rng(0)),
                    "the batch schedule (10,000 × 100 × 1,000 sample ids) would need 7.5 GiB of memory, above the "
                    "4 GiB allowed: fewer --rounds, clients or a smaller --batch")
    # 2^32 × 2^16 × 2^16 ids: a product that wraps to 0 in 64-bit integers is refused all the same
    from refimpl.core.partition import _check_schedule_size
    right &= raises(lambda: _check_schedule_size((2 ** 32, 2 ** 16, 2 ** 16)), "would need 137,438,953,472.0 GiB")
    # a saved batch schedule loads back as saved; a file of floats or of Python objects is refused, never unpickled
    from refimpl.core.partition import BatchSchedule
    with tempfile.TemporaryDirectory() as tmp:
        saved = BatchSchedule(np.array([[3, 1], [0, 2]]))
        saved.save(os.path.join(tmp, "b.npy"))
        np.save(os.path.join(tmp, "f.npy"), np.array([[0.5, 1.0]]))
        np.save(os.path.join(tmp, "o.npy"), np.array([[0, "1"]], dtype=object), allow_pickle=True)
        right &= np.array_equal(BatchSchedule.load(os.path.join(tmp, "b.npy")).indices, saved.indices)
        right &= raises(lambda: BatchSchedule.load(os.path.join(tmp, "f.npy")), "batch indices must be integers, "
                        "got dtype float64")
        right &= raises(lambda: BatchSchedule.load(os.path.join(tmp, "o.npy")), "allow_pickle=False")
    # a kind that takes parameters given none, and one that takes none given one: refused, naming what is allowed
    from refimpl.core.partition import parse_partition
    right &= all(raises(lambda k=k: parse_partition(k), f"partition kind {k!r} is not known; allowed: contiguous, "
                        "iid, label_skew, dirichlet:ALPHA[:MIN_SIZE], quantity:SIGMA")
                 for k in ("dirichlet", "quantity", "iid:3"))
    right &= raises(lambda: parse_partition("dirichlet:1:2.5"), "MIN_SIZE must be an integer >= 0, got 2.5")
    # a quantity law so wide that exp overflows: the shares computed shifted, every client at least one sample
    sizes = [len(p) for p in sample_partition(1000, 5, "quantity:800", np.random.default_rng(2))]
    right &= sum(sizes) == 1000 and min(sizes) >= 1
    # a Dirichlet split of concentration 0, or with a minimum size no split can give (3 × 4 > 10), is refused
    labels = np.arange(10) % 2
    right &= raises(lambda: sample_partition(10, 4, "dirichlet:0", np.random.default_rng(0), labels),
                    "the Dirichlet concentration α must be finite and > 0, got 0.0")
    right &= raises(lambda: sample_partition(10, 4, "dirichlet:0.5:3", np.random.default_rng(0), labels),
                    "MIN_SIZE 3 x 4 clients exceeds the 10 samples; allowed: MIN_SIZE <= 2")
    right &= min(len(p) for p in sample_partition(10, 4, "dirichlet:0.5:2", np.random.default_rng(0), labels)) >= 2
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "blocks.json")
        with open(path, "w") as fh:
            json.dump([[0, 1, 2], [3, 4]], fh)
        right &= read_feature_blocks(path) == [[0, 1, 2], [3, 4]]
        right &= _partition_file_right(path) and _dirichlet_tries_right()
    return bool(right)


def _partition_file_right(path):
    """--partition-file: [[0, 1, 2], [3, 4]] read as written; no list of non-empty index lists, an id
    of 1.5 and a nested list refused, naming client and entry (0-based). ``path``: a scratch file."""
    import json

    from refimpl.core.partition import read_partition_file
    with open(path, "w") as fh:
        json.dump([[0, 1, 2], [3, 4]], fh)
    right = [b.tolist() for b in read_partition_file(path, 5)] == [[0, 1, 2], [3, 4]]
    for doc in (5, {"0": [0, 1]}, "01", [[0, 1], []]):     # no list of non-empty index lists: refused, words
        with open(path, "w") as fh:
            json.dump(doc, fh)
        right &= raises(lambda: read_partition_file(path, 2), "expected a JSON list of non-empty index lists")
    for doc, words in (([[0, 1.5, 2], [3, 4]], "client 0 must hold integer indices; entry 1 is 1.5"),
                       ([[0, 1], [2, [3], 4]], "client 1, entry 1 is a list ([3])")):
        with open(path, "w") as fh:
            json.dump(doc, fh)
        right &= raises(lambda: read_partition_file(path, 5), words)
    return bool(right)


def _max_or_nan_right():
    nan = float("nan")
    return (max_or_nan(0.0, 2.0, 1.0) == 2.0 and all(np.isnan(max_or_nan(*v)) for v in
                                                    ((0.0, nan), (nan, 0.0), (1.0, nan, 3.0), (np.float64(nan),))))


def _plain_map_parts_right():
    from refimpl.core.runtime import environ
    from refimpl.verification.registry import PARTS_WORKERS_ENV, map_parts
    with environ({PARTS_WORKERS_ENV: None}):
        return map_parts(abs, [-3, 2, -1]) == [3, 2, 1]


def _fact_group_modes():
    """True when fact_groups and wrong_groups do, on planted groups, what each mode promises: in a
    plain run every group in the order given; under the mutation runner (checked here even inside
    it: the variable is set for the call and put back) up to the first group with a wrong fact."""
    from refimpl.core.runtime import environ
    from refimpl.verification.registry import FIRST_WRONG_ENV, fact_groups, wrong_groups
    ran, got = [], {}
    groups = [lambda: ran.append("a") or [("a", True)], lambda: ran.append("b") or [("b", False)],
              lambda: ran.append("c") or [("c", True)]]
    for mode in ("", "1"):
        with environ({FIRST_WRONG_ENV: mode}):
            ran.clear()
            got[mode] = (fact_groups(groups), list(ran), wrong_groups([lambda: [], lambda: ["x"], lambda: ["y"]]))
    return (got[""] == ([("a", True), ("b", False), ("c", True)], ["a", "b", "c"], ["x", "y"])
            and got["1"] == ([("a", True), ("b", False)], ["a", "b"], ["x"]))


# ----------------------------------------------------------------------------------------------
# the papers' descriptions (refimpl.papers): what every tool asks, measured on runs
# ----------------------------------------------------------------------------------------------

#: each paper's facts (``DESCRIPTION_FACTS`` in its checks module, written from the paper):
#: ``runs`` (algorithm, short-run options, a convention, its other value) — one short run per value;
#: ``dump_run`` (algorithm, options) of a one-round dump; ``data_flow`` — (earlier, later) pairs of
#: quantities, the later computed from the earlier, that the data-flow order (the order diagnose
#: walks a round in) must keep; ``replay_words`` — a recorded replay input's name → the word a
#: verdict uses for it; ``own_names`` — names that alone say whose dump it is (the iterate)
def _description_facts():
    """[(paper description, its facts)] for every registered paper whose checks module states them."""
    import importlib

    from refimpl import papers
    out = []
    for paper in papers.papers():
        facts = getattr(importlib.import_module(paper.checks_module), "DESCRIPTION_FACTS", None) \
            if paper.checks_module else None
        if facts is not None:
            out.append((paper, facts))
    return out


def _convention_run(paper, algorithm, small, option=None, value=None, replay_dir=None):
    """The trace of one short run; with ``replay_dir``, from the recorded inputs of the run saved there."""
    import os

    from refimpl.core.data import mnist_5k
    from refimpl.core.replay import read_arrays
    kw = {**paper.command_line_defaults(), **small}
    if option is not None:
        kw[option] = value
    cfg, replay = paper.make_config(algorithm, **kw), {}
    if replay_dir is not None:
        path = os.path.join(replay_dir, "trace.npz")
        changes, replay = paper.replay_from(read_arrays(path, "the first run"), path)
        cfg = paper.with_length(cfg, getattr(cfg, paper.length_field), **changes)
    return paper.run(cfg, mnist_5k() if paper.needs_data(cfg) else None, replay)


def _same_dump(a, b):
    from refimpl.core.dumps import dump_arrays
    da, db = dump_arrays(a.arrays), dump_arrays(b.arrays)
    return sorted(da) == sorted(db) and all(
        sorted(da[r]) == sorted(db[r]) and all(np.shape(da[r][n]) == np.shape(db[r][n])
                                               and np.array_equal(da[r][n], db[r][n]) for n in da[r]) for r in da)


def _acts_on_cases():
    """(what, right): each convention's ``acts_on`` measured — a run under the other value from
    the first run's recorded inputs (initial point, batches, τ) gives the first run's dump (or is
    refused: the recorded batches fix what it would draw) exactly when the convention acts on the
    inputs; on the arithmetic the same inputs give other numbers. A convention on the inputs names
    the recorded input it draws differently (its ``replay`` pattern matches it): diagnose tries it
    only when THEIR file lacks that input."""
    import os
    import re
    import tempfile
    from dataclasses import replace

    from refimpl.core.replay import read_arrays
    out = []
    for paper, algorithm, small, option, value in [(p, *run) for p, f in _description_facts() for run in f["runs"]]:
        key = paper.key
        conv = next(c for c in paper.conventions if c.option == option)
        with tempfile.TemporaryDirectory() as tmp:
            recorded = {}
            for name, run in (("first", _convention_run(paper, algorithm, small)),
                              ("other", _convention_run(paper, algorithm, small, option, value))):
                inputs = {k: v for k, v in run.arrays.items() if not re.match(r"r\d+_", k)}    # not the dump
                replace(run, arrays=inputs).save(os.path.join(tmp, name))
                recorded[name] = (run, read_arrays(os.path.join(tmp, name, "trace.npz"), name))
            (first, a), (other, b) = recorded["first"], recorded["other"]
            try:
                replayed = _convention_run(paper, algorithm, small, option, value,
                                           replay_dir=os.path.join(tmp, "first"))
                fixed = _same_dump(replayed, first)
            except ValueError:                      # the recorded batches do not fit its draw: fixed
                fixed = True
        measured = "inputs" if fixed else "arithmetic"
        drawn = sorted(n for n in set(a) & set(b) if any(i.matches(n) for i in paper.replay_inputs)
                       and not (np.shape(a[n]) == np.shape(b[n]) and np.array_equal(a[n], b[n])))
        named = measured != "inputs" or bool(conv.replay) and any(re.fullmatch(conv.replay, n) for n in drawn)
        out.append((f"{key} --{option.replace('_', '-')} {value}: changes the run and acts on the {measured} "
                    f"(described: {conv.acts_on}; draws {', '.join(drawn) or 'no recorded input'} differently)",
                    not _same_dump(other, first) and conv.acts_on == measured and named))
    return out


def _description_cases():
    """(what, right): each paper's dump is its own by its markers (a measured dump, and its iterate
    alone); every dumped name has a place in its data-flow order, which keeps the dependencies of
    the algorithm; every replay input a run records is named with its word."""
    import re

    from refimpl import papers
    from refimpl.core.dumps import dump_arrays
    out = []
    for paper, facts in _description_facts():
        key = paper.key
        names = set(dump_arrays(_convention_run(paper, *facts["dump_run"]).arrays)[1])
        owners = [p.key for p in papers.papers() if p.owns_dump(names)]
        alone = [papers.of_dump({n}) is paper for n in facts["own_names"]]
        out.append((f"a {key} dump ({len(names)} quantities) is {key}'s alone, and so is each of "
                    f"{', '.join(facts['own_names'])} by itself", owners == [key] and all(alone)))
        pos = {}
        for i, pattern in enumerate(paper.dump_order):
            rx = re.compile("^" + re.escape(pattern).replace("<k>", r"\d+") + "$")
            pos.update({n: i for n in names if rx.match(n)} | {pattern: i})
        unplaced = sorted(n for n in names if n not in pos)
        order_ok = all(a in pos and b in pos and pos[a] < pos[b] for a, b in facts["data_flow"])
        out.append((f"every {key} dump quantity has a place in the data-flow order, which keeps "
                    f"{len(facts['data_flow'])} dependencies of the algorithm", not unplaced and order_ok))
        words = {n: [i.word for i in paper.replay_inputs if i.matches(n)] for n in facts["replay_words"]}
        out.append((f"{key}'s replay inputs are named as a verdict must name them ({len(words)} names)",
                    all(w == [facts["replay_words"][n]] for n, w in words.items())))
    return out


def _probe_paper(key, algorithms):
    """A minimal description (a Config of two fields, a run of nothing) for the registry's cases."""
    from dataclasses import make_dataclass

    from refimpl.core.paper import Paper
    cfg = make_dataclass(f"ProbeConfig_{key.replace('-', '_')}", [("method", str, next(iter(algorithms))),
                                                                  ("rounds", int, 3)])

    class Probe(Paper):
        def config_class(self):
            return cfg

        def run(self, cfg, data=None, replay=None, progress=None):
            return None
    probe = Probe()
    probe.key, probe.algorithms = key, dict(algorithms)
    return probe


def _lookup_cases():
    """(what, right): what the command line and the engine read off the registry, written out — each
    option's default (the Config field's unless the option names its own), its flag and text kinds,
    MFCGD's pinned seed, each paper's command
    module (none for a description without one), the Numba kernel modules (the core's first) and
    warming no module when given none."""
    from dataclasses import fields

    from refimpl import papers
    from refimpl.core.paper import CONFIG_DEFAULT
    wrong, flags, files, kinds = [], [], [], []
    for p in papers.papers():
        defaults = p.config_defaults()
        annotations = {f.name: f.type for f in fields(p.config_class())}
        for o, d in p.options_for():
            want = defaults[o.field] if o.default is CONFIG_DEFAULT else o.default
            if d is CONFIG_DEFAULT or not (d == want or d is want):
                wrong.append(f"{p.key} {o.name}")
            if isinstance(want, bool) != bool(o.flag):       # --keep-samples, --bias: given alone, no value
                flags.append(f"{p.key} {o.name}")
            if (o.help.startswith("FILE") or o.metavar == "FILE") and not o.text:
                files.append(f"{p.key} {o.name}")
            parsed = o.kind or (float if d is None else type(d))          # how the command line reads a value
            declared = str(annotations[o.field]).split("|")[0].strip()           # "int | None": int
            if not (o.flag or o.text or o.choices) and parsed.__name__ != declared:
                kinds.append(f"{p.key} {o.name}")
    commands = [p.command().__name__ for p in papers.papers()[:3]]
    mf = papers.get("mfcgd")
    seeds = [mf.pinning_argv("d", "mfcgd", {"seed": 3, "problem_seed": s})[-1] for s in (None, 7)]
    return [("every option's default is its Config field's, or its own where it names one", not wrong),
            ("an option whose Config field is a boolean is a flag (given alone), and only those", not flags),
            ("an option naming a file (its help opens with FILE, or its metavar is FILE) is read as text, not as a "
             "number" + (f" ({', '.join(files)})" if files else ""), not files),
            ("an option read as a number is parsed as its Config field's type (an int field as an integer)"
             + (f" ({', '.join(kinds)})" if kinds else ""), not kinds),
            ("MFCGD's pinned run names its problem's seed: the recorded problem seed, else the run's seed",
             seeds == ["3", "7"]),
            ("the papers' command modules are their own; a description without one has none",
             commands == ["refimpl.ssca.command", "refimpl.vfl.command", "refimpl.mfcgd.command"]
             and _probe_paper("probe-command", {"probe-command-run": "nothing"}).command() is None),
            ("the Numba kernel modules are the core's, then each paper's; warming none compiles none",
             papers.kernel_modules()[:4] == ["refimpl.core.kernels", "refimpl.ssca.kernels", "refimpl.vfl.kernels",
                                             "refimpl.mfcgd.kernels"] and papers.warm_kernels([]) == [])]


def _registry_cases():
    """(what, right): the registry's lookups and refusals and the description's small rules, each
    written out by hand (a paper named by REFIMPL_PAPERS, a second registration, a taken algorithm,
    a key's prefix, an option's owners and name, a marker's extension, an earlier release's data
    record, a run's length, a convention's acts_on); the registry is left as it was found."""
    import os
    import sys
    import types

    from refimpl import papers
    from refimpl.core.paper import Convention
    from refimpl.core.runtime import environ
    from refimpl.verification.registry import embedded
    out, builtin = [], ("ssca", "vfl", "mfcgd")
    name, before = "refimpl_registry_probe", os.environ.get("REFIMPL_PAPERS")
    sys.modules[name] = types.SimpleNamespace(PAPER=_probe_paper("probe-env", {"probe-env-run": "nothing"}))
    try:
        with environ({"REFIMPL_PAPERS": " " + ", ".join(x for x in (before, name) if x) + " "}):   # spaces allowed
            seen = papers.keys()
    finally:
        papers.unregister("probe-env")
        del sys.modules[name]
    out.append(("a paper named by REFIMPL_PAPERS is registered after the three built-in ones",
                seen[:3] == builtin and "probe-env" in seen and "probe-env" not in papers.keys()))
    probe = _probe_paper("probe-twice", {"probe-twice-run": "nothing"})
    try:
        papers.register(probe)
        n = len(papers.papers())
        again = papers.register(probe) is probe and len(papers.papers()) == n
    except ValueError:
        again = False
    finally:
        papers.unregister("probe-twice")
    out.append(("registering the same description twice returns it and adds nothing", again))
    try:
        taken = raises(lambda: papers.register(_probe_paper("probe-taken", {"ssca": "taken"})),
                       "belong to another paper") and "probe-taken" not in papers.keys()
    finally:
        papers.unregister("probe-taken")
    out.append(("a description claiming SSCA's algorithm is refused", taken))
    ssca, listed = papers.get("ssca"), papers.papers()
    try:
        key = raises(lambda: papers.register(_probe_paper("ssca", {"probe-key-run": "nothing"})),
                     "a paper with key 'ssca' is already registered") and papers.papers() == listed
    finally:
        papers._PAPERS[:] = listed          # as found, in its order, whatever register did
    out.append(("a second description under the key 'ssca' is refused", key and papers.get("ssca") is ssca))
    out.append(("a paper's key must be given whole ('ssc' is no key)",
                raises(lambda: papers.get("ssc"), "unknown paper 'ssc'")
                and papers.get(builtin[0]) is papers.papers()[0]))
    owned = [{papers.of_algorithm(a).key for a in papers.owners(o)}
             for o in ("--rho-a", "--embed-dim", "--radius-scale")]
    out.append(("--rho-a, --embed-dim and --radius-scale are owned by SSCA's, Flex-VFL's and MFCGD's algorithms "
                "(and by some); --no-such-option by none",
                owned == [{k} for k in builtin] and papers.owners("--no-such-option") == []))
    names = {p.key: {o.name for o, _ in p.options_for()} for p in papers.papers()[:3]}
    out.append(("options are named with hyphens: --eval-every (SSCA, Flex-VFL, MFCGD), --time-budget (Flex-VFL)",
                all("--eval-every" in v for v in names.values()) and "--time-budget" in names["vfl"]))
    takes = {a: {o.name for o, _ in papers.options_for(a)} for a in ("ssca", "ssca-constrained", "adaptive-flexvfl")}
    out.append(("--U and --penalty are ssca-constrained's options only; --A adaptive-flexvfl's",
                {"--U", "--penalty"} <= takes["ssca-constrained"] and not {"--U", "--penalty"} & takes["ssca"]
                and "--A" in takes["adaptive-flexvfl"]))
    out.append(("a name extending a paper's marker (omega_z, theta0_z, x_z) is no paper's dump",
                all(raises(lambda n=n: papers.of_dump({n}), "cannot tell whose dump") for n in ("omega_z", "theta0_z",
                                                                                                  "x_z"))))
    ssca = papers.get("ssca")
    old = ssca.load_data({"algorithm": "ssca", "data": "mnist-5k-embedded"})
    out.append(("an earlier release's record naming the embedded subset loads it",
                old is not None and np.array_equal(old.y_train, embedded().y_train)))
    out.append(("a record of a run that reads data but names none is refused (not run without data); one of an "
                "MFCGD run, which reads none, needs none",
                raises(lambda: ssca.load_data({"algorithm": "ssca"}), "the trace does not say which data it used")
                and papers.get("mfcgd").load_data({"method": "mfcgd", "problem": "synthetic"}) is None))
    lengths = [getattr(p.with_length(p.make_config(next(iter(p.algorithms))), 7), p.length_field)
               for p in papers.papers()[:3]]
    out.append(("with_length(cfg, 7) gives 7 rounds (SSCA, Flex-VFL) and 7 steps (MFCGD)", lengths == [7, 7, 7]))
    out.append(("a convention acting 'sideways' is refused",
                raises(lambda: Convention("--x", (0, 1), 0, "q", "sideways"), "acts_on must be")))
    return out


def _library_default_cases():
    """(what, right): the library's defaults are the configurations' that ``refimpl run`` parses its
    options from — one value, whichever way a user reaches the arithmetic (a drifted copy gives a
    library user another run than the command's). tests/test_layout.py compares the tools'
    commands (diagnose, crosscheck, compare, report) with their functions the same way."""
    import argparse
    from types import SimpleNamespace

    from refimpl.mfcgd.algorithm import AdamType, MFCGDParams, make_matrix
    from refimpl.mfcgd.bounds import G_value, check_run, find_theorem_parameters, theorem_conditions
    from refimpl.mfcgd.experiment import MFCGDConfig
    from refimpl.ssca.algorithms import SSCA
    from refimpl.ssca.experiment import RunConfig
    from refimpl.vfl.command import add_compare_arguments
    from refimpl.vfl.experiment import VFLConfig
    from refimpl.vfl.flexvfl import FlexVFL, run_async
    from refimpl.vfl.policies import AsyncServerQueue, compose
    from refimpl.vfl.regime import regime_row, regime_rows, regime_table
    from refimpl.vfl.speeds import parse_speeds
    arg = default_of
    vfl, ada, ssca = VFLConfig(), MFCGDConfig(), RunConfig()
    parser = argparse.ArgumentParser()          # refimpl compare vfl's own options (the shared ones stubbed)
    add_compare_arguments(parser, SimpleNamespace(add_compare_args=lambda *a: None))
    compare_seeds = parser.get_default("seeds")
    return [("refimpl run flexvfl's --timeout is parse_speeds' (the CPU trace's τ); its --Q is compose's and "
             "FlexVFL.from_method's", (arg(parse_speeds, "timeout"), arg(compose, "Q"), arg(FlexVFL.from_method, "Q"))
             == (vfl.timeout, vfl.Q, vfl.Q)),
            ("the asynchronous baseline's clock charges the server's step unless told otherwise, as run_async does "
             "(refimpl's protocol; the authors' frees it)",
             arg(AsyncServerQueue, "server_free") is False and arg(run_async, "server_free") is False),
            ("refimpl run adamfcgd's --rho and --theta are make_matrix's and the adaptive matrices' defaults",
             (arg(make_matrix, "rho"), arg(make_matrix, "theta"), AdamType().rho, AdamType().theta)
             == (ada.rho, ada.theta, ada.rho, ada.theta)),
            ("refimpl compare vfl's --seeds is the regime functions' default",
             [arg(f, "seeds") for f in (regime_table, regime_row, regime_rows)] == [compare_seeds] * 3),
            ("Theorem 2 is Theorem 1 at ρ = 1: the bound functions given no ρ are Theorem 2's",
             [arg(f, "rho") for f in (check_run, theorem_conditions, G_value, find_theorem_parameters)] == [1.0] * 4),
            ("refimpl run mfcgd's --k and --gamma are MFCGDParams' defaults (η_t = k/(n + t)^(1/3), γ)",
             (arg(MFCGDParams, "k"), arg(MFCGDParams, "gamma")) == (ada.k, ada.gamma)),
            ("refimpl run ssca's --lam and --curvature are SSCA's defaults",
             (arg(SSCA, "lam"), arg(SSCA, "curvature")) == (ssca.lam, ssca.curvature))] + _plan_default_cases() \
        + _gappy_dump_cases()


def _gappy_dump_cases():
    """(what, right): a paper rebuilds a schedule from THEIR per-round dump only when it holds every
    round 1..R — a dump of rounds 1 and 3 gives its initial point but no schedule (its two rows would
    be read as rounds 1 and 2), while rounds 1 and 2 give both — written out per paper."""
    from refimpl import papers
    z = np.zeros
    # (paper, one round's planted dump, what the initial point rebuilds to, what the schedule rebuilds to)
    planted = [("ssca", lambda: {"omega": z(5), "batch": z((2, 3), dtype=np.int64)}, {"omega_0"}, {"batches"}),
               ("vfl", lambda: {"theta0": z((2, 4)), "batch": np.arange(3), "tau": np.ones(3, dtype=np.int64)},
                {"init_theta0"}, {"batches", "tau"}),
               ("mfcgd", lambda: {"x": z((2, 3)), "h": z((2, 1)), "u": z((2, 1, 3)), "v": z((2, 1)),
                                  "zeta": z((2, 1)), "xi": z((2, 1))}, {"x1", "h1", "u1", "v1"}, {"zeta", "xi"})]
    out = []
    for key, make, initial, schedule in planted:
        gappy = set(papers.get(key).replay_from_dump({1: make(), 3: make()}))
        whole = set(papers.get(key).replay_from_dump({1: make(), 2: make()}))
        out.append((f"{key}: THEIR dump of rounds 1 and 3 gives the initial point and no schedule; rounds 1 and 2 "
                    "give both", gappy == initial and whole == initial | schedule))
    return out


def _plan_default_cases():
    """(what, right): each paper's reproduction plan and tuning grids take the description's defaults
    (``refimpl reproduce`` passes every one; a library caller gets the same plan), and SSCA's tuning
    grids are the named setting's, FedAvg's with E = 5 local steps without a sample count, and the
    reproduction's E = min(5, ⌊N_k/B⌋) with one, written out."""
    import inspect

    from refimpl import papers
    from refimpl.core.paper import Paper

    def defaults(f):
        return [(n, p.default) for n, p in inspect.signature(f).parameters.items() if n != "self"]
    out = [(f"{p.key}'s plan and tuning grids take the description's defaults",
            defaults(type(p).plan) == defaults(Paper.plan)
            and defaults(type(p).tune_grids) == defaults(Paper.tune_grids))
           for p in papers.papers()]
    ssca = papers.get("ssca")
    grids = {s: ssca.tune_grids(f"ssca-{s}", 100, 40, 2) for s in ("sample", "feature")}
    settings = {s: {(c.setting, c.batch, c.rounds, c.eval_every) for g in grids[s].values() for c in g} for s in grids}
    out.append(("ssca-sample's and ssca-feature's tuning grids run their own setting at the given batch, rounds and "
                "evaluation; the sample-based one adds FedAvg with 5 local steps",
                settings == {s: {(s, 100, 40, 2)} for s in grids} and sorted(grids["sample"]) == sorted(
                    ["SSCA", "SGD", "SGD-m", "FedAvg E=5"]) and sorted(grids["feature"]) == ["SGD", "SGD-m", "SSCA"]
                and {c.local_steps for c in grids["sample"]["FedAvg E=5"]} == {5}))
    # on 50000 samples over 10 clients, N_k = 5000: E = min(5, 5000 // B), FedAvg only where E >= 2
    fedavg = {B: [(m, {c.local_steps for c in g}) for m, g in ssca.tune_grids("ssca-sample", B, 40, 2, 50000).items()
                  if m.startswith("FedAvg")] for B in (1000, 2000, 6000)}
    out.append(("ssca-sample's tuning grid on 50000 samples takes the reproduction's FedAvg E = min(5, ⌊N_k/B⌋): "
                "5 at B = 1000, 2 at B = 2000, none at B = 6000",
                fedavg == {1000: [("FedAvg E=5", {5})], 2000: [("FedAvg E=2", {2})], 6000: []}))
    return out


@check("core.paper_descriptions", "what every tool asks a paper's description, measured on short runs: each "
       "convention's acts_on (a run under the other value from the first run's recorded inputs repeats the first "
       "run's dump, or is refused, exactly when the convention acts on the inputs: SSCA's curvature, activation and "
       "sampling, Flex-VFL's momentum, batch order and initialisation, MFCGD's matrix); each paper's dump is its own "
       "by its markers (and its iterate alone); every dumped quantity has a place in the data-flow order, which "
       "keeps the algorithm's dependencies; every replay input is named with its word; each option's default, "
       "each paper's command module and the kernel modules as written out; the library's defaults those of the "
       "configurations the commands parse, the bound functions' ρ Theorem 2's (wrong answers: 0)",
       "refimpl/core/paper.py, refimpl/papers.py; docs/guide.md (diagnose)")
def paper_descriptions(quick):
    cases = fact_groups([_lookup_cases, _library_default_cases, _registry_cases, _description_cases,
                         _acts_on_cases])   # the cheapest first
    wrong = [what for what, right in cases if not right]
    return {"measured": len(wrong), "bound": 0, "holds": not wrong,
            "note": f"{len(cases)} facts of the three descriptions ({len(cases) - len(wrong)} as measured)",
            "details": {"cases": [what for what, _ in cases], "wrong": wrong}}
