"""Conformance families of [MFCGD]: the momentum recursions, their weights, the adaptive matrices, the baselines' and Algorithm 1's runs, the theorems' right sides. Each family is one record: its spec, its reference
function (refimpl's NumPy twin) and its cases, side by side (:class:`refimpl.conformance.family.Family`)."""
from __future__ import annotations

import numpy as np

from refimpl.conformance.family import Family


def _ref_storm_update(A, b, c, x_new, x_old, h, u, v, zeta, xi, alpha, beta, varrho, C_g, C_f):
    from refimpl.mfcgd.algorithm import storm_update
    from refimpl.mfcgd.problems import SyntheticComposition
    pr = SyntheticComposition(np.asarray(A, float), np.asarray(b, float)[None, :], np.asarray(c, float)[None, :])
    h2, u2, v2, _, _ = storm_update(pr, 0, np.asarray(x_new, float), np.asarray(x_old, float), np.asarray(h, float),
                                    np.asarray(u, float), np.asarray(v, float), np.asarray(zeta, float),
                                    np.asarray(xi, float), float(alpha), float(beta), float(varrho), float(C_g),
                                    float(C_f))
    return h2, u2, v2


def _cases_storm_update(rng):
    out = []
    p, d = 3, 4
    for i, (scale_u, scale_v, alpha, flags, comment) in enumerate((
            (0.1, 0.1, 0.2, ["no-projection"], "no projection binds"),
            (50.0, 1.0, 0.2, ["projection-u-binds"], "u leaves the ball C_g: projected"),
            (0.1, 50.0, 0.2, ["projection-v-binds"], "v leaves the ball C_f: projected"),
            (0.1, 0.1, 1.0, ["cap-active", "no-projection"], "α = β = ϱ = 1 (c η² capped at 1): the recursions forget the past"))):
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


def _on_ball(x, radius):
    return abs(float(np.linalg.norm(x)) - radius) <= 1e-12 * radius


def _forgets(i, e):
    """α = β = ϱ = 1: h = g(x_new; ζ) = A x_new + b + ζ, whatever h was."""
    return (i["alpha"] == i["beta"] == i["varrho"] == 1
            and np.allclose(e["h"], i["A"] @ i["x_new"] + i["b"] + i["zeta"], rtol=1e-14, atol=0))


_W_STORM_UPDATE = {
    "no-projection": lambda c: np.linalg.norm(c["expected"]["u"]) < (1 - 1e-9) * c["inputs"]["C_g"]
    and np.linalg.norm(c["expected"]["v"]) < (1 - 1e-9) * c["inputs"]["C_f"],
    "projection-u-binds": lambda c: _on_ball(c["expected"]["u"], c["inputs"]["C_g"]),
    "projection-v-binds": lambda c: _on_ball(c["expected"]["v"], c["inputs"]["C_f"]),
    "cap-active": lambda c: _forgets(c["inputs"], c["expected"]),
}


STORM_UPDATE = Family(
    'storm_update', 'mfcgd', "[MFCGD] (7)–(9) on the synthetic problem",
    inputs=("A", "b", "c", "x_new", "x_old", "h", "u", "v", "zeta", "xi", "alpha", "beta", "varrho", "C_g",
            "C_f"),
    outputs=("h", "u", "v"),
    description=("one client's recursions with g(x; ζ) = A x + b + ζ, ∇g = A, ∇f(y; ξ) = φ(y − c) + ξ, "
                 "φ(z) = z/sqrt(1 + z²); u projected on the Frobenius ball C_g, v on the ball C_f"),
    reference=_ref_storm_update, cases=_cases_storm_update, witnesses=_W_STORM_UPDATE)


def _ref_storm_weights(k, n, c1, c2, c3, t):
    from refimpl.mfcgd.algorithm import MFCGDParams
    p = MFCGDParams(k=float(k), n=float(n), c1=float(c1), c2=float(c2), c3=float(c3))
    a, b, r = p.momentum(int(t))
    return float(p.eta(int(t))), a, b, r


def _cases_storm_weights(rng):
    return [dict(id=f"storm_weights-{i}", comment=c, flags=f, inputs=dict(k=k, n=n, c1=c1, c2=c2, c3=c3, t=t),
                 tol={"rel": 1e-15})
            for i, (k, n, (c1, c2, c3), t, f, c) in enumerate((
                (1.0, 1000.0, (10.0,) * 3, 7, [], "the experiments' schedule"),
                (2.0, 8.0, (5.0,) * 3, 1, ["cap-active"], "c η_1² > 1: the weights are capped at 1"),
                (0.5, 50.0, (1.0,) * 3, 300, ["eta-exponent"], "η_t decays as (n + t)^{-1/3}"),
                (1.0, 1000.0, (10.0, 20.0, 40.0), 7, ["distinct-constants"],
                 "c1, c2, c3 apart: α, β and ϱ each from its own constant, in that order")))]


def _eta_t(i):
    return i["k"] / (i["n"] + i["t"]) ** (1 / 3)


_W_STORM_WEIGHTS = {
    # from step 1 on, c_i η_t² > 1 for every constant: all three weights 1
    "cap-active": lambda c: c["inputs"]["t"] >= 1
    and all(c["inputs"][k] * _eta_t(c["inputs"]) ** 2 > 1 for k in ("c1", "c2", "c3"))
    and all(c["expected"][k] == 1 for k in ("alpha", "beta", "varrho")),
    # late enough that another exponent would be far off
    "eta-exponent": lambda c: c["inputs"]["t"] >= 100 and abs(c["expected"]["eta"] / _eta_t(c["inputs"]) - 1) < 1e-14,
    "distinct-constants": lambda c: len({c["inputs"][k] for k in ("c1", "c2", "c3")}) == 3
    and len({c["expected"][k] for k in ("alpha", "beta", "varrho")}) == 3
    and all(c["expected"][k] < 1 for k in ("alpha", "beta", "varrho")),
}


STORM_WEIGHTS = Family(
    'storm_weights', 'mfcgd', "[MFCGD] Theorems 1–2 schedules",
    inputs=("k", "n", "c1", "c2", "c3", "t"),
    outputs=("eta", "alpha", "beta", "varrho"),
    description=("η_t = k/(n + t)^{1/3}; α_{t+1}, β_{t+1}, ϱ_{t+1} = min(1, c_i η_t²)"),
    reference=_ref_storm_weights, cases=_cases_storm_weights, witnesses=_W_STORM_WEIGHTS)


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


def _cases_adaptive_matrix(rng):
    d = 5
    return [dict(id=f"adaptive_matrix-{i}", comment=c, flags=f,
                 inputs=dict(kind=k, a=np.abs(rng.standard_normal(d)), a_max=np.abs(rng.standard_normal(d)) * 2,
                             w_bar=rng.standard_normal(d), rho=0.1, theta=0.9), tol={"rel": 1e-15})
            for i, (k, f, c) in enumerate((("adam", [], "Adam type"), ("norm", ["scalar-state"], "norm type: a is a scalar"),
                                          ("amsgrad", ["running-max"], "AMSGrad type: the running maximum")))]


def _both_branches(i, e):
    """AMSGrad: a_max = max(a_max, a) where the old maximum wins on some entries and the new a on others."""
    old, new = i["a_max"], e["a"]
    return (i["kind"] == "amsgrad" and np.array_equal(e["a_max"], np.maximum(old, new))
            and bool(np.any(old > new)) and bool(np.any(new > old)))


_W_ADAPTIVE_MATRIX = {
    "scalar-state": lambda c: c["inputs"]["kind"] == "norm" and np.ptp(c["expected"]["a"]) == 0,
    "running-max": lambda c: _both_branches(c["inputs"], c["expected"]),
}


ADAPTIVE_MATRIX = Family(
    'adaptive_matrix', 'mfcgd', "[MFCGD] line 6 and (6)",
    inputs=("kind", "a", "a_max", "w_bar", "rho", "theta"),
    outputs=("a", "a_max", "A"),
    description=("adam: a = ϑa + (1−ϑ)w̄², A = sqrt(a) + ρ; norm: a = ϑa + (1−ϑ)||w̄|| (scalar in a[0]), "
                 "A = (a + ρ)1; amsgrad: a_max = max(a_max, a), A = sqrt(a_max) + ρ"),
    reference=_ref_adaptive_matrix, cases=_cases_adaptive_matrix, witnesses=_W_ADAPTIVE_MATRIX)


def _ref_scgd_run(A, b, c, x1, zeta0, zeta, zeta2, xi, T, q, eta, beta, alpha):
    from refimpl.mfcgd.algorithm import run_local_scgd
    from refimpl.mfcgd.problems import SyntheticComposition
    pr = SyntheticComposition(np.asarray(A, float), np.asarray(b, float), np.asarray(c, float))
    r = run_local_scgd(pr, np.asarray(x1, float), int(T), int(q), float(eta), float(beta),
                       float(alpha) if alpha > 0 else None,
                       samples=tuple(np.asarray(a, float) for a in (zeta0, zeta, zeta2, xi)))
    return r.x_bar.copy(), r.samples.astype(np.int64), r.rounds.astype(np.int64)


def _cases_scgd_run(rng):
    M, p, d, T = 3, 2, 3, 7
    A = rng.standard_normal((p, d)) * 0.6
    b, c = rng.standard_normal((M, p)), rng.standard_normal((M, p))
    out = []
    for q, alpha, flags, comment in (
            (3, 0.0, ["average-x"], "ComFedL-style: the server averages x after steps 3 and 6"),
            (3, 0.3, ["average-x-y-m", "momentum-convention"], "Local-SCGDM: x, y and m averaged"),
            (1, 0.3, ["q-1", "momentum-convention"], "q = 1: averaging after every step")):
        out.append(dict(id=f"scgd_run-{len(out)}", comment=comment, flags=flags,
                        inputs=dict(A=A, b=b, c=c, x1=rng.standard_normal(d) * 0.5,
                                    zeta0=rng.standard_normal((M, p)) * 0.1, zeta=rng.standard_normal((T, M, p)) * 0.1,
                                    zeta2=rng.standard_normal((T, M, p)) * 0.1, xi=rng.standard_normal((T, M, p)) * 0.1,
                                    T=T, q=q, eta=0.3, beta=0.6, alpha=alpha), tol={"rel": 1e-13}))
    return out


def _averages(i):
    return 1 < i["q"] <= i["T"]


_W_SCGD_RUN = {
    "average-x": lambda c: c["inputs"]["alpha"] <= 0 and _averages(c["inputs"]),
    "average-x-y-m": lambda c: c["inputs"]["alpha"] > 0 and _averages(c["inputs"]),
    "momentum-convention": lambda c: 0 < c["inputs"]["alpha"] < 1,
    "q-1": lambda c: c["inputs"]["q"] == 1
    and bool(np.array_equal(c["expected"]["rounds"], np.arange(1, c["inputs"]["T"] + 1))),
}


SCGD_RUN = Family(
    'scgd_run', 'mfcgd', "[MFCGD] Table 1 baselines: ComFedL-style local SCGD and Local-SCGDM",
    inputs=("A", "b", "c", "x1", "zeta0", "zeta", "zeta2", "xi", "T", "q", "eta", "beta", "alpha"),
    outputs=("x_bar", "samples", "rounds"),
    description=("M clients of the synthetic problem (g_m(x; ζ) = A x + b_m + ζ, ∇f_m(y; ξ) = φ(y − c_m) + ξ, "
                 "φ(z) = z/sqrt(1 + z²)); y_m starts at g_m(x1; ζ0_m); per step t and client: y ← (1 − β)y + "
                 "β g(x; ζ_t), d = ∇g(x; ζ'_t)ᵀ ∇f(y; ξ_t), SCGD (alpha ≤ 0): x ← x − ηd; SCGDM: m ← (1 − α)m + "
                 "αd, x ← x − ηm (m starts at 0); when q divides t every client gets the mean x (SCGDM: x, y, m). "
                 "x_bar[t−1]: the clients' mean before step t; samples: M + 3Mt after step t; rounds: ⌊t/q⌋"),
    reference=_ref_scgd_run, cases=_cases_scgd_run, witnesses=_W_SCGD_RUN)


def _ref_mfcgd_run(A, b, c, x1, zeta0, xi0, zeta, xi, T, q, k, n, c1, c2, c3, gamma, C_g, C_f, matrix, rho, theta):
    from refimpl.mfcgd.algorithm import MFCGDParams, make_matrix, run_mfcgd
    from refimpl.mfcgd.problems import SyntheticComposition
    pr = SyntheticComposition(np.asarray(A, float), np.asarray(b, float), np.asarray(c, float))
    par = MFCGDParams(k=k, n=n, c1=c1, c2=c2, c3=c3, gamma=gamma, q=int(q), C_g=C_g, C_f=C_f)
    r = run_mfcgd(pr, np.asarray(x1, float), int(T), par, make_matrix(matrix, float(rho), float(theta)),
                  np.random.default_rng(0), noise=tuple(np.asarray(a, float) for a in (zeta0, xi0, zeta, xi)))
    return r.x_bar.copy(), r.samples.astype(np.int64), r.rounds.astype(np.int64)


def _cases_mfcgd_run(rng):
    M, p, d, T, q = 3, 2, 3, 8, 3
    A = rng.standard_normal((p, d)) * 0.8
    b, c = rng.standard_normal((M, p)), rng.standard_normal((M, p))
    out = []
    for matrix, C_g, C_f, flags, comment in (
            ("identity", 10.0, 10.0, ["average-every-q", "cap-active"], "MFCGD: A = I; x averaged after steps 3 and 6"),
            ("adam", 1.0, 0.8, ["A1-from-w-bar-1", "projection-u-binds", "projection-v-binds", "cap-active"],
             "AdaMFCGD (Adam type): A_1 from w̄_1, kept between communications; both projections bind and "
             "c·η² > 1 at the first steps"),
            ("norm", 10.0, 10.0, ["scalar-state", "cap-active", "A1-from-w-bar-1"], "the norm type"),
            ("amsgrad", 10.0, 10.0, ["running-max", "cap-active", "A1-from-w-bar-1"], "the AMSGrad type")):
        out.append(dict(id=f"mfcgd_run-{len(out)}", comment=comment, flags=flags,
                        inputs=dict(A=A, b=b, c=c, x1=rng.standard_normal(d) * 0.5,
                                    zeta0=rng.standard_normal((M, q, p)) * 0.1, xi0=rng.standard_normal((M, q, p)) * 0.1,
                                    zeta=rng.standard_normal((T, M, p)) * 0.1, xi=rng.standard_normal((T, M, p)) * 0.1,
                                    T=T, q=q, k=1.0, n=2.0, c1=3.0, c2=4.0, c3=5.0, gamma=0.5, C_g=C_g, C_f=C_f,
                                    matrix=matrix, rho=0.1, theta=0.9), tol={"rel": 1e-12}))
    return out


def _phi(z):
    return z / np.sqrt(1 + z * z)


def _starts_outside(i, which):
    """Line 1's u_m = A (outside the ball C_g) or v_m = mean_j ∇f_m(h_m; ξ0_mj) (some m outside C_f)."""
    if which == "u":
        return float(np.linalg.norm(i["A"])) > i["C_g"]
    h = (i["x1"] @ i["A"].T)[None, :] + i["b"] + i["zeta0"].mean(axis=1)
    v = _phi(h - i["c"]) + i["xi0"].mean(axis=1)
    return float(np.linalg.norm(v, axis=1).max()) > i["C_f"]


_W_MFCGD_RUN = {
    "average-every-q": lambda c: c["inputs"]["matrix"] == "identity" and 1 < c["inputs"]["q"] <= c["inputs"]["T"],
    "A1-from-w-bar-1": lambda c: c["inputs"]["matrix"] != "identity",
    "projection-u-binds": lambda c: _starts_outside(c["inputs"], "u"),
    "projection-v-binds": lambda c: _starts_outside(c["inputs"], "v"),
    "cap-active": lambda c: max(c["inputs"][k] for k in ("c1", "c2", "c3"))
    * (c["inputs"]["k"] / (c["inputs"]["n"] + 1) ** (1 / 3)) ** 2 > 1,
    "scalar-state": lambda c: c["inputs"]["matrix"] == "norm",
    "running-max": lambda c: c["inputs"]["matrix"] == "amsgrad",
}


MFCGD_RUN = Family(
    'mfcgd_run', 'mfcgd', "[MFCGD] Algorithm 1 on the synthetic problem: T steps",
    inputs=("A", "b", "c", "x1", "zeta0", "xi0", "zeta", "xi", "T", "q", "k", "n", "c1", "c2", "c3", "gamma",
            "C_g", "C_f", "matrix", "rho", "theta"),
    outputs=("x_bar", "samples", "rounds"),
    description=("M clients (b, c: one row each) of the problem of storm_update. Line 1: h_m, u_m, v_m the means "
                 "over j < q of g_m(x1; ζ0_mj), ∇g = A, ∇f_m(h_m; ξ0_mj); w_m = u_mᵀv_m; A_1 from the adaptive-"
                 "matrix rule on w̄_1 (identity: A = I; adam / norm / amsgrad as adaptive_matrix from a = 0). "
                 "Step t = 1..T: x̄_t = mean of x_m; when q divides t, A_t from the rule on w̄_t and every "
                 "x_m ← x̄_t − γη_t A_t⁻¹ w̄_t, else x_m ← x_m − γη_t A_t⁻¹ w_m (A kept); then every client's "
                 "recursions (storm_update with α, β, ϱ of storm_weights at t and samples ζ_t, ξ_t). Outputs: "
                 "x̄_t for every t, samples 2qM + 2Mt and communication rounds ⌊t/q⌋ after step t"),
    reference=_ref_mfcgd_run, cases=_cases_mfcgd_run, witnesses=_W_MFCGD_RUN)


def _ref_theorem_rhs(C_f, C_g, L_f, L_g, sigma, delta_f, delta_g, F_gap, k, n, c1, c2, c3, gamma, q, rho, T, A_rms):
    from refimpl.mfcgd.bounds import Constants, G_value, TheoremParams, theorem1_bound, theorem2_bound
    c = Constants(C_f, C_g, L_f, L_g, sigma, delta_f, delta_g, F_gap)
    p = TheoremParams(k, n, c1, c2, c3, gamma, int(q), 0.0)
    return float(G_value(c, p, int(T), float(rho))), theorem1_bound(c, p, int(T), float(rho), float(A_rms)), \
        theorem2_bound(c, p, int(T)), c.L


def _cases_theorem_rhs(rng):
    base = dict(C_f=2.3, C_g=1.4, L_f=1.0, L_g=0.8, sigma=0.3, delta_f=0.2, delta_g=0.1, F_gap=3.0, k=1.0, n=1e6,
                c1=40.0, c2=30.0, c3=20.0, gamma=0.05, q=4, rho=0.5, T=1000, A_rms=1.2)
    out = []
    for kw, flags, comment in (
            ({}, [], "heterogeneous clients, Adam-type ρ = 0.5"),
            (dict(delta_f=0.0, delta_g=0.0, rho=1.0, A_rms=1.0), ["homogeneous"], "δ_f = δ_g = 0, ρ = 1"),
            (dict(T=10 ** 6, q=1), ["log-n-plus-T"], "a long horizon: the ln(n + T) term"),
            (dict(L_f=1.6), [], "L_f ≠ 1: Lemma 1's L = sqrt(2C_f²L_g² + 2C_g⁴L_f²) reads L_f² (the other cases "
                                "have L_f = 1)")):
        out.append(dict(id=f"theorem_rhs-{len(out)}", comment=comment, flags=flags, inputs={**base, **kw},
                        tol={"rel": 1e-13}))
    return out


_W_THEOREM_RHS = {
    "homogeneous": lambda c: c["inputs"]["delta_f"] == c["inputs"]["delta_g"] == 0 and c["inputs"]["rho"] == 1,
    # ln(n + T) well above ln n: the horizon's term counts
    "log-n-plus-T": lambda c: np.log(c["inputs"]["n"] + c["inputs"]["T"]) > np.log(c["inputs"]["n"]) + 0.5,
}


THEOREM_RHS = Family(
    'theorem_rhs', 'mfcgd', "[MFCGD] Theorems 1–2: G and the right sides of (14) and (16); Lemma 1's L",
    inputs=("C_f", "C_g", "L_f", "L_g", "sigma", "delta_f", "delta_g", "F_gap", "k", "n", "c1", "c2", "c3",
            "gamma", "q", "rho", "T", "A_rms"),
    outputs=("G", "rhs14", "rhs16", "L"),
    description=("L_fg = sqrt(L_f²C_g² + L_g²), C_fg = max(C_f, C_g); δ̂² = 2c1²L_f²σ² + c3²σ² + "
                 "4c3²δ_f² + 4c3²L_f²δ_g² + c2²σ² + 3c2²δ_g²; G = 4F_gap/(kργ) + 12n^{1/3}σ²/(qk²ρ²) + "
                 "4k²(δ̂²/(4γ²L_fg²) + (c1² + c2² + c3²)σ²/(3ργqL_fgC_fg)) ln(n + T); rhs14 = (sqrt(2G) "
                 "n^{1/6}/sqrt(T) + sqrt(2G)/T^{1/3}) A_rms; rhs16 the same with ρ = 1 and no A_rms; L = "
                 "sqrt(2C_f²L_g² + 2C_g⁴L_f²), the smoothness of F (Lemma 1)"),
    reference=_ref_theorem_rhs, cases=_cases_theorem_rhs, witnesses=_W_THEOREM_RHS)


FAMILIES = (STORM_UPDATE, STORM_WEIGHTS, ADAPTIVE_MATRIX, SCGD_RUN, MFCGD_RUN, THEOREM_RHS,)
