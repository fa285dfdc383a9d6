"""Conformance vectors: one file of cases per equation family, generated deterministically from
refimpl's NumPy twins, that any implementation in any language can load into its own tests.

Each family names the function an adapter provides (:data:`FAMILIES`: its inputs and outputs in
order), the paper's equation, and a list of cases ``{id, equation, comment, flags, inputs,
expected, tol}``; a flag names the edge or the known mistake the case probes. Arrays are written
as ``{"shape": [...], "data": [row-major values]}`` (exact: Python's float repr round-trips),
scalars as numbers, names as strings; ``tol`` is ``{"rel": r}`` (max |Δ| ≤ r · max(|expected|, tiny))
or ``{"ulps": n}``. ``export`` writes the files, a JSON Schema per file and a manifest of SHA-256
checksums; ``load`` refuses a directory whose files do not match it. docs/conformance.md is the
walk-through.
"""
from __future__ import annotations

import hashlib
import json
import os

import numpy as np

SCHEMA_VERSION = 1

# family -> (paper, equation key, inputs in order, outputs in order, what it is)
FAMILIES = {
    "loss_grad": ("core", "[SSCA] (1), cost (32) without λ",
                  ("W1", "W2", "X", "y", "activation", "bias"), ("loss", "grad_W1", "grad_W2"),
                  "two-layer network: mean softmax cross-entropy over the rows of X and its gradient; bias in "
                  "column 0 of W1 and W2 when bias is true; ReLU'(0) = 0"),
    "exp_nonpos": ("core", "e^x for x ≤ 0 (the swish kernel's vectorised exp)", ("x",), ("y",),
                   "element-wise e^x on values ≤ 0, within 1 ulp of the correctly rounded value"),
    "surrogate_update": ("ssca", "[SSCA] (7)–(9)",
                         ("A", "B", "C", "loss_hat", "grad_hat", "omega", "rho", "tau", "curvature"), ("A", "B", "C"),
                         "surrogate recursion; curvature 'recursive' (A^t = (1−ρ)A + ρτ) or 'fixed' (A^t = τ)"),
    "unconstrained_step": ("ssca", "[SSCA] (10)", ("A", "B", "lam"), ("omega_bar",),
                           "ω̄ = −B / (2(A + λ))"),
    "move": ("ssca", "[SSCA] (5)", ("omega", "omega_bar", "gamma"), ("omega_next",),
             "ω^{t+1} = (1 − γ) ω^t + γ ω̄^t"),
    "closed_form_step": ("ssca", "[SSCA] Lemma 1, (43)–(45)", ("A", "B", "C", "U", "c"), ("omega_bar", "slack", "nu"),
                         "the constrained step's closed form; at an active constraint ω̄ is feasible in float64"),
    "client_aggregate": ("ssca", "[SSCA] Algorithm 1 steps 2–3 over Flower: the server's assembly",
                         ("sizes", "batch", "loss_sums", "grad_sums", "arrival", "batches"),
                         ("loss_hat", "grad_hat", "routed"),
                         "K clients hold N_k = sizes[k] samples (N = Σ N_k); the client of partition k replies with "
                         "the sums of its losses and gradients over its batch of B_k = batch[k] samples; replies "
                         "arrive in the order arrival (partition ids); ℓ̂ = Σ_k (N_k/N)(1/B_k) loss_sums[k] and ĝ "
                         "likewise, each reply matched to its partition id. routed[k]: the batch the client of "
                         "partition id k (0-based, as Flower's partition-id) reads from the round's configuration "
                         "(batches[k] sent as JSON {\"k\": [ids]})"),
    "constrained_run": ("ssca", "[SSCA] Algorithm 2 (one client, closed-form step): T rounds",
                        ("W1", "W2", "X", "y", "batches", "tau", "rho_a", "rho_alpha", "gamma_a", "gamma_alpha", "U",
                         "c", "curvature"), ("W1", "W2", "A", "nu", "slack", "loss_hat"),
                        "constrained SSCA on the swish network without bias: per round t = 1..T, ℓ̂ and ĝ the mean "
                        "loss and gradient on batches[t−1], ρ_t = rho_a/t^rho_alpha, γ_t = gamma_a/t^gamma_alpha; the "
                        "surrogate of the loss updated as surrogate_update from A⁰ = 0, B⁰ = 0, C⁰ = 0 (curvature "
                        "'recursive' or 'fixed'); ω̄ and the slack and multiplier from the closed form of Lemma 1 "
                        "with bound U and penalty c; ω ← (1 − γ_t)ω + γ_t ω̄. Outputs: the final W1, W2 and per round "
                        "A^t, ν^t, s^t and ℓ̂^t"),
    "local_weights": ("vfl", "[FlexVFL] (8)", ("optimizer", "param", "tau", "eta"), ("w",),
                      "weights w^t, t = 0..τ−1, with θ^τ − θ^0 = −η Σ_t w^t g^t; optimizer sgd | momentum (ρ) | "
                      "proximal (μ) | time-varying-lr (decay)"),
    "local_update": ("vfl", "[FlexVFL] (6)", ("optimizer", "param", "g", "theta", "theta0", "state", "eta", "t"),
                     ("theta", "state"),
                     "one local step θ^{t+1} = θ^t − η D(g^t): sgd D = g; momentum u = ρu + g, D = u (state: u); "
                     "proximal D = g + μ(θ^t − θ^0); time-varying-lr D = g/(1 + decay·t); state zeros when unused"),
    "condition14": ("vfl", "[FlexVFL] (14)", ("eta", "tau", "w_bar", "L", "L_k"), ("holds",),
                    "η_k ≤ 1 / (16 max{L, L_k} τ_k w̄_k) per party (1.0 holds, 0.0 does not)"),
    "storm_update": ("mfcgd", "[MFCGD] (7)–(9) on the synthetic problem",
                     ("A", "b", "c", "x_new", "x_old", "h", "u", "v", "zeta", "xi", "alpha", "beta", "varrho", "C_g",
                      "C_f"), ("h", "u", "v"),
                     "one client's recursions with g(x; ζ) = A x + b + ζ, ∇g = A, ∇f(y; ξ) = φ(y − c) + ξ, "
                     "φ(z) = z/sqrt(1 + z²); u projected on the Frobenius ball C_g, v on the ball C_f"),
    "storm_weights": ("mfcgd", "[MFCGD] Theorems 1–2 schedules", ("k", "n", "c1", "c2", "c3", "t"),
                      ("eta", "alpha", "beta", "varrho"),
                      "η_t = k/(n + t)^{1/3}; α_{t+1}, β_{t+1}, ϱ_{t+1} = min(1, c_i η_t²)"),
    "adaptive_matrix": ("mfcgd", "[MFCGD] line 6 and (6)", ("kind", "a", "a_max", "w_bar", "rho", "theta"),
                        ("a", "a_max", "A"),
                        "adam: a = ϑa + (1−ϑ)w̄², A = sqrt(a) + ρ; norm: a = ϑa + (1−ϑ)||w̄|| (scalar in a[0]), "
                        "A = (a + ρ)1; amsgrad: a_max = max(a_max, a), A = sqrt(a_max) + ρ"),
    "vfl_round": ("vfl", "[FlexVFL] Algorithm 1, (5)–(6): one round",
                  ("W0", "W1", "W2", "X1", "X2", "y", "tau", "eta", "optimizer", "param", "labels", "s0", "s1", "s2"),
                  ("W0", "W1", "W2", "s0", "s1", "s2"),
                  "one global round of two parties with linear encoders h_k = X_k W_k[:, 1:]ᵀ + W_k[:, 0] and a "
                  "linear server head on [h_1, h_2] (softmax cross-entropy, mean over the batch): H from Θ^{r,0}; "
                  "the server takes τ_0 steps on W0 with H fixed; party k takes τ_k steps on W_k with W0 and the "
                  "other party's embedding at their round-start values (labels 'all': ∂l/∂h_k recomputed at each "
                  "step from the party's fresh h_k; 'server': the ∂l/∂h_k the server sent at the round start); "
                  "local steps as local_update (θ^{r,0} is the round's start); s_k: party k's momentum buffer "
                  "at the round start and end (zeros: a reset; unused optimizers return zeros)"),
    "vfl_taus": ("vfl", "[FlexVFL] Algorithm 1, line 4; synchronous VFL; P-BCD",
                 ("rule", "timeout", "Q", "server_steps", "step_times"), ("tau",),
                 "local step counts: rule 'timeout' τ_k = max(1, ⌊timeout / s_k⌋) (Flex-VFL), 'fixed' τ_k = Q "
                 "(synchronous VFL; P-BCD with Q = 1); server_steps > 0 sets the server's (party 0's) count "
                 "whatever its speed (the authors' protocol)"),
    "vfl_adaptive_eta": ("vfl", "[FlexVFL] Algorithm 2, line 11", ("rule", "A", "eta", "prev", "tau", "w_bar"),
                         ("eta", "prev"),
                         "the next round's step sizes: rule 'paper' η_k = A_k / (τ_k w̄_k) (prev unchanged); "
                         "'authors' η_k ← η_k · prev_k / τ_k and prev ← τ (their adaptive code, no w̄)"),
    "full_cost": ("core", "[SSCA] (32) and its gradient over the whole data set; the authors' recorded cost",
                  ("W1", "W2", "X", "y", "activation", "bias", "lam"), ("loss", "ova_cost", "grad_W1", "grad_W2"),
                  "whole-data evaluations (refimpl evaluates them in chunks of 8,192 rows; one case has more rows "
                  "than a chunk): loss = the mean softmax cross-entropy; ova_cost = (1/N) Σ_n Σ_l [−y_nl log p_nl − "
                  "(1 − y_nl) log(1 − p_nl)] with p = softmax(logits), y one-hot (the SSCA authors' recorded cost); "
                  "grad = ∇ of loss + λ||ω||² (ω = W1 and W2)"),
    "partition": ("core", "sample-based partitions (iid, quantity:σ, dirichlet:α[:MIN], label_skew)",
                  ("kind", "n_clients", "labels", "permutations", "dirichlet", "normals"), ("owner", "draws"),
                  "the client of every sample given the random draws, replayed in the order the rule consumes "
                  "them: permutations (concatenated; each a permutation of 0..n−1 of the length asked for), "
                  "dirichlet (K shares per class and try, concatenated), normals (K standard normals). iid: "
                  "permute 0..N−1 and cut into K near-equal consecutive blocks (the first N mod K one longer); "
                  "quantity:σ: sizes 1 + ⌊w_k/Σw (N − K)⌋ with w = exp(σ z), the remainder to the largest (first "
                  "of equal), then permute 0..N−1 and cut; dirichlet:α: for each class in increasing order, permute "
                  "its sample ids (ascending), draw shares p and cut at ⌊cumsum(p)_k · n_c⌋, k < K; redraw all "
                  "classes until every client holds at least max(MIN, 1); label_skew: sort ids by label (stable), "
                  "cut into 2K near-equal shards, permute 0..2K−1 and give client k shards 2k and 2k + 1 of that "
                  "order. draws: how many permutations were consumed"),
    "divergence_stop": ("core", "the divergence rule (a run's stop)", ("costs", "sq_norms", "cost_factor", "max_sq_norm"),
                        ("index",),
                        "the first evaluation i (from 0) that counts as diverged, −1 if none: its cost is not finite, "
                        "or |cost_i| > cost_factor · max(|cost_0|, 1e-300) — the reference is the cost at the initial "
                        "point, not the previous evaluation's — or its iterate's squared norm is not finite or "
                        "exceeds max_sq_norm"),
    "tune_select": ("core", "reproduce --tune's selection rule", ("finished", "accuracy", "cost"), ("index",),
                    "the grid point chosen: among finished runs (1.0) with a numeric accuracy the highest final "
                    "validation accuracy, ties broken by the lowest final training cost, then the first; −1 when "
                    "no run finished"),
    "vfl_round_time": ("vfl", "[FlexVFL] the simulated clock of one round",
                       ("step_times", "tau", "timeout", "server_free", "floats_up", "floats_down", "bandwidth",
                        "latency", "server_time"), ("duration", "overrun"),
                       "duration = max_k τ_k s_k (participants 0..K; without the server, 0, when server_free: "
                       "the authors' protocol), at least the timeout when timeout > 0 (Flex-VFL), plus the upload "
                       "and the download (each latency + 8·floats/bandwidth) plus the server round trip S; "
                       "overrun_k = 1.0 when one step of party k outlasts the timeout (timeout > 0)"),
    "vfl_async_events": ("vfl", "[FlexVFL] the asynchronous baseline's event clock",
                         ("speeds", "msg", "server_time", "server_free", "n_events"), ("time", "party"),
                         "parties 1..K send embeddings at their own pace and the server serves them one at a time "
                         "in order of arrival (ties: the lower party first), waiting while busy: party k's first "
                         "arrival s_k + msg_k (row 0 of speeds); an event starts at max(arrival, server free); the "
                         "server's step takes s_0 (0 when server_free), then S, the reply msg_k, the party's next "
                         "step s_k and its upload msg_k give the next arrival; party k's i-th cycle reads row i "
                         "mod R of speeds. time: each event's start; party: whose embedding"),
    "scgd_run": ("mfcgd", "[MFCGD] Table 1 baselines: ComFedL-style local SCGD and Local-SCGDM",
                 ("A", "b", "c", "x1", "zeta0", "zeta", "zeta2", "xi", "T", "q", "eta", "beta", "alpha"),
                 ("x_bar", "samples", "rounds"),
                 "M clients of the synthetic problem (g_m(x; ζ) = A x + b_m + ζ, ∇f_m(y; ξ) = φ(y − c_m) + ξ, "
                 "φ(z) = z/sqrt(1 + z²)); y_m starts at g_m(x1; ζ0_m); per step t and client: y ← (1 − β)y + "
                 "β g(x; ζ_t), d = ∇g(x; ζ'_t)ᵀ ∇f(y; ξ_t), SCGD (alpha ≤ 0): x ← x − ηd; SCGDM: m ← (1 − α)m + "
                 "αd, x ← x − ηm (m starts at 0); when q divides t every client gets the mean x (SCGDM: x, y, m). "
                 "x_bar[t−1]: the clients' mean before step t; samples: M + 3Mt after step t; rounds: ⌊t/q⌋"),
    "mfcgd_run": ("mfcgd", "[MFCGD] Algorithm 1 on the synthetic problem: T steps",
                  ("A", "b", "c", "x1", "zeta0", "xi0", "zeta", "xi", "T", "q", "k", "n", "c1", "c2", "c3", "gamma",
                   "C_g", "C_f", "matrix", "rho", "theta"), ("x_bar", "samples", "rounds"),
                  "M clients (b, c: one row each) of the problem of storm_update. Line 1: h_m, u_m, v_m the means "
                  "over j < q of g_m(x1; ζ0_mj), ∇g = A, ∇f_m(h_m; ξ0_mj); w_m = u_mᵀv_m; A_1 from the adaptive-"
                  "matrix rule on w̄_1 (identity: A = I; adam / norm / amsgrad as adaptive_matrix from a = 0). "
                  "Step t = 1..T: x̄_t = mean of x_m; when q divides t, A_t from the rule on w̄_t and every "
                  "x_m ← x̄_t − γη_t A_t⁻¹ w̄_t, else x_m ← x_m − γη_t A_t⁻¹ w_m (A kept); then every client's "
                  "recursions (storm_update with α, β, ϱ of storm_weights at t and samples ζ_t, ξ_t). Outputs: "
                  "x̄_t for every t, samples 2qM + 2Mt and communication rounds ⌊t/q⌋ after step t"),
    "theorem_rhs": ("mfcgd", "[MFCGD] Theorems 1–2: G and the right sides of (14) and (16); Lemma 1's L",
                    ("C_f", "C_g", "L_f", "L_g", "sigma", "delta_f", "delta_g", "F_gap", "k", "n", "c1", "c2", "c3",
                     "gamma", "q", "rho", "T", "A_rms"), ("G", "rhs14", "rhs16", "L"),
                    "L_fg = sqrt(L_f²C_g² + L_g²), C_fg = max(C_f, C_g); δ̂² = 2c1²L_f²σ² + c3²σ² + "
                    "4c3²δ_f² + 4c3²L_f²δ_g² + c2²σ² + 3c2²δ_g²; G = 4F_gap/(kργ) + 12n^{1/3}σ²/(qk²ρ²) + "
                    "4k²(δ̂²/(4γ²L_fg²) + (c1² + c2² + c3²)σ²/(3ργqL_fgC_fg)) ln(n + T); rhs14 = (sqrt(2G) "
                    "n^{1/6}/sqrt(T) + sqrt(2G)/T^{1/3}) A_rms; rhs16 the same with ρ = 1 and no A_rms; L = "
                    "sqrt(2C_f²L_g² + 2C_g⁴L_f²), the smoothness of F (Lemma 1)"),
}
PAPERS = ("core", "ssca", "vfl", "mfcgd")


# ----------------------------------------------------------------------------- encoding

def encode(v):
    if isinstance(v, (str, bool)):
        return v
    a = np.asarray(v)
    if a.ndim == 0 and a.dtype.kind in "fiu":
        return float(a) if a.dtype.kind == "f" else int(a)
    return {"shape": list(a.shape), "data": [float(x) if a.dtype.kind == "f" else int(x) for x in a.ravel()]}


def decode(v):
    if isinstance(v, dict) and "shape" in v:
        return np.asarray(v["data"], dtype=np.float64 if any(isinstance(x, float) for x in v["data"]) or not v["data"]
                          else np.int64).reshape(v["shape"])
    return v


# ----------------------------------------------------------------------------- reference values

def reference(family, inputs):
    """refimpl's NumPy twin of a family on decoded inputs: the outputs as a dict."""
    f = _REFERENCE[family]
    out = f(**inputs)
    return dict(zip(FAMILIES[family][3], out if isinstance(out, tuple) else (out,)))


def _ref_loss_grad(W1, W2, X, y, activation, bias):
    from refimpl.core.model import TwoLayerNet
    m = TwoLayerNet(X.shape[1], W1.shape[0], W2.shape[0], activation, bool(bias), "numpy")
    th = m.pack(W1, W2)
    loss, g = m.loss_grad(th, X, np.asarray(y, dtype=np.int64))
    g1, g2 = m.unpack(g)
    return float(loss), g1.copy(), g2.copy()


def _ref_exp_nonpos(x):
    from refimpl.core.kernels import exp_nonpos_nb
    return exp_nonpos_nb(np.asarray(x, dtype=np.float64))


def _ref_surrogate_update(A, B, C, loss_hat, grad_hat, omega, rho, tau, curvature):
    from refimpl.ssca.surrogate import SurrogateState, surrogate_update
    s = surrogate_update(SurrogateState(float(A), np.asarray(B, float), float(C)), float(loss_hat),
                         np.asarray(grad_hat, float), np.asarray(omega, float), float(rho), float(tau), curvature)
    return float(s.A), s.B, float(s.C)


def _ref_unconstrained_step(A, B, lam):
    from refimpl.ssca.surrogate import SurrogateState, unconstrained_step
    return unconstrained_step(SurrogateState(float(A), np.asarray(B, float), 0.0), float(lam))


def _ref_move(omega, omega_bar, gamma):
    from refimpl.ssca.surrogate import move
    return move(np.asarray(omega, float), np.asarray(omega_bar, float), float(gamma))


def _ref_closed_form_step(A, B, C, U, c):
    from refimpl.ssca.constrained import closed_form_step
    from refimpl.ssca.surrogate import SurrogateState
    st = closed_form_step(SurrogateState(float(A), np.asarray(B, float), float(C)), float(U), float(c))
    return st.omega_bar, float(st.slack[0]), float(st.nu[0])


def _ref_local_weights(optimizer, param, tau, eta):
    from refimpl.vfl.local_optimizers import make_optimizer
    spec = optimizer if optimizer == "sgd" else f"{optimizer}:{param!r}"
    return make_optimizer(spec).weights(int(tau), float(eta))


def _ref_condition14(eta, tau, w_bar, L, L_k):
    from refimpl.vfl.flexvfl import condition14
    eta, tau, w_bar, L_k = (np.asarray(a, float) for a in (eta, tau, w_bar, L_k))
    return condition14(eta, tau, w_bar, float(L), L_k).astype(np.float64)


def _ref_local_update(optimizer, param, g, theta, theta0, state, eta, t):
    from refimpl.vfl.local_optimizers import make_optimizer
    opt = make_optimizer(optimizer if optimizer == "sgd" else f"{optimizer}:{param!r}")
    st = opt.init(np.asarray(theta, float)) if optimizer != "momentum" else np.asarray(state, float)
    th, st = opt.update(np.asarray(g, float), st, np.asarray(theta, float), np.asarray(theta0, float), float(eta),
                        int(t))
    return th, (np.zeros_like(th) if st is None else st)


def _ref_storm_weights(k, n, c1, c2, c3, t):
    from refimpl.mfcgd.algorithm import MFCGDParams
    p = MFCGDParams(k=float(k), n=float(n), c1=float(c1), c2=float(c2), c3=float(c3))
    a, b, r = p.momentum(int(t))
    return float(p.eta(int(t))), a, b, r


def _ref_storm_update(A, b, c, x_new, x_old, h, u, v, zeta, xi, alpha, beta, varrho, C_g, C_f):
    from refimpl.mfcgd.algorithm import storm_update
    from refimpl.mfcgd.problems import SyntheticComposition
    pr = SyntheticComposition(np.asarray(A, float), np.asarray(b, float)[None, :], np.asarray(c, float)[None, :])
    h2, u2, v2, _, _ = storm_update(pr, 0, np.asarray(x_new, float), np.asarray(x_old, float), np.asarray(h, float),
                                    np.asarray(u, float), np.asarray(v, float), np.asarray(zeta, float),
                                    np.asarray(xi, float), float(alpha), float(beta), float(varrho), float(C_g),
                                    float(C_f))
    return h2, u2, v2


def _ref_adaptive_matrix(kind, a, a_max, w_bar, rho, theta):
    from refimpl.mfcgd.algorithm import make_matrix
    m = make_matrix(kind, float(rho), float(theta))
    a, a_max, w_bar = np.asarray(a, float), np.asarray(a_max, float), np.asarray(w_bar, float)
    if kind == "adam":
        a2, A = m.update(a, w_bar)
        return a2, a_max, A
    if kind == "norm":
        s, A = m.update(float(a[0]), w_bar)
        return np.full_like(a, s), a_max, A
    (a2, am2), A = m.update((a, a_max), w_bar)
    return a2, am2, A


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


def _ref_vfl_taus(rule, timeout, Q, server_steps, step_times):
    from refimpl.vfl.policies import FixedSteps, ServerSteps, StepsFromTimeout
    steps = StepsFromTimeout(float(timeout)) if rule == "timeout" else FixedSteps(int(Q))
    if rule not in ("timeout", "fixed"):
        raise ValueError(f"rule must be 'timeout' or 'fixed', got {rule!r}")
    if int(server_steps) > 0:
        steps = ServerSteps(steps, int(server_steps))
    return steps.taus(1, np.asarray(step_times, dtype=np.float64)).astype(np.int64)


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


def _ref_full_cost(W1, W2, X, y, activation, bias, lam):
    from refimpl.core.model import TwoLayerNet, full_gradient
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    m = TwoLayerNet(X.shape[1], W1.shape[0], W2.shape[0], activation, bool(bias), "numpy")
    th = m.pack(np.asarray(W1, float), np.asarray(W2, float))
    g1, g2 = m.unpack(full_gradient(m, th, X, y, float(lam)))
    return float(m.loss(th, X, y)), float(m.one_vs_all_cost(th, X, y)), g1.copy(), g2.copy()


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


def _ref_partition(kind, n_clients, labels, permutations, dirichlet, normals):
    from refimpl.core.partition import sample_partition
    labels = np.asarray(labels, dtype=np.int64)
    rng = ReplayDraws(permutations, dirichlet, normals)
    parts = sample_partition(labels.size, int(n_clients), kind, rng=rng, labels=labels)
    owner = np.full(labels.size, -1, dtype=np.int64)
    for k, p in enumerate(parts):
        owner[p] = k
    return owner, rng.permutations


def _ref_divergence_stop(costs, sq_norms, cost_factor, max_sq_norm):
    from refimpl.core.divergence import DivergenceRule
    rule = DivergenceRule(float(cost_factor), float(max_sq_norm))
    costs, sq = np.atleast_1d(np.asarray(costs, float)), np.atleast_1d(np.asarray(sq_norms, float))
    for i in range(costs.size):
        if rule.cost("cost", costs[i], float(costs[0])) or rule.sq_norm("||x||^2", sq[i]):
            return i
    return -1


def _ref_tune_select(finished, accuracy, cost):
    from refimpl.core.identity import select, selection_score
    i = select([selection_score("finished" if f else "diverged", a, c)
                for f, a, c in zip(np.atleast_1d(finished), np.atleast_1d(accuracy), np.atleast_1d(cost))])
    return -1 if i is None else i


def _ref_vfl_round_time(step_times, tau, timeout, server_free, floats_up, floats_down, bandwidth, latency,
                        server_time):
    from refimpl.vfl.policies import RoundClock
    from refimpl.vfl.speeds import Network
    clock = RoundClock(Network(float(bandwidth), float(latency), float(server_time)),
                       float(timeout) if timeout > 0 else None, bool(server_free))
    st = np.asarray(step_times, dtype=np.float64)
    return (clock.duration(st, np.asarray(tau, dtype=np.float64), float(floats_up), float(floats_down)),
            clock.overruns(st).astype(np.float64))


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


def _ref_scgd_run(A, b, c, x1, zeta0, zeta, zeta2, xi, T, q, eta, beta, alpha):
    from refimpl.mfcgd.algorithm import run_local_scgd
    from refimpl.mfcgd.problems import SyntheticComposition
    pr = SyntheticComposition(np.asarray(A, float), np.asarray(b, float), np.asarray(c, float))
    r = run_local_scgd(pr, np.asarray(x1, float), int(T), int(q), float(eta), float(beta),
                       float(alpha) if alpha > 0 else None,
                       samples=tuple(np.asarray(a, float) for a in (zeta0, zeta, zeta2, xi)))
    return r.x_bar.copy(), r.samples.astype(np.int64), r.rounds.astype(np.int64)


def _ref_mfcgd_run(A, b, c, x1, zeta0, xi0, zeta, xi, T, q, k, n, c1, c2, c3, gamma, C_g, C_f, matrix, rho, theta):
    from refimpl.mfcgd.algorithm import MFCGDParams, make_matrix, run_mfcgd
    from refimpl.mfcgd.problems import SyntheticComposition
    pr = SyntheticComposition(np.asarray(A, float), np.asarray(b, float), np.asarray(c, float))
    par = MFCGDParams(k=k, n=n, c1=c1, c2=c2, c3=c3, gamma=gamma, q=int(q), C_g=C_g, C_f=C_f)
    r = run_mfcgd(pr, np.asarray(x1, float), int(T), par, make_matrix(matrix, float(rho), float(theta)),
                  np.random.default_rng(0), noise=tuple(np.asarray(a, float) for a in (zeta0, xi0, zeta, xi)))
    return r.x_bar.copy(), r.samples.astype(np.int64), r.rounds.astype(np.int64)


def _ref_theorem_rhs(C_f, C_g, L_f, L_g, sigma, delta_f, delta_g, F_gap, k, n, c1, c2, c3, gamma, q, rho, T, A_rms):
    from refimpl.mfcgd.bounds import Constants, G_value, TheoremParams, theorem1_bound, theorem2_bound
    c = Constants(C_f, C_g, L_f, L_g, sigma, delta_f, delta_g, F_gap)
    p = TheoremParams(k, n, c1, c2, c3, gamma, int(q), 0.0)
    return float(G_value(c, p, int(T), float(rho))), theorem1_bound(c, p, int(T), float(rho), float(A_rms)), \
        theorem2_bound(c, p, int(T)), c.L


_REFERENCE = {k: globals()[f"_ref_{k}"] for k in FAMILIES}


# ----------------------------------------------------------------------------- the cases

def _cases_loss_grad(rng):
    out = []
    for i, (act, bias, scale, flags, comment) in enumerate((
            ("swish", False, 0.5, [], "the paper's network"),
            ("relu", True, 0.5, ["bias-column-0"], "the authors' network (ReLU, bias in column 0)"),
            ("swish", False, 12.0, ["large-logits"], "|logit| ≈ 50: the cross-entropy must not overflow or cancel"),
            ("relu", False, 0.5, ["relu-at-zero"], "pre-activations exactly 0: ReLU'(0) = 0"))):
        D, J, L, n = 7, 5, 4, 6
        W1 = rng.standard_normal((J, D + bias)) * scale / np.sqrt(D)
        W2 = rng.standard_normal((L, J + bias)) * scale
        X = rng.random((n, D))
        if "relu-at-zero" in flags:
            X[0] = 0.0
        if "large-logits" in flags:
            W2 *= 50.0 / max(1e-300, np.max(np.abs(_logits(W1, W2, X, act, bias))))
        out.append(dict(id=f"loss_grad-{i}", comment=comment, flags=flags,
                        inputs=dict(W1=W1, W2=W2, X=X, y=rng.integers(0, L, n), activation=act, bias=bias),
                        tol={"rel": 1e-12}))
    return out


def _logits(W1, W2, X, act, bias):
    Xb = np.hstack([np.ones((len(X), 1)), X]) if bias else X
    Z = Xb @ W1.T
    A = Z / (1 + np.exp(-Z)) if act == "swish" else np.maximum(Z, 0)
    Ab = np.hstack([np.ones((len(A), 1)), A]) if bias else A
    return Ab @ W2.T


def _cases_exp_nonpos(rng):
    x1 = -np.concatenate([np.zeros(1), 10.0 ** rng.uniform(-12, 2.5, 40), rng.uniform(700, 745, 8)])
    return [dict(id="exp_nonpos-0", comment="arguments from −1e-12 to −300 and the subnormal results near −745",
                 flags=["subnormal-results", "ulp-bound"], inputs=dict(x=x1), tol={"ulps": 1}),
            dict(id="exp_nonpos-1", comment="below the underflow threshold: exactly 0", flags=["underflow"],
                 inputs=dict(x=np.array([-746.0, -800.0, -1e4])), tol={"ulps": 0})]


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


def _cases_unconstrained_step(rng):
    return [dict(id=f"unconstrained_step-{i}", comment=c, flags=f, inputs=dict(A=A, B=rng.standard_normal(5), lam=lam),
                 tol={"rel": 1e-15})
            for i, (A, lam, f, c) in enumerate(((0.05, 0.0, [], "λ = 0"), (0.05, 0.3, ["lambda>0"], "with λ > 0"),
                                                (0.0, 0.2, ["A=0"], "A = 0, λ > 0")))]


def _cases_move(rng):
    return [dict(id=f"move-{i}", comment=c, flags=f, inputs=dict(omega=rng.standard_normal(5),
                                                                omega_bar=rng.standard_normal(5), gamma=g),
                 tol={"rel": 1e-15})
            for i, (g, f, c) in enumerate(((0.3, [], "a step"), (1.0, ["gamma=1"], "γ = 1: ω^{t+1} = ω̄")))]


def _cases_closed_form_step(rng):
    out = []
    n = 6
    A, B, U = 0.3, rng.standard_normal(n), 0.5
    b = float(B @ B)
    for i, (C, c, Bv, flags, comment) in enumerate((
            (U - 0.2, 1e5, B, ["C<=U", "multiplier-zero"], "C ≤ U: ν* = 0, ω̄ = 0"),
            (U + 0.3 * b / (4 * A), 1e5, B, ["constraint-active"], "finite ν° ≤ c"),
            (U + 0.9 * b / (4 * A), 1e-3, B, ["slack-active"], "ν° > c: ν* = c and a positive slack"),
            (U + 1.0, 1e2, np.zeros(n), ["b=0"], "B = 0 and C > U: only the slack can help"))):
        out.append(dict(id=f"closed_form_step-{i}", comment=comment, flags=flags,
                        inputs=dict(A=A, B=Bv, C=C, U=U, c=c), tol={"rel": 1e-12}))
    r = np.random.default_rng(37)
    k = 0
    while k < 3:
        A_ = 10 ** r.uniform(-4, 2)
        B_ = r.standard_normal(n) * 10 ** r.uniform(-3, 3, n)
        U_ = 10 ** r.uniform(-3, 2)
        C_ = U_ + r.uniform(0.01, 0.99) * (B_ @ B_) / (4 * A_)
        c_ = 10 ** r.uniform(3, 8)
        from refimpl.ssca.surrogate import SurrogateState
        st = SurrogateState(A_, B_, C_)
        nu = _unnudged_nu(st, U_)
        if nu <= c_ and st.value(B_ * (-nu / (2 * (1 + nu * A_)))) > U_:
            out.append(dict(id=f"closed_form_step-{4 + k}", comment="badly scaled: the textbook ν° leaves ω̄ "
                            "infeasible by rounding, and c multiplies it", flags=["constraint-active", "rounding-slack"],
                            inputs=dict(A=A_, B=B_, C=C_, U=U_, c=c_), tol={"rel": 1e-12}))
            k += 1
    return out


def _unnudged_nu(st, U):
    b = float(st.B @ st.B)
    d = 4.0 * st.A * (st.C - U)
    if b <= d:
        return np.inf
    x = np.sqrt(b / (b - d))
    return d / (st.A * (b - d) * (x + 1.0))


def _cases_local_weights(rng):
    return [dict(id=f"local_weights-{i}", comment=c, flags=f, inputs=dict(optimizer=o, param=p, tau=t, eta=0.05),
                 tol={"rel": 1e-14})
            for i, (o, p, t, f, c) in enumerate((
                ("sgd", 0.0, 4, [], "w = 1"),
                ("momentum", 0.9, 6, [], "w^t = (1 − ρ^{τ−t})/(1 − ρ)"),
                ("proximal", 0.2, 5, ["paper-exponent-typo"], "w^t = (1 − ημ)^{τ−1−t} (the paper prints τ − t + 1)"),
                ("time-varying-lr", 0.3, 5, [], "w^t = 1/(1 + decay·t)"),
                ("momentum", 0.5, 1, ["tau=1"], "one local step")))]


def _cases_condition14(rng):
    return [dict(id="condition14-0", comment="a party on each side of (14), one exactly on it and one between "
                 "1/(16·…) and 1/(8·…) (the constant 16, not 8)", flags=["boundary", "constant-16"],
                 inputs=dict(eta=np.array([1e-3, 0.2, 1.0 / (16 * 2.0 * 4 * 1.0), 1.5 / (16 * 2.0 * 4 * 1.0)]),
                             tau=np.array([4.0, 4.0, 4.0, 4.0]), w_bar=np.array([1.0, 1.0, 1.0, 1.0]), L=2.0,
                             L_k=np.array([1.0, 1.5, 0.5, 1.0])),
                 tol={"rel": 0.0})]


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


def _cases_storm_weights(rng):
    return [dict(id=f"storm_weights-{i}", comment=c, flags=f, inputs=dict(k=k, n=n, c1=c1, c2=c1, c3=c1, t=t),
                 tol={"rel": 1e-15})
            for i, (k, n, c1, t, f, c) in enumerate((
                (1.0, 1000.0, 10.0, 7, [], "the experiments' schedule"),
                (2.0, 8.0, 5.0, 1, ["cap-active"], "c η_1² > 1: the weights are capped at 1"),
                (0.5, 50.0, 1.0, 300, ["eta-exponent"], "η_t decays as (n + t)^{-1/3}")))]


def _cases_storm_update(rng):
    out = []
    p, d = 3, 4
    for i, (scale_u, scale_v, alpha, flags, comment) in enumerate((
            (0.1, 0.1, 0.2, [], "no projection binds"),
            (50.0, 1.0, 0.2, ["projection-u-binds"], "u leaves the ball C_g: projected"),
            (0.1, 50.0, 0.2, ["projection-v-binds"], "v leaves the ball C_f: projected"),
            (0.1, 0.1, 1.0, ["cap-active"], "α = β = ϱ = 1 (c η² capped at 1): the recursions forget the past"))):
        A = rng.standard_normal((p, d)) / 2
        out.append(dict(id=f"storm_update-{i}", comment=comment, flags=flags,
                        inputs=dict(A=A, b=rng.standard_normal(p), c=rng.standard_normal(p),
                                    x_new=rng.standard_normal(d), x_old=rng.standard_normal(d),
                                    h=rng.standard_normal(p), u=rng.standard_normal((p, d)) * scale_u,
                                    v=rng.standard_normal(p) * scale_v, zeta=rng.standard_normal(p) * 0.1,
                                    xi=rng.standard_normal(p) * 0.1, alpha=alpha, beta=alpha, varrho=alpha,
                                    C_g=float(np.linalg.norm(A)) + 0.01, C_f=float(np.sqrt(p)) + 0.1),
                        tol={"rel": 1e-14}))
    return out


def _cases_adaptive_matrix(rng):
    d = 5
    return [dict(id=f"adaptive_matrix-{i}", comment=c, flags=f,
                 inputs=dict(kind=k, a=np.abs(rng.standard_normal(d)), a_max=np.abs(rng.standard_normal(d)) * 2,
                             w_bar=rng.standard_normal(d), rho=0.1, theta=0.9), tol={"rel": 1e-15})
            for i, (k, f, c) in enumerate((("adam", [], "Adam type"), ("norm", ["scalar-state"], "norm type: a is a scalar"),
                                          ("amsgrad", ["running-max"], "AMSGrad type: the running maximum")))]


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
                (dict(tau=[4, 4, 4], eta=[0.2, 0.2, 0.2]), [], "synchronous VFL: Q = 4 steps for every party"),
                (dict(tau=[1, 1, 1], eta=[0.3, 0.3, 0.3]), ["one-step"], "P-BCD: one step per party"),
                (dict(tau=[2, 6, 3], eta=[0.05, 0.02, 0.04]), ["per-party-eta"],
                 "adaptive Flex-VFL: a different η_k per party"),
                (dict(tau=[3, 3, 2], eta=[0.1, 0.1, 0.1], optimizer="momentum", param=0.9),
                 ["momentum-reset"], "momentum, buffers reset at the round start (s = 0)"),
                (dict(tau=[3, 3, 2], eta=[0.1, 0.1, 0.1], optimizer="momentum", param=0.9, state=1.0),
                 ["momentum-persistent"], "momentum, buffers carried from the previous round (the authors' MOSEI "
                                          "solver): the end buffers are the next round's start"),
                (dict(tau=[2, 3, 4], eta=[0.1, 0.1, 0.1], optimizer="proximal", param=0.5),
                 ["proximal-anchor-round-start"], "proximal: the pull is towards θ^{r,0}, the round's start"),
                (dict(tau=[2, 3, 4], eta=[0.1, 0.1, 0.1], labels="server"), ["labels-at-server", "stale-gradient"],
                 "labels only at the server: each party steps along the ∂l/∂h_k sent at the round start")))]


def _cases_vfl_taus(rng):
    st = np.array([0.2, 1.0, 1.5, 3.4, 12.0])
    return [dict(id=f"vfl_taus-{i}", comment=c, flags=f, inputs=dict(rule=r, timeout=t, Q=q, server_steps=sv,
                                                                    step_times=x), tol={"rel": 0.0})
            for i, (r, t, q, sv, x, f, c) in enumerate((
                ("timeout", 10.0, 0, 0, st, ["floor-not-round", "at-least-one-step"],
                 "Flex-VFL: ⌊10/s⌋, and one step for the party slower than the timeout"),
                ("timeout", 10.0, 0, 0, np.array([2.5, 0.5, 10.0 / 3.0, 5.0]), ["exact-division"],
                 "step times dividing the timeout exactly (10/(10/3) may round below 3)"),
                ("fixed", 0.0, 5, 0, st, [], "synchronous VFL: Q = 5 for every party"),
                ("fixed", 0.0, 1, 0, st, [], "P-BCD: one step"),
                ("timeout", 10.0, 0, 5, st, ["server-steps-fixed"],
                 "the authors' protocol: the server takes 5 steps whatever its speed")))]


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


def _cases_client_aggregate(rng):
    out = []
    for sizes, batch, arrival, flags, comment in (
            ([147, 600, 1720], [10, 10, 10], [0, 1, 2], ["unequal-partitions", "weights-N_k/N"],
             "unequal partitions: weights N_k/N, not 1/K and not num_examples/Σ num_examples of the batches"),
            ([300, 80, 500, 120], [20, 8, 20, 12], [2, 0, 3, 1], ["arrival-order", "unequal-batches"],
             "replies in another order than the partition ids, unequal batch sizes")):
        K = len(sizes)
        out.append(dict(id=f"client_aggregate-{len(out)}", comment=comment, flags=flags,
                        inputs=dict(sizes=np.array(sizes, dtype=np.int64), batch=np.array(batch, dtype=np.int64),
                                    loss_sums=rng.uniform(1, 30, K), grad_sums=rng.standard_normal((K, 8)),
                                    arrival=np.array(arrival, dtype=np.int64),
                                    batches=np.array([rng.choice(sizes[k], 3, replace=False) for k in range(K)])),
                        tol={"rel": 1e-15}))
    return out


def _cases_constrained_run(rng):
    N, d, H, C, T, B = 40, 4, 3, 3, 6, 8
    X, y = rng.standard_normal((N, d)), rng.integers(0, C, N)
    out = []
    for curvature, U, rho_a, flags, comment in (
            ("recursive", 1.05, 0.6, ["A0=0", "rho<1", "constraint-active", "slack-active"],
             "A⁰ = 0 and ρ_1 = 0.6 < 1: A^1 = 0.6 τ, not τ; U below the loss: the constraint binds (ν < c), "
             "then the slack takes over (ν = c)"),
            ("fixed", 1.05, 0.6, ["curvature-fixed"], "the SSCA authors' convention: A^t = τ in every round"),
            ("recursive", 5.0, 1.0, ["constraint-inactive", "rho=1"], "U above the loss: ν = 0, ω̄ = 0")):
        out.append(dict(id=f"constrained_run-{len(out)}", comment=comment, flags=flags,
                        inputs=dict(W1=rng.standard_normal((H, d)) * 0.5, W2=rng.standard_normal((C, H)) * 0.5, X=X,
                                    y=y, batches=np.array([rng.choice(N, B, replace=False) for _ in range(T)]),
                                    tau=0.2, rho_a=rho_a, rho_alpha=0.3, gamma_a=0.5, gamma_alpha=0.4, U=U, c=1e4,
                                    curvature=curvature), tol={"rel": 1e-11}))
    return out


def _cases_full_cost(rng):
    out = []
    for i, (N, d, H, C, act, bias, lam, flags, comment) in enumerate((
            (9000, 2, 3, 3, "swish", True, 1e-3, ["more-rows-than-a-chunk"],
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
            ("quantity:1.0", 3, perms(N), none, np.array([0.5, 0.5, -0.5]), ["largest-first-of-equal"],
             "two equal largest sizes: the remainder goes to the first"),
            ("dirichlet:0.5", 3, perms(*sizes), shares(3, 1, 0.5), none, ["clients-not-classes"],
             "3 clients, 4 classes: shares per class over the clients"),
            ("dirichlet:1.0", 6, perms(*sizes), shares(6, 1, 1.0), none, ["clients-more-than-classes"],
             "6 clients, 4 classes"),
            ("dirichlet:0.3:3", 3, perms(*(sizes * 2)), np.concatenate([np.array([0.8, 0.1, 0.1] * 4), shares(3, 1, 3)]),
             none, ["min-size-redraw"], "the first draw gives client 1 two samples, fewer than MIN_SIZE = 3: the rule "
                                        "redraws every class"),
            ("label_skew", 3, perms(6), none, none, ["shards-by-label"], "2 shards per client, sorted by label")):
        out.append(dict(id=f"partition-{len(out)}", comment=comment, flags=flags,
                        inputs=dict(kind=kind, n_clients=K, labels=labels, permutations=p, dirichlet=dr, normals=z),
                        tol={"rel": 0.0}))
    return out


def _cases_divergence_stop(rng):
    out = []
    for costs, sq, flags, comment in (
            ([2.3, 3.0, 10.0, 500.0, 2400.0, 3000.0], [1.0] * 6, ["reference-is-initial"],
             "a slow blow-up: each cost under 1000 × the previous one, the fifth over 1000 × the initial one"),
            ([2.3, 2.0, float("nan"), 1.0], [1.0] * 4, ["not-finite"], "a NaN cost stops the run at once"),
            ([2.3, 2.2, 2.1], [1e3, 1e13, 1e3], ["iterate-norm"], "the iterate's squared norm passes 1e12"),
            ([0.0, 1e-200, 1.0], [1.0] * 3, ["zero-initial-cost"], "an initial cost of 0: the reference is 1e-300"),
            ([2.3, 1.5, 0.9], [1.0] * 3, ["converging"], "a converging run never stops (−1)")):
        out.append(dict(id=f"divergence_stop-{len(out)}", comment=comment, flags=flags,
                        inputs=dict(costs=np.array(costs), sq_norms=np.array(sq), cost_factor=1e3,
                                    max_sq_norm=1e12), tol={"rel": 0.0}))
    return out


def _cases_tune_select(rng):
    out = []
    for fin, acc, cost, flags, comment in (
            ([1, 1, 1], [0.8, 0.9, 0.85], [1.0, 2.0, 0.5], [], "the highest validation accuracy"),
            ([1, 0, 1], [0.8, 0.95, 0.8], [1.0, 0.1, 0.7], ["diverged-excluded", "tie-lower-cost"],
             "a diverged run with the best accuracy is never chosen; the tie goes to the lower cost"),
            ([1, 1, 1], [0.9, 0.9, 0.9], [0.5, 0.3, 0.3], ["first-of-equal"], "equal scores: the first"),
            ([0, 0], [0.9, 0.8], [1.0, 1.0], ["none-finished"], "no run finished: no choice (−1)"),
            ([1, 1], [float("nan"), 0.1], [1.0, 2.0], ["nan-accuracy"], "a NaN accuracy is never chosen")):
        out.append(dict(id=f"tune_select-{len(out)}", comment=comment, flags=flags,
                        inputs=dict(finished=np.array(fin, float), accuracy=np.array(acc), cost=np.array(cost)),
                        tol={"rel": 0.0}))
    return out


def _cases_vfl_round_time(rng):
    st = np.array([0.5, 1.0, 3.0])
    out = []
    for tau, tmo, free, st_, flags, comment in (
            ([4, 4, 4], 0.0, 0, st, [], "synchronous VFL: Q·max_k s_k + messages + S"),
            ([12, 6, 2], 6.0, 0, st, ["at-least-the-timeout"], "Flex-VFL: the round lasts the timeout"),
            ([4, 6, 2], 6.0, 1, np.array([4.0, 1.0, 3.0]), ["server-free"],
             "the authors' protocol: the server's compute (4 · 4 = 16) is free"),
            ([4, 4, 4], 0.0, 0, np.array([4.0, 1.0, 3.0]), ["slow-server"], "the server's compute counts otherwise"),
            ([12, 6, 1], 6.0, 0, np.array([0.5, 1.0, 8.0]), ["overrun"],
             "a party's one step (8) outlasts the timeout: flagged, and the round lasts it")):
        out.append(dict(id=f"vfl_round_time-{len(out)}", comment=comment, flags=flags,
                        inputs=dict(step_times=st_, tau=np.array(tau, dtype=np.int64), timeout=tmo, server_free=free,
                                    floats_up=1200.0, floats_down=800.0, bandwidth=1e6, latency=0.01,
                                    server_time=10.0), tol={"rel": 1e-15}))
    return out


def _cases_vfl_async_events(rng):
    out = []
    for speeds, msg, S, free, n, flags, comment in (
            ([[2.0, 1.0, 1.0]], [0.0, 0.0, 0.0], 0.0, 0, 6, ["server-bound"],
             "a slow server: events every s_0, each party waiting"),
            ([[0.5, 1.0, 1.0]], [0.0, 0.0, 0.0], 1.0, 0, 6, ["wait-while-busy", "tie-lower-party-first"],
             "equal arrivals: party 1 first, party 2 waits for the server"),
            ([[0.5, 1.0, 1.0]], [0.0, 0.0, 0.0], 1.0, 1, 6, ["server-free"], "the authors' free server"),
            (np.abs(rng.standard_normal((4, 4))) + 0.2, [0.0, 0.05, 0.1, 0.02], 0.5, 0, 12, ["speed-rows-cycled"],
             "three parties, time-varying speeds (rows cycled per party), message times")):
        out.append(dict(id=f"vfl_async_events-{len(out)}", comment=comment, flags=flags,
                        inputs=dict(speeds=np.array(speeds, float), msg=np.array(msg, float), server_time=S,
                                    server_free=free, n_events=n), tol={"rel": 1e-15}))
    return out


def _cases_scgd_run(rng):
    M, p, d, T = 3, 2, 3, 7
    A = rng.standard_normal((p, d)) * 0.6
    b, c = rng.standard_normal((M, p)), rng.standard_normal((M, p))
    out = []
    for q, alpha, flags, comment in (
            (3, 0.0, ["average-x"], "ComFedL-style: the server averages x after steps 3 and 6"),
            (3, 0.3, ["average-x-y-m", "momentum-convention"], "Local-SCGDM: x, y and m averaged"),
            (1, 0.3, ["q-1"], "q = 1: averaging after every step")):
        out.append(dict(id=f"scgd_run-{len(out)}", comment=comment, flags=flags,
                        inputs=dict(A=A, b=b, c=c, x1=rng.standard_normal(d) * 0.5,
                                    zeta0=rng.standard_normal((M, p)) * 0.1, zeta=rng.standard_normal((T, M, p)) * 0.1,
                                    zeta2=rng.standard_normal((T, M, p)) * 0.1, xi=rng.standard_normal((T, M, p)) * 0.1,
                                    T=T, q=q, eta=0.3, beta=0.6, alpha=alpha), tol={"rel": 1e-13}))
    return out


def _cases_mfcgd_run(rng):
    M, p, d, T, q = 3, 2, 3, 8, 3
    A = rng.standard_normal((p, d)) * 0.8
    b, c = rng.standard_normal((M, p)), rng.standard_normal((M, p))
    out = []
    for matrix, C_g, C_f, flags, comment in (
            ("identity", 10.0, 10.0, ["average-every-q"], "MFCGD: A = I; x averaged after steps 3 and 6"),
            ("adam", 1.0, 0.8, ["A1-from-w-bar-1", "projection-u-binds", "projection-v-binds", "cap-active"],
             "AdaMFCGD (Adam type): A_1 from w̄_1, kept between communications; both projections bind and "
             "c·η² > 1 at the first steps"),
            ("norm", 10.0, 10.0, ["scalar-state"], "the norm type"),
            ("amsgrad", 10.0, 10.0, ["running-max"], "the AMSGrad type")):
        out.append(dict(id=f"mfcgd_run-{len(out)}", comment=comment, flags=flags,
                        inputs=dict(A=A, b=b, c=c, x1=rng.standard_normal(d) * 0.5,
                                    zeta0=rng.standard_normal((M, q, p)) * 0.1, xi0=rng.standard_normal((M, q, p)) * 0.1,
                                    zeta=rng.standard_normal((T, M, p)) * 0.1, xi=rng.standard_normal((T, M, p)) * 0.1,
                                    T=T, q=q, k=1.0, n=2.0, c1=3.0, c2=4.0, c3=5.0, gamma=0.5, C_g=C_g, C_f=C_f,
                                    matrix=matrix, rho=0.1, theta=0.9), tol={"rel": 1e-12}))
    return out


def _cases_theorem_rhs(rng):
    base = dict(C_f=2.3, C_g=1.4, L_f=1.0, L_g=0.8, sigma=0.3, delta_f=0.2, delta_g=0.1, F_gap=3.0, k=1.0, n=1e6,
                c1=40.0, c2=30.0, c3=20.0, gamma=0.05, q=4, rho=0.5, T=1000, A_rms=1.2)
    out = []
    for kw, flags, comment in (
            ({}, [], "heterogeneous clients, Adam-type ρ = 0.5"),
            (dict(delta_f=0.0, delta_g=0.0, rho=1.0, A_rms=1.0), ["homogeneous"], "δ_f = δ_g = 0, ρ = 1"),
            (dict(T=10 ** 6, q=1), ["log-n-plus-T"], "a long horizon: the ln(n + T) term")):
        out.append(dict(id=f"theorem_rhs-{len(out)}", comment=comment, flags=flags, inputs={**base, **kw},
                        tol={"rel": 1e-13}))
    return out


_CASES = {k: globals()[f"_cases_{k}"] for k in FAMILIES}


def generate(papers=PAPERS):
    """{family: document} for the families of ``papers``; each case's expected values from refimpl's
    NumPy twins. Deterministic: the same bits on every call (the seed is the family's name)."""
    docs = {}
    for fam, (paper, eq, ins, outs, what) in FAMILIES.items():
        if paper not in papers:
            continue
        rng = np.random.default_rng(int.from_bytes(hashlib.sha256(fam.encode()).digest()[:8], "little"))
        cases = []
        for case in _CASES[fam](rng):
            exp = reference(fam, case["inputs"])
            cases.append({"id": case["id"], "equation": eq, "comment": case["comment"], "flags": case["flags"],
                          "inputs": {k: encode(case["inputs"][k]) for k in ins},
                          "expected": {k: encode(exp[k]) for k in outs}, "tol": case["tol"]})
        docs[fam] = {"schema_version": SCHEMA_VERSION, "family": fam, "paper": paper, "equation": eq,
                     "function": fam, "inputs": list(ins), "outputs": list(outs), "description": what, "cases": cases}
    return docs


def schema(doc):
    """A JSON Schema (draft 2020-12) for one family's file."""
    array = {"type": "object", "required": ["shape", "data"], "additionalProperties": False,
             "properties": {"shape": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                            "data": {"type": "array", "items": {"type": "number"}}}}
    value = {"anyOf": [{"type": "number"}, {"type": "string"}, {"type": "boolean"}, array]}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": f"refimpl conformance vectors: {doc['family']} ({doc['equation']})",
            "type": "object", "required": ["schema_version", "family", "paper", "equation", "inputs", "outputs", "cases"],
            "properties": {
                "schema_version": {"const": SCHEMA_VERSION}, "family": {"const": doc["family"]},
                "paper": {"enum": list(PAPERS)}, "equation": {"type": "string"}, "function": {"type": "string"},
                "inputs": {"type": "array", "items": {"type": "string"}},
                "outputs": {"type": "array", "items": {"type": "string"}}, "description": {"type": "string"},
                "cases": {"type": "array", "minItems": 1, "items": {
                    "type": "object", "required": ["id", "equation", "comment", "flags", "inputs", "expected", "tol"],
                    "properties": {
                        "id": {"type": "string"}, "equation": {"type": "string"}, "comment": {"type": "string"},
                        "flags": {"type": "array", "items": {"type": "string"}},
                        "inputs": {"type": "object", "required": doc["inputs"], "additionalProperties": value},
                        "expected": {"type": "object", "required": doc["outputs"], "additionalProperties": value},
                        "tol": {"type": "object", "minProperties": 1, "additionalProperties": False,
                                "properties": {"rel": {"type": "number", "minimum": 0},
                                               "ulps": {"type": "integer", "minimum": 0}}}}}}}}


def _dump(obj):
    return (json.dumps(obj, indent=1, sort_keys=False) + "\n").encode()


def export(directory, papers=PAPERS, fmt="json"):
    """Write ``<family>.json`` (or ``.npz`` / ``.mat``: one array per case quantity, the case
    metadata in ``<family>.meta.json``), ``<family>.schema.json`` and ``manifest.json``
    (SHA-256 of every file). Returns the manifest."""
    if fmt not in ("json", "npz", "mat"):
        raise ValueError(f"--format must be json, npz or mat, got {fmt!r}")
    os.makedirs(directory, exist_ok=True)
    files = {}

    def put(name, data):
        path = os.path.join(directory, name)
        with open(path, "wb") as fh:
            fh.write(data)
        files[name] = hashlib.sha256(data).hexdigest()

    for fam, doc in generate(papers).items():
        put(f"{fam}.schema.json", _dump(schema(doc)))
        if fmt == "json":
            put(f"{fam}.json", _dump(doc))
            continue
        arrays, meta = {}, dict(doc)
        meta["cases"] = []
        for j, case in enumerate(doc["cases"]):
            m = {k: case[k] for k in ("id", "equation", "comment", "flags", "tol")}
            m["arrays"] = {}
            for part in ("inputs", "expected"):
                for k, v in case[part].items():
                    if isinstance(v, str):
                        m.setdefault(part, {})[k] = v
                        continue
                    key = f"c{j}_{'in' if part == 'inputs' else 'out'}_{k}"
                    arrays[key] = decode(v) if isinstance(v, dict) else np.asarray(v)
                    m["arrays"][f"{part}.{k}"] = key
            meta["cases"].append(m)
        import io
        buf = io.BytesIO()
        if fmt == "npz":
            np.savez(buf, **arrays)
        else:
            from scipy.io import savemat
            savemat(buf, arrays)
        put(f"{fam}.{fmt}", buf.getvalue())
        put(f"{fam}.meta.json", _dump(meta))
    manifest = {"schema_version": SCHEMA_VERSION, "generator": "refimpl vectors export", "format": fmt,
                "files": files}
    with open(os.path.join(directory, "manifest.json"), "wb") as fh:
        fh.write(_dump(manifest))
    # an earlier export's files that this manifest does not list (another --paper or --format) go,
    # so that the directory holds exactly what the manifest names
    for name in stale_files(directory, files):
        os.remove(os.path.join(directory, name))
    return manifest


#: the kinds of file an export writes (only these are ever removed as stale)
EXPORT_SUFFIXES = (".json", ".npz", ".mat")


def stale_files(directory, listed):
    """Files of ``directory`` of the kinds an export writes that the manifest (``listed``) does not list."""
    return sorted(n for n in os.listdir(directory) if n.endswith(EXPORT_SUFFIXES) and n != "manifest.json"
                  and n not in listed and os.path.isfile(os.path.join(directory, n)))


def load(directory):
    """{family: document} from an exported JSON directory, after checking every file against the
    manifest (a missing or changed file is refused, naming it)."""
    mpath = os.path.join(directory, "manifest.json")
    if not os.path.isfile(mpath):
        raise ValueError(f"{directory}: no manifest.json (write the vectors with refimpl vectors export)")
    try:
        with open(mpath) as fh:
            manifest = json.load(fh)
        if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
            raise ValueError("expected an object with a 'files' table of name → SHA-256")
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{mpath}: a damaged manifest ({exc}); export the vectors again with refimpl vectors export")
    if manifest.get("format", "json") != "json":
        raise ValueError(f"{directory}: the harness reads the json format; this directory holds {manifest['format']}")
    extra = stale_files(directory, manifest["files"])
    if extra:
        raise ValueError(f"{directory}: {', '.join(extra[:5])}{' …' if len(extra) > 5 else ''} not listed in "
                         "manifest.json (vectors of another export, or added by hand); export again into an empty "
                         "directory or with --overwrite")
    for name, digest in manifest["files"].items():
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            raise ValueError(f"{path}: listed in the manifest but missing")
        if hashlib.sha256(open(path, "rb").read()).hexdigest() != digest:
            raise ValueError(f"{path}: its SHA-256 does not match the manifest (edited or damaged; vectors are "
                             "generated, never hand-edited)")
    return {n[:-len(".json")]: json.load(open(os.path.join(directory, n))) for n in manifest["files"]
            if n.endswith(".json") and not n.endswith((".schema.json", ".meta.json"))}
