"""Conformance families of [FlexVFL]: local optimizers as gradient weights, condition (14), one round, the local step counts, the adaptive rate and the simulated clocks. Each family is one record: its spec, its reference
function (refimpl's NumPy twin) and its cases, side by side (:class:`refimpl.conformance.family.Family`)."""
from __future__ import annotations

import numpy as np

from refimpl.conformance.family import Family


def _ref_local_weights(optimizer, param, tau, eta):
    from refimpl.vfl.local_optimizers import make_optimizer
    spec = optimizer if optimizer == "sgd" else f"{optimizer}:{param!r}"
    return make_optimizer(spec).weights(int(tau), float(eta))


def _cases_local_weights(rng):
    return [dict(id=f"local_weights-{i}", comment=c, flags=f, inputs=dict(optimizer=o, param=p, tau=t, eta=0.05),
                 tol={"rel": 1e-14})
            for i, (o, p, t, f, c) in enumerate((
                ("sgd", 0.0, 4, [], "w = 1"),
                ("momentum", 0.9, 6, [], "w^t = (1 − ρ^{τ−t})/(1 − ρ)"),
                ("proximal", 0.2, 5, ["paper-exponent-typo"], "w^t = (1 − ημ)^{τ−1−t} (the paper prints τ − t + 1)"),
                ("time-varying-lr", 0.3, 5, [], "w^t = 1/(1 + decay·t)"),
                ("momentum", 0.5, 1, ["tau=1"], "one local step")))]


def _proximal_exponent(i, e):
    """w^t = (1 − ημ)^{τ−1−t}, which the printed exponent τ − t + 1 would not give."""
    r, t = 1 - i["eta"] * i["param"], np.arange(int(i["tau"]))
    return (i["optimizer"] == "proximal" and np.allclose(e["w"], r ** (i["tau"] - 1 - t), rtol=1e-14, atol=0)
            and not np.allclose(e["w"], r ** (i["tau"] - t + 1), rtol=1e-6, atol=0))


_W_LOCAL_WEIGHTS = {
    "paper-exponent-typo": lambda c: _proximal_exponent(c["inputs"], c["expected"]),
    "tau=1": lambda c: c["inputs"]["tau"] == 1 and np.size(c["expected"]["w"]) == 1,
}


LOCAL_WEIGHTS = Family(
    'local_weights', 'vfl', "[FlexVFL] (8)",
    inputs=("optimizer", "param", "tau", "eta"),
    outputs=("w",),
    description=("weights w^t, t = 0..τ−1, with θ^τ − θ^0 = −η Σ_t w^t g^t; optimizer sgd | momentum (ρ) | "
                 "proximal (μ) | time-varying-lr (decay)"),
    reference=_ref_local_weights, cases=_cases_local_weights, witnesses=_W_LOCAL_WEIGHTS)


def _ref_local_update(optimizer, param, g, theta, theta0, state, eta, t):
    from refimpl.vfl.local_optimizers import make_optimizer
    opt = make_optimizer(optimizer if optimizer == "sgd" else f"{optimizer}:{param!r}")
    st = opt.init(np.asarray(theta, float)) if optimizer != "momentum" else np.asarray(state, float)
    th, st = opt.update(np.asarray(g, float), st, np.asarray(theta, float), np.asarray(theta0, float), float(eta),
                        int(t))
    return th, (np.zeros_like(th) if st is None else st)


def _cases_local_update(rng):
    n = 6
    return [dict(id=f"local_update-{i}", comment=c, flags=f,
                 inputs=dict(optimizer=o, param=p, g=rng.standard_normal(n), theta=rng.standard_normal(n),
                             theta0=rng.standard_normal(n), state=rng.standard_normal(n) * (o == "momentum"),
                             eta=0.05, t=t), tol={"rel": 1e-15})
            for i, (o, p, t, f, c) in enumerate((
                ("sgd", 0.0, 0, [], "plain step"),
                ("momentum", 0.9, 2, ["heavy-ball-not-dampened"], "u = ρu + g (not ρu + (1 − ρ)g)"),
                ("proximal", 0.3, 1, ["proximal-sign"], "pull towards θ^{r,0}: + μ(θ^t − θ^0)"),
                ("time-varying-lr", 0.5, 3, ["step-index-t"], "step t uses 1/(1 + decay·t), t from 0")))]


def _undampened(i, e):
    """u = ρu + g, and the dampened ρu + (1 − ρ)g would differ."""
    rho, u, g = i["param"], i["state"], i["g"]
    return (i["optimizer"] == "momentum" and 0 < rho < 1 and np.allclose(e["state"], rho * u + g, rtol=1e-14)
            and not np.allclose(e["state"], rho * u + (1 - rho) * g, rtol=1e-6))


def _pull_sign(i, e):
    step = i["g"] + i["param"] * (i["theta"] - i["theta0"])
    return (i["optimizer"] == "proximal" and i["param"] > 0 and bool(np.any(i["theta"] != i["theta0"]))
            and np.allclose(e["theta"], i["theta"] - i["eta"] * step, rtol=1e-14))


_W_LOCAL_UPDATE = {
    "heavy-ball-not-dampened": lambda c: _undampened(c["inputs"], c["expected"]),
    "proximal-sign": lambda c: _pull_sign(c["inputs"], c["expected"]),
    # step t's factor 1/(1 + decay·t) with t > 0, so counting steps from 1 would differ
    "step-index-t": lambda c: c["inputs"]["optimizer"] == "time-varying-lr" and c["inputs"]["t"] > 0
    and c["inputs"]["param"] > 0,
}


LOCAL_UPDATE = Family(
    'local_update', 'vfl', "[FlexVFL] (6)",
    inputs=("optimizer", "param", "g", "theta", "theta0", "state", "eta", "t"),
    outputs=("theta", "state"),
    description=("one local step θ^{t+1} = θ^t − η D(g^t): sgd D = g; momentum u = ρu + g, D = u (state: u); "
                 "proximal D = g + μ(θ^t − θ^0); time-varying-lr D = g/(1 + decay·t); state zeros when unused"),
    reference=_ref_local_update, cases=_cases_local_update, witnesses=_W_LOCAL_UPDATE)


def _ref_condition14(eta, tau, w_bar, L, L_k):
    from refimpl.vfl.flexvfl import condition14
    eta, tau, w_bar, L_k = (np.asarray(a, float) for a in (eta, tau, w_bar, L_k))
    return condition14(eta, tau, w_bar, float(L), L_k).astype(np.float64)


def _cases_condition14(rng):
    return [dict(id="condition14-0", comment="a party on each side of (14), one exactly on it and one between "
                 "1/(16·…) and 1/(8·…) (the constant 16, not 8)", flags=["boundary", "constant-16"],
                 inputs=dict(eta=np.array([1e-3, 0.2, 1.0 / (16 * 2.0 * 4 * 1.0), 1.5 / (16 * 2.0 * 4 * 1.0)]),
                             tau=np.array([4.0, 4.0, 4.0, 4.0]), w_bar=np.array([1.0, 1.0, 1.0, 1.0]), L=2.0,
                             L_k=np.array([1.0, 1.5, 0.5, 1.0])),
                 tol={"rel": 0.0}),
            dict(id="condition14-1", comment="τ_k and w̄_k differ across parties and w̄_k ≠ 1: the bound's product "
                 "τ_k w̄_k, told from τ_k / w̄_k and from τ_k alone", flags=["constant-16", "tau-times-w_bar"],
                 inputs=dict(eta=np.array([0.03, 0.005, 0.02]), tau=np.array([2.0, 8.0, 3.0]),
                             w_bar=np.array([0.5, 2.0, 1.25]), L=1.0, L_k=np.array([1.0, 2.0, 1.0])),
                 tol={"rel": 0.0})]


def _bound14(i, constant):
    return 1.0 / (constant * np.maximum(i["L"], i["L_k"]) * i["tau"] * i["w_bar"])


_W_CONDITION14 = {
    # a party exactly on (14) holds; the verdicts differ across parties
    "boundary": lambda c: bool(np.any((c["inputs"]["eta"] == _bound14(c["inputs"], 16))
                                      & (c["expected"]["holds"] == 1))) and np.ptp(c["expected"]["holds"]) == 1,
    "constant-16": lambda c: bool(np.any((c["inputs"]["eta"] > _bound14(c["inputs"], 16))
                                         & (c["inputs"]["eta"] <= _bound14(c["inputs"], 8))
                                         & (c["expected"]["holds"] == 0))),
    # the verdicts differ from those of τ_k / w̄_k and from those of τ_k alone
    "tau-times-w_bar": lambda c: all(bool(np.any((c["inputs"]["eta"] <= _bound14(dict(c["inputs"], w_bar=w), 16))
                                                 != (c["expected"]["holds"] == 1)))
                                     for w in (1.0 / c["inputs"]["w_bar"], 1.0)),
}


CONDITION14 = Family(
    'condition14', 'vfl', "[FlexVFL] (14)",
    inputs=("eta", "tau", "w_bar", "L", "L_k"),
    outputs=("holds",),
    description=("η_k ≤ 1 / (16 max{L, L_k} τ_k w̄_k) per party (1.0 holds, 0.0 does not)"),
    reference=_ref_condition14, cases=_cases_condition14, witnesses=_W_CONDITION14)


def _ref_vfl_round(W0, W1, W2, X1, X2, y, tau, eta, optimizer, param, labels, s0, s1, s2):
    from refimpl.vfl.flexvfl import local_round
    from refimpl.vfl.local_optimizers import make_optimizer
    from refimpl.vfl.models import LinearEncoder, LinearFusion, VerticalModel
    W0, W1, W2, X1, X2 = (np.asarray(a, dtype=np.float64) for a in (W0, W1, W2, X1, X2))
    model = VerticalModel((LinearEncoder(X1.shape[1], W1.shape[0]), LinearEncoder(X2.shape[1], W2.shape[0])),
                          LinearFusion(W1.shape[0] + W2.shape[0], W0.shape[0]))
    opt = make_optimizer(optimizer if optimizer == "sgd" else f"{optimizer}:{param!r}")
    states = [np.asarray(s, dtype=np.float64).ravel() if optimizer == "momentum" else None for s in (s0, s1, s2)]
    # the runner's own round, on its NumPy path (the Numba party loop is checked against it)
    _, _, new, _, out = local_round(model, [W0.ravel(), W1.ravel(), W2.ravel()], [X1, X2],
                                    np.asarray(y, dtype=np.int64), [opt] * 3, tau=[int(t) for t in tau],
                                    eta=[float(e) for e in eta], labels=labels, use_numba=False, states=states)
    shapes = (W0.shape, W1.shape, W2.shape)
    return (*(n.reshape(sh) for n, sh in zip(new, shapes)),
            *(np.zeros(sh) if o is None else np.asarray(o).reshape(sh) for o, sh in zip(out, shapes)))


def _cases_vfl_round(rng):
    B, d1, d2, O1, O2, C = 6, 4, 3, 2, 3, 3

    def inputs(tau, eta, optimizer="sgd", param=0.0, labels="all", state=0.0):
        W0, W1, W2 = (rng.standard_normal(sh) * 0.5 for sh in ((C, O1 + O2 + 1), (O1, d1 + 1), (O2, d2 + 1)))
        return dict(W0=W0, W1=W1, W2=W2, X1=rng.standard_normal((B, d1)), X2=rng.standard_normal((B, d2)),
                    y=rng.integers(0, C, B), tau=np.array(tau, dtype=np.int64), eta=np.array(eta, dtype=np.float64),
                    optimizer=optimizer, param=param, labels=labels,
                    s0=rng.standard_normal(W0.shape) * state, s1=rng.standard_normal(W1.shape) * state,
                    s2=rng.standard_normal(W2.shape) * state)
    return [dict(id=f"vfl_round-{i}", comment=c, flags=f, inputs=inputs(**kw), tol={"rel": 1e-13})
            for i, (kw, f, c) in enumerate((
                (dict(tau=[3, 2, 5], eta=[0.1, 0.1, 0.1]), ["stale-embeddings", "server-keeps-round-start-H"],
                 "Flex-VFL: unequal τ; each party sees the others' round-start embeddings"),
                (dict(tau=[4, 4, 4], eta=[0.2, 0.2, 0.2]), ["server-keeps-round-start-H"], "synchronous VFL: Q = 4 steps for every party"),
                (dict(tau=[1, 1, 1], eta=[0.3, 0.3, 0.3]), ["one-step"], "P-BCD: one step per party"),
                (dict(tau=[2, 6, 3], eta=[0.05, 0.02, 0.04]), ["per-party-eta", "stale-embeddings", "server-keeps-round-start-H"],
                 "adaptive Flex-VFL: a different η_k per party"),
                (dict(tau=[3, 3, 2], eta=[0.1, 0.1, 0.1], optimizer="momentum", param=0.9),
                 ["momentum-reset", "stale-embeddings", "server-keeps-round-start-H"], "momentum, buffers reset at the round start (s = 0)"),
                (dict(tau=[3, 3, 2], eta=[0.1, 0.1, 0.1], optimizer="momentum", param=0.9, state=1.0),
                 ["momentum-persistent", "stale-embeddings", "server-keeps-round-start-H"], "momentum, buffers carried from the previous round (the authors' MOSEI "
                                          "solver): the end buffers are the next round's start"),
                (dict(tau=[2, 3, 4], eta=[0.1, 0.1, 0.1], optimizer="proximal", param=0.5),
                 ["proximal-anchor-round-start", "stale-embeddings", "server-keeps-round-start-H"], "proximal: the pull is towards θ^{r,0}, the round's start"),
                (dict(tau=[2, 3, 4], eta=[0.1, 0.1, 0.1], labels="server"), ["labels-at-server", "stale-gradient", "stale-embeddings",
                                                                       "server-keeps-round-start-H"],
                 "labels only at the server: each party steps along the ∂l/∂h_k sent at the round start")))]


_W_VFL_ROUND = {
    "stale-embeddings": lambda c: np.ptp(c["inputs"]["tau"][1:]) > 0 and c["inputs"]["tau"][1:].max() > 1,
    "server-keeps-round-start-H": lambda c: c["inputs"]["tau"][0] > 1,
    "one-step": lambda c: bool(np.all(c["inputs"]["tau"] == 1)),
    "per-party-eta": lambda c: np.unique(c["inputs"]["eta"]).size == c["inputs"]["eta"].size,
    "momentum-reset": lambda c: c["inputs"]["optimizer"] == "momentum"
    and not any(np.any(c["inputs"][s]) for s in ("s0", "s1", "s2")),
    "momentum-persistent": lambda c: c["inputs"]["optimizer"] == "momentum"
    and all(np.all(c["inputs"][s] != 0) for s in ("s0", "s1", "s2")),
    "proximal-anchor-round-start": lambda c: c["inputs"]["optimizer"] == "proximal" and c["inputs"]["param"] > 0
    and c["inputs"]["tau"].max() >= 2,
    "labels-at-server": lambda c: c["inputs"]["labels"] == "server",
    "stale-gradient": lambda c: c["inputs"]["labels"] == "server" and c["inputs"]["tau"][1:].max() >= 2,
}


VFL_ROUND = Family(
    'vfl_round', 'vfl', "[FlexVFL] Algorithm 1, (5)–(6): one round",
    inputs=("W0", "W1", "W2", "X1", "X2", "y", "tau", "eta", "optimizer", "param", "labels", "s0", "s1", "s2"),
    outputs=("W0", "W1", "W2", "s0", "s1", "s2"),
    description=("one global round of two parties with linear encoders h_k = X_k W_k[:, 1:]ᵀ + W_k[:, 0] and a "
                 "linear server head on [h_1, h_2] (softmax cross-entropy, mean over the batch): H from Θ^{r,0}; "
                 "the server takes τ_0 steps on W0 with H fixed; party k takes τ_k steps on W_k with W0 and the "
                 "other party's embedding at their round-start values (labels 'all': ∂l/∂h_k recomputed at each "
                 "step from the party's fresh h_k; 'server': the ∂l/∂h_k the server sent at the round start); "
                 "local steps as local_update (θ^{r,0} is the round's start); s_k: party k's momentum buffer "
                 "at the round start and end (zeros: a reset; unused optimizers return zeros)"),
    reference=_ref_vfl_round, cases=_cases_vfl_round, witnesses=_W_VFL_ROUND)


def _ref_vfl_taus(rule, timeout, Q, server_steps, step_times):
    from refimpl.vfl.policies import FixedSteps, ServerSteps, StepsFromTimeout
    steps = StepsFromTimeout(float(timeout)) if rule == "timeout" else FixedSteps(int(Q))
    if rule not in ("timeout", "fixed"):
        raise ValueError(f"rule must be 'timeout' or 'fixed', got {rule!r}")
    if int(server_steps) > 0:
        steps = ServerSteps(steps, int(server_steps))
    return steps.taus(1, np.asarray(step_times, dtype=np.float64)).astype(np.int64)


def _cases_vfl_taus(rng):
    st = np.array([0.2, 1.0, 1.5, 3.4, 12.0])
    return [dict(id=f"vfl_taus-{i}", comment=c, flags=f, inputs=dict(rule=r, timeout=t, Q=q, server_steps=sv,
                                                                    step_times=x), tol={"rel": 0.0})
            for i, (r, t, q, sv, x, f, c) in enumerate((
                ("timeout", 10.0, 0, 0, st, ["floor-not-round", "at-least-one-step", "exact-division", "double-quotient"],
                 "Flex-VFL: ⌊10/s⌋, and one step for the party slower than the timeout"),
                ("timeout", 10.0, 0, 0, np.array([2.5, 0.5, 10.0 / 3.0, 5.0]), ["exact-division", "double-quotient"],
                 "the floor of the double quotient: fl(10/fl(10/3)) = 3.0 gives 3 steps, while the exact quotient "
                 "of the two doubles is just below 3 (Python's 10.0 // (10/3) = 2.0)"),
                ("timeout", 1.0, 0, 0, np.array([0.1, 0.25, 0.2, 0.5]), ["double-quotient", "exact-division"],
                 "fl(1.0/0.1) = 10.0 gives 10 steps (Python's 1.0 // 0.1 = 9.0)"),
                ("timeout", 0.3, 0, 0, np.array([0.1, 0.3, 0.05]), ["floor-not-round"],
                 "fl(0.3/0.1) = 2.9999999999999996 gives 2 steps: the quotient of the doubles, not of singles"),
                ("fixed", 0.0, 5, 0, st, [], "synchronous VFL: Q = 5 for every party"),
                ("fixed", 0.0, 1, 0, st, [], "P-BCD: one step"),
                ("timeout", 10.0, 0, 5, st, ["server-steps-fixed", "floor-not-round", "at-least-one-step"],
                 "the authors' protocol: the server takes 5 steps whatever its speed"),
                ("timeout", 10.0, 0, 1, st, ["server-steps-fixed", "server-steps-one", "floor-not-round",
                                               "at-least-one-step"],
                 "the authors' P-BCD: the server takes one step, not ⌊10/0.2⌋ = 50")))]


def _quotients(i):
    return np.array([i["timeout"] / s for s in i["step_times"]]), np.array([i["timeout"] // s for s in i["step_times"]])


def _double_quotient(i, e):
    """Some party where ⌊fl(t/s)⌋ and Python's t // s differ, counted ⌊fl(t/s)⌋."""
    q, exact = _quotients(i)
    k = np.flatnonzero(np.floor(q) != exact)
    return i["rule"] == "timeout" and k.size > 0 and bool(np.all(e["tau"][k] == np.floor(q[k])))


def _exact_division(i, e):
    q, _ = _quotients(i)
    k = np.flatnonzero((q == np.floor(q)) & (q >= 2))
    return i["rule"] == "timeout" and k.size > 0 and bool(np.all(e["tau"][k] == q[k]))


def _floor_not_round(i, e):
    q, _ = _quotients(i)
    k = np.flatnonzero((q - np.floor(q) >= 0.5) & (q > 1))
    return i["rule"] == "timeout" and k.size > 0 and bool(np.all(e["tau"][k] == np.floor(q[k])))


def _server_fixed(i, e):
    own = max(1.0, np.floor(i["timeout"] / i["step_times"][0])) if i["rule"] == "timeout" else i["Q"]
    return i["server_steps"] > 0 and e["tau"][0] == i["server_steps"] != own


_W_VFL_TAUS = {
    "floor-not-round": lambda c: _floor_not_round(c["inputs"], c["expected"]),
    "at-least-one-step": lambda c: c["inputs"]["rule"] == "timeout"
    and bool(np.any((c["inputs"]["step_times"] > c["inputs"]["timeout"]) & (c["expected"]["tau"] == 1))),
    "exact-division": lambda c: _exact_division(c["inputs"], c["expected"]),
    "double-quotient": lambda c: _double_quotient(c["inputs"], c["expected"]),
    "server-steps-fixed": lambda c: _server_fixed(c["inputs"], c["expected"]),
    "server-steps-one": lambda c: c["inputs"]["server_steps"] == 1 and _server_fixed(c["inputs"], c["expected"]),
}


VFL_TAUS = Family(
    'vfl_taus', 'vfl', "[FlexVFL] Algorithm 1, line 4; synchronous VFL; P-BCD",
    inputs=("rule", "timeout", "Q", "server_steps", "step_times"),
    outputs=("tau",),
    description=("local step counts: rule 'timeout' τ_k = max(1, ⌊fl(timeout / s_k)⌋), the floor of the "
                 "double-precision quotient (numpy.floor(t / s) or int(t / s), not Python's t // s, which floors "
                 "the exact quotient of the two doubles) (Flex-VFL), 'fixed' τ_k = Q "
                 "(synchronous VFL; P-BCD with Q = 1); server_steps > 0 sets the server's (party 0's) count "
                 "whatever its speed (the authors' protocol)"),
    reference=_ref_vfl_taus, cases=_cases_vfl_taus, witnesses=_W_VFL_TAUS)


def _ref_vfl_adaptive_eta(rule, A, eta, prev, tau, w_bar):
    from refimpl.vfl.policies import AuthorsAdaptive, PaperAdaptive
    A, eta, prev, tau, w_bar = (np.asarray(a, dtype=np.float64) for a in (A, eta, prev, tau, w_bar))
    if rule == "paper":
        e, _ = PaperAdaptive(A, 1.0).update(eta, None, tau, w_bar)
        return e, prev
    if rule == "authors":
        e, p = AuthorsAdaptive(A).update(eta, prev, tau, w_bar)
        return e, np.asarray(p, dtype=np.float64)
    raise ValueError(f"rule must be 'paper' or 'authors', got {rule!r}")


def _cases_vfl_adaptive_eta(rng):
    A, tau = np.array([0.5, 1.0, 0.8]), np.array([4.0, 2.0, 7.0])
    return [dict(id=f"vfl_adaptive_eta-{i}", comment=c, flags=f,
                 inputs=dict(rule=r, A=A, eta=np.array([0.1, 0.2, 0.05]), prev=np.array([10.0, 10.0, 10.0]),
                             tau=tau, w_bar=wb), tol={"rel": 1e-15})
            for i, (r, wb, f, c) in enumerate((
                ("paper", np.array([1.0, 1.0, 1.0]), [], "SGD: w̄ = 1, η_k = A_k/τ_k"),
                ("paper", np.array([3.439, 1.9, 5.217031]), ["w-bar-not-W"],
                 "momentum: w̄ = max_t w^t (not W = Σ_t w^t)"),
                ("authors", np.array([3.439, 1.9, 5.217031]), ["previous-tau"],
                 "the authors' rule: η ← η·prev/τ, no w̄")))]


_W_VFL_ADAPTIVE_ETA = {
    "w-bar-not-W": lambda c: c["inputs"]["rule"] == "paper" and bool(np.all(c["inputs"]["w_bar"] > 1)),
    "previous-tau": lambda c: c["inputs"]["rule"] == "authors"
    and bool(np.all(c["inputs"]["prev"] != c["inputs"]["tau"]))
    and np.array_equal(c["expected"]["prev"], c["inputs"]["tau"]),
}


VFL_ADAPTIVE_ETA = Family(
    'vfl_adaptive_eta', 'vfl', "[FlexVFL] Algorithm 2, line 11",
    inputs=("rule", "A", "eta", "prev", "tau", "w_bar"),
    outputs=("eta", "prev"),
    description=("the next round's step sizes: rule 'paper' η_k = A_k / (τ_k w̄_k) (prev unchanged); "
                 "'authors' η_k ← η_k · prev_k / τ_k and prev ← τ (their adaptive code, no w̄)"),
    reference=_ref_vfl_adaptive_eta, cases=_cases_vfl_adaptive_eta, witnesses=_W_VFL_ADAPTIVE_ETA)


def _ref_vfl_round_time(step_times, tau, timeout, server_free, floats_up, floats_down, bandwidth, latency,
                        server_time):
    from refimpl.vfl.policies import RoundClock
    from refimpl.vfl.speeds import Network
    clock = RoundClock(Network(float(bandwidth), float(latency), float(server_time)),
                       float(timeout) if timeout > 0 else None, bool(server_free))
    st = np.asarray(step_times, dtype=np.float64)
    return (clock.duration(st, np.asarray(tau, dtype=np.float64), float(floats_up), float(floats_down)),
            clock.overruns(st).astype(np.float64))


def _cases_vfl_round_time(rng):
    st = np.array([0.5, 1.0, 3.0])
    out = []
    for tau, tmo, free, st_, flags, comment in (
            ([4, 4, 4], 0.0, 0, st, [], "synchronous VFL: Q·max_k s_k + messages + S"),
            ([10, 5, 1], 6.0, 0, st, ["at-least-the-timeout"],
             "Flex-VFL: every participant is done before the timeout (τ_k s_k ≤ 5 < 6): the round lasts it"),
            ([4, 6, 2], 6.0, 1, np.array([4.0, 1.0, 3.5]), ["server-free"],
             "the authors' protocol: the server's compute (4 · 4 = 16) is free"),
            ([4, 4, 4], 0.0, 0, np.array([4.0, 1.0, 3.0]), ["slow-server"], "the server's compute counts otherwise"),
            ([12, 6, 1], 6.0, 0, np.array([0.5, 1.0, 8.0]), ["overrun"],
             "a party's one step (8) outlasts the timeout: flagged, and the round lasts it"),
            ([3, 2, 1], 0.0, 0, np.array([0.1, 0.3, 0.7]), [],
             "step times no power of two divides (0.1, 0.3, 0.7), read in double precision")):
        out.append(dict(id=f"vfl_round_time-{len(out)}", comment=comment, flags=flags,
                        inputs=dict(step_times=st_, tau=np.array(tau, dtype=np.int64), timeout=tmo, server_free=free,
                                    floats_up=1200.0, floats_down=800.0, bandwidth=1e6, latency=0.01,
                                    server_time=10.0), tol={"rel": 1e-15}))
    return out


def _compute(i):
    """Each participant's τ_k s_k (the server's first)."""
    return i["tau"] * i["step_times"]


_W_VFL_ROUND_TIME = {
    "at-least-the-timeout": lambda c: c["inputs"]["timeout"] > 0 and not c["inputs"]["server_free"]
    and _compute(c["inputs"]).max() < c["inputs"]["timeout"],
    # the server's compute would be the longest, and it is free
    "server-free": lambda c: bool(c["inputs"]["server_free"])
    and _compute(c["inputs"])[0] > max(_compute(c["inputs"])[1:].max(), c["inputs"]["timeout"]),
    "slow-server": lambda c: not c["inputs"]["server_free"]
    and _compute(c["inputs"])[0] > max(_compute(c["inputs"])[1:].max(), c["inputs"]["timeout"]),
    "overrun": lambda c: c["inputs"]["timeout"] > 0
    and bool(np.any((c["inputs"]["step_times"] > c["inputs"]["timeout"]) & (c["expected"]["overrun"] == 1))),
}


VFL_ROUND_TIME = Family(
    'vfl_round_time', 'vfl', "[FlexVFL] the simulated clock of one round",
    inputs=("step_times", "tau", "timeout", "server_free", "floats_up", "floats_down", "bandwidth",
            "latency", "server_time"),
    outputs=("duration", "overrun"),
    description=("duration = max_k τ_k s_k (participants 0..K; without the server, 0, when server_free: "
                 "the authors' protocol), at least the timeout when timeout > 0 (Flex-VFL), plus the upload "
                 "and the download (each latency + 8·floats/bandwidth) plus the server round trip S; "
                 "overrun_k = 1.0 when one step of party k outlasts the timeout (timeout > 0)"),
    reference=_ref_vfl_round_time, cases=_cases_vfl_round_time, witnesses=_W_VFL_ROUND_TIME)


def _ref_vfl_async_events(speeds, msg, server_time, server_free, n_events):
    from refimpl.vfl.policies import AsyncServerQueue
    q = AsyncServerQueue(np.asarray(speeds, dtype=np.float64), np.asarray(msg, dtype=np.float64), float(server_time),
                         bool(server_free))
    times, parties = [], []
    for _ in range(int(n_events)):
        now, k = q.next()
        q.served(now, k)
        times.append(now)
        parties.append(k)
    return np.array(times), np.array(parties, dtype=np.int64)


def _cases_vfl_async_events(rng):
    out = []
    for speeds, msg, S, free, n, flags, comment in (
            ([[2.0, 1.0, 1.0]], [0.0, 0.0, 0.0], 0.0, 0, 6, ["server-bound", "wait-while-busy", "tie-lower-party-first"],
             "a slow server: events every s_0, each party waiting"),
            ([[0.5, 1.0, 1.0]], [0.0, 0.0, 0.0], 1.0, 0, 6, ["wait-while-busy", "tie-lower-party-first"],
             "equal arrivals: party 1 first, party 2 waits for the server"),
            ([[0.5, 1.0, 1.0]], [0.0, 0.0, 0.0], 1.0, 1, 6, ["server-free", "tie-lower-party-first"], "the authors' free server"),
            (np.abs(rng.standard_normal((4, 4))) + 0.2, [0.0, 0.05, 0.1, 0.02], 0.5, 0, 12, ["speed-rows-cycled"],
             "three parties, time-varying speeds (rows cycled per party), message times")):
        out.append(dict(id=f"vfl_async_events-{len(out)}", comment=comment, flags=flags,
                        inputs=dict(speeds=np.array(speeds, float), msg=np.array(msg, float), server_time=S,
                                    server_free=free, n_events=n), tol={"rel": 1e-15}))
    return out


def _first_arrivals(i):
    return i["speeds"][0][1:] + i["msg"][1:]


_W_VFL_ASYNC_EVENTS = {
    # the server's step is the slowest, so events follow each other every s_0
    "server-bound": lambda c: not c["inputs"]["server_free"]
    and c["inputs"]["speeds"][0][0] > c["inputs"]["speeds"][0][1:].max()
    and np.allclose(np.diff(c["expected"]["time"])[1:], c["inputs"]["speeds"][0][0] + c["inputs"]["server_time"]),
    # the second event starts after its own arrival: it waited for the busy server
    "wait-while-busy": lambda c: c["expected"]["time"][1] > _first_arrivals(c["inputs"])[c["expected"]["party"][1] - 1],
    "tie-lower-party-first": lambda c: np.unique(_first_arrivals(c["inputs"])).size < _first_arrivals(c["inputs"]).size
    and c["expected"]["party"][0] == 1 + int(np.argmin(_first_arrivals(c["inputs"]))),
    "server-free": lambda c: bool(c["inputs"]["server_free"]) and c["inputs"]["speeds"][0][0] > 0,
    "speed-rows-cycled": lambda c: len(c["inputs"]["speeds"]) > 1
    and np.bincount(c["expected"]["party"]).max() > len(c["inputs"]["speeds"]),
}


VFL_ASYNC_EVENTS = Family(
    'vfl_async_events', 'vfl', "[FlexVFL] the asynchronous baseline's event clock",
    inputs=("speeds", "msg", "server_time", "server_free", "n_events"),
    outputs=("time", "party"),
    description=("parties 1..K send embeddings at their own pace and the server serves them one at a time "
                 "in order of arrival (ties: the lower party first), waiting while busy: party k's first "
                 "arrival s_k + msg_k (row 0 of speeds); an event starts at max(arrival, server free); the "
                 "server's step takes s_0 (0 when server_free), then S, the reply msg_k, the party's next "
                 "step s_k and its upload msg_k give the next arrival; party k's i-th cycle reads row i "
                 "mod R of speeds. time: each event's start; party: whose embedding"),
    reference=_ref_vfl_async_events, cases=_cases_vfl_async_events, witnesses=_W_VFL_ASYNC_EVENTS)


FAMILIES = (LOCAL_WEIGHTS, LOCAL_UPDATE, CONDITION14, VFL_ROUND, VFL_TAUS, VFL_ADAPTIVE_ETA, VFL_ROUND_TIME, VFL_ASYNC_EVENTS,)
