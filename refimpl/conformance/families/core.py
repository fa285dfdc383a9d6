"""Conformance families of the shared core: the two-layer network's loss and gradient, the swish kernel's exp, whole-data costs, partitions, the divergence rule and the tuning selection. Each family is one record: its spec, its reference
function (refimpl's NumPy twin) and its cases, side by side (:class:`refimpl.conformance.family.Family`)."""
from __future__ import annotations

import numpy as np

from refimpl.conformance.family import Family


class ReplayDraws:
    """A stand-in for numpy.random.Generator that hands out given draws in order (the conformance
    partition vectors): ``permutation`` takes the next n positions (applied to an array argument),
    ``dirichlet`` the next K shares, ``standard_normal`` the next K normals."""

    def __init__(self, permutations, dirichlet, normals):
        self.perm = np.asarray(permutations, dtype=np.int64).ravel()
        self.dir = np.asarray(dirichlet, dtype=np.float64).ravel()
        self.nrm = np.asarray(normals, dtype=np.float64).ravel()
        self.at = {"perm": 0, "dir": 0, "nrm": 0}
        self.permutations = 0

    def _take(self, key, arr, n):
        i = self.at[key]
        if i + n > arr.size:
            raise ValueError(f"the vector's {key} draws are used up ({arr.size} given)")
        self.at[key] = i + n
        return arr[i:i + n]

    def permutation(self, x):
        n = int(x) if np.ndim(x) == 0 else len(x)
        pos = self._take("perm", self.perm, n)
        if sorted(pos.tolist()) != list(range(n)):
            raise ValueError(f"permutation draw {self.permutations} is not a permutation of 0..{n - 1}")
        self.permutations += 1
        return pos.copy() if np.ndim(x) == 0 else np.asarray(x)[pos]

    def dirichlet(self, alpha):
        return self._take("dir", self.dir, len(alpha)).copy()

    def standard_normal(self, size):
        return self._take("nrm", self.nrm, int(size)).copy()


def _logits(W1, W2, X, act, bias):
    Xb = np.hstack([np.ones((len(X), 1)), X]) if bias else X
    Z = Xb @ W1.T
    A = Z / (1 + np.exp(-Z)) if act == "swish" else np.maximum(Z, 0)
    Ab = np.hstack([np.ones((len(A), 1)), A]) if bias else A
    return Ab @ W2.T


def _ref_loss_grad(W1, W2, X, y, activation, bias):
    from refimpl.core.model import TwoLayerNet
    m = TwoLayerNet(X.shape[1], W1.shape[0], W2.shape[0], activation, bool(bias), "numpy")
    th = m.pack(W1, W2)
    loss, g = m.loss_grad(th, X, np.asarray(y, dtype=np.int64))
    g1, g2 = m.unpack(g)
    return float(loss), g1.copy(), g2.copy()


def _cases_loss_grad(rng):
    out = []
    for i, (act, bias, scale, flags, comment) in enumerate((
            ("swish", False, 0.5, [], "the paper's network"),
            ("relu", True, 0.5, ["bias-column-0"], "the authors' network (ReLU, bias in column 0)"),
            ("swish", False, 12.0, ["large-logits"], "|logit| ≈ 50: the cross-entropy must not overflow or cancel"),
            ("relu", False, 0.5, ["relu-at-zero"], "pre-activations exactly 0: ReLU'(0) = 0"),
            ("swish", False, 12.0, ["overflowing-logits"],
             "|logit| ≈ 800: e^800 overflows, so a softmax without the max subtracted gives inf/NaN"))):
        D, J, L, n = 7, 5, 4, 6
        W1 = rng.standard_normal((J, D + bias)) * scale / np.sqrt(D)
        W2 = rng.standard_normal((L, J + bias)) * scale
        X = rng.random((n, D))
        if "relu-at-zero" in flags:
            X[0] = 0.0
        if "large-logits" in flags or "overflowing-logits" in flags:
            top = 50.0 if "large-logits" in flags else 800.0
            W2 *= top / max(1e-300, np.max(np.abs(_logits(W1, W2, X, act, bias))))
        out.append(dict(id=f"loss_grad-{i}", comment=comment, flags=flags,
                        inputs=dict(W1=W1, W2=W2, X=X, y=rng.integers(0, L, n), activation=act, bias=bias),
                        tol={"rel": 1e-12}))
    return out


def _net_logits(i):
    """The two-layer network's pre-activations and logits, transcribed from the description."""
    X, W1, W2 = i["X"], i["W1"], i["W2"]
    Xb = np.hstack([np.ones((len(X), 1)), X]) if i["bias"] else X
    Z = Xb @ W1.T
    A = Z / (1 + np.exp(-Z)) if i["activation"] == "swish" else np.maximum(Z, 0)
    return Z, (np.hstack([np.ones((len(A), 1)), A]) if i["bias"] else A) @ W2.T


def _bias_column_0(i, e):
    return bool(i["bias"]) and i["W1"].shape[1] == i["X"].shape[1] + 1 and i["W2"].shape[1] == i["W1"].shape[0] + 1


_W_LOSS_GRAD = {
    "bias-column-0": lambda c: _bias_column_0(c["inputs"], c["expected"]),
    # |logit| ≈ 50: far from where exp overflows, and the loss finite
    "large-logits": lambda c: 30 < np.max(np.abs(_net_logits(c["inputs"])[1])) < 100
    and bool(np.isfinite(c["expected"]["loss"])),
    "relu-at-zero": lambda c: c["inputs"]["activation"] == "relu" and bool(np.any(_net_logits(c["inputs"])[0] == 0.0)),
    # e^|logit| overflows float64 (|logit| > 709.78), yet the loss is finite
    "overflowing-logits": lambda c: np.max(np.abs(_net_logits(c["inputs"])[1])) > 709.79
    and bool(np.isfinite(c["expected"]["loss"])),
}


LOSS_GRAD = Family(
    'loss_grad', 'core', "[SSCA] (1), cost (32) without λ",
    inputs=("W1", "W2", "X", "y", "activation", "bias"),
    outputs=("loss", "grad_W1", "grad_W2"),
    description=("two-layer network: mean softmax cross-entropy over the rows of X and its gradient; bias in "
                 "column 0 of W1 and W2 when bias is true; ReLU'(0) = 0"),
    reference=_ref_loss_grad, cases=_cases_loss_grad, witnesses=_W_LOSS_GRAD)


def _ref_exp_nonpos(x):
    from refimpl.core.kernels import exp_nonpos_nb
    return exp_nonpos_nb(np.asarray(x, dtype=np.float64))


def _cases_exp_nonpos(rng):
    x1 = -np.concatenate([np.zeros(1), 10.0 ** rng.uniform(-12, 2.5, 40), rng.uniform(700, 745, 8)])
    return [dict(id="exp_nonpos-0", comment="arguments from −1e-12 to −300 and the subnormal results near −745",
                 flags=["subnormal-results", "ulp-bound"], inputs=dict(x=x1), tol={"ulps": 1}),
            dict(id="exp_nonpos-1", comment="below the underflow threshold: exactly 0", flags=["underflow"],
                 inputs=dict(x=np.array([-746.0, -800.0, -1e4])), tol={"ulps": 0})]


_TINY = 2.2250738585072014e-308          # the smallest normal double
_W_EXP_NONPOS = {
    "subnormal-results": lambda c: bool(np.any((c["expected"]["y"] > 0) & (c["expected"]["y"] < _TINY))),
    # one ulp, on arguments from the tiny (≥ −1e-12) to the subnormal range (≤ −700)
    "ulp-bound": lambda c: c["tol"] == {"ulps": 1} and np.max(c["inputs"]["x"]) >= -1e-12
    and np.min(c["inputs"]["x"]) <= -700,
    # below ln of half the smallest subnormal (−745.13…): e^x rounds to exactly 0
    "underflow": lambda c: bool(np.all(c["inputs"]["x"] < -745.1332191019412) and np.all(c["expected"]["y"] == 0.0)),
}


EXP_NONPOS = Family(
    'exp_nonpos', 'core', "e^x for x ≤ 0 (the swish kernel's vectorised exp)",
    inputs=("x",),
    outputs=("y",),
    description=("element-wise e^x on values ≤ 0, within 1 ulp of the correctly rounded value"),
    reference=_ref_exp_nonpos, cases=_cases_exp_nonpos, witnesses=_W_EXP_NONPOS)


def _ref_full_cost(W1, W2, X, y, activation, bias, lam):
    from refimpl.core.model import TwoLayerNet, full_gradient
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    m = TwoLayerNet(X.shape[1], W1.shape[0], W2.shape[0], activation, bool(bias), "numpy")
    th = m.pack(np.asarray(W1, float), np.asarray(W2, float))
    g1, g2 = m.unpack(full_gradient(m, th, X, y, float(lam)))
    return float(m.loss(th, X, y)), float(m.one_vs_all_cost(th, X, y)), g1.copy(), g2.copy()


def _cases_full_cost(rng):
    out = []
    for i, (N, d, H, C, act, bias, lam, flags, comment) in enumerate((
            (9000, 2, 3, 3, "swish", True, 1e-3, ["more-rows-than-a-chunk", "bias-column-0", "lambda-term"],
             "9,000 rows: more than refimpl's chunk of 8,192 (a chunked sum must weigh each chunk by its rows)"),
            (37, 4, 5, 4, "relu", False, 0.0, [], "ReLU, no bias, λ = 0"),
            (50, 3, 4, 3, "swish", False, 0.1, ["lambda-term"], "λ = 0.1: the gradient's 2λω term"))):
        Din = d + 1 if bias else d
        W1 = rng.standard_normal((H, Din)) * 0.7
        W2 = rng.standard_normal((C, H + 1 if bias else H)) * 0.7
        out.append(dict(id=f"full_cost-{i}", comment=comment, flags=flags,
                        inputs=dict(W1=W1, W2=W2, X=np.round(rng.standard_normal((N, d)), 3), y=rng.integers(0, C, N),
                                    activation=act, bias=bias, lam=lam), tol={"rel": 1e-11}))
    return out


_W_FULL_COST = {
    "more-rows-than-a-chunk": lambda c: c["inputs"]["X"].shape[0] > 8192,
    "lambda-term": lambda c: c["inputs"]["lam"] > 0,
    "bias-column-0": lambda c: _bias_column_0(c["inputs"], c["expected"]),
}


FULL_COST = Family(
    'full_cost', 'core', "[SSCA] (32) and its gradient over the whole data set; the authors' recorded cost",
    inputs=("W1", "W2", "X", "y", "activation", "bias", "lam"),
    outputs=("loss", "ova_cost", "grad_W1", "grad_W2"),
    description=("whole-data evaluations (refimpl evaluates them in chunks of 8,192 rows; one case has more rows "
                 "than a chunk): loss = the mean softmax cross-entropy; ova_cost = (1/N) Σ_n Σ_l [−y_nl log p_nl − "
                 "(1 − y_nl) log(1 − p_nl)] with p = softmax(logits), y one-hot (the SSCA authors' recorded cost); "
                 "grad = ∇ of loss + λ||ω||² (ω = W1 and W2)"),
    reference=_ref_full_cost, cases=_cases_full_cost, witnesses=_W_FULL_COST)


def _ref_partition(kind, n_clients, labels, permutations, dirichlet, normals):
    from refimpl.core.partition import sample_partition
    labels = np.asarray(labels, dtype=np.int64)
    rng = ReplayDraws(permutations, dirichlet, normals)
    parts = sample_partition(labels.size, int(n_clients), kind, rng=rng, labels=labels)
    owner = np.full(labels.size, -1, dtype=np.int64)
    for k, p in enumerate(parts):
        owner[p] = k
    return owner, rng.permutations


def _cases_partition(rng):
    out = []
    labels = np.repeat(np.arange(4), [5, 7, 3, 9])[rng.permutation(24)]          # 24 samples, 4 classes
    N, classes = labels.size, np.unique(labels)

    def perms(*sizes):
        return np.concatenate([rng.permutation(n) for n in sizes]).astype(np.int64)

    def shares(K, tries, alpha):
        return np.concatenate([rng.dirichlet(np.full(K, alpha)) for _ in range(tries * classes.size)])

    sizes = [int(np.sum(labels == c)) for c in classes]
    none = np.zeros(0)
    for kind, K, p, dr, z, flags, comment in (
            ("iid", 5, perms(N), none, none, ["uneven-blocks"], "24 samples into 5 clients: blocks of 5, 5, 5, 5, 4"),
            ("quantity:1.5", 4, perms(N), none, np.array([0.3, -1.2, 2.0, 0.0]), ["remainder-to-largest", "sigma"],
             "log-normal sizes w = exp(σz) with σ = 1.5; the floor's remainder goes to the largest client"),
            ("quantity:1.0", 3, perms(N), none, np.array([0.5, 0.5, -0.5]), ["largest-first-of-equal", "remainder-to-largest"],
             "two equal largest sizes: the remainder goes to the first"),
            ("quantity:1.0", 3, perms(N), none, np.array([np.log(3 * (np.exp(0.5) + 1) / 18) - 1e-9, 0.5, 0.0]),
             ["floor-edge", "remainder-to-largest"], "client 1's share of the N − K = 21 samples is 3 − 2.6e-9: floor 2 "
             "in double (sizes 3, 14, 7); its normal read in single precision rounds up, and the sizes become 4, 13, 7"),
            ("dirichlet:0.5", 3, perms(*sizes), shares(3, 1, 0.5), none, ["clients-not-classes"],
             "3 clients, 4 classes: shares per class over the clients"),
            ("dirichlet:1.0", 6, perms(*sizes), shares(6, 1, 1.0), none, ["clients-more-than-classes"],
             "6 clients, 4 classes"),
            ("dirichlet:0.3:3", 3, perms(*(sizes * 2)), np.concatenate([np.array([0.8, 0.1, 0.1] * 4), shares(3, 1, 3)]),
             none, ["min-size-redraw", "clients-not-classes"], "the first draw gives client 1 two samples, fewer than MIN_SIZE = 3: the rule "
                                        "redraws every class"),
            ("label_skew", 3, perms(6), none, none, ["shards-by-label"], "2 shards per client, sorted by label")):
        out.append(dict(id=f"partition-{len(out)}", comment=comment, flags=flags,
                        inputs=dict(kind=kind, n_clients=K, labels=labels, permutations=p, dirichlet=dr, normals=z),
                        tol={"rel": 0.0}))
    return out


def _kind(i):
    name, *args = str(i["kind"]).split(":")
    return name, [float(a) for a in args]


def _quantity_sizes(i):
    """quantity:σ's sizes from the given normals, as the description states them."""
    (_, (sigma,)), N, K = _kind(i), i["labels"].size, int(i["n_clients"])
    w = np.exp(sigma * i["normals"][:K])
    sizes = 1 + np.floor(w / w.sum() * (N - K)).astype(int)
    return w, sizes, N - int(sizes.sum())


def _counts(i, e):
    return np.bincount(e["owner"], minlength=int(i["n_clients"]))


def _remainder_to_largest(i, e):
    if _kind(i)[0] != "quantity":
        return False
    w, sizes, r = _quantity_sizes(i)
    sizes[int(np.argmax(w))] += r
    return r > 0 and np.array_equal(_counts(i, e), sizes)


def _floor_edge(i, e):
    """quantity:σ: a client's share w_k/Σw·(N − K) lies within 1e-8 below an integer (its floor turns
    on the normals' last digits), and the sizes are the double-precision ones, remainder included."""
    if _kind(i)[0] != "quantity":
        return False
    w, _, _ = _quantity_sizes(i)
    share = w / w.sum() * (i["labels"].size - int(i["n_clients"]))
    below = np.ceil(share) - share
    return bool(np.any((below > 0) & (below < 1e-8))) and _remainder_to_largest(i, e)


def _first_of_equal(i, e):
    w, sizes, r = _quantity_sizes(i)
    top = np.flatnonzero(w == w.max())
    n = _counts(i, e)
    return top.size >= 2 and r > 0 and n[top[0]] == sizes[top[0]] + r and n[top[1]] == sizes[top[1]]


def _first_try_short(i, e):
    """dirichlet:α:MIN: the first try's shares leave some client under MIN, so the rule redrew
    (it consumed a second permutation per class)."""
    name, args = _kind(i)
    labels, K = i["labels"], int(i["n_clients"])
    classes = np.unique(labels)
    held = np.zeros(K, dtype=int)
    for j, cl in enumerate(classes):
        n_c = int(np.sum(labels == cl))
        cuts = np.floor(np.cumsum(i["dirichlet"][j * K:(j + 1) * K])[:-1] * n_c).astype(int)
        held += np.diff(np.concatenate([[0], cuts, [n_c]]))
    return name == "dirichlet" and len(args) == 2 and held.min() < args[1] and e["draws"] >= 2 * classes.size


def _two_shards_each(i, e):
    labels, K = i["labels"], int(i["n_clients"])
    by_label = e["owner"][np.argsort(labels, kind="stable")]
    width = labels.size // (2 * K)
    shards = by_label.reshape(2 * K, width)
    return (_kind(i)[0] == "label_skew" and bool(np.all(shards == shards[:, :1]))
            and np.array_equal(np.bincount(shards[:, 0], minlength=K), np.full(K, 2)))


_W_PARTITION = {
    "uneven-blocks": lambda c: _kind(c["inputs"])[0] == "iid" and np.ptp(_counts(c["inputs"], c["expected"])) == 1,
    "remainder-to-largest": lambda c: _remainder_to_largest(c["inputs"], c["expected"]),
    "floor-edge": lambda c: _floor_edge(c["inputs"], c["expected"]),
    "sigma": lambda c: _kind(c["inputs"])[0] == "quantity" and _kind(c["inputs"])[1] != [1.0],
    "largest-first-of-equal": lambda c: _kind(c["inputs"])[0] == "quantity"
    and _first_of_equal(c["inputs"], c["expected"]),
    "clients-not-classes": lambda c: _kind(c["inputs"])[0] == "dirichlet"
    and int(c["inputs"]["n_clients"]) < np.unique(c["inputs"]["labels"]).size,
    "clients-more-than-classes": lambda c: _kind(c["inputs"])[0] == "dirichlet"
    and int(c["inputs"]["n_clients"]) > np.unique(c["inputs"]["labels"]).size,
    "min-size-redraw": lambda c: _first_try_short(c["inputs"], c["expected"]),
    "shards-by-label": lambda c: _two_shards_each(c["inputs"], c["expected"]),
}


PARTITION = Family(
    'partition', 'core', "sample-based partitions (iid, quantity:σ, dirichlet:α[:MIN], label_skew)",
    inputs=("kind", "n_clients", "labels", "permutations", "dirichlet", "normals"),
    outputs=("owner", "draws"),
    description=("the client of every sample given the random draws, replayed in the order the rule consumes "
                 "them: permutations (concatenated; each a permutation of 0..n−1 of the length asked for), "
                 "dirichlet (K shares per class and try, concatenated), normals (K standard normals). iid: "
                 "permute 0..N−1 and cut into K near-equal consecutive blocks (the first N mod K one longer); "
                 "quantity:σ: sizes 1 + ⌊w_k/Σw (N − K)⌋ with w = exp(σ z), the remainder to the largest (first "
                 "of equal), then permute 0..N−1 and cut; dirichlet:α: for each class in increasing order, permute "
                 "its sample ids (ascending), draw shares p and cut at ⌊cumsum(p)_k · n_c⌋, k < K; redraw all "
                 "classes until every client holds at least max(MIN, 1); label_skew: sort ids by label (stable), "
                 "cut into 2K near-equal shards, permute 0..2K−1 and give client k shards 2k and 2k + 1 of that "
                 "order. draws: how many permutations were consumed"),
    reference=_ref_partition, cases=_cases_partition, witnesses=_W_PARTITION)


def _ref_divergence_stop(costs, sq_norms, cost_factor, max_sq_norm):
    from refimpl.core.divergence import DivergenceRule
    rule = DivergenceRule(float(cost_factor), float(max_sq_norm))
    costs, sq = np.atleast_1d(np.asarray(costs, float)), np.atleast_1d(np.asarray(sq_norms, float))
    for i in range(costs.size):
        if rule.cost("cost", costs[i], float(costs[0])) or rule.sq_norm("||x||^2", sq[i]):
            return i
    return -1


def _cases_divergence_stop(rng):
    out = []
    for costs, sq, flags, comment in (
            ([2.3, 3.0, 10.0, 500.0, 2400.0, 3000.0], [1.0] * 6, ["reference-is-initial"],
             "a slow blow-up: each cost under 1000 × the previous one, the fifth over 1000 × the initial one"),
            ([2.3, 2.0, float("nan"), 1.0], [1.0] * 4, ["not-finite"], "a NaN cost stops the run at once"),
            ([2.3, 2.2, 2.1], [1e3, 1e13, 1e3], ["iterate-norm"], "the iterate's squared norm passes 1e12"),
            ([0.0, 1e-200, 1.0], [1.0] * 3, ["zero-initial-cost"], "an initial cost of 0: the reference is 1e-300"),
            ([2.3, 1.5, 0.9], [1.0] * 3, ["converging"], "a converging run never stops (−1)"),
            ([2.0, 2000.0, 1.0, 2000.5], [1.0, 1.0, 1e12, 1.0], ["at-the-limit-kept"],
             "a cost of exactly the factor × the initial one and a squared norm of exactly the limit are kept: "
             "only exceeding stops"),
            ([-2.0, -3.0, -1999.0, -2500.0], [1.0] * 4, ["negative-costs", "reference-is-initial"],
             "negative costs compare by their size: |−2500| > 1000 · |−2|, not −2500 against −2")):
        out.append(dict(id=f"divergence_stop-{len(out)}", comment=comment, flags=flags,
                        inputs=dict(costs=np.array(costs), sq_norms=np.array(sq), cost_factor=1e3,
                                    max_sq_norm=1e12), tol={"rel": 0.0}))
    return out


def _slow_blow_up(i, e):
    k, c = int(e["index"]), i["costs"]
    return (k > 0 and abs(c[k]) > i["cost_factor"] * abs(c[0])
            and all(abs(c[j]) <= i["cost_factor"] * abs(c[j - 1]) for j in range(1, k + 1)))


_W_DIVERGENCE_STOP = {
    "reference-is-initial": lambda c: _slow_blow_up(c["inputs"], c["expected"]),
    "not-finite": lambda c: c["expected"]["index"] >= 0
    and not np.isfinite(c["inputs"]["costs"][c["expected"]["index"]]),
    "iterate-norm": lambda c: c["expected"]["index"] >= 0
    and c["inputs"]["sq_norms"][c["expected"]["index"]] > c["inputs"]["max_sq_norm"]
    and abs(c["inputs"]["costs"][c["expected"]["index"]]) <= c["inputs"]["cost_factor"] * abs(c["inputs"]["costs"][0]),
    "zero-initial-cost": lambda c: c["inputs"]["costs"][0] == 0.0 and c["expected"]["index"] > 0,
    "converging": lambda c: c["expected"]["index"] == -1 and bool(np.all(np.diff(c["inputs"]["costs"]) < 0)),
    "negative-costs": lambda c: c["inputs"]["costs"][0] < 0 and c["expected"]["index"] > 0
    and c["inputs"]["costs"][c["expected"]["index"]] < -c["inputs"]["cost_factor"] * abs(c["inputs"]["costs"][0]),
    # some evaluation before the stop sits exactly at a limit (|cost| = factor · |cost_0|, or ||x||² = the limit)
    "at-the-limit-kept": lambda c: any(
        j > 0 and abs(c["inputs"]["costs"][j]) == c["inputs"]["cost_factor"] * max(abs(c["inputs"]["costs"][0]), 1e-300)
        or c["inputs"]["sq_norms"][j] == c["inputs"]["max_sq_norm"]
        for j in range(len(c["inputs"]["costs"])) if c["expected"]["index"] < 0 or j < c["expected"]["index"]),
}


DIVERGENCE_STOP = Family(
    'divergence_stop', 'core', "the divergence rule (a run's stop)",
    inputs=("costs", "sq_norms", "cost_factor", "max_sq_norm"),
    outputs=("index",),
    description=("the first evaluation i (from 0) that counts as diverged, −1 if none: its cost is not finite, "
                 "or |cost_i| > cost_factor · max(|cost_0|, 1e-300) — the reference is the cost at the initial "
                 "point, not the previous evaluation's — or its iterate's squared norm is not finite or "
                 "exceeds max_sq_norm"),
    reference=_ref_divergence_stop, cases=_cases_divergence_stop, witnesses=_W_DIVERGENCE_STOP)


def _ref_tune_select(finished, accuracy, cost):
    from refimpl.core.identity import select, selection_score
    i = select([selection_score("finished" if f else "diverged", a, c)
                for f, a, c in zip(np.atleast_1d(finished), np.atleast_1d(accuracy), np.atleast_1d(cost))])
    return -1 if i is None else i


def _cases_tune_select(rng):
    out = []
    for fin, acc, cost, flags, comment in (
            ([1, 1, 1], [0.8, 0.9, 0.85], [1.0, 2.0, 0.5], [], "the highest validation accuracy"),
            ([1, 0, 1], [0.8, 0.95, 0.8], [1.0, 0.1, 0.7], ["diverged-excluded", "tie-lower-cost"],
             "a diverged run with the best accuracy is never chosen; the tie goes to the lower cost"),
            ([1, 1, 1], [0.9, 0.9, 0.9], [0.5, 0.3, 0.3], ["first-of-equal", "tie-lower-cost"], "equal scores: the first"),
            ([0, 0], [0.9, 0.8], [1.0, 1.0], ["none-finished", "diverged-excluded"], "no run finished: no choice (−1)"),
            ([1, 1], [float("nan"), 0.1], [1.0, 2.0], ["nan-accuracy"], "a NaN accuracy is never chosen")):
        out.append(dict(id=f"tune_select-{len(out)}", comment=comment, flags=flags,
                        inputs=dict(finished=np.array(fin, float), accuracy=np.array(acc), cost=np.array(cost)),
                        tol={"rel": 0.0}))
    return out


def _best_finished(i):
    fin = i["finished"] == 1.0
    acc = np.where(fin & ~np.isnan(i["accuracy"]), i["accuracy"], -np.inf)
    return fin, acc, np.flatnonzero(acc == acc.max())


def _tie_to_lower_cost(i, e):
    _, acc, top = _best_finished(i)
    k = int(e["index"])
    return top.size >= 2 and k in top and k != top[0] and i["cost"][k] < i["cost"][top[0]]


def _first_of_equal_scores(i, e):
    _, _, top = _best_finished(i)
    low = top[i["cost"][top] == i["cost"][top].min()]
    return low.size >= 2 and e["index"] == low[0]


_W_TUNE_SELECT = {
    "diverged-excluded": lambda c: c["inputs"]["finished"][int(np.nanargmax(c["inputs"]["accuracy"]))] == 0
    and c["expected"]["index"] != int(np.nanargmax(c["inputs"]["accuracy"])),
    "tie-lower-cost": lambda c: _tie_to_lower_cost(c["inputs"], c["expected"]),
    "first-of-equal": lambda c: _first_of_equal_scores(c["inputs"], c["expected"]),
    "none-finished": lambda c: bool(np.all(c["inputs"]["finished"] == 0)) and c["expected"]["index"] == -1,
    "nan-accuracy": lambda c: bool(np.any((c["inputs"]["finished"] == 1) & np.isnan(c["inputs"]["accuracy"])))
    and not np.isnan(c["inputs"]["accuracy"][c["expected"]["index"]]),
}


TUNE_SELECT = Family(
    'tune_select', 'core', "reproduce --tune's selection rule",
    inputs=("finished", "accuracy", "cost"),
    outputs=("index",),
    description=("the grid point chosen: among finished runs (1.0) with a numeric accuracy the highest final "
                 "validation accuracy, ties broken by the lowest final training cost, then the first; −1 when "
                 "no run finished"),
    reference=_ref_tune_select, cases=_cases_tune_select, witnesses=_W_TUNE_SELECT)


FAMILIES = (LOSS_GRAD, EXP_NONPOS, FULL_COST, PARTITION, DIVERGENCE_STOP, TUNE_SELECT,)
