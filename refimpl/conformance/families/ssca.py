"""Conformance families of [SSCA]: the surrogate recursion, the steps, the server's assembly over Flower and a constrained run. Each family is one record: its spec, its reference
function (refimpl's NumPy twin) and its cases, side by side (:class:`refimpl.conformance.family.Family`)."""
from __future__ import annotations

import numpy as np

from refimpl.conformance.family import Family


def _dot_in_order(a, b):
    """Σ a_i b_i summed left to right in float64: the same last bit on every machine (a BLAS dot
    sums in an order that depends on the CPU's kernel, and a case chosen for a rounding effect must
    not depend on it)."""
    s = 0.0
    for x, y in zip(np.ravel(a).tolist(), np.ravel(b).tolist()):
        s += x * y
    return s


def _unnudged_nu(st, U):
    """The textbook multiplier ν°, the root of q(ω(ν)) = U, with B·B summed in order."""
    b = _dot_in_order(st.B, st.B)
    d = 4.0 * st.A * (st.C - U)
    if b <= d:
        return np.inf
    x = np.sqrt(b / (b - d))
    return d / (st.A * (b - d) * (x + 1.0))


def _ref_surrogate_update(A, B, C, loss_hat, grad_hat, omega, rho, tau, curvature):
    from refimpl.ssca.surrogate import SurrogateState, surrogate_update
    s = surrogate_update(SurrogateState(float(A), np.asarray(B, float), float(C)), float(loss_hat),
                         np.asarray(grad_hat, float), np.asarray(omega, float), float(rho), float(tau), curvature)
    return float(s.A), s.B, float(s.C)


def _cases_surrogate_update(rng):
    out = []
    n = 6
    for i, (A0, rho, curv, flags, comment) in enumerate((
            (0.0, 0.6, "recursive", ["A0=0", "rho<1"], "first round from A^0 = 0 with ρ_1 < 1: A^1 = ρ_1 τ, not τ"),
            (0.03, 1.0, "recursive", ["rho=1"], "ρ = 1: the recursion forgets the past"),
            (0.0, 0.6, "fixed", ["curvature-fixed", "A0=0"], "the authors' convention A^t = τ"),
            (0.07, 0.25, "recursive", ["rho<1"], "a later round"))):
        out.append(dict(id=f"surrogate_update-{i}", comment=comment, flags=flags,
                        inputs=dict(A=A0, B=rng.standard_normal(n) * (A0 > 0), C=float(rng.random() * (A0 > 0)),
                                    loss_hat=float(rng.random() + 1), grad_hat=rng.standard_normal(n),
                                    omega=rng.standard_normal(n), rho=rho, tau=0.1, curvature=curv),
                        tol={"rel": 1e-14}))
    return out


_W_SURROGATE_UPDATE = {
    "A0=0": lambda c: c["inputs"]["A"] == 0 and c["inputs"]["C"] == 0 and not np.any(c["inputs"]["B"]),
    "rho<1": lambda c: 0 < c["inputs"]["rho"] < 1 and c["inputs"]["curvature"] == "recursive",
    "rho=1": lambda c: c["inputs"]["rho"] == 1,
    # A^t = τ, where the recursion would give (1 − ρ)A + ρτ ≠ τ
    "curvature-fixed": lambda c: c["inputs"]["curvature"] == "fixed" and c["expected"]["A"] == c["inputs"]["tau"]
    and (1 - c["inputs"]["rho"]) * c["inputs"]["A"] + c["inputs"]["rho"] * c["inputs"]["tau"] != c["inputs"]["tau"],
}


SURROGATE_UPDATE = Family(
    'surrogate_update', 'ssca', "[SSCA] (7)–(9)",
    inputs=("A", "B", "C", "loss_hat", "grad_hat", "omega", "rho", "tau", "curvature"),
    outputs=("A", "B", "C"),
    description=("surrogate recursion; curvature 'recursive' (A^t = (1−ρ)A + ρτ) or 'fixed' (A^t = τ)"),
    reference=_ref_surrogate_update, cases=_cases_surrogate_update, witnesses=_W_SURROGATE_UPDATE)


def _ref_unconstrained_step(A, B, lam):
    from refimpl.ssca.surrogate import SurrogateState, unconstrained_step
    return unconstrained_step(SurrogateState(float(A), np.asarray(B, float), 0.0), float(lam))


def _cases_unconstrained_step(rng):
    return [dict(id=f"unconstrained_step-{i}", comment=c, flags=f, inputs=dict(A=A, B=rng.standard_normal(5), lam=lam),
                 tol={"rel": 1e-15})
            for i, (A, lam, f, c) in enumerate(((0.05, 0.0, [], "λ = 0"), (0.05, 0.3, ["lambda>0"], "with λ > 0"),
                                                (0.0, 0.2, ["A=0", "lambda>0"], "A = 0, λ > 0")))]


_W_UNCONSTRAINED_STEP = {
    "lambda>0": lambda c: c["inputs"]["lam"] > 0,
    "A=0": lambda c: c["inputs"]["A"] == 0 and c["inputs"]["lam"] > 0,
}


UNCONSTRAINED_STEP = Family(
    'unconstrained_step', 'ssca', "[SSCA] (10)",
    inputs=("A", "B", "lam"),
    outputs=("omega_bar",),
    description=("ω̄ = −B / (2(A + λ))"),
    reference=_ref_unconstrained_step, cases=_cases_unconstrained_step, witnesses=_W_UNCONSTRAINED_STEP)


def _ref_move(omega, omega_bar, gamma):
    from refimpl.ssca.surrogate import move
    return move(np.asarray(omega, float), np.asarray(omega_bar, float), float(gamma))


def _cases_move(rng):
    return [dict(id=f"move-{i}", comment=c, flags=f, inputs=dict(omega=rng.standard_normal(5),
                                                                omega_bar=rng.standard_normal(5), gamma=g),
                 tol={"rel": 1e-15})
            for i, (g, f, c) in enumerate(((0.3, [], "a step"), (1.0, ["gamma=1"], "γ = 1: ω^{t+1} = ω̄")))]


_W_MOVE = {
    "gamma=1": lambda c: c["inputs"]["gamma"] == 1
    and np.array_equal(c["expected"]["omega_next"], c["inputs"]["omega_bar"]),
}


MOVE = Family(
    'move', 'ssca', "[SSCA] (5)",
    inputs=("omega", "omega_bar", "gamma"),
    outputs=("omega_next",),
    description=("ω^{t+1} = (1 − γ) ω^t + γ ω̄^t"),
    reference=_ref_move, cases=_cases_move, witnesses=_W_MOVE)


def _ref_closed_form_step(A, B, C, U, c):
    from refimpl.ssca.constrained import closed_form_step
    from refimpl.ssca.surrogate import SurrogateState
    st = closed_form_step(SurrogateState(float(A), np.asarray(B, float), float(C)), float(U), float(c))
    return st.omega_bar, float(st.slack[0]), float(st.nu[0])


def _cases_closed_form_step(rng):
    out = []
    n = 6
    A, B, U = 0.3, rng.standard_normal(n), 0.5
    b = float(B @ B)
    for i, (C, c, Bv, flags, comment) in enumerate((
            (U - 0.2, 1e5, B, ["C<=U", "multiplier-zero"], "C ≤ U: ν* = 0, ω̄ = 0"),
            (U + 0.3 * b / (4 * A), 1e5, B, ["constraint-active", "rounding-slack"], "finite ν° ≤ c"),
            (U + 0.9 * b / (4 * A), 1e-3, B, ["slack-active"], "ν° > c: ν* = c and a positive slack"),
            (U + 1.0, 1e2, np.zeros(n), ["b=0", "slack-active"], "B = 0 and C > U: only the slack can help"))):
        out.append(dict(id=f"closed_form_step-{i}", comment=comment, flags=flags,
                        inputs=dict(A=A, B=Bv, C=C, U=U, c=c), tol={"rel": 1e-12}))
    r = np.random.default_rng(37)
    k = 0
    while k < 3:
        A_ = 10.0 ** float(r.uniform(-4, 2))           # powers of scalars: libm's pow, not a SIMD one
        B_ = r.standard_normal(n) * np.array([10.0 ** v for v in r.uniform(-3, 3, n).tolist()])
        U_ = 10.0 ** float(r.uniform(-3, 2))
        C_ = U_ + float(r.uniform(0.01, 0.99)) * _dot_in_order(B_, B_) / (4 * A_)
        c_ = 10.0 ** float(r.uniform(3, 8))
        from refimpl.ssca.surrogate import SurrogateState
        nu = _unnudged_nu(SurrogateState(A_, B_, C_), U_)
        if nu <= c_ and _q_in_order(dict(A=A_, B=B_, C=C_), B_ * (-nu / (2 * (1 + nu * A_)))) > U_:
            out.append(dict(id=f"closed_form_step-{4 + k}", comment="badly scaled: the textbook ν° leaves ω̄ "
                            "infeasible by rounding, and c multiplies it", flags=["constraint-active", "rounding-slack"],
                            inputs=dict(A=A_, B=B_, C=C_, U=U_, c=c_), tol={"rel": 1e-12}))
            k += 1
    return out


def _q(i, omega):
    """The surrogate constraint's value A||ω||² + Bᵀω + C."""
    return i["A"] * float(omega @ omega) + float(i["B"] @ omega) + i["C"]


def _q_in_order(i, omega):
    """q(ω) = A||ω||² + Bᵀω + C with the sums taken left to right (:func:`_dot_in_order`)."""
    return i["A"] * _dot_in_order(omega, omega) + _dot_in_order(i["B"], omega) + i["C"]


def _textbook_infeasible(i):
    """The textbook multiplier ν° (:func:`_unnudged_nu`, the root of q(ω(ν)) = U) is at most c and
    leaves ω(ν°) = −ν°B/(2(1 + ν°A)) infeasible in float64, every sum taken left to right, so that
    the flag means the same on every machine."""
    from refimpl.ssca.surrogate import SurrogateState
    nu = _unnudged_nu(SurrogateState(float(i["A"]), i["B"], float(i["C"])), i["U"])
    return bool(nu <= i["c"]) and _q_in_order(i, i["B"] * (-nu / (2 * (1 + nu * i["A"])))) > i["U"]


def _active(i, e):
    """ν in (0, c), no slack, and ω̄ on the constraint: q(ω̄) ≤ U in float64, within 1e-9 of it
    relative to the size of q's terms."""
    w = e["omega_bar"]
    v, scale = _q(i, w), i["A"] * float(w @ w) + abs(float(i["B"] @ w)) + abs(i["C"])
    return 0 < e["nu"] < i["c"] and e["slack"] == 0 and i["U"] - 1e-9 * scale <= v <= i["U"]


_W_CLOSED_FORM_STEP = {
    "C<=U": lambda c: c["inputs"]["C"] <= c["inputs"]["U"],
    "multiplier-zero": lambda c: c["expected"]["nu"] == 0 and not np.any(c["expected"]["omega_bar"]),
    "constraint-active": lambda c: _active(c["inputs"], c["expected"]),
    "slack-active": lambda c: c["expected"]["nu"] == c["inputs"]["c"] and c["expected"]["slack"] > 0,
    "b=0": lambda c: not np.any(c["inputs"]["B"]) and c["inputs"]["C"] > c["inputs"]["U"],
    "rounding-slack": lambda c: _textbook_infeasible(c["inputs"]),
}


CLOSED_FORM_STEP = Family(
    'closed_form_step', 'ssca', "[SSCA] Lemma 1, (43)–(45)",
    inputs=("A", "B", "C", "U", "c"),
    outputs=("omega_bar", "slack", "nu"),
    description=("the constrained step's closed form; at an active constraint ω̄ is feasible in float64"),
    reference=_ref_closed_form_step, cases=_cases_closed_form_step, witnesses=_W_CLOSED_FORM_STEP)


def _ref_client_aggregate(sizes, batch, loss_sums, grad_sums, arrival, batches):
    import json as _json

    from refimpl.core.model import TwoLayerNet
    from refimpl.ssca.flower import FlowerCollection, batches_config
    from refimpl.ssca.protocols import SampleBasedProtocol
    sizes, batch = np.asarray(sizes, dtype=np.int64), np.asarray(batch, dtype=np.int64)
    grad_sums = np.asarray(grad_sums, dtype=np.float64)
    model = TwoLayerNet(1, 1, grad_sums.shape[1] - 1, "swish", False, "numpy")     # any d ≥ 2 parameters
    N = int(sizes.sum())
    parts = np.split(np.arange(N), np.cumsum(sizes)[:-1])
    proto = SampleBasedProtocol(model, np.zeros((N, 1)), np.zeros(N, dtype=np.int64), parts)
    fc = FlowerCollection(proto)
    fc.assemble({int(k): (float(loss_sums[k]), grad_sums[k], int(batch[k])) for k in np.asarray(arrival)})
    loss, grad, _ = fc.collect(None, [None] * len(parts))
    cfg = _json.loads(batches_config(np.asarray(batches)))
    routed = np.array([cfg[str(k)] for k in range(len(parts))], dtype=np.int64)
    return float(loss), grad, routed


def _cases_client_aggregate(rng):
    out = []
    for sizes, batch, arrival, flags, comment in (
            ([147, 600, 1720], [10, 10, 10], [0, 1, 2], ["unequal-partitions", "weights-N_k/N"],
             "unequal partitions: weights N_k/N, not 1/K and not num_examples/Σ num_examples of the batches"),
            ([300, 80, 500, 120], [20, 8, 20, 12], [2, 0, 3, 1],
             ["arrival-order", "unequal-batches", "unequal-partitions", "weights-N_k/N"],
             "replies in another order than the partition ids, unequal batch sizes")):
        K = len(sizes)
        out.append(dict(id=f"client_aggregate-{len(out)}", comment=comment, flags=flags,
                        inputs=dict(sizes=np.array(sizes, dtype=np.int64), batch=np.array(batch, dtype=np.int64),
                                    loss_sums=rng.uniform(1, 30, K), grad_sums=rng.standard_normal((K, 8)),
                                    arrival=np.array(arrival, dtype=np.int64),
                                    batches=np.array([rng.choice(sizes[k], 3, replace=False) for k in range(K)])),
                        tol={"rel": 1e-15}))
    return out


def _weights_n_k(i, e):
    """ℓ̂ weighs client k by N_k/N — and neither 1/K nor B_k/Σ B_k would give the same value."""
    N, per = i["sizes"].sum(), i["loss_sums"] / i["batch"]
    right = float(np.sum(i["sizes"] / N * per))
    wrong = (float(np.mean(per)), float(i["loss_sums"].sum() / i["batch"].sum()))
    return abs(e["loss_hat"] - right) <= 1e-14 * right and min(abs(w - right) for w in wrong) > 1e-6 * right


_W_CLIENT_AGGREGATE = {
    "unequal-partitions": lambda c: np.ptp(c["inputs"]["sizes"]) > 0,
    "weights-N_k/N": lambda c: _weights_n_k(c["inputs"], c["expected"]),
    "arrival-order": lambda c: not np.array_equal(c["inputs"]["arrival"], np.arange(c["inputs"]["arrival"].size)),
    "unequal-batches": lambda c: np.ptp(c["inputs"]["batch"]) > 0,
}


CLIENT_AGGREGATE = Family(
    'client_aggregate', 'ssca', "[SSCA] Algorithm 1 steps 2–3 over Flower: the server's assembly",
    inputs=("sizes", "batch", "loss_sums", "grad_sums", "arrival", "batches"),
    outputs=("loss_hat", "grad_hat", "routed"),
    description=("K clients hold N_k = sizes[k] samples (N = Σ N_k); the client of partition k replies with "
                 "the sums of its losses and gradients over its batch of B_k = batch[k] samples; replies "
                 "arrive in the order arrival (partition ids); ℓ̂ = Σ_k (N_k/N)(1/B_k) loss_sums[k] and ĝ "
                 "likewise, each reply matched to its partition id. routed[k]: the batch the client of "
                 "partition id k (0-based, as Flower's partition-id) reads from the round's configuration "
                 "(batches[k] sent as JSON {\"k\": [ids]})"),
    reference=_ref_client_aggregate, cases=_cases_client_aggregate, witnesses=_W_CLIENT_AGGREGATE)


def _ref_constrained_run(W1, W2, X, y, batches, tau, rho_a, rho_alpha, gamma_a, gamma_alpha, U, c, curvature):
    from refimpl.core.model import TwoLayerNet
    from refimpl.core.schedules import PowerLaw
    from refimpl.ssca.constrained_algorithms import ConstrainedSSCA
    from refimpl.ssca.protocols import SampleBasedProtocol
    X, y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.int64)
    W1, W2 = np.asarray(W1, dtype=np.float64), np.asarray(W2, dtype=np.float64)
    model = TwoLayerNet(X.shape[1], W1.shape[0], W2.shape[0], "swish", False, "numpy")
    alg = ConstrainedSSCA(SampleBasedProtocol(model, X, y, [np.arange(X.shape[0])]), PowerLaw(rho_a, rho_alpha),
                          PowerLaw(gamma_a, gamma_alpha), tau, U, c, curvature=curvature)
    state = alg.init(model.pack(W1, W2))
    rec = {k: [] for k in ("A", "nu", "slack", "loss_hat")}
    for t, batch in enumerate(np.asarray(batches, dtype=np.int64), start=1):
        state = alg.apply(state, t, [batch])[0]
        for k, v in (("A", state.surrogates[0].A), ("nu", state.nu[0]), ("slack", state.slack[0]),
                     ("loss_hat", state.loss_hat)):
            rec[k].append(float(v))
    g1, g2 = model.unpack(state.omega)
    return (g1.copy(), g2.copy(), *(np.array(rec[k]) for k in ("A", "nu", "slack", "loss_hat")))


def _cases_constrained_run(rng):
    N, d, H, C, T, B = 40, 4, 3, 3, 6, 8
    X, y = rng.standard_normal((N, d)), rng.integers(0, C, N)
    out = []
    for curvature, U, rho_a, flags, comment in (
            ("recursive", 1.05, 0.6, ["A0=0", "rho<1", "constraint-active", "slack-active"],
             "A⁰ = 0 and ρ_1 = 0.6 < 1: A^1 = 0.6 τ, not τ; U below the loss: the constraint binds (ν < c), "
             "then the slack takes over (ν = c)"),
            ("fixed", 1.05, 0.6, ["curvature-fixed", "constraint-active", "slack-active"], "the SSCA authors' convention: A^t = τ in every round"),
            ("recursive", 5.0, 1.0, ["constraint-inactive", "rho=1"], "U above the loss: ν = 0, ω̄ = 0")):
        out.append(dict(id=f"constrained_run-{len(out)}", comment=comment, flags=flags,
                        inputs=dict(W1=rng.standard_normal((H, d)) * 0.5, W2=rng.standard_normal((C, H)) * 0.5, X=X,
                                    y=y, batches=np.array([rng.choice(N, B, replace=False) for _ in range(T)]),
                                    tau=0.2, rho_a=rho_a, rho_alpha=0.3, gamma_a=0.5, gamma_alpha=0.4, U=U, c=1e4,
                                    curvature=curvature), tol={"rel": 1e-11}))
    return out


_W_CONSTRAINED_RUN = {
    # A^1 = ρ_1 τ from A⁰ = 0 (ρ_1 = rho_a), not τ
    "A0=0": lambda c: c["expected"]["A"][0] == c["inputs"]["rho_a"] * c["inputs"]["tau"] != c["inputs"]["tau"],
    "rho<1": lambda c: 0 < c["inputs"]["rho_a"] < 1 and c["inputs"]["curvature"] == "recursive",
    "constraint-active": lambda c: bool(np.any((c["expected"]["nu"] > 0) & (c["expected"]["nu"] < c["inputs"]["c"]))),
    "slack-active": lambda c: bool(np.any((c["expected"]["nu"] == c["inputs"]["c"]) & (c["expected"]["slack"] > 0))),
    "curvature-fixed": lambda c: c["inputs"]["curvature"] == "fixed"
    and bool(np.all(c["expected"]["A"] == c["inputs"]["tau"])) and c["inputs"]["rho_a"] < 1,
    "constraint-inactive": lambda c: not np.any(c["expected"]["nu"]),
    "rho=1": lambda c: c["inputs"]["rho_a"] == 1,
}


CONSTRAINED_RUN = Family(
    'constrained_run', 'ssca', "[SSCA] Algorithm 2 (one client, closed-form step): T rounds",
    inputs=("W1", "W2", "X", "y", "batches", "tau", "rho_a", "rho_alpha", "gamma_a", "gamma_alpha", "U",
            "c", "curvature"),
    outputs=("W1", "W2", "A", "nu", "slack", "loss_hat"),
    description=("constrained SSCA on the swish network without bias: per round t = 1..T, ℓ̂ and ĝ the mean "
                 "loss and gradient on batches[t−1], ρ_t = rho_a/t^rho_alpha, γ_t = gamma_a/t^gamma_alpha; the "
                 "surrogate of the loss updated as surrogate_update from A⁰ = 0, B⁰ = 0, C⁰ = 0 (curvature "
                 "'recursive' or 'fixed'); ω̄ and the slack and multiplier from the closed form of Lemma 1 "
                 "with bound U and penalty c; ω ← (1 − γ_t)ω + γ_t ω̄. Outputs: the final W1, W2 and per round "
                 "A^t, ν^t, s^t and ℓ̂^t"),
    reference=_ref_constrained_run, cases=_cases_constrained_run, witnesses=_W_CONSTRAINED_RUN)


FAMILIES = (SURROGATE_UPDATE, UNCONSTRAINED_STEP, MOVE, CLOSED_FORM_STEP, CLIENT_AGGREGATE, CONSTRAINED_RUN,)
