"""Checks of mini-batch SSCA ([SSCA]): protocols, surrogate, Remark 2, step sizes, Theorems 1–5,
Lemma 1 against cvxpy, and the experimental claim against SGD and SGD-m."""
from __future__ import annotations

import numpy as np

from refimpl.core.model import TwoLayerNet, full_gradient
from refimpl.core.partition import feature_based_schedule, feature_partition, sample_based_schedule, sample_partition
from refimpl.core.schedules import PowerLaw, Sequence, _decay, check_step_sizes, meets_conditions
from refimpl.core.trace import Trace
from refimpl.ssca.algorithms import SSCA, Evaluator, train
from refimpl.ssca.constrained import QCQPStep, closed_form_step, subproblem_kkt_residuals
from refimpl.ssca.constrained_algorithms import ConstrainedEvaluator, ConstrainedSSCA
from refimpl.ssca.experiment import RunConfig, build, rounds_to_target, run_experiment
from refimpl.ssca.protocols import FeatureBasedProtocol, SampleBasedProtocol
from refimpl.ssca.surrogate import SurrogateState, momentum_form_step, surrogate_update
from refimpl.verification.core import plain_objective_grad
from refimpl.verification.registry import check, embedded, first_wrong, map_parts, max_or_nan, raises


def _minimize(*args, **kwargs):
    """``scipy.optimize.minimize``, imported when a check first calls it (0.3 s of every
    verify process's start otherwise)."""
    from scipy.optimize import minimize
    return minimize(*args, **kwargs)


@check("ssca.feature_equals_central",
       "feature-based gradient collection equals the centralised gradient of the same batch (with and without a "
       "bias, contiguous and scattered blocks; the batch's ids again in reverse order too; Remark 4's one-step "
       "collection too), and the round's "
       "messages carry the floats counted by hand (Algorithm 3's three steps and Remark 4's one)",
       "[SSCA] Algorithm 3; docs/ssca.md")
def feature_equals_central(quick):
    d = embedded()
    rng = np.random.default_rng(21)
    errs, ledgers = {}, {}
    for bias in (False, True):
        for layout in ("contiguous", "scattered"):
            m = TwoLayerNet(d.n_features, 32, 10, "swish", bias)
            theta = m.init_params(rng)
            blocks = (feature_partition(d.n_features, 4) if layout == "contiguous"
                      else np.array_split(rng.permutation(d.n_features), 4))
            pr = FeatureBasedProtocol(m, d.X_train, d.y_train, blocks, designated=2)
            batch = rng.choice(d.n_train, 50, replace=False)
            l1, g1, msgs = pr.collect(theta, batch)
            l2, g2 = m.loss_grad(theta, d.X_train[batch], d.y_train[batch])
            # the same ids again in reverse order: the protocol keeps a batch's gathered rows while
            # the ids repeat, so this round must gather them anew, aligned with the labels
            rev = batch[::-1].copy()
            l3, g3, _ = pr.collect(theta, rev)
            l4, g4 = m.loss_grad(theta, d.X_train[rev], d.y_train[rev])
            errs[f"bias={bias},{layout}"] = max_or_nan(float(np.linalg.norm(g1 - g2) / np.linalg.norm(g2)),
                                                       abs(l1 - l2) / abs(l2),
                                                       float(np.linalg.norm(g3 - g4) / np.linalg.norm(g4)),
                                                       abs(l3 - l4) / abs(l4))
            ledgers[f"bias={bias},{layout}"] = _feature_ledger_errors(pr, theta, batch, msgs, blocks, bias)
    wrong = {k: v for k, v in ledgers.items() if v}
    return {"measured": max_or_nan(*errs.values()), "bound": 1e-12, "holds": max_or_nan(*errs.values()) <= 1e-12 and not wrong,
            "details": {**errs, "ledgers_differing": wrong},
            "note": f"gradients within {max_or_nan(*errs.values()):.1e}; {len(wrong)} of {len(ledgers)} ledgers differ"}


def _feature_ledger_errors(pr, theta, batch, msgs, blocks, bias, J=32, L=10, d=2):
    """The floats of each message of Algorithm 3's round (and of Remark 4's one-step collection), by
    hand: the server sends client k its W1 block and the B batch ids (the designated client d also
    W2 and, with a bias, b1); each other client sends Z_k (B × J) to d; d sends ∇W2 and ℓ̂ (and ∇b1)
    to the server and Δ1 (B × J) to each other client; client k sends ∇W1,k. One-step: client k
    sends Z_k and X_k, B (J + D_k) floats."""
    B, K = len(batch), len(blocks)
    W2 = L * (J + bias)                    # W2 is L × (J + 1) with the bias in column 0
    three = ([J * len(b) + B + (W2 + J * bias if k == d else 0) for k, b in enumerate(blocks)]
             + [J * B] * (K - 1) + [W2 + 1 + J * bias] + [J * B] * (K - 1) + [J * len(b) for b in blocks])
    one = [J * len(b) + B for b in blocks] + [B * (J + len(b)) for b in blocks]
    got3 = sorted(m.floats for m in msgs)
    pr1 = FeatureBasedProtocol(pr.model, pr.X, pr.y, blocks, designated=d, collection="one-step")
    l1, g1, msgs1 = pr1.collect(theta, batch)
    got1 = sorted(m.floats for m in msgs1)
    out = []
    l0, g0 = pr.model.loss_grad(theta, pr.X[batch], pr.y[batch])     # Remark 4: the same gradient, centrally
    rel = max(float(np.linalg.norm(g1 - g0) / np.linalg.norm(g0)), abs(l1 - l0) / abs(l0))
    if not rel <= 1e-12:
        out.append(f"one-step: gradient and loss {rel:.1e} from the centralised ones")
    if got3 != sorted(three):
        out.append(f"three-step: {got3}, by hand {sorted(three)}")
    if got1 != sorted(one):
        out.append(f"one-step: {got1}, by hand {sorted(one)}")
    return out


@check("ssca.remark2_momentum",
       "SSCA iterates (A^t ≡ τ) equal the momentum-SGD recursion of Remark 2",
       "[SSCA] Remark 2; docs/ssca.md")
def remark2_momentum(quick):
    """Two comparisons over T rounds on the same batches, starting from the same ω^1:
    (a) each recursion computes its own mini-batch gradients, at τ = 0.25 (step γ/(2τ) ≲ 0.6,
        where the network's dynamics do not amplify rounding);
    (b) at the paper's τ = 0.05 (step up to 3) the trajectory is chaotic — independent runs drift
        apart from 1e-16 to ~1e-6 in 200 rounds through rounding alone — so the momentum form is
        fed the SSCA run's ĝ^t, which isolates the algebraic identity from that amplification.
    """
    d = embedded()
    T = 200 if quick else 1000
    lam = 1e-3
    m = TwoLayerNet(d.n_features, 16, 10)
    parts = sample_partition(d.n_train, 10)
    pr = SampleBasedProtocol(m, d.X_train, d.y_train, parts)
    sched = sample_based_schedule(parts, T, 10, np.random.default_rng(22))
    rho, gamma = PowerLaw(1.0, 0.1), PowerLaw(0.3, 0.15)
    theta0 = m.init_params(np.random.default_rng(23))
    det = {"rounds": T, "lambda": lam, "rho": rho.describe(), "gamma": gamma.describe()}
    for label, tau, shared in (("independent gradients, tau=0.25", 0.25, False),
                               ("shared gradients, tau=0.05", 0.05, True)):
        algo = SSCA(pr, rho, gamma, tau, lam)
        state = algo.init(theta0)
        omega_m, v = theta0.copy(), np.zeros_like(theta0)
        worst = 0.0
        for t in range(1, T + 1):
            batch = sched.indices[t - 1]
            g = pr.collect(state.omega if shared else omega_m, batch)[1]
            state = algo.apply(state, t, batch)[0]
            v, omega_m = momentum_form_step(v, omega_m, g, rho(t), gamma(t - 1) if t > 1 else 0.0,
                                            gamma(t), tau, lam)
            worst = max_or_nan(worst, float(np.max(np.abs(state.omega - omega_m)) / np.max(np.abs(state.omega))))
        det[label] = worst
    measured = max_or_nan(det["independent gradients, tau=0.25"], det["shared gradients, tau=0.05"])
    return {"measured": measured, "bound": 1e-10, "details": det}


@check("ssca.surrogate_assumption2",
       "surrogate (7): per-round term matches ℓ̂^t and ĝ^t at ω^t; q^t strongly convex with modulus 2A^t",
       "[SSCA] Assumption 2, (7); docs/ssca.md")
def surrogate_assumption2(quick):
    """The per-round term f̄^t = (q^t − (1 − ρ_t) q^{t−1}) / ρ_t must satisfy f̄^t(ω^t) = ℓ̂^t and
    ∇f̄^t(ω^t) = ĝ^t (Assumption 2's value/gradient consistency); q^t itself matches them only
    when ρ_t = 1. Strong convexity: q(y) − q(x) − ⟨∇q(x), y − x⟩ = A^t ||y − x||² exactly."""
    d = embedded()
    T = 30 if quick else 200
    m = TwoLayerNet(d.n_features, 16, 10)
    parts = sample_partition(d.n_train, 10)
    pr = SampleBasedProtocol(m, d.X_train, d.y_train, parts)
    sched = sample_based_schedule(parts, T, 20, np.random.default_rng(24))
    rng = np.random.default_rng(25)
    rho, gamma, tau = PowerLaw(0.9, 0.6), PowerLaw(0.5, 0.7), 0.1
    algo = SSCA(pr, rho, gamma, tau)
    state = algo.init(m.init_params(rng))
    worst_val = worst_grad = worst_sc = 0.0
    for t in range(1, T + 1):
        omega, prev = state.omega, state.surrogate
        lhat, ghat, _ = pr.collect(omega, sched.indices[t - 1])
        state = algo.apply(state, t, sched.indices[t - 1])[0]
        q, r = state.surrogate, rho(t)
        term_val = (q.value(omega) - (1 - r) * prev.value(omega)) / r
        term_grad = (q.gradient(omega) - (1 - r) * prev.gradient(omega)) / r
        worst_val = max_or_nan(worst_val, abs(term_val - lhat) / abs(lhat))
        worst_grad = max_or_nan(worst_grad, float(np.linalg.norm(term_grad - ghat) / np.linalg.norm(ghat)))
        x, y = rng.standard_normal(omega.size), rng.standard_normal(omega.size)
        gap = q.value(y) - q.value(x) - q.gradient(x) @ (y - x)
        worst_sc = max_or_nan(worst_sc, abs(gap / (q.A * np.dot(y - x, y - x)) - 1.0))
    det = {"value_mismatch": worst_val, "gradient_mismatch": worst_grad,
           "strong_convexity_modulus_mismatch": worst_sc, "rounds": T}
    return {"measured": max_or_nan(worst_val, worst_grad, worst_sc), "bound": 1e-9, "details": det}


def _single_precision_sequence_wrong():
    """A step-size sequence given in single precision is kept, and fitted, in double: its values'
    tail exponent, not float32 arithmetic's (0.79999997 instead of 0.7999999959 for 200 values of
    0.5/t^0.8)."""
    from refimpl.core.schedules import Sequence, _decay
    values = (0.5 / np.arange(1, 201, dtype=float) ** 0.8).astype(np.float32)
    single = Sequence(values)
    return single.s.dtype != np.float64 or _decay(single) != _decay(Sequence(values.astype(np.float64)))


@check("ssca.stepsize_conditions",
       "the schedule checker's verdicts on (4)/(6): the paper's α = 0.1 and 0.3 schedules are flagged, and each "
       "condition's verdict at its edge by hand (exponent 1/2 fails Σρ² < ∞, exponent 1 meets Σγ = ∞, equal "
       "exponents fail γ/ρ → 0, exponent 0 fails ρ → 0, a value 0 is outside (0, 1], named by its t), and a finite "
       "sequence's tail exponent fitted on its last half (exact power laws: the exponent itself); a sequence holding "
       "NaN refused; refimpl run's default exponents the paper's (γ's = ρ's α + 0.05)",
       "[SSCA] (4), (6), Section VI; docs/ssca.md")
def stepsize_conditions(quick):
    cases = {   # (ρ, γ, expected: meets every condition?)
        "paper sample-based 1/t^0.1, 0.3/t^0.15": (PowerLaw(1, 0.1), PowerLaw(0.3, 0.15), False),
        "paper feature-based 1/t^0.3, 0.3/t^0.35": (PowerLaw(1, 0.3), PowerLaw(0.3, 0.35), False),
        "1/t^0.6, 0.5/t^0.7": (PowerLaw(1, 0.6), PowerLaw(0.5, 0.7), True),
        "1/t^0.6, 0.5/t^0.5 (γ/ρ ↛ 0)": (PowerLaw(1, 0.6), PowerLaw(0.5, 0.5), False),
        "1/t^1.2, 0.5/t^1.3 (Σρ < ∞)": (PowerLaw(1, 1.2), PowerLaw(0.5, 1.3), False),
    }
    t = np.arange(1, 5001, dtype=float)
    cases["sequence 1/t^0.1, 0.3/t^0.15 (estimated)"] = (Sequence(1 / t ** 0.1), Sequence(0.3 / t ** 0.15), False)
    cases["sequence 1/t^0.75, 0.5/t^0.8 (estimated)"] = (Sequence(1 / t ** 0.75), Sequence(0.5 / t ** 0.8), True)
    wrong, det = 0, {}
    for name, (r, g, expect) in cases.items():
        verdict = meets_conditions(r, g)
        failed = [c.name for c in check_step_sizes(r, g) if not c.met]
        det[name] = {"meets_all": verdict, "expected": expect, "failed_conditions": failed}
        wrong += verdict != expect
    # each condition at its edge, by hand: Σ (t^−1/2)² = Σ 1/t = ∞ (p = 1/2 fails Σρ² < ∞), Σ 1/t = ∞
    # (p = 1 meets Σγ = ∞), equal exponents give γ/ρ → a constant, not 0
    edges = {"1/t^0.5, 0.5/t^1 (p = 1/2: Σρ² = ∞; p = 1: Σγ = ∞)": (PowerLaw(1, 0.5), PowerLaw(0.5, 1.0),
                                                                  ["sum_rho_sq_finite"]),
             "1/t^0.75, 0.5/t^1 (every condition met)": (PowerLaw(1, 0.75), PowerLaw(0.5, 1.0), []),
             "1/t^0.7, 0.5/t^0.7 (equal exponents: γ/ρ ↛ 0)": (PowerLaw(1, 0.7), PowerLaw(0.5, 0.7),
                                                              ["gamma_over_rho_to_0"]),
             "0.5/t^0, 0.5/t^1 (exponent 0: ρ ↛ 0, Σρ² = ∞)": (PowerLaw(0.5, 0.0), PowerLaw(0.5, 1.0),
                                                              ["rho_to_0", "sum_rho_sq_finite"])}
    # a sequence: ρ_1 = 0 is outside (0, 1]; the tail exponent fitted on t = n/2 + 1 … n of exact
    # power laws (8 values: t = 5 … 8) is the exponent itself, 1.02 (Σρ < ∞) and 1.1
    t8 = np.arange(1, 9, dtype=float)
    edges["sequence 0, 1/t^0.75 …; 0.5/t^0.8 (ρ_1 = 0)"] = (
        Sequence(np.r_[0.0, 1 / t[1:] ** 0.75], check_range=False), Sequence(0.5 / t ** 0.8), ["rho_in_(0,1]"])
    edges["sequence of 8: 1/t^1.02, 0.5/t^1.1 (fitted exponents 1.02, 1.1: Σρ, Σγ < ∞)"] = (
        Sequence(1 / t8 ** 1.02), Sequence(0.5 / t8 ** 1.1), ["sum_rho_infinite", "sum_gamma_infinite"])
    fitted = [c.reason.split(";")[0] for c in check_step_sizes(Sequence(1 / t8 ** 1.02), Sequence(0.5 / t8 ** 1.1))
              if c.name.startswith("sum_") and c.name.endswith("_infinite")]
    wrong += fitted != ["tail exponent ≈ 1.02 (estimated from a finite sequence)",
                        "tail exponent ≈ 1.1 (estimated from a finite sequence)"]
    det["fitted tail exponents of the 8-value sequences"] = fitted
    wrong += abs(_decay(Sequence(1 / t8 ** 1.02))[0] - 1.02) > 1e-12      # … and to round-off: an exact line
    wrong += _single_precision_sequence_wrong()
    exact = [c.reason.split(";")[0] for c in check_step_sizes(PowerLaw(1, 0.6), PowerLaw(0.5, 0.7))
             if c.name == "sum_rho_infinite"]
    short = [c.reason.split(";")[0] for c in check_step_sizes(Sequence(np.array([0.9, 0.8, 0.7])),
                                                              Sequence(np.array([0.5, 0.4, 0.3])))
             if c.name == "sum_rho_infinite"]
    wrong += exact != ["tail exponent = 0.6"] or short != ["tail exponent ≈ 0 (estimated from a finite sequence)"]
    det["a power law's exponent stated, three values' estimated as 0"] = exact + short
    wrong += not all(raises(lambda a=a: PowerLaw(0.5, a), "must be finite and >= 0") for a in (-0.1, np.inf, np.nan))
    # the first value outside (0, 1] is named, after values inside it and before another one outside
    said = [c.reason for c in check_step_sizes(Sequence(np.array([0.9, 0.5, 1.5, 0.4, 2.0]), check_range=False),
                                               PowerLaw(0.5, 1.0)) if c.name == "rho_in_(0,1]"]
    wrong += said != ["all 5 values of the sequence checked; rho_3 = 1.5 is outside (0, 1]"]
    det["0.9, 0.5, 1.5, 0.4, 2: the value named"] = said
    # what a schedule says of itself: a power law its formula, a sequence its size and where it came from
    told = [PowerLaw(0.5, 0.6).describe(), Sequence(np.array([0.5, 0.4])).describe(),
            Sequence(np.array([0.5, 0.4, 0.3]), label="rho.npy").describe()]
    wrong += told != ["0.5/t^0.6", "sequence of 2 values", "sequence of 3 values (rho.npy)"]
    det["schedules described"] = told
    # a power law's first T values, t = 1 … T, are its values at each t
    values = PowerLaw(0.5, 0.6).values(4)
    wrong += values.shape != (4,) or not np.allclose(values, [0.5 / t_ ** 0.6 for t_ in (1, 2, 3, 4)], rtol=1e-15)
    det["0.5/t^0.6's first 4 values"] = [float(v) for v in values]
    wrong += not raises(lambda: Sequence(np.array([0.5, np.nan, 0.25])), "must be non-empty and finite")
    # the value outside (0, 1] is named by its t (ρ_1 here, the first)
    said = [c.reason for c in check_step_sizes(Sequence(np.r_[0.0, 1 / t[1:] ** 0.75], check_range=False),
                                               Sequence(0.5 / t ** 0.8)) if c.name == "rho_in_(0,1]"]
    wrong += not (len(said) == 1 and said[0].endswith("; rho_1 = 0 is outside (0, 1]"))
    # refimpl run's defaults are the paper's pairs: γ_t's exponent is ρ_t's α + 0.05
    from refimpl.ssca.experiment import RunConfig
    pairs = [(c.rho_alpha, c.gamma_alpha)
             for c in (RunConfig(setting=s, batch=10).resolved() for s in ("sample", "feature"))]
    det["default exponents (alpha of rho, of gamma)"] = pairs
    wrong += not all(abs(a - want[0]) <= 1e-12 and abs(g - want[1]) <= 1e-12
                     for (a, g), want in zip(pairs, ((0.1, 0.15), (0.3, 0.35))))
    for name, (r, g, expect) in edges.items():
        failed = [c.name for c in check_step_sizes(r, g) if not c.met]
        det[name] = {"failed_conditions": failed, "expected_failed": expect}
        wrong += failed != expect
    flagged = "sum_rho_sq_finite" in det["paper sample-based 1/t^0.1, 0.3/t^0.15"]["failed_conditions"]
    return {"measured": wrong, "bound": 0, "holds": wrong == 0 and flagged, "details": det}


def _full_batch_subset(n=1000, seed=0):
    """A 1,000-sample subset of the embedded data. With every client's whole shard as its mini-batch
    the rounds are deterministic, so Theorem 1's stationarity (and Theorem 2's KKT conditions) can be
    approached within seconds, and a wrong gradient shows as a plateau rather than as noise."""
    import dataclasses
    d0 = embedded()
    sub = np.random.default_rng(seed).choice(d0.n_train, n, replace=False)
    return dataclasses.replace(d0, X_train=d0.X_train[sub], y_train=d0.y_train[sub])


THEOREM1_SETTINGS = (("gamma_0.5/t^0.6", 0.6, 0.5, 0.15), ("gamma_0.9/t^0.9", 0.9, 0.9, 0.5))


@check("ssca.theorem1_stationarity",
       "SSCA (sample-based, 10 clients, every client's shard as its batch, ρ_t = t^-0.55) meeting (4) and (6): "
       "||∇F(ω^T)|| falls below 0.15·||∇F(ω^0)|| with γ_t = 0.5 t^-0.6 and below 0.5·||∇F(ω^0)|| with the fast "
       "decay γ_t = 0.9 t^-0.9 (near the admissible limit t^-1, where Σγ_t = ∞ still holds), and both log–log trends "
       "are negative",
       "[SSCA] Theorem 1; docs/ssca.md")
def theorem1_stationarity(quick):
    d = _full_batch_subset()
    # quick: 1,000 rounds for the same fractions (the 2,000 of earlier versions reached 0.073 and
    # 0.24, ratios 0.49 and 0.48; meeting them in half the rounds is the stricter demand)
    T = 1000 if quick else 6000
    lam = 1e-2
    det, holds, worst = {}, True, 0.0
    for label, g_alpha, g_a, fraction in THEOREM1_SETTINGS:
        cfg = RunConfig("ssca", "sample", batch=100, rounds=T, hidden=8, lam=lam, tau=0.05, rho_a=1.0,
                        rho_alpha=0.55, gamma_a=g_a, gamma_alpha=g_alpha, eval_every=T, seed=1)
        algo, theta0, sched, ev, model = build(cfg, d)
        rho, gamma = algo.rho, algo.gamma
        if not meets_conditions(rho, gamma):
            raise AssertionError(f"{label}: the step sizes do not meet (4)/(6)")
        every = T // 20
        rounds = [0]
        # stationarity measured with an independent transcription of ∇F (not the model's gradient)
        norms = [float(np.linalg.norm(plain_objective_grad(8, 10, theta0, d.X_train, d.y_train, lam)))]

        def on_round(t, st):
            if t % every == 0:
                rounds.append(t)
                norms.append(float(np.linalg.norm(plain_objective_grad(8, 10, st.omega, d.X_train, d.y_train, lam))))

        train(algo, theta0, sched, T, ev, Trace({}), on_round=on_round)
        r, n = np.array(rounds[1:]), np.array(norms[1:])
        ratio = float(n[-1] / norms[0])
        slope = float(np.polyfit(np.log(r), np.log(n), 1)[0])
        ok = ratio <= fraction and slope < 0
        holds &= ok
        worst = max_or_nan(worst, ratio / fraction)
        det[label] = {"rho": rho.describe(), "gamma": gamma.describe(), "final_over_initial": ratio,
                      "stated_fraction": fraction, "loglog_slope": slope, "grad_norm_initial": norms[0],
                      "grad_norm_every": every, "grad_norms": n.tolist(), "holds": bool(ok)}
    det.update(rounds=T, lambda_=lam, samples=d.n_train, hidden=8)
    return {"measured": worst, "bound": 1.0, "holds": holds, "details": det}


def _rounds_part(part):
    """Rounds to the training-cost target of one run (a part of :func:`claim_faster_than_sgd`).
    The run stops at the first evaluation that meets the target: the rounds before it, and so
    the answer, are those of the full-length run; the evaluations above the target read only the
    training rows that show it (``screen``; tests/test_ssca.py checks both)."""
    algorithm, kw, target = part
    return rounds_to_target(run_experiment(RunConfig(algorithm, **kw), embedded(), stop_at_cost=target,
                                           test_accuracy=False, screen=True), target)


@check("ssca.claim_faster_than_sgd",
       "SSCA reaches the training-cost target in fewer rounds than SGD and the best SGD-m of a grid "
       "(equal per-round communication); ratio = SSCA rounds / best baseline rounds",
       "[SSCA] Section VI, Figs. 1–2; docs/ssca.md", kind="claim")
def claim_faster_than_sgd(quick):
    T = 300 if quick else 1000
    target = 0.25 if quick else 0.15
    grid = ([(0.3, 0.5), (1.0, 0.5), (0.3, 0.9), (1.0, 0.9)] if quick else
            [(lr, m) for lr in (0.3, 0.6, 1.0) for m in (0.1, 0.5, 0.9)])
    det, worst = {}, 0.0
    holds = True
    settings = (("sample", 10), ("sample", 100), ("feature", 100))
    parts = []
    for setting, B in settings:
        base = dict(setting=setting, batch=B, rounds=T, eval_every=5, seed=3)
        parts += [("ssca", base, target), ("sgd", base, target)]
        parts += [("sgdm", dict(lr=lr, momentum=mom, **base), target) for lr, mom in grid]
        # outside the paper's protocol (constant learning rate): reported, not part of the verdict
        parts.append(("sgdm", dict(lr=1.0, momentum=0.9, lr_decay=0.0, **base), target))
    found = iter(map_parts(_rounds_part, parts))
    for setting, B in settings:
        res = {"ssca": next(found), "sgd": next(found)}
        best = None
        for lr, mom in grid:
            r = next(found)
            if r is not None and (best is None or r < best[0]):
                best = (r, lr, mom)
        res["sgdm_best"] = None if best is None else best[0]
        res["sgdm_best_lr_momentum"] = None if best is None else best[1:]
        res["sgdm_constant_lr1_m0.9"] = next(found)
        baselines = [x for x in (res["sgd"], res["sgdm_best"]) if x is not None]
        if res["ssca"] is None:
            holds, ratio = False, np.inf
        else:
            fastest = min(baselines) if baselines else np.inf
            ratio = res["ssca"] / fastest
            holds &= res["ssca"] < fastest
        res["ratio"] = ratio
        worst = max_or_nan(worst, ratio)
        det[f"{setting} B={B}"] = res
    det["target_train_cost"] = target
    det["rounds"] = T
    det["baseline_learning_rate"] = "eta0 / t^0.3 (SGD eta0 = 0.3; SGD-m eta0 and momentum from the grid)"
    figures = ", ".join(f"{k} {v['ssca'] or '—'}/{min([x for x in (v['sgd'], v['sgdm_best']) if x is not None], default='—')}"
                        for k, v in det.items() if isinstance(v, dict) and "sgdm_best" in v)
    note = (f"rounds to training cost {target:g}, SSCA / fastest baseline: {figures}" +
            ("" if holds else "; not reproduced in every setting"))
    return {"measured": worst, "bound": 1.0, "holds": holds, "note": note, "details": det}


# ----------------------------------------------------------------------------------------------
# constrained SSCA (Algorithms 2 and 4, Lemma 1, Theorems 2, 4, 5)
# ----------------------------------------------------------------------------------------------

def random_instance(rng, n, branch):
    """A surrogate state and bound U that land in the requested branch of Lemma 1."""
    A = rng.uniform(0.01, 1.0)
    B = rng.standard_normal(n) * rng.uniform(0.1, 1.0)
    U = rng.uniform(0.1, 2.0)
    if branch == "C<=U":
        C = U - rng.uniform(0.0, 1.0)
    elif branch == "b=0":
        B, C = np.zeros(n), U + rng.uniform(0.1, 2.0)
    else:
        C = U + rng.uniform(0.01, 0.9) * (B @ B) / (4 * A)    # b > 4A(C − U): ν° finite
    return SurrogateState(A, B, C), U


def _rel(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(1.0, float(np.max(np.abs(a)))))


@check("ssca.lemma1_vs_cvxpy",
       "Lemma 1 closed form equals the cvxpy QCQP solution (ω̄, s̄, ν*, objective) on random instances "
       "of every branch (C ≤ U, constraint active, slack active ν* = c, b = 0), wherever Clarabel meets its tight "
       "tolerances (1e-12; at least one such instance per branch in the default formulation); where it does not and "
       "falls back to its own tolerances (an accuracy that follows the machine's BLAS), those solves are counted and "
       "compared at the 1e-4 its fallback is accepted at; the closed form's KKT residuals ≤ 1e-9 on every instance",
       "[SSCA] Lemma 1, (43)–(45); docs/ssca.md", group="ssca.cvxpy")
def lemma1_vs_cvxpy(quick):
    rng = np.random.default_rng(31)
    n = 20
    per_branch = 60
    worst, counts, relaxed, kkt_worst = {}, {}, {}, 0.0
    solvers = {c: {f: QCQPStep(n, c, formulation=f) for f in ("full", "span")} for c in (1e5, 0.05)}
    for branch, c in (("C<=U", 1e5), ("constraint-active", 1e5), ("slack-active", 0.05), ("b=0", 1e5)):
        for _ in range(per_branch):
            st, U = random_instance(rng, n, "active" if branch.endswith("active") else branch)
            a = closed_form_step(st, U, c)
            counts[a.branch] = counts.get(a.branch, 0) + 1
            kkt_worst = max_or_nan(kkt_worst, *subproblem_kkt_residuals(a, [st], U, c).values())
            for form, q in solvers[c].items():
                b = q.solve([st], U)
                d = {"omega": _rel(a.omega_bar, b.omega_bar), "slack": _rel(a.slack, b.slack),
                     "nu": _rel(a.nu, b.nu), "objective": _rel(a.objective, b.objective)}
                tight = "inaccurate" not in b.branch
                if not tight:
                    relaxed[f"{a.branch}/{form}"] = relaxed.get(f"{a.branch}/{form}", 0) + 1
                for k, v in d.items():
                    key = f"{a.branch}/{form}/{k}" + ("" if tight else " (solver's own tolerances)")
                    worst[key] = max_or_nan(worst.get(key, 0.0), v)
    missing = {"C<=U", "constraint-active", "slack-active", "b=0"} - set(counts)
    untight = sorted(b for b in counts if relaxed.get(f"{b}/span", 0) == counts[b])
    # Counted: every quantity of the default (span) formulation, and the primal quantities of the
    # full-space one, where the solver met its tight tolerances. The full-space formulation's
    # multiplier (Clarabel's dual of the quadratic constraint in n variables) is reported but not
    # counted: it is accurate to ~1e-6 while its primal point agrees to ~1e-8 — a limit of the
    # solver's dual, not of the closed form. Where the tight solve fails, the solver re-solves at its
    # default tolerances (QCQPStep's fallback, KKT verified to 1e-4), whose accuracy follows the BLAS
    # kernel (2e-7 here, 3e-5 with OpenBLAS's SSE kernel): those are compared at the 1e-4 the
    # fallback is accepted at, and the closed form's own KKT residuals certify it everywhere (a
    # convex QCQP: KKT is sufficient).
    counted = {k: v for k, v in worst.items() if "/span/" in k or "/nu" not in k}
    measured = max_or_nan(*(v for k, v in counted.items() if "(" not in k))
    loose = max_or_nan(0.0, *(v for k, v in counted.items() if "(" in k))
    return {"measured": measured, "bound": 1e-6,
            "holds": not missing and not untight and measured <= 1e-6 and kkt_worst <= 1e-9
            and loose <= solvers[1e5]["span"].kkt_tol,
            "details": {"instances_per_branch": counts, "max_relative_difference": worst, "n": n,
                        "full_space_multiplier_max_difference": max(v for k, v in worst.items()
                                                                    if "/full/" in k and k.endswith("/nu")),
                        "solver_tolerance_relaxed": relaxed, "closed_form_kkt_residual_max": kkt_worst,
                        "relaxed_solves_max_relative_difference": loose,
                        "branches_without_a_tight_solve": untight, "missing_branches": sorted(missing)},
            "note": f"{sum(relaxed.values())} of {2 * sum(counts.values())} solves at the solver's own tolerances, "
                    f"compared at the 1e-4 QCQPStep accepts them at: {loose:.1e}; the closed form's KKT residuals "
                    f"≤ {kkt_worst:.1e} on every instance"}


@check("ssca.lemma1_vs_generic_solver",
       "Lemma 1's closed form is never beaten by a generic solver: on badly scaled instances with an active "
       "constraint its ω̄ is feasible in float64 (q(ω̄) ≤ U) and its objective ||ω||² + c·s is within 1e-12 "
       "(relative) of SLSQP's from the same start",
       "[SSCA] Lemma 1, (41)–(45); docs/ssca.md")
def lemma1_vs_generic_solver(quick):
    rng = np.random.default_rng(37)
    n, count = 6, 400
    worst, infeasible, active = 0.0, 0, 0
    for _ in range(count):
        A = 10 ** rng.uniform(-4, 2)
        B = rng.standard_normal(n) * 10 ** rng.uniform(-3, 3, n)
        U = 10 ** rng.uniform(-3, 2)
        st = SurrogateState(A, B, U + rng.uniform(0.01, 0.99) * (B @ B) / (4 * A))
        c = 10 ** rng.uniform(3, 8)
        a = closed_form_step(st, U, c)
        if a.branch != "constraint-active":
            continue
        active += 1
        infeasible += st.value(a.omega_bar) > U

        def f(w):
            return w @ w + c * max(0.0, st.value(w) - U)
        cons = {"type": "ineq", "fun": lambda w: U - st.value(w), "jac": lambda w: -st.gradient(w)}
        r = _minimize(lambda w: (w @ w, 2 * w), a.omega_bar, jac=True, method="SLSQP", constraints=[cons],
                     options={"ftol": 1e-16, "maxiter": 200})
        worst = max_or_nan(worst, (f(a.omega_bar) - f(r.x)) / max(abs(f(r.x)), 1e-300))
    return {"measured": float(worst), "bound": 1e-12, "holds": bool(worst <= 1e-12 and infeasible == 0 and active >= count // 2),
            "details": {"instances": count, "constraint_active": active, "infeasible_in_float64": int(infeasible),
                        "n": n, "scales": "A 10^U(-4,2), B_i N(0,1)·10^U(-3,3), U 10^U(-3,2), c 10^U(3,8)",
                        "measured": "max over instances of (f(closed form) − f(SLSQP)) / |f(SLSQP)|"}}


def _kkt_run(setting, T, U=0.3):
    """Constrained SSCA (Algorithm 2 / 4) on the 1,000-sample subset with every client's data as its
    batch (deterministic rounds), ρ_t = t^-0.51, γ_t = 0.5 t^-0.55."""
    d = _full_batch_subset()
    m = TwoLayerNet(d.n_features, 16, 10)
    rng_s = np.random.default_rng(32)
    if setting == "sample":
        parts = sample_partition(d.n_train, 10)
        pr = SampleBasedProtocol(m, d.X_train, d.y_train, parts)
        sched = sample_based_schedule(parts, T, d.n_train // 10, rng_s)
    else:
        pr = FeatureBasedProtocol(m, d.X_train, d.y_train, feature_partition(d.n_features, 10))
        sched = feature_based_schedule(d.n_train, T, d.n_train, rng_s)
    rho, gamma = PowerLaw(1.0, 0.51), PowerLaw(0.5, 0.55)
    if not meets_conditions(rho, gamma):
        raise AssertionError("the step sizes do not meet (4)/(6)")
    algo = ConstrainedSSCA(pr, rho, gamma, 0.05, U, 1e5)
    # the check reads the KKT residuals only: no test-set pass
    ev = ConstrainedEvaluator(m, d.X_train, d.y_train, d.X_test, d.y_test, 0.0, max(1, T // 20), U=algo.U,
                              test_accuracy=False)
    tr = Trace({})
    train(algo, m.init_params(np.random.default_rng(33)), sched, T, ev, tr)
    return tr, algo


KKT_TOL = {"stationarity_rel": 0.05, "feasibility_rel": 1e-3, "complementarity_rel": 1e-2}


def _progress_errors(algo, theta, batch, evaluator):
    """A 3-round run evaluated every 2nd round: the progress callback is called after each
    evaluation (rounds 0, 2 and the last, 3) with the round and that evaluation's metrics."""
    from types import SimpleNamespace
    seen = []
    train(algo, theta, SimpleNamespace(indices=[batch] * 3), 3, evaluator, Trace({}),
          progress=lambda t, metrics: seen.append((t, metrics)))
    if [t for t, _ in seen] != [0, 2, 3] or not all(isinstance(mt, dict) and "slack" in mt for _, mt in seen):
        return [f"progress called with {[(t, type(mt).__name__) for t, mt in seen]}, want rounds 0, 2, 3 each "
                "with its metrics"]
    return _stopped_run_errors(algo, theta, batch, evaluator)


def _stopped_run_errors(algo, theta, batch, evaluator):
    """A round that raises inside the algorithm ends the run at the round before it, saying why:
    a non-finite iterate (DivergenceError) as 'diverged', a failed solve (SolverError) as 'solver
    failed: round t'."""
    from types import SimpleNamespace

    from refimpl.ssca.algorithms import DivergenceError
    from refimpl.ssca.constrained import SolverError
    wrong = []
    for exc, want in ((DivergenceError("round 2: omega is not finite (NaN/inf)"),
                       "diverged: round 2: omega is not finite (NaN/inf); trace holds rounds 0..1"),
                      (SolverError("planted"), "solver failed: round 2: planted; trace holds rounds 0..1")):
        def apply(state, t, b, exc=exc):
            if t == 2:
                raise exc
            return algo.apply(state, t, b)
        raising = SimpleNamespace(init=algo.init, apply=apply, dump_round=algo.dump_round)
        tr = Trace({})
        train(raising, theta, SimpleNamespace(indices=[batch] * 3), 3, evaluator, tr)
        if tr.status != want or tr.series("round").tolist() != [0, 1]:
            wrong.append(f"a round raising {type(exc).__name__}: status {tr.status!r}, rounds "
                         f"{tr.series('round').tolist()}; want {want!r}, rounds 0, 1")
    return wrong + _non_finite_estimate_errors(theta)


def _non_finite_estimate_errors(theta):
    """SSCA's round names the estimate that is not finite: an infinite ℓ̂ beside a finite ĝ, then a
    finite ℓ̂ beside a ĝ with one NaN (a planted protocol's estimates)."""
    from types import SimpleNamespace

    from refimpl.ssca.algorithms import DivergenceError
    wrong = []
    nan_grad = np.zeros_like(theta)
    nan_grad[3] = np.nan
    for loss, grad, name in ((np.inf, np.zeros_like(theta), "mini_batch_loss"), (1.0, nan_grad, "mini_batch_gradient")):
        protocol = SimpleNamespace(collect=lambda omega, batch, loss=loss, grad=grad: (loss, grad, []),
                                   model=SimpleNamespace(backend="numpy"))
        algo = SSCA(protocol, PowerLaw(0.9, 0.3), PowerLaw(0.5, 0.4), 0.2)
        try:
            algo.apply(algo.init(theta), 1, None)
            said = "no stop"
        except DivergenceError as exc:
            said = str(exc)
        if said != f"round 1: {name} is not finite (NaN/inf)":
            wrong.append(f"SSCA on a non-finite {name}: {said!r}")
    return wrong


@check("ssca.theorem2_kkt",
       "constrained SSCA (sample- and feature-based, full-shard batches) meeting (4) and (6) ends near a KKT point "
       "of (40): slack 0, relative stationarity ||2ω + ν∇f|| / (||2ω|| + ν||∇f||) ≤ 0.05, feasibility "
       "(f − U)_+ ≤ 1e-3 U and |f − U| ≤ 1e-2 U when ν > 0 (U read from the run)",
       "[SSCA] Theorems 2 and 4; docs/ssca.md")
def theorem2_kkt(quick):
    # quick: 1,000 rounds for the same tolerances (2,000 in earlier versions, stationarity 0.0205 of
    # 0.05; reaching the tolerances in half the rounds is the stricter demand)
    T = 1000 if quick else 6000
    det, worst, holds = {}, 0.0, True
    for setting in ("sample", "feature"):
        tr, algo = _kkt_run(setting, T)
        U = float(np.max(algo.U))
        final = {k: float(tr.series(k)[-1]) for k in ("slack", "kkt_stationarity", "kkt_stationarity_rel",
                                                      "kkt_feasibility", "kkt_complementarity", "multiplier",
                                                      "constraint_value")}
        rel = {"stationarity_rel": final["kkt_stationarity_rel"], "feasibility_rel": final["kkt_feasibility"] / U,
               "complementarity_rel": (abs(final["constraint_value"] - U) / U if final["multiplier"] > 0 else 0.0)}
        ok = final["slack"] <= 1e-9 and all(rel[k] <= KKT_TOL[k] for k in KKT_TOL)
        holds &= ok
        worst = max_or_nan(worst, max_or_nan(*(rel[k] / KKT_TOL[k] for k in KKT_TOL)))
        det[setting] = {"final": final, "relative": rel, "holds": bool(ok),
                        "stationarity_rel_every": tr.series("kkt_stationarity_rel").tolist()}
    det.update(rounds=T, U=U, tolerances=KKT_TOL, penalty=1e5, rho="1/t^0.51", gamma="0.5/t^0.55")
    return {"measured": worst, "bound": 1.0, "holds": holds, "details": det}


def _small_problem():
    """49 features (7×7 average-pooled digits), 300 samples, J = 4: 236 parameters."""
    d = embedded()
    X = d.X_train[:300].reshape(300, 7, 4, 7, 4).mean(axis=(2, 4)).reshape(300, 49)
    y = d.y_train[:300]
    return TwoLayerNet(49, 4, 10), X, y


def _solve32(m, X, y, lam, theta0):
    f = lambda th: (m.loss(th, X, y) + lam * th @ th, full_gradient(m, th, X, y, lam))
    r = _minimize(f, theta0, jac=True, method="L-BFGS-B", options={"gtol": 1e-11, "ftol": 1e-15, "maxiter": 20000})
    return r.x


def _solve40(m, X, y, U, theta0):
    cons = {"type": "ineq", "fun": lambda th: U - m.loss(th, X, y),
            "jac": lambda th: -full_gradient(m, th, X, y, 0.0)}
    r = _minimize(lambda th: (th @ th, 2 * th), theta0, jac=True, method="SLSQP", constraints=[cons],
                 options={"ftol": 1e-14, "maxiter": 2000})
    return r.x


def _multiplier(m, th, X, y):
    """ν minimising ||2ω + ν ∇f(ω)|| (least squares) and the relative residual there."""
    g = full_gradient(m, th, X, y, 0.0)
    nu = -2.0 * (th @ g) / (g @ g)
    return nu, float(np.linalg.norm(2 * th + nu * g) / np.linalg.norm(2 * th))


@check("ssca.theorem5_equivalence",
       "(32) with λ > 0 and (40) with U = data loss at its stationary point share that point with ν* = 1/λ; "
       "conversely a KKT point of (40) with ν° > 0 is stationary for (32) with λ = 1/ν°",
       "[SSCA] Theorem 5; docs/ssca.md")
def theorem5_equivalence(quick):
    m, X, y = _small_problem()
    lam = 0.01
    theta0 = m.init_params(np.random.default_rng(34))
    w32 = _solve32(m, X, y, lam, theta0)
    g32 = float(np.linalg.norm(full_gradient(m, w32, X, y, lam)) / np.linalg.norm(2 * lam * w32))
    U = m.loss(w32, X, y)
    # (a) ω* is a KKT point of (40) with ν = 1/λ
    g = full_gradient(m, w32, X, y, 0.0)
    kkt_a = float(np.linalg.norm(2 * w32 + g / lam) / np.linalg.norm(2 * w32))
    # (b) solving (40) from a perturbed start returns the same point and ν* ≈ 1/λ
    start = w32 + 0.05 * np.random.default_rng(35).standard_normal(w32.size) * np.abs(w32).mean()
    w40 = _solve40(m, X, y, U, start)
    nu40, kkt_b = _multiplier(m, w40, X, y)
    point_b = float(np.linalg.norm(w40 - w32) / np.linalg.norm(w32))
    nu_b = abs(nu40 * lam - 1.0)
    # (c) converse: a KKT point of (40) for another U gives a stationary point of (32) with λ = 1/ν°
    U2 = 1.2 * U
    w40c = _solve40(m, X, y, U2, w32)
    nu_c, kkt_c40 = _multiplier(m, w40c, X, y)
    lam_c = 1.0 / nu_c
    stat_c = float(np.linalg.norm(full_gradient(m, w40c, X, y, lam_c)) / np.linalg.norm(2 * lam_c * w40c))
    det = {"lambda": lam, "U_at_stationary_point": U, "stationarity_of_32": g32,
           "a_kkt_residual_of_40_with_nu_1/lambda": kkt_a, "b_point_difference": point_b,
           "b_nu_times_lambda_minus_1": nu_b, "b_kkt_residual": kkt_b,
           "c_U": U2, "c_nu": nu_c, "c_constraint_gap": float(m.loss(w40c, X, y) - U2),
           "c_kkt_residual_of_40": kkt_c40, "c_stationarity_of_32_with_lambda_1/nu": stat_c,
           "n_params": m.n_params}
    measured = max_or_nan(kkt_a, point_b, nu_b, stat_c)
    return {"measured": measured, "bound": 1e-4, "details": det}


@check("ssca.multi_constraint_qcqp",
       "with per-client constraints the cvxpy solution satisfies the KKT conditions of the multi-constraint "
       "subproblem to solver tolerance; with one constraint it equals the closed form; the KKT residuals it reads "
       "equal their definitions written out (planted points, with and without the ball; ≤ 1e-12 relative)",
       "[SSCA] Problem 5 (41); docs/ssca.md", group="ssca.cvxpy")
def multi_constraint_qcqp(quick):
    rng = np.random.default_rng(36)
    n, m_c = 30, 5
    q = QCQPStep(n, 10.0, m_c, formulation="full")
    qs = QCQPStep(n, 10.0, m_c, formulation="span")
    q1 = QCQPStep(n, 10.0, 1)
    worst = {"stationarity": 0.0, "primal": 0.0, "complementarity": 0.0, "slack_complementarity": 0.0,
             "dual": 0.0, "span_vs_full": 0.0, "single_vs_closed_form": 0.0}
    active = []
    for i in range(20 if quick else 100):
        base = rng.standard_normal(n)
        states = [SurrogateState(rng.uniform(0.05, 0.5), base + 0.5 * rng.standard_normal(n),
                                 rng.uniform(0.5, 3.0)) for _ in range(m_c)]
        U = rng.uniform(0.2, 1.5, m_c)
        sol = q.solve(states, U)
        res = subproblem_kkt_residuals(sol, states, U, 10.0)
        for k, v in res.items():
            worst[k] = max_or_nan(worst[k], v)
        worst["span_vs_full"] = max_or_nan(worst["span_vs_full"], _rel(sol.omega_bar, qs.solve(states, U).omega_bar))
        active.append(int(np.sum(sol.nu > 1e-6)))
        a, b = closed_form_step(states[0], U[0], 10.0), q1.solve(states[:1], U[0])
        worst["single_vs_closed_form"] = max_or_nan(worst["single_vs_closed_form"], _rel(a.omega_bar, b.omega_bar),
                                                    _rel(a.nu, b.nu))
    measure = _kkt_measure_vs_literal(rng)
    return {"measured": max_or_nan(*worst.values()), "bound": 1e-6,
            "holds": max_or_nan(*worst.values()) <= 1e-6 and measure <= 1e-12,
            "details": {**worst, "constraints": m_c, "n": n,
                        "active_constraints_per_instance": np.bincount(active, minlength=m_c + 1).tolist(),
                        "kkt_measure_vs_literal": measure}}


def _kkt_measure_vs_literal(rng):
    """The KKT residuals the check above reads, written out here from their definitions on planted
    points that are not solutions (ω, s ≥ 0 and ν of mixed signs, with and without the ball
    ||ω||² ≤ r² and its multiplier μ): q_k(ω) = A_k||ω||² + B_k·ω + C_k; stationarity
    ||2ω + Σ ν_k(2A_kω + B_k) + 2μω|| over 2||ω|| + Σ |ν_k|(2A_k||ω|| + ||B_k||) + 2|μ|||ω||; primal
    max(0, max_k q_k − U_k − s_k, ||ω||² − r²); complementarity max |multiplier × violation|; slack
    complementarity max_k |(c − ν_k) s_k|; dual infeasibility max(0, −ν_k, −μ, ν_k − c). The worst
    relative difference from subproblem_kkt_residuals."""
    from refimpl.ssca.constrained import ConstrainedStep
    worst, n, m_c, c = 0.0, 6, 3, 10.0
    for ball in (None, 1.5, None, 0.7):
        A, B, C = rng.uniform(0.1, 1.0, m_c), rng.standard_normal((m_c, n)), rng.standard_normal(m_c)
        w, sl, nu, mu = rng.standard_normal(n), rng.uniform(0, 1, m_c), rng.uniform(-2, 14, m_c), rng.uniform(-1, 3)
        U = rng.uniform(0.2, 1.5, m_c)
        states = [SurrogateState(A[k], B[k], C[k]) for k in range(m_c)]
        step = ConstrainedStep(w, sl, nu, 0.0, "planted", mu if ball else 0.0)
        nw = np.sqrt(w @ w)
        g = 2 * w + sum(nu[k] * (2 * A[k] * w + B[k]) for k in range(m_c))
        scale = 2 * nw + sum(abs(nu[k]) * (2 * A[k] * nw + np.sqrt(B[k] @ B[k])) for k in range(m_c))
        viol = [A[k] * (w @ w) + B[k] @ w + C[k] - U[k] - sl[k] for k in range(m_c)]
        mult = list(nu)
        if ball:
            g, scale = g + 2 * mu * w, scale + 2 * abs(mu) * nw
            viol.append(w @ w - ball ** 2)
            mult.append(mu)
        want = {"stationarity": np.sqrt(g @ g) / scale, "primal": max(0.0, max(viol)),
                "complementarity": max(abs(a * b) for a, b in zip(mult, viol)),
                "slack_complementarity": max(abs((c - nu[k]) * sl[k]) for k in range(m_c)),
                "dual": max(0.0, max(-a for a in mult), max(nu - c))}
        got = subproblem_kkt_residuals(step, states, U, c, ball)
        for k, v in want.items():
            worst = max_or_nan(worst, abs(got[k] - v) / max(abs(v), 1e-300))
    return float(worst)


@check("ssca.server_step_equations",
       "the server step as the paper writes it — (7)–(9) A, B, C recursions, (10) ω̄ = −B/(2(A + λ)), (5) the move, "
       "the surrogate value q(ω) — transcribed here, equals surrogate_update/unconstrained_step/move/SurrogateState and "
       "the fused Numba server kernel and its NumPy twin, on random inputs with both curvatures (max relative "
       "difference ≤ 1e-12)", "[SSCA] (5), (7)–(10); docs/ssca.md")
def server_step_equations(quick):
    from refimpl.ssca.kernels import ssca_round_nb, ssca_round_np
    from refimpl.ssca.surrogate import move, unconstrained_step
    rng = np.random.default_rng(71)
    worst = {"functions": 0.0, "numba_kernel": 0.0, "numpy_kernel": 0.0, "surrogate_value": 0.0}

    def rel(a, b):
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))
    for trial in range(50 if quick else 500):
        n = int(rng.integers(1, 300))
        A0, C0 = float(rng.uniform(0, 2)), float(rng.normal())
        B0, g, w = rng.standard_normal(n), rng.standard_normal(n), rng.standard_normal(n)
        loss = float(rng.uniform(0, 3))
        rho, gamma = float(rng.uniform(0.01, 1)), float(rng.uniform(0.01, 1))
        tau, lam = float(rng.uniform(0.01, 1)), float(rng.choice([0.0, rng.uniform(0, 0.1)]))
        for fixed in (False, True):
            # the paper's equations, written out
            A = tau if fixed else (1 - rho) * A0 + rho * tau
            B = (1 - rho) * B0 + rho * (g - 2 * tau * w)
            C = (1 - rho) * C0 + rho * (loss - np.dot(g, w) + tau * np.dot(w, w))
            w_bar = -B / (2 * (A + lam))
            w_next = (1 - gamma) * w + gamma * w_bar
            st = surrogate_update(SurrogateState(A0, B0, C0), loss, g, w, rho, tau,
                                  "fixed" if fixed else "recursive")
            wb = unconstrained_step(st, lam)
            wn = move(w, wb, gamma)
            worst["functions"] = max_or_nan(worst["functions"], rel(st.A, A), rel(st.B, B), rel(st.C, C), rel(wb, w_bar),
                                            rel(wn, w_next))
            probe = rng.standard_normal(n)
            worst["surrogate_value"] = max_or_nan(worst["surrogate_value"],
                                                  rel(st.value(probe), A * np.dot(probe, probe) + np.dot(B, probe) + C),
                                                  rel(st.gradient(probe), 2 * A * probe + B))
            for key, fn in (("numba_kernel", ssca_round_nb), ("numpy_kernel", ssca_round_np)):
                Ak, Bk, Ck, wk, nn = fn(A0, B0, C0, loss, g, w, rho, tau, gamma, lam, fixed)
                worst[key] = max_or_nan(worst[key], rel(Ak, A), rel(Bk, B), rel(Ck, C), rel(wk, w_next),
                                        rel(nn, np.dot(w_next, w_next)))
    return {"measured": max_or_nan(*worst.values()), "bound": 1e-12, "details": {"max_relative_difference": worst}}


@check("ssca.constrained_round_literal",
       "constrained SSCA (Algorithm 2, closed-form step) over 5 rounds from A⁰ = 0 with ρ_1 = 0.6 < 1, under both "
       "curvatures (A^t recursive: A^1 = ρ_1 τ; fixed: A^t = τ): the dumped ĝ^t against the mini-batch gradient, "
       "A^t, B^t, C^t against (7)–(9) written out, ω̄^t against a cvxpy solve of the round's problem (41) and "
       "ω^{t+1} against (5) (worst relative difference)", "[SSCA] Algorithm 2, (5), (7)–(9), (41); docs/ssca.md", group="ssca.cvxpy")
def constrained_round_literal(quick):
    import cvxpy as cp
    from refimpl.core.model import TwoLayerNet
    from refimpl.ssca.experiment import RunConfig, run_experiment
    from refimpl.verification.registry import embedded
    ds = embedded()
    T, tau, c = 5, 0.2, 1e4
    worst = {"gradient": 0.0, "A": 0.0, "B": 0.0, "C": 0.0, "omega_bar": 0.0, "omega_next": 0.0}
    det = {}
    from refimpl.ssca.surrogate import CURVATURES
    for curvature in CURVATURES:
        cfg = RunConfig("ssca-constrained", batch=20, rounds=T, clients=4, hidden=8, tau=tau, rho_a=0.6,
                        rho_alpha=0.3, gamma_a=0.5, gamma_alpha=0.4, U=0.5, penalty=c, curvature=curvature,
                        dump_rounds="all", eval_every=T, seed=3)
        tr = run_experiment(cfg, ds)
        arr = tr.arrays
        model = TwoLayerNet(ds.X_train.shape[1], 8, ds.n_classes)
        A, B, C = 0.0, None, 0.0
        active = 0
        for t in range(1, T + 1):
            def get(key, t=t):
                return arr[f"r{t}_{key}"]
            w, batch = get("omega"), np.asarray(get("batch")).ravel()
            loss, g = model.loss_grad(w, ds.X_train[batch], ds.y_train[batch])[:2]
            worst["gradient"] = max_or_nan(worst["gradient"], _rel(get("grad_hat"), g))
            rho, gamma = 0.6 * t ** -0.3, 0.5 * t ** -0.4
            B = np.zeros_like(w) if B is None else B
            A = tau if curvature == "fixed" else (1 - rho) * A + rho * tau
            B = (1 - rho) * B + rho * (g - 2 * tau * w)
            C = (1 - rho) * C + rho * (loss - g @ w + tau * (w @ w))
            for key, mine in (("A", A), ("B", B), ("C", C)):
                worst[key] = max_or_nan(worst[key], _rel(np.asarray(get(key)).ravel(), np.ravel(mine)))
            # (41) on the span of B (its solution lies there): ω = −β B / ||B||
            nb = float(np.linalg.norm(B))
            beta, s = cp.Variable(), cp.Variable(nonneg=True)
            cp.Problem(cp.Minimize(cp.square(beta) + c * s),
                       [A * cp.square(beta) - nb * beta + C <= 0.5 + s]).solve(
                solver="CLARABEL", tol_gap_abs=1e-14, tol_gap_rel=1e-14, tol_feas=1e-14, tol_ktratio=1e-12)
            wbar = -float(beta.value) * B / nb
            active += int(C > 0.5)
            worst["omega_bar"] = max_or_nan(worst["omega_bar"], _rel(get("omega_bar"), wbar))
            worst["omega_next"] = max_or_nan(worst["omega_next"], _rel(get("omega_next"), (1 - gamma) * w + gamma * wbar))
        det[curvature] = {"A_T": A, "rounds_with_active_constraint": active}
    exact = max_or_nan(*(worst[k] for k in ("gradient", "A", "B", "C")))
    solved = max_or_nan(worst["omega_bar"], worst["omega_next"])
    return {"measured": max_or_nan(exact / 1e-12, solved / 1e-6), "bound": 1.0,
            "details": {"max_relative_difference": worst, "bounds": {"recursions": 1e-12, "solver": 1e-6}, **det},
            "note": f"recursions {exact:.1e} (≤ 1e-12), steps {solved:.1e} (≤ 1e-6)"}


def _plain_logits(theta, X, n_hidden, n_classes):
    """The bias-free two-layer swish network's logits, in plain NumPy."""
    n1 = n_hidden * X.shape[1]
    Z = X @ theta[:n1].reshape(n_hidden, -1).T
    return (Z / (1.0 + np.exp(-Z))) @ theta[n1:].reshape(n_classes, n_hidden).T


def _plain_loss(theta, X, y, n_hidden, n_classes):
    """Mean softmax cross-entropy of the network's logits."""
    O = _plain_logits(theta, X, n_hidden, n_classes)
    O = O - O.max(axis=1, keepdims=True)
    return float(np.mean(np.log(np.exp(O).sum(axis=1)) - O[np.arange(len(y)), y]))


def _plain_accuracy(theta, X, y, n_hidden, n_classes):
    """The fraction of rows whose largest logit is their label."""
    return float(np.mean(np.argmax(_plain_logits(theta, X, n_hidden, n_classes), axis=1) == y))


#: the partition the baselines check gives by file: three clients of 400, 1,200 and 2,400 samples
_BASELINE_PARTS = ((0, 400), (400, 1600), (1600, 4000))


def _baseline_literal(ds, cfg, tr):
    """The Section VI baseline of ``cfg`` written out from docs/ssca.md, on the run's own batches
    from its initial point: ω^t of every round, and the run's records at the evaluated rounds.
    Returns (worst relative difference, {what: (recorded, by hand)} of the records that differ)."""
    H, L, lam, m, E = cfg.hidden, ds.n_classes, cfg.lam, (cfg.momentum if cfg.algorithm == "sgdm" else 0.0), \
        cfg.local_steps
    X, y = ds.X_train, ds.y_train
    N = X.shape[0]
    P = H * (X.shape[1] + L)
    W1, W2 = tr.snapshots[0]
    w = np.concatenate([np.ravel(W1), np.ravel(W2)])
    v = np.zeros(P)
    worst, wrong = 0.0, {}
    iterates, per_round, evals = {0: w}, None, None

    def grad(u, ids):                    # mean ∇ℓ over the rows ids, plus 2λu
        return plain_objective_grad(H, L, u, X[ids], y[ids], lam)

    def step(u, vel, g, eta):
        if m == 0.0:
            return u - eta * g, vel
        vel = m * vel + (1.0 - m) * g
        return u - eta * vel, vel
    for t in range(1, cfg.rounds + 1):
        eta = cfg.lr / t ** cfg.lr_decay
        batch = tr.batches[t - 1]
        if cfg.setting == "feature":
            w, v = step(w, v, grad(w, np.asarray(batch)), eta)
            evals = len(batch)
        elif E == 1:
            g = sum((hi - lo) / N * grad(w, b) for (lo, hi), b in zip(_BASELINE_PARTS, batch))  # weights sum to 1
            w, v = step(w, v, g, eta)
            per_round, evals = P + 3 * (P + 1), sum(len(b) for b in batch)
        else:
            new_w, new_v = np.zeros(P), np.zeros(P)
            for (lo, hi), b in zip(_BASELINE_PARTS, batch):
                B = len(b) // E
                u, uv = w.copy(), v.copy()
                for e in range(E):
                    u, uv = step(u, uv, grad(u, b[e * B:(e + 1) * B]), eta)
                new_w += (hi - lo) / N * u
                new_v += (hi - lo) / N * uv
            w, v = new_w, new_v
            per_round, evals = (1 + 3) * P * (2 if m else 1), sum(len(b) for b in batch)
        worst = max_or_nan(worst, _rel(np.concatenate([np.ravel(a) for a in tr.snapshots[t]]), w))
        iterates[t] = w
    by_hand = {"round": [0.0, 2.0, 3.0]}
    rounds = [int(r) for r in tr.metrics["round"]]
    for key, f in (("grad_evals", lambda r: r * evals), ("comm_floats", lambda r: r * per_round),
                   ("sq_norm", lambda r: float(iterates[r] @ iterates[r])),
                   ("train_cost", lambda r: _plain_loss(iterates[r], X, y, H, L)
                    + lam * float(iterates[r] @ iterates[r])),
                   ("test_accuracy", lambda r: _plain_accuracy(iterates[r], ds.X_test, ds.y_test, H, L))):
        if key == "comm_floats" and per_round is None:        # feature-based: the ledger's own count, per round
            per_round = sum(msg["floats"] for msg in tr.ledger_round1)
        by_hand[key] = [f(r) for r in rounds if r in iterates]
    for key, exp in by_hand.items():
        got = [float(x) for x in tr.metrics[key]]
        real = key in ("sq_norm", "train_cost", "test_accuracy")
        # a NaN recorded (or computed) never agrees: the test is "within 1e-12", not "not beyond it"
        if len(got) != len(exp) or (not _rel(np.array(got), np.array(exp, dtype=float)) <= 1e-12 if real else got != exp):
            wrong[f"{cfg.algorithm}/{cfg.setting}/E={E}: {key}"] = (got, exp)
    return worst, wrong


@check("ssca.baselines_literal",
       "the Section VI baselines written out, on each run's own batches from its initial point, over 3 rounds "
       "(λ = 0.01, unequal shards of 400, 1,200 and 2,400 samples given by file; SGD once more with λ = 0 from "
       "the same initial point): sample-based SGD and SGD-m with "
       "one local step (ĝ = Σ_k (N_k/N) ĝ_k) and FedAvg with two (each client's two halves of its batch in turn; "
       "models and momentum buffers averaged with weights N_k/N), feature-based SGD and SGD-m; momentum "
       "v ← m v + (1 − m) g; η_t = η0/t^β. The runs' records by hand: the evaluated rounds (every second and "
       "the last), gradient evaluations and floats sent so far, ||ω||², the training cost (32) and the test "
       "accuracy in plain NumPy; each client's dumped ℓ̂_k its own batch's mean; round 1's ledger of a one-round run",
       "[SSCA] Section VI; (32); docs/ssca.md")
def baselines_literal(quick):
    import json as _json
    import os
    import tempfile
    ds = embedded()
    worst, wrong, runs = 0.0, {}, 0
    with tempfile.TemporaryDirectory() as tmp:
        pfile = os.path.join(tmp, "parts.json")
        with open(pfile, "w") as fh:
            _json.dump([list(range(lo, hi)) for lo, hi in _BASELINE_PARTS], fh)
        # the last run: SGD again from the same initial point on the same data with λ = 0, whose cost at
        # round 0 is not the first run's (a remembered ω^0 evaluation must tell the two apart)
        for algorithm, setting, E, lam in (("sgd", "sample", 1, 0.01), ("sgdm", "sample", 1, 0.01),
                                           ("sgd", "sample", 2, 0.01), ("sgdm", "sample", 2, 0.01),
                                           ("sgd", "feature", 1, 0.01), ("sgdm", "feature", 1, 0.01),
                                           ("sgd", "sample", 1, 0.0)):
            cfg = RunConfig(algorithm, setting=setting, batch=5, rounds=3, clients=3, hidden=6, lam=lam, lr=0.4,
                            lr_decay=0.3, momentum=0.8, local_steps=E, eval_every=2, seed=11, snapshots=[1, 2, 3],
                            partition_file=pfile if setting == "sample" else None,
                            dump_rounds="all" if (setting, E, lam) == ("sample", 1, 0.01) else "")
            tr = run_experiment(cfg, ds)
            w, bad = _baseline_literal(ds, cfg, tr)
            worst, runs = max_or_nan(worst, w), runs + 1
            wrong.update(bad)
            if cfg.dump_rounds:
                for t in range(1, 4):
                    om, batch = tr.arrays[f"r{t}_omega"], tr.batches[t - 1]
                    mine = [_plain_loss(om, ds.X_train[b], ds.y_train[b], 6, ds.n_classes) for b in batch]
                    if not _rel(tr.arrays[f"r{t}_client_loss"], np.array(mine)) <= 1e-12:
                        wrong[f"{algorithm}/E=1: round {t}'s client_loss"] = (
                            tr.arrays[f"r{t}_client_loss"].tolist(), mine)
                    # the dampened heavy ball's velocity, v^{t+1} = (ω^t − ω^{t+1})/η_t, dumped by SGD-m only
                    v = tr.arrays.get(f"r{t}_velocity")
                    step = (om - tr.arrays[f"r{t}_omega_next"]) / tr.arrays[f"r{t}_eta"]
                    if (v is None) != (algorithm == "sgd") or (v is not None and not _rel(v, step) <= 1e-12):
                        wrong[f"{algorithm}/E=1: round {t}'s velocity"] = (None if v is None else v.shape, step.shape)
        one = run_experiment(RunConfig("ssca", batch=5, rounds=1, clients=3, hidden=6, partition_file=pfile), ds)
        P = 6 * (ds.n_features + ds.n_classes)
        ledger = [(m["sender"], m["receiver"], m["floats"]) for m in one.ledger_round1]
        hand = [("server", "all clients", P)] + [(f"client {k}", "server", P + 1) for k in range(3)]
        if ledger != hand:
            wrong["ssca, one round: round 1's ledger"] = (ledger, hand)
    return {"measured": worst, "bound": 1e-12, "holds": worst <= 1e-12 and not wrong,
            "details": {"runs": runs, "max_relative_difference": worst, "records_differing": wrong},
            "note": f"{runs} runs, iterates within {worst:.1e}; {len(wrong)} records differ"
            + (": " + "; ".join(wrong) if wrong else "")}


@check("ssca.constrained_records", "what a constrained run records, written out on a 2-client instance with "
       "unequal shards: the KKT residuals of (40) per client (stationarity ||2ω + Σ_k ν_k ∇f_k||, relative to "
       "2||ω|| + Σ_k ν_k ||∇f_k||; feasibility max_k (f_k − U_k)_+; complementary slackness max_k |ν_k (f_k − U_k)|, "
       "with a multiplier on an inactive constraint), the constraint value max_k f_k, the slack and multiplier "
       "summed over constraints, and per-client constraints' ℓ̂ = Σ_k (N_k/N) ℓ̂_k over one cvxpy round, each client's "
       "(ℓ̂_k, ĝ_k) its own batch's means and the round's ledger (ω down once, each client's P + 1 sums up); the "
       "closed form refused where it does not apply (a norm ball, per-client constraints), a loss bound U of 0, −1 "
       "or NaN refused, the closed form on A^0 = 0 (no surrogate update yet) refused; a failing solver (planted) "
       "replaced by the closed form where it applies, counted and named, raised where it does not; a solve "
       "returning a NaN ω̄ stopping the run in its round; an inaccurate "
       "solve judged by its largest KKT residual, infeasibility over max(1, max U), complementarity over "
       "max(1, max ν), the slack and dual residuals over c (planted residuals); the authors' cost recorded only "
       "when asked for; a run's progress called after each evaluation with its round and metrics; an SSCA round "
       "names its estimate that is not finite (ℓ̂ or ĝ); 0 wrong",
       "[SSCA] (40), Algorithm 2 with per-client constraints; docs/ssca.md", group="ssca.cvxpy")
def constrained_records(quick):
    from refimpl.ssca.constrained_algorithms import ConstrainedEvaluator, ConstrainedState, kkt_residuals
    ds = embedded()
    X, y = ds.X_train[:300], ds.y_train[:300]
    parts = [np.arange(0, 100), np.arange(100, 300)]
    m = TwoLayerNet(X.shape[1], 5, ds.n_classes)
    theta = m.init_params(np.random.default_rng(71))
    f = np.array([_plain_loss(theta, X[p], y[p], 5, ds.n_classes) for p in parts])
    g = [plain_objective_grad(5, ds.n_classes, theta, X[p], y[p], 0.0) for p in parts]
    U, nu = f + np.array([0.05, -0.02]), np.array([0.3, 0.1])       # constraint 1 inactive with ν_1 > 0
    stat = 2 * theta + nu[0] * g[0] + nu[1] * g[1]
    want = {"kkt_stationarity": np.linalg.norm(stat),
            "kkt_stationarity_rel": np.linalg.norm(stat) / (2 * np.linalg.norm(theta)
                                                            + nu @ [np.linalg.norm(v) for v in g]),
            "kkt_feasibility": 0.02, "kkt_complementarity": 0.3 * 0.05}
    got, _ = kkt_residuals(m, theta, nu, X, y, U, parts)
    wrong = [f"{k}: {got[k]:.6g}, by hand {v:.6g}" for k, v in want.items()
             if not abs(got[k] - v) <= 1e-9 * max(1.0, abs(v))]
    state = ConstrainedState(theta, (), nu, np.array([0.1, 0.25]))
    evaluator = ConstrainedEvaluator(m, X, y, X[:10], y[:10], U=U, parts=parts)
    if evaluator.every != 1:                    # train evaluates round t when t % every == 0
        wrong.append(f"an evaluator built without `every` evaluates every {evaluator.every}th round, not every round")
    ev = evaluator(theta, state)
    if "authors_cost" in ev:                    # the authors' one-vs-all cost only when asked for
        wrong.append("an evaluator built without authors_cost records the authors' cost")
    asked = ConstrainedEvaluator(m, X, y, X[:10], y[:10], U=U, parts=parts, authors_cost=True)(theta, state)
    if asked.get("authors_cost") != m.one_vs_all_cost(theta, X, y):      # … and then recorded, as the model says
        wrong.append(f"an evaluator asked for the authors' cost records {asked.get('authors_cost')}")
    for k, v in (("constraint_value", f.max()), ("slack", 0.35), ("multiplier", 0.4)):
        if not abs(ev[k] - v) <= 1e-9:
            wrong.append(f"recorded {k} {ev[k]:.6g}, by hand {v:.6g}")
    pr = SampleBasedProtocol(m, X, y, parts)
    algo = ConstrainedSSCA(pr, PowerLaw(0.9, 0.3), PowerLaw(0.5, 0.4), 0.2, U, 1e3, solver="cvxpy", per_client=True)
    batch = [np.array([3, 17, 40, 88]), np.array([120, 150, 199, 260])]
    new = algo.apply(algo.init(theta), 1, batch)[0]
    wrong += _progress_errors(algo, theta, batch, ConstrainedEvaluator(m, X, y, X[:10], y[:10], 0.0, 2, U=U,
                                                                       parts=parts))
    by_hand = sum(len(p) / 300 * _plain_loss(theta, X[b], y[b], 5, ds.n_classes) for p, b in zip(parts, batch))
    if not abs(new.loss_hat - by_hand) <= 1e-12:
        wrong.append(f"per-client ℓ̂ {new.loss_hat:.12g}, by hand Σ_k (N_k/N) ℓ̂_k {by_hand:.12g}")
    ests, msgs = pr.collect_per_client(theta, batch)
    P = m.n_params
    if [(g.sender, g.receiver, g.floats) for g in msgs] != [("server", "all clients", P), ("client 0", "server", P + 1),
                                                          ("client 1", "server", P + 1)]:
        wrong.append(f"per-client round's ledger {[(g.sender, g.receiver, g.floats) for g in msgs]}: want ω down once "
                     f"({P} floats) and each client's gradient and loss sums up ({P + 1})")
    for k, ((l_k, g_k), b) in enumerate(zip(ests, batch)):
        want_g = plain_objective_grad(5, ds.n_classes, theta, X[b], y[b], 0.0)     # client k's batch mean
        rel = float(np.max(np.abs(g_k - want_g)) / np.max(np.abs(want_g)))
        if not (rel <= 1e-12 and abs(l_k - _plain_loss(theta, X[b], y[b], 5, ds.n_classes)) <= 1e-12):
            wrong.append(f"client {k}'s (ℓ̂_k, ĝ_k): ĝ_k off its batch mean by {rel:.3g} (relative)")
    for what, kw in (("a norm ball", dict(ball_radius=1.0)), ("per-client constraints", dict(per_client=True))):
        if not raises(lambda: ConstrainedSSCA(pr, PowerLaw(0.9, 0.3), PowerLaw(0.5, 0.4), 0.2,
                                              0.5 if "ball" in what else U, 1e3, solver="closed-form", **kw),
                      "the closed form covers one constraint without extra constraints"):
            wrong.append(f"the closed form not refused, for the reason it does not apply, with {what}")
    for bad in ([0.5, 0.0], [0.5, -1.0], [0.5, np.nan]):       # a loss bound is finite and > 0
        if not raises(lambda bad=bad: ConstrainedSSCA(pr, PowerLaw(0.9, 0.3), PowerLaw(0.5, 0.4), 0.2, bad, 1e3,
                                                      solver="cvxpy", per_client=True),
                      "loss bound U must be finite and > 0"):
            wrong.append(f"the loss bounds U = {bad} not refused")
    # the closed form needs a surrogate: A^0 = 0 (no update yet) is refused, A = 1e-300 is not
    if not raises(lambda: closed_form_step(SurrogateState.zeros(3), 0.5, 1e3), "surrogate A^t must be > 0"):
        wrong.append("the closed form on A^0 = 0 not refused as a state without a surrogate update")
    closed_form_step(SurrogateState(1e-300, np.ones(3), 1.0), 0.5, 1e3)
    wrong += _solver_fallback_wrong(m, X, y, theta, parts) + _kkt_scale_wrong()
    return {"measured": float(len(wrong)), "bound": 0.0, "holds": not wrong, "details": {"wrong": wrong},
            "note": f"{len(wrong)} records wrong" + (": " + "; ".join(wrong) if wrong else "")}


def _kkt_scale_wrong():
    """The residual an 'optimal_inaccurate' solve is judged by, on planted residuals worked out by
    hand: infeasibility over max(1, max U) and complementarity over max(1, max ν) (loss bounds and
    multipliers above 1 and below), the slack and dual residuals over c."""
    from refimpl.ssca.constrained import kkt_worst
    res = {"stationarity": 0.1, "primal": 3.0, "complementarity": 8.0, "slack_complementarity": 5.0, "dual": 2.0}
    cases = (((np.array([2.0, 4.0]), np.array([0.5, 16.0]), 10.0), 0.75),     # 3/4, 8/16, 5/10, 2/10
             ((np.array([0.5]), np.array([16.0]), 10.0), 3.0),                # U below 1: infeasibility as it is
             ((np.array([8.0]), np.array([0.25]), 10.0), 8.0),                # ν below 1: complementarity as it is
             ((np.array([8.0]), np.array([32.0]), 2.0), 2.5))                 # c = 2: slack 5/2
    return [f"kkt_worst with U {U}, ν {nu}, c {c}: {kkt_worst(res, U, nu, c)}, by hand {want}"
            for (U, nu, c), want in cases if kkt_worst(res, U, nu, c) != want]


def _solver_fallback_wrong(m, X, y, theta, parts):
    """cvxpy failing on rounds 2 and 3 of four (a planted solver): with one constraint, where the
    closed form applies, those rounds take ω^{t+1} = (1 − γ_t) ω^t + γ_t ω̄ with ω̄ the closed form
    of that round's surrogate, the state counts 2 fallbacks and keeps the last failure's words
    after round 4 succeeds; with per-client constraints, which have no closed form, the failure is
    raised. The list of wrong answers."""
    from refimpl.ssca.constrained import SolverError
    rho, gamma = PowerLaw(0.9, 0.3), PowerLaw(0.5, 0.4)

    def flaky(algo, failing):
        real, calls = algo.qcqp.solve, []

        def solve(surrogates, U):
            calls.append(len(calls) + 1)
            if calls[-1] in failing:
                raise SolverError(f"planted failure on call {calls[-1]}")
            return real(surrogates, U)
        algo.qcqp.solve = solve
        return algo
    algo = flaky(ConstrainedSSCA(SampleBasedProtocol(m, X, y, [np.arange(X.shape[0])]), rho, gamma, 0.2, 0.5, 1e3,
                                 solver="cvxpy"), (2, 3))
    state, wrong = algo.init(theta), []
    for t in range(1, 5):
        new = algo.apply(state, t, [np.arange(20 * t, 20 * t + 16)])[0]
        if t in (2, 3):
            want = (1 - gamma(t)) * state.omega + gamma(t) * closed_form_step(new.surrogates[0], 0.5, 1e3).omega_bar
            if not _rel(new.omega, want) <= 1e-12:
                wrong.append(f"round {t}, the solver failing: ω^(t+1) off the closed form's step by "
                             f"{_rel(new.omega, want):.2g}")
        state = new
    if (state.fallbacks, state.note) != (2, "planted failure on call 3; used the closed form"):
        wrong.append(f"after 2 solver failures the state says {state.fallbacks} fallbacks, note {state.note!r}")
    # a solve that returns a NaN ω̄ (a finite mini-batch): the run stops in that round, naming the iterate
    from dataclasses import replace as _replace

    from refimpl.ssca.algorithms import DivergenceError
    nan_step = ConstrainedSSCA(SampleBasedProtocol(m, X, y, [np.arange(X.shape[0])]), rho, gamma, 0.2, 0.5, 1e3,
                               solver="cvxpy")
    real = nan_step.qcqp.solve
    nan_step.qcqp.solve = lambda surs, U: _replace(real(surs, U), omega_bar=np.full(theta.size, np.nan))
    try:
        nan_step.apply(nan_step.init(theta), 1, [np.arange(16)])
        wrong.append("a solve returning a NaN ω̄ not stopped")
    except DivergenceError as exc:
        if "round 1: omega is not finite" not in str(exc):
            wrong.append(f"a solve returning a NaN ω̄ stopped with {exc}")
    per_client = flaky(ConstrainedSSCA(SampleBasedProtocol(m, X, y, parts), rho, gamma, 0.2, [0.5, 0.5], 1e3,
                                       solver="cvxpy", per_client=True), (1,))
    try:
        per_client.apply(per_client.init(theta), 1, [np.arange(8), np.arange(100, 108)])
        wrong.append("a failing solver with per-client constraints (no closed form) not raised")
    except SolverError as exc:
        if "planted failure on call 1" not in str(exc):
            wrong.append(f"a failing solver with per-client constraints raised {exc}")
    return wrong


def _command_cases():
    """What ``refimpl run ssca`` adds to a run, each answer by hand: the trade-off row's data loss,
    the constraint's verdict and warning, MATLAB-shaped --init vectors and --init's two layers, a
    flag equal to the preset's value and one that contradicts it, the refusals before the first run,
    and the step-size note.
    Returns (the number of facts compared, the wrong ones as words)."""
    import os
    import tempfile
    from dataclasses import replace
    from types import SimpleNamespace

    from refimpl.ssca import command
    wrong, said = [], []
    ui = SimpleNamespace(say=said.append, info=lambda args, text: said.append(text))
    tr = Trace({"lam": 0.05})
    tr.metrics.update(round=[0.0, 2.0, 5.0], train_cost=[1.0, 0.9, 0.7], sq_norm=[2.0, 4.0, 3.0],
                      test_accuracy=[0.1, 0.5, 0.8], slack=[0.3, 0.2, 0.1])
    studies = [command.tradeoff_study(lams, Us) for lams, Us in (([0.0], [0.13]), ([0.0], [0.2]), ([0.0, 0.1], [0.13]),
                                                                   ([0.0, 0.1], [0.1, 0.2]))]
    if studies != [None, None, ("lam", [0.0, 0.1]), ("U", [0.1, 0.2])]:
        wrong.append(f"trade-off studies {studies}: want one run for single --lam and --U values, a λ study for a "
                     "--lam list, a U study when --U is a list")
    row = command.tradeoff_row("lam", 0.05, tr)
    if not abs(row["data_loss"] - 0.55) <= 1e-15 or row["round"] != 5 or row["sq_norm"] != 3.0 \
            or row["test_accuracy"] != 0.8 or row["slack"] != 0.1:
        wrong.append(f"--lam study: final row {row}, want data loss 0.7 − 0.05·3 = 0.55, ||ω||² 3, test accuracy "
                     "0.8 and slack 0.1 at round 5 (the last of three)")
    verdicts, shapes = ((0.35, 0.05), (0.25, 0.0)), ((1, 6), (6, 1))
    for value, violation in verdicts:
        tr = Trace({})
        tr.metrics.update(constraint_value=[0.5, value], slack=[0.0, 0.0])
        said.clear()
        constrained = SimpleNamespace(U=0.3, algorithm="ssca-constrained")
        command.report_constraint(SimpleNamespace(quiet=False), ui, constrained, tr)
        rec = tr.config.get("constraint_check", {"violation": np.nan})
        warned = any("warning: the surrogate subproblem was feasible" in t for t in said)
        if not abs(rec["violation"] - violation) <= 1e-15 or rec.get("holds") != (violation == 0.0) \
                or warned != (violation > 0):
            wrong.append(f"U = 0.3, final data loss {value}: recorded {rec}, warned {warned}; want violation "
                         f"{violation}, holds {violation == 0.0}, a warning {violation > 0} (slack 0)")
    plain = Trace({})
    plain.metrics.update(constraint_value=[0.5], slack=[0.0])
    command.report_constraint(SimpleNamespace(quiet=False), ui, SimpleNamespace(U=0.3, algorithm="ssca"), plain)
    if "constraint_check" in plain.config:
        wrong.append("an unconstrained run's trace got a constraint verdict")
    with tempfile.TemporaryDirectory(prefix="refimpl-init-") as d:
        for shape in shapes:
            path = os.path.join(d, f"omega_{shape[0]}x{shape[1]}.npz")
            np.savez(path, omega_0=np.arange(6.0).reshape(shape))
            init, _ = command.replay_inputs(SimpleNamespace(init=path, batches=None), ui)
            if np.shape(init) != (6,):
                wrong.append(f"--init with omega_0 of shape {shape}: read as {np.shape(init)}, want the flat (6,)")
        for first, second in (("W1", "W2"), ("W1_0", "W2_0")):        # the layers as given, or a trace's
            path = os.path.join(d, f"{first}.npz")
            np.savez(path, **{first: np.ones((2, 3)), second: np.zeros((4, 2))})
            init, _ = command.replay_inputs(SimpleNamespace(init=path, batches=None), ui)
            if not (isinstance(init, tuple) and [np.shape(a) for a in init] == [(2, 3), (4, 2)]
                    and init[0].sum() == 6.0 and init[1].sum() == 0.0):
                wrong.append(f"--init with {first} (2 × 3 ones) and {second} (4 × 2 zeros): read as {init!r}")
    cfg = RunConfig("ssca", batch=10, preset="authors", tau=0.2)
    args = SimpleNamespace(argv=["--preset", "authors", "--tau", "0.2"], config_keys=set(), config=None)
    try:
        command.check_preset(args, cfg)
    except ValueError:
        wrong.append("--tau 0.2 with --preset authors (which sets τ = 0.2 at B = 10) refused as a contradiction")
    if not raises(lambda: command.check_preset(args, replace(cfg, tau=0.3)), "--tau 0.3 conflicts with"):
        wrong.append("--tau 0.3 with --preset authors (τ = 0.2 at B = 10) not refused")
    n_refusals, refused = _command_refusals(command)
    wrong += refused
    paper = RunConfig("ssca", rho_a=1.0, rho_alpha=0.1, gamma_a=0.3, gamma_alpha=0.15)
    met = RunConfig("ssca", rho_a=1.0, rho_alpha=0.55, gamma_a=0.5, gamma_alpha=0.6)
    note = command.step_size_note(paper) or ""
    if "sum_rho_sq_finite" not in note or command.step_size_note(met) is not None:
        wrong.append(f"step-size note: {note!r} for ρ = 1/t^0.1, γ = 0.3/t^0.15 (want sum_rho_sq_finite named) and "
                     f"{command.step_size_note(met)!r} for ρ = 1/t^0.55, γ = 0.5/t^0.6 (want none)")
    return 1 + 1 + len(verdicts) + 1 + len(shapes) + 2 + 2 + n_refusals + 1, wrong


def _feature_block_refusals(ds):
    """--feature-blocks FILE (two blocks): refused under --setting sample and with --clients 3, which
    it contradicts; read as the clients without --clients; --partition-file likewise; a flat ω^0 of
    the wrong size refused naming W1's and W2's shapes. The wrong answers."""
    import json
    import os
    import tempfile

    from refimpl.core.model import TwoLayerNet
    from refimpl.ssca.assembly import _initial_weights
    wrong = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "blocks.json")
        with open(path, "w") as fh:
            json.dump([list(range(0, 400)), list(range(400, ds.n_features))], fh)
        if not raises(lambda: RunConfig("ssca", setting="sample", feature_blocks=path).resolved(),
                      "--feature-blocks applies to --setting feature only"):
            wrong.append("--feature-blocks under --setting sample not refused")
        if not raises(lambda: RunConfig("ssca", setting="feature", feature_blocks=path, clients=3).resolved(),
                      "--clients 3 contradicts --feature-blocks"):
            wrong.append("--clients 3 with a two-block --feature-blocks not refused")
        if RunConfig("ssca", setting="feature", feature_blocks=path).resolved().clients != 2:
            wrong.append("a two-block --feature-blocks not read as two clients")
        parts = os.path.join(tmp, "parts.json")            # the same for --partition-file (two clients)
        with open(parts, "w") as fh:
            json.dump([list(range(0, 10)), list(range(10, 20))], fh)
        if not raises(lambda: RunConfig("ssca", partition_file=parts, clients=3).resolved(),
                      "--clients 3 contradicts --partition-file"):
            wrong.append("--clients 3 with a two-client --partition-file not refused")
        if RunConfig("ssca", partition_file=parts, clients=2).resolved().clients != 2:
            wrong.append("--clients 2 with a two-client --partition-file refused or changed")
    model = TwoLayerNet(ds.n_features, 6, ds.n_classes)
    shapes = (f"(W1 {model.shape_W1[0]}×{model.shape_W1[1]} then W2 {model.shape_W2[0]}×{model.shape_W2[1]}, "
              "row-major), got shape (3,)")
    if not raises(lambda: _initial_weights(model, np.ones(3)), shapes):
        wrong.append("a flat ω^0 of 3 entries not refused naming W1's and W2's shapes")
    return wrong


def _command_refusals(command):
    """The two refusals ``refimpl run ssca`` makes before its first run, on a minimal toolbox written
    here (the data, comma lists, the Config): a bad second value of a --lam list, and 1-based
    --batches under an explicit --index-base 0 (with the hint). A run that starts instead fails here
    (this toolbox cannot run one). Returns (the number of refusals tried, the wrong ones)."""
    import os
    import tempfile
    from types import SimpleNamespace
    wrong = []
    ui = SimpleNamespace(load_data=lambda args: embedded(),
                         ints=lambda name, text: [int(v) for v in str(text).split(",") if v.strip()],
                         floats=lambda name, text: [float(v) for v in str(text).split(",") if v.strip()],
                         config=lambda args, key, algorithm, **kw: RunConfig(algorithm, **kw))
    with tempfile.TemporaryDirectory(prefix="refimpl-batches-") as d:
        ids = os.path.join(d, "ids.npy")
        np.save(ids, np.array([[[1, 2, embedded().n_train]]]))
        cases = (("--lam 0.1,-1", "--lam 0.1,-1: the value -1 is not allowed", dict(lam="0.1,-1", batches=None)),
                 ("1-based --batches with --index-base 0", "give --index-base 1", dict(batches=ids, index_base=0)))
        for what, words, argv in cases:
            args = SimpleNamespace(**{**dict(algorithm="ssca", lam="0", U="0.13", snapshots="", argv=[],
                                             config_keys=set(), config=None, init=None), **argv})
            try:
                command.run(args, ui)
                ok = False
            except ValueError as exc:
                ok = words in str(exc)
            except Exception:            # a run started on the toolbox: the refusal did not come first
                ok = False
            if not ok:
                wrong.append(f"{what}: not refused before the first run with {words!r}")
    return len(cases), wrong


def _initial_metrics_errors(ds):
    """What is wrong with the metrics a run records at ω^0 (``initial_metrics``, remembered per model,
    data arrays, options and ω^0): after the plain evaluator's, an evaluator differing in one of
    them (another array of each of the four, λ, the authors' cost, the test accuracy off), or
    another ω^0, must record its own metrics, evaluated here directly; the same evaluator and ω^0
    again, the same metrics."""
    from dataclasses import replace

    from refimpl.ssca.algorithms import initial_metrics
    X, y = ds.X_train[:60].copy(), ds.y_train[:60].copy()
    m = TwoLayerNet(X.shape[1], 4, ds.n_classes)
    theta = m.init_params(np.random.default_rng(5))
    base = Evaluator(m, X, y, X[:20].copy(), y[:20].copy(), lam=1e-3)
    same = lambda a, b: a.keys() == b.keys() and all(np.array_equal(a[k], b[k], equal_nan=True) for k in a)
    wrong = [] if same(initial_metrics(base, theta), base(theta)) else ["ω^0's metrics are not the evaluator's"]
    other = {"X_train": X[::-1].copy(), "y_train": (y + 1) % ds.n_classes, "X_test": X[20:40].copy(),
             "y_test": m.predict(theta, base.X_test), "lam": 2e-3, "authors_cost": True, "test_accuracy": False}
    for field, value in other.items():
        ev = replace(base, **{field: value})
        if same(ev(theta), base(theta)):
            wrong.append(f"the evaluator differing in {field} records the plain one's metrics: no witness")
        elif not same(initial_metrics(ev, theta), ev(theta)):
            wrong.append(f"ω^0's metrics remembered for an evaluator differing in {field} only")
    if not same(initial_metrics(base, theta + 1e-3), base(theta + 1e-3)) or not same(
            initial_metrics(base, theta), base(theta)):
        wrong.append("ω^0's metrics remembered for another ω^0, or not the same for the same one")
    return wrong


@check("ssca.assembly_literal", "what `refimpl run` assembles for SSCA and its baselines, by hand: the seed's three "
       "streams (the initial point U(±sqrt(6/(D + L))) from the first, the batches from the second (either setting), "
       "the clients' "
       "split from the third, the split `refimpl partition-stats` shows); FedAvg with E local steps drawing E·B "
       "ids per client and round; the designated client of the feature-based protocol receiving W2; the authors' "
       "preset (their a1, a2, α, τ by batch, γ's exponent α + 0.05, A^t = τ, ReLU with bias columns, their cost; "
       "pooled batches for SSCA, per-client for SGD); a pooled schedule ((T, K·B)) replayed as given and one of "
       "the wrong width refused; a pooled round's dumped clients hold the batch's K·B ids between them and their "
       "means, weighed by those counts, give the aggregate; what the command adds (a trade-off row's data loss, the "
       "constraint's verdict and warning, MATLAB-shaped --init vectors, a flag equal to the preset's value, the "
       "step-size note); --feature-blocks refused under --setting sample and against a --clients it contradicts, "
       "read as the clients otherwise; a flat ω^0 of the wrong size refused naming W1's and W2's shapes; the "
       "metrics remembered at ω^0 the evaluator's whichever input changes; the paper's table of settings (a1, a2, α, "
       "τ) at its six (setting, B), a1 and a2 in (0, 1], --clients against a partition file, a longer replayed "
       "schedule recorded for T rounds; 0 wrong",
       "[SSCA] Section VI (set-up); the authors' scripts; docs/ssca.md")
def assembly_literal(quick):
    from dataclasses import replace

    from refimpl.core.partition import sample_based_schedule, sample_partition
    from refimpl.ssca.assembly import client_partition
    ds = embedded()
    wrong = []
    cfg = RunConfig("sgd", batch=4, rounds=3, clients=3, hidden=6, local_steps=2, partition="quantity:1.0", seed=3)
    tr = run_experiment(cfg, ds)
    s0, s1, s2 = (np.random.default_rng(x) for x in np.random.SeedSequence(3).spawn(3))
    eps = np.sqrt(6.0 / (ds.n_features + ds.n_classes))
    w0 = np.concatenate([np.ravel(a) for a in tr.snapshots[0]])
    if not np.array_equal(w0, s0.uniform(-eps, eps, w0.size)):
        wrong.append("the initial point is not U(±sqrt(6/(D + L))) from the seed's first stream")
    parts = sample_partition(ds.n_train, 3, "quantity:1.0", s2, ds.y_train)
    shown = client_partition(cfg.resolved(), ds)
    if not all(np.array_equal(a, b) for a, b in zip(parts, shown)):
        wrong.append("refimpl partition-stats' split is not the one drawn from the seed's third stream")
    want = sample_based_schedule(parts, 3, 8, s1).indices
    if np.shape(tr.batches) != (3, 3, 8) or not np.array_equal(tr.batches, want):
        wrong.append(f"FedAvg E = 2, B = 4: batches of shape {np.shape(tr.batches)}, want (3, 3, 8) drawn from the "
                     "seed's second stream on the third stream's split")
    fcfg = RunConfig("ssca", setting="feature", batch=4, rounds=1, clients=3, hidden=6, designated=1)
    wrong += _feature_block_refusals(ds)
    ftr = run_experiment(fcfg, ds)
    got = [m["receiver"] for m in ftr.ledger_round1 if m["sender"] == "server" and "W2" in m["payload"]]
    if got != ["client 1"]:
        wrong.append(f"--designated 1: the server sends W2 to {got}, want ['client 1']")
    f1 = np.random.default_rng(np.random.SeedSequence(fcfg.seed).spawn(3)[1])
    if not np.array_equal(ftr.batches, feature_based_schedule(ds.n_train, 1, 4, f1).indices):
        wrong.append("feature-based batches are not drawn from the seed's second stream")
    # the authors' feature-based SSCA script at B = 10: α = 0.3 (their sample-based one's 0.1 is refimpl's default)
    for algorithm, setting, want in (("ssca", "sample", dict(rho_a=0.9, gamma_a=0.5, rho_alpha=0.1, gamma_alpha=0.15,
                                                             tau=0.2, curvature="fixed", sampling="pooled")),
                                     ("ssca", "feature", dict(rho_a=1.0, gamma_a=0.3, rho_alpha=0.3, gamma_alpha=0.35,
                                                              tau=0.1, curvature="fixed")),
                                     ("sgd", "sample", dict(sampling="per-client"))):
        r = RunConfig(algorithm, setting=setting, batch=10, preset="authors").resolved()
        want = dict(want, activation="relu", bias=True, authors_cost=True)
        got = {k: getattr(r, k) for k in want}
        if any(got[k] != v if isinstance(v, (str, bool)) else not abs(got[k] - v) <= 1e-15 for k, v in want.items()):
            wrong.append(f"--preset authors, {setting}-based {algorithm}, B = 10: {got}, want {want}")
    # a pooled run's schedule, (T, K·B) ids from all samples, replays as given; a (T, B) one is refused
    pcfg = RunConfig("ssca", batch=4, rounds=2, clients=3, hidden=6, sampling="pooled", eval_every=2)
    pooled = run_experiment(replace(pcfg, dump_rounds="1"), ds)
    again = run_experiment(pcfg, ds, batches=pooled.batches)
    # its dumped clients: each the ids of the pooled batch it holds, K·B = 12 in all, and their means
    # weighed by those counts over K·B give the aggregate (ℓ̂, ĝ)
    d = {k[3:]: v for k, v in pooled.arrays.items() if k.startswith("r1_")}
    count = d.get("client_count", np.zeros(3))
    if count.sum() != 12 or not (np.allclose(count @ d["client_loss"] / 12, d["loss_hat"], rtol=1e-12, atol=0)
                                 and np.allclose(count @ d["client_grad"] / 12, d["grad_hat"], rtol=1e-12, atol=0)):
        wrong.append(f"--sampling pooled, K = 3, B = 4: round 1's clients hold {count.tolist()} of the 12 ids, and "
                     "their means weighed by those counts are not the aggregate (ℓ̂, ĝ)")
    if np.shape(pooled.batches) != (2, 12) or not np.array_equal(again.snapshots[2][0], pooled.snapshots[2][0]):
        wrong.append(f"--sampling pooled, K = 3, B = 4: batches of shape {np.shape(pooled.batches)} (want (2, 12)), "
                     "or their replay ends elsewhere")
    if not raises(lambda: run_experiment(pcfg, ds, batches=pooled.batches[:, :4]), "(T, K·B) = (T, 12)"):
        wrong.append("--sampling pooled: a (T, B) schedule is not refused naming (T, K·B) = (T, 12)")
    # FedAvg's E = 2 local steps draw E·B ids per client and round: its (T, K, E·B) schedule replays, a
    # (T, K, B) one is refused naming the width E·B
    ecfg = RunConfig("sgd", batch=2, local_steps=2, rounds=2, clients=3, hidden=6, eval_every=2)
    fedavg = run_experiment(ecfg, ds)
    if np.shape(fedavg.batches) != (2, 3, 4) or not np.array_equal(
            run_experiment(ecfg, ds, batches=fedavg.batches).snapshots[2][0], fedavg.snapshots[2][0]):
        wrong.append(f"FedAvg E = 2, B = 2, K = 3: batches of shape {np.shape(fedavg.batches)} (want (2, 3, 4)), or "
                     "their replay ends elsewhere")
    if not raises(lambda: run_experiment(ecfg, ds, batches=fedavg.batches[:, :, :2]), "(T, 3, 4)"):
        wrong.append("FedAvg E = 2: a (T, K, B) schedule is not refused naming (T, 3, 4)")
    n_command, command_wrong = _command_cases()
    n_table, table_wrong = _config_table_errors(ds)
    wrong += command_wrong + _initial_metrics_errors(ds) + table_wrong
    # the initial point, split and batches (the seed's 3 streams), --designated, 2 presets, a pooled schedule
    # replayed, its dumped clients, one of the wrong width refused, and FedAvg's E·B-wide schedule replayed and a
    # B-wide one refused, ω^0's remembered metrics
    n = 12 + n_command + n_table
    return {"measured": float(len(wrong)), "bound": 0.0, "holds": not wrong,
            "details": {"wrong": wrong, "facts": n, "command_facts": n_command},
            "note": f"{len(wrong)} of {n} assembly facts wrong ({n_command} of them the command's)"
            + (": " + "; ".join(wrong) if wrong else "")}


#: the paper's table of settings (Section VI), written out: (setting, B) → (α, τ), with a1 = 1, a2 = 0.3
#: and γ's exponent α + 0.05 throughout
PAPER_TABLE = {("sample", 10): (0.1, 0.1), ("sample", 100): (0.1, 0.05), ("sample", 6000): (0.1, 0.03),
               ("feature", 10): (0.3, 0.1), ("feature", 100): (0.1, 0.1), ("feature", 1000): (0.1, 0.05)}


def _config_table_errors(ds):
    """(facts, wrong answers): a configuration's defaults are the paper's table at each of its six
    (setting, B); a1 or a2 above 1 refused; --clients 10 against a partition file of 3 clients
    refused; a replayed schedule longer than the run recorded for its T rounds only."""
    import json
    import os
    import tempfile
    wrong = []
    for (setting, B), (alpha, tau) in PAPER_TABLE.items():
        r = RunConfig("ssca", setting=setting, batch=B).resolved()
        got = (r.rho_a, r.gamma_a, r.rho_alpha, r.gamma_alpha, r.tau)
        if not np.allclose(got, (1.0, 0.3, alpha, alpha + 0.05, tau), rtol=0, atol=1e-15):
            wrong.append(f"{setting}-based SSCA at B = {B}: (a1, a2, α, γ's exponent, τ) = {got}, the paper's table "
                         f"gives (1, 0.3, {alpha}, {alpha + 0.05:g}, {tau})")
    for f in ("rho_a", "gamma_a"):
        if not raises(lambda f=f: RunConfig("ssca", **{f: 1.5}).resolved(), "must be in (0, 1]"):
            wrong.append(f"{f} = 1.5 accepted (the step sizes start at it and lie in (0, 1])")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "parts.json")
        with open(path, "w") as fh:
            json.dump([[0, 1], [2, 3], [4, 5]], fh)
        if not raises(lambda: RunConfig("ssca", clients=10, partition_file=path).resolved(),
                      "--clients 10 contradicts"):
            wrong.append("--clients 10 beside a partition file of 3 clients accepted")
    cfg = RunConfig("ssca", batch=4, rounds=2, clients=3, hidden=6, eval_every=2)
    tr = run_experiment(cfg, ds)
    longer = run_experiment(cfg, ds, batches=np.concatenate([tr.batches, tr.batches]))
    if not np.array_equal(longer.batches, tr.batches):
        wrong.append(f"a replayed schedule of 4 rounds for a 2-round run recorded as {np.shape(longer.batches)} rows")
    return len(PAPER_TABLE) + 4, wrong


@check("ssca.flower_aggregation",
       "the Flower adapter with unequal partitions (quantity:1.0, 6 clients): each client's reply (its fit) is "
       "computed on its own partition's batch from the JSON sent to all, the strategy keys the replies by the "
       "partition id they report whatever their arrival order, and the assembled estimates give "
       "ℓ̂ = Σ_k (N_k/N)(1/B_k) Σ ℓ_n and ĝ likewise, computed here as one weighted pass over the samples "
       "(worst relative difference ≤ 1e-12 over 5 rounds × 3 arrival orders); Flower's round r sends schedule row "
       "r − 1 and steps refimpl's server on that row, the client of partition k answers for k (the run's ClientApp "
       "driven through Flower's own message handling), a round missing a partition's reply and two replies "
       "from one partition are refused, and nothing is sent once the run has ended; a round's ledger is ω down "
       "once and K × (dim ω + 1) up, the run starts "
       "from what refimpl's runner starts from (snapshots 0 and T kept, batches rows 0..T−1), and feature-based "
       "SSCA or two local steps are refused before Flower is needed (SGD, SGD-m and SSCA with one are not, nor is "
       "a plain run handed to the engine; a stop at a cost is); a run "
       "Flower ends early is marked stopped, a finished or diverged one keeps its status; Flower's simulation gets "
       "one SuperNode per client (one CPU each) and its logger is set to WARNING unless verbose (off by default)",
       "[SSCA] Algorithm 1 steps 2–3; refimpl/ssca/flower.py")
def flower_aggregation(quick):
    import json as _json
    from refimpl.core.model import TwoLayerNet
    from refimpl.core.partition import sample_partition
    from types import SimpleNamespace

    from refimpl.ssca.flower import FlowerCollection, batches_config, client_reply, replies_by_partition
    from refimpl.ssca.protocols import SampleBasedProtocol
    from refimpl.verification.registry import embedded
    ds = embedded()
    rng = np.random.default_rng(77)
    K, B = 6, 12
    parts = sample_partition(ds.n_train, K, "quantity:1.0", np.random.default_rng(5), ds.y_train)
    model = TwoLayerNet(ds.X_train.shape[1], 8, ds.n_classes)
    proto = SampleBasedProtocol(model, ds.X_train, ds.y_train, parts)
    coll = FlowerCollection(proto)
    worst, misrouted = 0.0, 0
    N = ds.n_train
    for r in range(5):
        theta = rng.standard_normal(model.n_params) * 0.1
        batches = [rng.choice(p, min(B, len(p)), replace=False) for p in parts]
        config = {"batches": batches_config(batches)}                     # what every client receives
        sent = _json.loads(config["batches"])
        misrouted += sum(int(not np.array_equal(np.asarray(sent[str(k)]), batches[k])) for k in range(K))
        # each client's fit reply ([Σ ∇ℓ_n], |B_k|, {pid, Σ ℓ_n}), as Flower would carry it (a FitRes)
        fits = [client_reply(proto, k, [theta], config) for k in range(K)]
        results = [(None, SimpleNamespace(parameters=f[0], num_examples=f[1], metrics=f[2])) for f in fits]
        # one weighted pass: sample n of client k carries N_k / (N |B_k|)
        idx = np.concatenate(batches)
        w = np.concatenate([np.full(len(b), len(p) / (N * len(b))) for p, b in zip(parts, batches)])
        loss, grad = model.loss_grad(theta, ds.X_train[idx], ds.y_train[idx], w)[:2]
        for order in (list(range(K)), list(range(K))[::-1], list(rng.permutation(K))):
            coll.assemble(replies_by_partition([results[k] for k in order], list))   # arrival order varies
            l_hat, g_hat, _ = coll.collect(theta, batches)
            worst = max_or_nan(worst, abs(l_hat - loss) / abs(loss), float(np.max(np.abs(g_hat - grad)) / np.max(np.abs(grad))))
    coll.assemble(replies_by_partition(results, list))
    ledger = coll.collect(theta, batches)[2]
    rounds_wrong = _flower_round_misroutes(results) + _flower_engine_errors(ledger, model.n_params, K)
    try:                           # a round without partition 0's reply is refused, naming what came
        coll.assemble(replies_by_partition(results[1:], list))
        rounds_wrong += 1
    except RuntimeError as exc:
        rounds_wrong += str(exc) != "a round needs replies from partitions 0..5, got [1, 2, 3, 4, 5]"
    try:                           # six replies, but keyed 1..6 (ids counted from 1): refused the same way
        coll.assemble({k + 1: r for k, r in replies_by_partition(results, list).items()})
        rounds_wrong += 1
    except RuntimeError as exc:
        rounds_wrong += str(exc) != "a round needs replies from partitions 0..5, got [1, 2, 3, 4, 5, 6]"
    # under the mutation runner a wrong answer above is the verdict already: Flower is not driven then
    found = misrouted or rounds_wrong or not worst <= 1e-12
    driven = ["not driven: a wrong answer above"] if first_wrong() and found else _flower_driven_errors()
    sizes = [len(p) for p in parts]
    return {"measured": max_or_nan(worst, float(misrouted + rounds_wrong + len(driven or ()))), "bound": 1e-12,
            "details": {"client_sizes": sizes, "worst_relative_difference": worst, "misrouted_batches": misrouted,
                        "wrong_round_rows_partitions_or_duplicates": rounds_wrong,
                        "flower_driven": "not run: Flower is not installed" if driven is None else len(driven),
                        "wrong": driven or []},
            "note": f"client sizes {min(sizes)}..{max(sizes)}; {misrouted} misrouted batches; {rounds_wrong} wrong "
                    "round rows, client partitions, duplicate replies, ledgers or set-up answers; "
                    + ("Flower's strategy and clients not driven (Flower is not installed)" if driven is None
                       else f"{len(driven)} wrong answers of Flower's strategy and clients driven by hand")}


def _flower_driven_errors():
    """Flower's strategy and ClientApp clients driven by hand, through Flower's own message types, for
    a 3-client, 3-round SSCA run: the strategy starts from refimpl's ω^0, each round sends every
    client one FitIns with ω^t, the run's ClientApp answers on each partition (replies passed in
    reverse order), and after the last round ω agrees with refimpl's own runner within 1e-10 relative and
    nothing more is sent; a failed client is refused naming the round, a run Flower ends early is
    marked stopped, the evaluation hooks do nothing. Wrong answers (a list), None without Flower."""
    from refimpl.ssca.flower import INSTALL_HINT, ssca_flower_apps
    cfg = RunConfig(algorithm="ssca", clients=3, batch=4, rounds=3, hidden=8, seed=4)
    try:
        run = ssca_flower_apps(cfg, embedded())
    except ValueError as exc:              # Flower not installed (any other refusal is a crash)
        if INSTALL_HINT not in str(exc):
            raise
        return None
    try:
        return _driven_through_flower(cfg, run)
    except Exception as exc:       # noqa: BLE001 - Flower's types refusing what the strategy did is a wrong answer
        return [f"driving the strategy raised {type(exc).__name__}: {exc}"]


def _client_app_fit(app, ins, k, K):
    """The fit reply of the run's Flower ``ClientApp`` on node partition k of K to ``ins``, through
    Flower's own message handling: a TRAIN message holding the FitIns in, its content read back
    as a FitRes (the app's client_fn builds the client of that partition)."""
    from flwr.app import Context, Message, Metadata, RecordDict
    from flwr.app.message_type import MessageType
    from flwr.compat.common.recorddict_compat import fitins_to_recorddict, recorddict_to_fitres
    meta = Metadata(run_id=0, message_id=f"fit-{k}", src_node_id=0, dst_node_id=10 + k, reply_to_message_id="",
                    group_id="1", created_at=0.0, ttl=3600.0, message_type=MessageType.TRAIN)
    context = Context(run_id=0, node_id=10 + k, node_config={"partition-id": k, "num-partitions": K},
                      state=RecordDict(), run_config={})
    reply = app(Message(fitins_to_recorddict(ins, keep_input=True), metadata=meta), context)
    return recorddict_to_fitres(reply.content, keep_input=False)


def _driven_through_flower(cfg, run):
    """The rounds of :func:`_flower_driven_errors`, each reply through Flower's types (see there)."""
    from types import SimpleNamespace

    from flwr.common import Code, FitRes, Status, parameters_to_ndarrays

    from refimpl.ssca.flower import ssca_flower_apps
    own = run_experiment(cfg, embedded())
    manager = SimpleNamespace(sample=lambda num_clients, min_num_clients: [f"node {k}" for k in range(num_clients)])
    wrong = []
    omega = parameters_to_ndarrays(run.strategy.initialize_parameters(manager))
    if len(omega) != 1 or not np.array_equal(omega[0], run.trainer.state.omega):
        wrong.append("the strategy's initial parameters are not the started run's ω^0")
    omega0 = omega[0].copy()
    from refimpl.ssca.flower import FlowerCollection
    if not isinstance(run.trainer.algorithm.protocol, FlowerCollection):     # else Flower's replies go unused
        wrong.append(f"during a Flower run the algorithm collects through a "
                     f"{type(run.trainer.algorithm.protocol).__name__}, not the strategy's FlowerCollection")
    for r in (1, 2, 3):
        ins = run.strategy.configure_fit(r, None, manager)
        if [c for c, _ in ins] != ["node 0", "node 1", "node 2"] or len({id(i) for _, i in ins}) != 1 \
                or not np.array_equal(parameters_to_ndarrays(ins[0][1].parameters)[0], run.trainer.state.omega):
            wrong.append(f"round {r}: not one FitIns with ω^t for each of the 3 clients")
            break
        replies = []
        for k in (2, 1, 0):
            fit = _client_app_fit(run.client_app, ins[0][1], k, 3)
            replies.append((f"node {k}", FitRes(Status(Code.OK, ""), fit.parameters, fit.num_examples, fit.metrics)))
        new = parameters_to_ndarrays(run.strategy.aggregate_fit(r, replies, [])[0])[0]
        if not np.array_equal(new, run.trainer.state.omega):
            wrong.append(f"round {r}: aggregate_fit does not return ω after the step")
    if run.strategy.configure_fit(4, None, manager) != []:
        wrong.append("a round after the run's last sends instructions")
    trace = run.finish()
    from refimpl.ssca.protocols import SampleBasedProtocol
    if not isinstance(run.trainer.algorithm.protocol, SampleBasedProtocol):
        wrong.append(f"after finish() the algorithm's protocol is a {type(run.trainer.algorithm.protocol).__name__}, "
                     "not its own sample-based one back")
    final = own.extra["final_state"].omega
    if np.max(np.abs(run.trainer.state.omega - final)) > 1e-10 * np.max(np.abs(final)) \
            or np.array_equal(run.trainer.state.omega, omega0):
        wrong.append("ω after 3 rounds driven through Flower's types differs from refimpl's runner beyond 1e-10")
    if (trace.status, trace.config.get("engine")) != ("finished", "flower"):
        wrong.append(f"a finished Flower run's trace: status {trace.status!r}, engine {trace.config.get('engine')!r}")
    early = ssca_flower_apps(cfg, embedded())
    try:
        early.strategy.aggregate_fit(1, [], ["planted failure"])
        said = False
    except RuntimeError as exc:          # Flower's own failure of a round
        said = str(exc).startswith("round 1: 1 client(s) failed: ['planted failure']")
    hooks = (early.strategy.configure_evaluate(1, None, manager), early.strategy.aggregate_evaluate(1, [], []),
             early.strategy.evaluate(1, None))
    if not said or hooks != ([], (None, {}), None):
        wrong.append("a failed client is not refused naming the round, or an evaluation hook does something")
    if early.finish().status != "stopped: the Flower run ended before round 3":
        wrong.append("a run Flower ends early is not marked stopped")
    return wrong


def _flower_engine_errors(ledger, n_params, K):
    """Wrong answers of the Flower engine's set-up, written out: a round's ledger is ω down once and
    K × (dim ω + 1) up (as refimpl's own protocol records it); the run starts from what refimpl's
    runner starts from (trace batches = schedule rows 0..T−1, snapshots 0 and T always kept); what
    Flower cannot run is refused before Flower is needed (feature-based SSCA, two local steps), by the
    configuration and by the apps' builder."""
    import dataclasses

    from refimpl.ssca.assembly import run_inputs
    from refimpl.ssca.experiment import RunConfig
    from refimpl.ssca.flower import flower_apps
    wrong = int([(m.sender, m.receiver, m.floats) for m in ledger] !=
                [("server", "all clients", n_params)] + [(f"client {k}", "server", n_params + 1) for k in range(K)])
    cfg = RunConfig(algorithm="sgd", clients=3, batch=4, rounds=3, hidden=8, snapshots=[2], seed=4).resolved()
    algo, _, schedule, _, trace, snapshots, _ = run_inputs(cfg, embedded())
    wrong += int(snapshots != [0, 2, 3] or not np.array_equal(trace.batches, schedule.indices[:3])
                 or len(schedule.indices) < 3)
    two = run_inputs(dataclasses.replace(cfg, local_steps=2), embedded())[0]
    feature = run_inputs(dataclasses.replace(cfg, algorithm="ssca", setting="feature"), embedded())[0]
    wrong += int(not raises(lambda: flower_apps(two, None, None, 3, None, None), "one local step"))
    wrong += int(not raises(lambda: flower_apps(feature, None, None, 3, None, None), "sample-based protocol only"))
    wrong += int(not raises(lambda: RunConfig(engine="flower", local_steps=2).resolved(), "one local step"))

    from refimpl.ssca import flower as F

    class PastTheGuards(Exception):
        """Raised where the builder would import Flower: the run got past the refusals."""

    def passes_the_guards(call, refused_with=None):
        """True when ``call`` gets as far as Flower; with ``refused_with``, True when it is refused
        first with those words. Flower is neither needed nor imported here."""
        def stop():
            raise PastTheGuards
        kept, F._flwr = F._flwr, stop
        try:
            call()
        except PastTheGuards:
            return refused_with is None
        except ValueError as exc:
            return refused_with is not None and refused_with in str(exc)
        finally:
            F._flwr = kept
        return False
    wrong += sum(int(not passes_the_guards(lambda c=c: flower_apps(run_inputs(c, embedded())[0], None, None, 3, None,
                                                                   None)))
                 for c in (cfg, dataclasses.replace(cfg, algorithm="ssca"), dataclasses.replace(cfg, algorithm="sgdm")))
    # the runner hands a plain run to the Flower engine; a stop at a cost it cannot watch is refused first
    from refimpl.ssca.experiment import run_experiment
    flower = dataclasses.replace(cfg, engine="flower")
    wrong += int(not passes_the_guards(lambda: run_experiment(flower, embedded())))
    wrong += int(not passes_the_guards(lambda: run_experiment(flower, embedded(), stop_at_cost=1.0),
                                       "not available with the Flower engine"))
    # ssca_flower_apps runs a configuration of refimpl's engine on Flower's: what Flower cannot run is
    # refused as --engine flower is (pooled sampling; constrained SSCA solved by cvxpy)
    from refimpl.ssca.flower import ssca_flower_apps
    plain = RunConfig(algorithm="ssca", clients=3, batch=4, rounds=3, hidden=8, seed=4)
    wrong += int(not raises(lambda: ssca_flower_apps(dataclasses.replace(plain, sampling="pooled"), embedded()),
                            "needs refimpl's engine (not --engine flower)"))
    wrong += int(not raises(lambda: ssca_flower_apps(dataclasses.replace(plain, algorithm="ssca-constrained",
                                                                         solver="cvxpy"), embedded()),
                            "--engine flower runs constrained SSCA with the closed-form step"))
    return wrong + _flower_finish_errors() + _flower_logging_errors()


def _flower_logging_errors():
    """How :func:`refimpl.ssca.flower.run_flower` hands a run to Flower's ``run_simulation``, with
    planted Flower modules (the real one is neither needed nor imported): one SuperNode per client,
    one CPU and no GPU each; unless ``verbose`` (False by default) Flower's logger is set to WARNING
    and its verbose logging is off, and with it the level is left as it was. The number of wrong answers."""
    import logging
    import sys
    from types import ModuleType, SimpleNamespace

    from refimpl.ssca import flower as F
    logger, calls = logging.getLogger("planted-flower"), []
    planted = {name: ModuleType(name) for name in ("flwr", "flwr.common", "flwr.common.logger", "flwr.simulation")}
    planted["flwr.common.logger"].FLOWER_LOGGER = logger
    planted["flwr.simulation"].run_simulation = lambda server_app, client_app, num_supernodes, backend_config, \
        verbose_logging: calls.append((logger.level, num_supernodes, backend_config, verbose_logging))
    run = SimpleNamespace(server_app="server", client_app="client", finish=lambda: None, state="state",
                          trainer=SimpleNamespace(algorithm=SimpleNamespace(protocol=SimpleNamespace(parts=[0] * 3))))
    kept = {m: sys.modules.pop(m) for m in list(sys.modules) if m == "flwr" or m.startswith("flwr.")}
    kept_fns = F._flwr, F.flower_apps
    sys.modules.update(planted)
    F._flwr, F.flower_apps = (lambda: None), (lambda *a, **kw: run)
    try:
        for kw in ({}, {"verbose": True}):
            logger.setLevel(logging.INFO)
            F.run_flower(None, None, None, 3, None, None, **kw)
    finally:
        F._flwr, F.flower_apps = kept_fns
        for m in planted:
            del sys.modules[m]
        sys.modules.update(kept)
    resources = {"client_resources": {"num_cpus": 1, "num_gpus": 0.0}}
    return int(calls != [(logging.WARNING, 3, resources, False), (logging.INFO, 3, resources, True)])


def _flower_finish_errors():
    """How a Flower run closes its trace: one that stopped before its last round is marked stopped
    (naming that round), a finished or diverged one keeps its status; the engine is recorded and the
    algorithm's own protocol given back; its state is the trainer's; a round collected before any
    reply is refused; without Flower installed the engine is refused naming the extra. The number
    of wrong answers."""
    from types import SimpleNamespace

    from refimpl.core.trace import Trace
    from refimpl.ssca.flower import FlowerRun
    wrong = 0
    for status, want in (("running", "stopped: the Flower run ended before round 5"), ("finished", "finished"),
                         ("diverged at round 3", "diverged at round 3")):
        restored = []
        tr = Trace(config={}, metrics={})
        tr.status = status
        run = FlowerRun(None, None, None, SimpleNamespace(rounds=5, state="its state"), tr, lambda: restored.append(1))
        run.finish()
        wrong += int(tr.status != want or tr.config.get("engine") != "flower" or restored != [1])
        wrong += int(getattr(run, "state", None) != "its state")       # the algorithm's last state: the trainer's
    # a round collected before any reply was assembled is refused, saying so
    from refimpl.ssca.flower import FlowerCollection
    fresh = FlowerCollection(SimpleNamespace(model=None, client_weight=None, parts=None))
    try:
        fresh.collect(None, [])
        wrong += 1
    except RuntimeError as exc:
        wrong += int(str(exc) != "no Flower replies were assembled for this round")
    # without Flower installed (its import fails) the engine is refused with the extra to install
    import sys

    from refimpl.ssca.flower import _flwr
    kept = {m: sys.modules.pop(m) for m in list(sys.modules) if m == "flwr" or m.startswith("flwr.")}
    sys.modules["flwr"] = None                  # what an absent package is to the import system
    try:
        wrong += int(not raises(_flwr, "the Flower engine needs the flower extra: pip install 'refimpl[flower]' "
                                       "(Python >= 3.11) ("))
    finally:
        del sys.modules["flwr"]
        sys.modules.update(kept)
    return wrong


def _flower_round_misroutes(results):
    """Flower's round r (from 1) sends the clients schedule row r − 1 (for r = 1..3 of a 3-round
    schedule) and the strategy steps refimpl's server on that row after assembling every reply, the
    client of node partition k answers for partition k, and a round with two replies from one
    partition is refused: the count of wrong answers."""
    import json as _json
    from types import SimpleNamespace

    from refimpl.ssca.flower import (fit_config, fit_instructions, fit_plan, partition_of, replies_by_partition,
                                     server_step)
    rows = np.arange(3 * 2 * 4).reshape(3, 2, 4)            # 3 rounds × 2 clients × batch 4
    wrong = sum(int(_json.loads(fit_config(SimpleNamespace(indices=rows), r)["batches"]) !=
                    {str(k): rows[r - 1, k].tolist() for k in range(2)}) for r in (1, 2, 3))
    # the strategy sends round r's batches while the run runs, nothing once it has ended
    wrong += int(fit_plan(SimpleNamespace(running=True), SimpleNamespace(indices=rows), 2)
                 != fit_config(SimpleNamespace(indices=rows), 2)
                 or fit_plan(SimpleNamespace(running=False), SimpleNamespace(indices=rows), 2) is not None)
    asked = []
    manager = SimpleNamespace(sample=lambda num_clients, min_num_clients: asked.append((num_clients, min_num_clients))
                              or ["c0", "c1"])
    sent = [fit_instructions(SimpleNamespace(running=running), SimpleNamespace(indices=rows), 3, manager, 2,
                             lambda cfg: ("ins", cfg)) for running in (True, False)]
    wrong += int(sent != [[(c, ("ins", fit_config(SimpleNamespace(indices=rows), 3))) for c in ("c0", "c1")], []]
                 or asked != [(2, 2)])
    wrong += sum(int(partition_of(SimpleNamespace(node_config={"partition-id": k, "num-partitions": 6})) != k)
                 for k in range(6))
    # the strategy's round r: the replies assembled, then the server step of round r on row r − 1
    steps, assembled = [], []
    trainer = SimpleNamespace(step=lambda r, b: steps.append((r, b.tolist())), state=SimpleNamespace(omega="ω"))
    coll = SimpleNamespace(assemble=assembled.append)
    for r in (1, 2, 3):
        wrong += int(server_step(trainer, coll, SimpleNamespace(indices=rows), r, results, list) != "ω")
    wrong += int(steps != [(r, rows[r - 1].tolist()) for r in (1, 2, 3)] or len(assembled) != 3
                 or sorted(assembled[0]) != list(range(len(results))))
    try:
        replies_by_partition([results[0], results[0]], list)
        wrong += 1
    except RuntimeError as exc:
        wrong += int("two replies from partition" not in str(exc))
    return wrong


#: what ``core.paper_descriptions`` measures SSCA's description against, written from the paper
#: (refimpl/verification/core.py says what each entry is); ρ_1 = 0.8 so that A^1 = 0.8τ differs
#: from the authors' A^t = τ
DESCRIPTION_FACTS = {
    "runs": (("ssca", dict(rounds=2, dump_rounds="1,2", eval_every=2, rho_a=0.8, hidden=8), "curvature", "fixed"),
             ("ssca", dict(rounds=2, dump_rounds="1,2", eval_every=2, hidden=8), "activation", "relu"),
             ("ssca", dict(rounds=2, dump_rounds="1,2", eval_every=2, hidden=8), "sampling", "pooled")),
    "dump_run": ("ssca", dict(rounds=1, dump_rounds="1", eval_every=1, hidden=8)),
    "data_flow": (("batch", "client_loss"), ("client_grad", "grad_hat"), ("rho", "A"), ("A", "omega_bar"),
                  ("B", "omega_bar"), ("C", "omega_bar"), ("grad_hat", "B"), ("loss_hat", "C"),
                  ("omega_bar", "omega_next")),                  # [SSCA] (8)–(10), Lemma 1
    "replay_words": {"W1_0": "initial point", "W2_0": "initial point", "omega_0": "initial point",
                     "batches": "batch schedule"},
    "own_names": ("omega", "omega_next"),
}
