import numpy as np
import pytest

from refimpl.ssca.algorithms import SSCA, DivergenceError, Evaluator, FeatureSGD, FedAvg, LearningRate, train
from refimpl.ssca.kernels import ssca_round_nb, ssca_round_np
from refimpl.core.model import TwoLayerNet
from refimpl.core.partition import feature_based_schedule, feature_partition, sample_based_schedule, sample_partition
from refimpl.ssca.protocols import FeatureBasedProtocol, SampleBasedProtocol, ledger_floats
from refimpl.core.schedules import PowerLaw, Sequence, check_step_sizes, meets_conditions
from refimpl.ssca.surrogate import SurrogateState, move, surrogate_update, unconstrained_step
from refimpl.core.trace import Trace


@pytest.fixture
def small(mnist):
    m = TwoLayerNet(mnist.n_features, 8, 10)
    parts = sample_partition(600, 3)
    X, y = mnist.X_train[:600], mnist.y_train[:600]
    return m, X, y, parts


def test_surrogate_recursion_matches_formula(rng):
    P = 7
    s = SurrogateState.zeros(P)
    w, g = rng.standard_normal(P), rng.standard_normal(P)
    s1 = surrogate_update(s, 2.5, g, w, 1.0, 0.3)
    # with ρ_1 = 1 the surrogate is the linearisation plus τ||ω − ω^1||² (example (7))
    x = rng.standard_normal(P)
    direct = 2.5 + g @ (x - w) + 0.3 * (x - w) @ (x - w)
    assert abs(s1.value(x) - direct) < 1e-12
    np.testing.assert_allclose(s1.gradient(x), g + 0.6 * (x - w), atol=1e-14)
    s2 = surrogate_update(s1, 1.0, g, w, 0.25, 0.3)
    assert s2.A == pytest.approx(0.3)
    np.testing.assert_allclose(s2.B, 0.75 * s1.B + 0.25 * (g - 0.6 * w))


def test_unconstrained_step_minimises(rng):
    s = SurrogateState(0.2, rng.standard_normal(5), 1.0)
    lam = 0.05
    wb = unconstrained_step(s, lam)
    np.testing.assert_allclose(s.gradient(wb) + 2 * lam * wb, 0, atol=1e-14)
    with pytest.raises(ValueError, match="lambda"):
        unconstrained_step(s, -1)
    with pytest.raises(ValueError, match="A\\^t"):
        unconstrained_step(SurrogateState.zeros(5), 0.0)


def test_move_and_step_validation(rng):
    w, wb = rng.standard_normal(3), rng.standard_normal(3)
    np.testing.assert_allclose(move(w, wb, 0.25), 0.75 * w + 0.25 * wb)
    for bad in (0.0, 1.5, -0.1, np.nan):
        with pytest.raises(ValueError, match=r"\(0, 1\]"):
            move(w, wb, bad)
    with pytest.raises(ValueError, match="tau"):
        surrogate_update(SurrogateState.zeros(3), 0.0, w, w, 0.5, 0.0)


@pytest.mark.parametrize("kernel", [ssca_round_nb, ssca_round_np])
def test_fused_server_round_equals_composition(kernel, rng):
    P = 1000
    prev = SurrogateState(0.07, rng.standard_normal(P), 0.4)
    g, w = rng.standard_normal(P), rng.standard_normal(P)
    rho, tau, gamma, lam = 0.6, 0.05, 0.3, 0.01
    A, B, C, w_new, sq = kernel(prev.A, prev.B, prev.C, 1.3, g, w, rho, tau, gamma, lam)
    ref = surrogate_update(prev, 1.3, g, w, rho, tau)
    ref_w = move(w, unconstrained_step(ref, lam), gamma)
    assert A == ref.A and abs(C - ref.C) < 1e-12 * abs(ref.C)
    np.testing.assert_allclose(B, ref.B, rtol=1e-14)
    np.testing.assert_allclose(w_new, ref_w, rtol=1e-13)
    assert sq == pytest.approx(ref_w @ ref_w, rel=1e-13)


def test_schedule_checker():
    assert not meets_conditions(PowerLaw(1, 0.1), PowerLaw(0.3, 0.15))
    failed = {c.name for c in check_step_sizes(PowerLaw(1, 0.1), PowerLaw(0.3, 0.15)) if not c.met}
    assert failed == {"sum_rho_sq_finite", "sum_gamma_sq_finite"}
    assert meets_conditions(PowerLaw(1, 0.6), PowerLaw(0.5, 0.7))
    failed = {c.name for c in check_step_sizes(PowerLaw(1, 0.6), PowerLaw(0.5, 0.6)) if not c.met}
    assert failed == {"gamma_over_rho_to_0"}
    failed = {c.name for c in check_step_sizes(PowerLaw(1, 0.0), PowerLaw(0.5, 0.7)) if not c.met}
    assert {"rho_to_0", "sum_rho_sq_finite"} <= failed
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        PowerLaw(1.5, 0.5)
    with pytest.raises(ValueError, match="t = 3"):
        Sequence([0.5, 0.4, 1.2])
    t = np.arange(1, 3001.0)
    assert meets_conditions(Sequence(t ** -0.7), Sequence(0.5 * t ** -0.8))


def test_sample_protocol_estimate_and_ledger(small, rng):
    m, X, y, parts = small
    parts = [parts[0], parts[1][:100], parts[2]]          # unequal N_k
    pr = SampleBasedProtocol(m, X, y, parts)
    theta = m.init_params(rng)
    batches = [rng.choice(p, 10, replace=False) for p in parts]
    loss, g, msgs = pr.collect(theta, batches)
    N = sum(len(p) for p in parts)
    ref_g = sum(len(p) / N * m.loss_grad(theta, X[b], y[b])[1] for p, b in zip(parts, batches))
    ref_l = sum(len(p) / N * m.loss_grad(theta, X[b], y[b])[0] for p, b in zip(parts, batches))
    np.testing.assert_allclose(g, ref_g, rtol=1e-12, atol=1e-16)
    assert loss == pytest.approx(ref_l, rel=1e-13)
    P = m.n_params
    assert ledger_floats(msgs) == P + 3 * (P + 1)          # dim ω down, K (dim ω + 1) up


def test_sample_protocol_unbiased_full_batch(small, rng):
    m, X, y, parts = small
    pr = SampleBasedProtocol(m, X, y, parts)
    theta = m.init_params(rng)
    loss, g, _ = pr.collect(theta, [np.asarray(p) for p in parts])
    l_all, g_all = m.loss_grad(theta, X, y)
    np.testing.assert_allclose(g, g_all, rtol=1e-10, atol=1e-15)
    assert loss == pytest.approx(l_all, rel=1e-12)


@pytest.mark.parametrize("bias", [False, True])
def test_feature_protocol_equals_central_and_ledger(bias, mnist, rng):
    m = TwoLayerNet(mnist.n_features, 12, 10, bias=bias)
    blocks = np.array_split(rng.permutation(mnist.n_features), 3)
    pr = FeatureBasedProtocol(m, mnist.X_train, mnist.y_train, blocks, designated=1)
    theta = m.init_params(rng)
    batch = rng.choice(mnist.n_train, 25, replace=False)
    loss, g, msgs = pr.collect(theta, batch)
    l2, g2 = m.loss_grad(theta, mnist.X_train[batch], mnist.y_train[batch])
    np.testing.assert_allclose(g, g2, rtol=1e-12, atol=1e-16)
    assert loss == pytest.approx(l2, rel=1e-13)
    J, B, L, K, D = 12, 25, 10, 3, mnist.n_features
    down = J * D + K * B + L * (J + bias) + (J if bias else 0)
    up = 2 * J * B * (K - 1) + L * (J + bias) + 1 + (J if bias else 0) + J * D
    assert ledger_floats(msgs) == down + up


def test_feature_protocol_bad_designated(mnist):
    m = TwoLayerNet(mnist.n_features, 4, 10)
    with pytest.raises(ValueError, match="designated"):
        FeatureBasedProtocol(m, mnist.X_train, mnist.y_train, feature_partition(784, 2), designated=2)


def _evaluator(m, X, y, every=5):
    return Evaluator(m, X, y, X[:100], y[:100], 0.0, every)


def test_ssca_decreases_cost_and_is_reproducible(small):
    m, X, y, parts = small
    pr = SampleBasedProtocol(m, X, y, parts)
    sched = sample_based_schedule(parts, 40, 20, np.random.default_rng(0))
    theta0 = m.init_params(np.random.default_rng(1))
    traces = []
    for _ in range(2):
        tr = Trace({})
        train(SSCA(pr, PowerLaw(1, 0.1), PowerLaw(0.3, 0.15), 0.1), theta0, sched, 40, _evaluator(m, X, y), tr,
              snapshots=[40])
        traces.append(tr)
    c = traces[0].series("train_cost")
    assert c[-1] < 0.6 * c[0]
    np.testing.assert_array_equal(traces[0].snapshots[40][0], traces[1].snapshots[40][0])
    assert traces[0].status == "finished"
    assert traces[0].series("grad_evals")[-1] == 40 * 3 * 20


def test_fedavg_e1_equals_local_averaging(small):
    """E = 1 server-side step == each client stepping and the server averaging (models, buffers)."""
    m, X, y, parts = small
    pr = SampleBasedProtocol(m, X, y, parts)
    theta0 = m.init_params(np.random.default_rng(2))
    sched = sample_based_schedule(parts, 3, 10, np.random.default_rng(3))
    lr = LearningRate(0.5, 0.3)
    a = FedAvg(pr, lr, lam=0.01, momentum=0.6)
    sa = a.init(theta0)
    w, v = theta0.copy(), np.zeros_like(theta0)
    for t in range(1, 4):
        sa = a.apply(sa, t, sched.indices[t - 1])[0]
        ws, vs = [], []
        for k, b in enumerate(sched.indices[t - 1]):
            g = m.loss_grad(w, X[b], y[b])[1] + 0.02 * w
            vk = 0.6 * v + 0.4 * g
            ws.append(pr.client_weight[k] * (w - lr(t) * vk))
            vs.append(pr.client_weight[k] * vk)
        w, v = sum(ws), sum(vs)
    np.testing.assert_allclose(sa.omega, w, rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(sa.velocity, v, rtol=1e-11, atol=1e-14)


def test_fedavg_local_steps_ledger(small):
    m, X, y, parts = small
    pr = SampleBasedProtocol(m, X, y, parts)
    sched = sample_based_schedule(parts, 2, 3 * 10, np.random.default_rng(3))
    for mom, mult in ((0.0, 1), (0.9, 2)):
        algo = FedAvg(pr, LearningRate(0.1, 0.0), momentum=mom, local_steps=3)
        st, msgs, n = algo.apply(algo.init(m.init_params(np.random.default_rng(4))), 1, sched.indices[0])
        assert ledger_floats(msgs) == mult * m.n_params * (1 + 3) and n == 90


def test_feature_sgd_step(mnist, rng):
    m = TwoLayerNet(mnist.n_features, 6, 10)
    pr = FeatureBasedProtocol(m, mnist.X_train, mnist.y_train, feature_partition(784, 4))
    algo = FeatureSGD(pr, LearningRate(0.2, 0.0), lam=0.1)
    theta = m.init_params(rng)
    batch = rng.choice(4000, 30, replace=False)
    st = algo.apply(algo.init(theta), 1, batch)[0]
    g = m.loss_grad(theta, mnist.X_train[batch], mnist.y_train[batch])[1] + 0.2 * theta
    np.testing.assert_allclose(st.omega, theta - 0.2 * g, rtol=1e-12, atol=1e-15)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_divergence_stops_and_keeps_trace(small):
    m, X, y, parts = small
    pr = SampleBasedProtocol(m, X, y, parts)
    sched = sample_based_schedule(parts, 30, 10, np.random.default_rng(0))
    tr = Trace({})
    train(FedAvg(pr, LearningRate(1e300, 0.0)), m.init_params(np.random.default_rng(0)), sched, 30,
          _evaluator(m, X, y, 1), tr)
    assert tr.status.startswith("diverged: round")
    assert "not finite" in tr.status
    last = int(tr.metrics["round"][-1])
    assert last < 30 and tr.metrics["round"][0] == 0


def test_baseline_validation(small):
    m, X, y, parts = small
    pr = SampleBasedProtocol(m, X, y, parts)
    with pytest.raises(ValueError, match="momentum"):
        FedAvg(pr, LearningRate(0.1, 0), momentum=1.0)
    with pytest.raises(ValueError, match="eta0"):
        LearningRate(-1.0, 0.0)
    with pytest.raises(ValueError, match="tau"):
        SSCA(pr, PowerLaw(1, 0.5), PowerLaw(1, 0.6), tau=0.0)
    with pytest.raises(ValueError, match="lambda"):
        SSCA(pr, PowerLaw(1, 0.5), PowerLaw(1, 0.6), tau=0.1, lam=-1e-3)


def test_feature_based_ssca_runs(mnist):
    m = TwoLayerNet(mnist.n_features, 8, 10)
    pr = FeatureBasedProtocol(m, mnist.X_train, mnist.y_train, feature_partition(784, 10))
    sched = feature_based_schedule(mnist.n_train, 30, 50, np.random.default_rng(0))
    tr = Trace({})
    train(SSCA(pr, PowerLaw(1, 0.3), PowerLaw(0.3, 0.35), 0.1), m.init_params(np.random.default_rng(0)), sched, 30,
          Evaluator(m, mnist.X_train, mnist.y_train, mnist.X_test, mnist.y_test, 0.0, 10), tr)
    assert tr.series("train_cost")[-1] < tr.series("train_cost")[0]


@pytest.mark.parametrize("bias", [False, True])
def test_one_gather_of_the_batch_rows_gives_each_client_the_same_products(bias, mnist, rng):
    """Contiguous feature blocks: the batch rows are gathered once and each client's X_k^B is a view
    of its columns. The round's loss and gradient equal, bit for bit, those of a gather per client
    (the path taken for non-contiguous blocks); non-contiguous blocks take that path."""
    m = TwoLayerNet(mnist.n_features, 16, 10, bias=bias)
    one = FeatureBasedProtocol(m, mnist.X_train, mnist.y_train, feature_partition(784, 10))
    each = FeatureBasedProtocol(m, mnist.X_train, mnist.y_train, feature_partition(784, 10))
    each._one_gather = False
    assert one._one_gather
    theta = m.init_params(rng)
    for B in (1, 37, 1000):
        batch = rng.choice(mnist.n_train, B, replace=False)
        (l1, g1, _), (l2, g2, _) = one.collect(theta, batch), each.collect(theta, batch)
        assert l1 == l2 and np.array_equal(g1, g2), B
    scattered = [np.arange(k, 784, 4) for k in range(4)]
    assert not FeatureBasedProtocol(m, mnist.X_train, mnist.y_train, scattered)._one_gather


@pytest.mark.parametrize("bias", [False, True])
def test_remark4_one_step_collection(bias, mnist, rng):
    m = TwoLayerNet(mnist.n_features, 32, 10, bias=bias)
    blocks = feature_partition(784, 4)
    three = FeatureBasedProtocol(m, mnist.X_train, mnist.y_train, blocks)
    one = FeatureBasedProtocol(m, mnist.X_train, mnist.y_train, blocks, collection="one-step")
    theta = m.init_params(rng)
    batch = rng.choice(mnist.n_train, 10, replace=False)
    l3, g3, msgs3 = three.collect(theta, batch)
    l1, g1, msgs1 = one.collect(theta, batch)
    np.testing.assert_allclose(g1, g3, rtol=1e-12, atol=1e-16)
    assert l1 == pytest.approx(l3, rel=1e-13)
    up1 = sum(x.floats for x in msgs1 if x.sender != "server")
    up3 = sum(x.floats for x in msgs3 if x.sender != "server")
    assert up1 == 4 * 10 * 32 + 10 * 784 and up1 < up3          # fewer floats when B < J
    assert {x.payload for x in msgs1 if x.receiver == "server"} == {"Z_k+X_k"}
    with pytest.raises(ValueError, match="collection"):
        FeatureBasedProtocol(m, mnist.X_train, mnist.y_train, blocks, collection="two-step")


@pytest.mark.parametrize("algorithm, setting", [("ssca", "sample"), ("sgdm", "sample"), ("ssca", "feature")])
def test_stopping_at_a_cost_target_changes_nothing_before_it(mnist, algorithm, setting):
    """``stop_at_cost`` (used by ssca.claim_faster_than_sgd) ends the run at the first evaluation
    that meets the target: the trace up to there, and rounds-to-target, equal the full run's."""
    from refimpl.ssca.experiment import RunConfig, run_experiment
    from refimpl.verification.ssca import rounds_to_target
    cfg = RunConfig(algorithm, setting, batch=20, rounds=60, eval_every=5, seed=4)
    full = run_experiment(cfg, mnist)
    costs = full.series("train_cost")
    target = float(costs[len(costs) // 2])                   # met for the first time halfway or earlier
    short = run_experiment(cfg, mnist, stop_at_cost=target)
    hit = rounds_to_target(full, target)
    assert hit is not None and hit < 60
    assert rounds_to_target(short, target) == hit
    assert short.series("round")[-1] == hit and short.status.startswith(f"finished: reached training cost")
    for key in ("round", "train_cost", "test_accuracy", "comm_floats"):
        np.testing.assert_array_equal(short.series(key), full.series(key)[:len(short.series(key))])
    never = run_experiment(cfg, mnist, stop_at_cost=float(costs.min()) / 2)
    assert never.status == "finished" and rounds_to_target(never, float(costs.min()) / 2) is None
    np.testing.assert_array_equal(never.series("train_cost"), costs)
    with pytest.raises(ValueError, match="stop_at_cost must be a finite"):
        run_experiment(cfg, mnist, stop_at_cost=float("nan"))
    # screened: the evaluations above the target read only the rows that show it; the same rounds
    for tgt, ref in ((target, short), (float(costs.min()) / 2, never)):
        scr = run_experiment(cfg, mnist, stop_at_cost=tgt, screen=True)
        assert rounds_to_target(scr, tgt) == rounds_to_target(ref, tgt) and scr.status == ref.status
        c, lower, ref_c = scr.series("train_cost"), scr.series("train_cost_lower_bound"), ref.series("train_cost")
        np.testing.assert_array_equal(scr.series("round"), ref.series("round"))
        cut = np.isnan(c)
        assert cut.sum() >= len(c) // 3 and not cut[0]                      # most evaluations are screened
        np.testing.assert_array_equal(c[~cut], ref_c[~cut])
        np.testing.assert_array_equal(lower[~cut], ref_c[~cut])
        assert np.all(lower[cut] > tgt) and np.all(lower[cut] <= ref_c[cut])   # a lower bound, above the target
    with pytest.raises(ValueError, match="screen applies to a run with stop_at_cost"):
        run_experiment(cfg, mnist, screen=True)


def test_a_screened_evaluation_is_a_lower_bound_that_never_hides_the_target(mnist):
    """Evaluator.cost_shown_above: the partial sums of the rows' losses (each ≥ 0) bound the training
    cost from below; it answers only when the bound clears the level, and None at or below it."""
    from refimpl.core.model import TwoLayerNet
    from refimpl.ssca.algorithms import Evaluator
    m = TwoLayerNet(mnist.n_features, 16, 10)
    ev = Evaluator(m, mnist.X_train[:2000], mnist.y_train[:2000], mnist.X_test, mnist.y_test, lam=1e-3)
    rng = np.random.default_rng(5)
    for scale in (0.01, 0.1, 1.0, 5.0):
        th = m.init_params(rng) * scale / 0.087
        cost = ev(th)["train_cost"]
        assert ev.cost_shown_above(th, cost) is None                        # never above the cost itself
        for level in (0.1 * cost, 0.5 * cost, 0.9 * cost):
            lower = ev.cost_shown_above(th, level)
            assert lower is None or level < lower <= cost * (1 + 1e-12)
        assert ev.cost_shown_above(th, 0.1 * cost) is not None               # a tenth is shown by the first rows
    with np.errstate(all="ignore"):
        assert ev.cost_shown_above(th * np.inf, 1.0) is not None             # not finite: for the divergence rule


@pytest.mark.parametrize("setting", ["sample", "feature"])
def test_repeated_batch_rows_are_gathered_once_and_give_the_same_estimates(setting, mnist):
    """Full-shard batches ask for the same rows every round: the protocol gathers them once and
    reuses the array; a round with other ids gathers afresh. Every round's estimates equal, bit
    for bit, those of a protocol that has never seen a batch before."""
    X, y = mnist.X_train[:200], mnist.y_train[:200]
    m = TwoLayerNet(X.shape[1], 8, 10)
    theta = m.init_params(np.random.default_rng(3))

    def protocol():
        if setting == "sample":
            return SampleBasedProtocol(m, X, y, sample_partition(200, 4))
        return FeatureBasedProtocol(m, X, y, feature_partition(X.shape[1], 4))
    pr = protocol()
    parts = sample_partition(200, 4)
    full = [np.asarray(p) for p in parts] if setting == "sample" else np.arange(200)
    other = [np.asarray(p)[::-1] for p in parts] if setting == "sample" else np.arange(200)[::-1].copy()
    seen = []
    for batch in (full, full, other, full):
        loss, grad, _ = pr.collect(theta, batch)
        fresh_loss, fresh_grad, _ = protocol().collect(theta, batch)
        assert loss == fresh_loss and np.array_equal(grad, fresh_grad)
        seen.append(pr.batch_rows.rows)
    assert seen[0] is seen[1] and seen[2] is not seen[1] and seen[3] is not seen[2]
    ids = np.concatenate(full) if setting == "sample" else full
    assert np.array_equal(seen[3], X[ids])


def test_an_initial_point_is_evaluated_once_for_the_same_model_data_and_options(monkeypatch):
    """``initial_metrics``: a second run from the same ω^0 on the same data arrays reads the first
    one's metrics (the same numbers); another ω^0, another λ or another array (even with equal
    values) is evaluated again."""
    from refimpl.core.model import TwoLayerNet
    from refimpl.ssca import algorithms as A
    rng = np.random.default_rng(3)
    X, Xt = rng.standard_normal((40, 6)), rng.standard_normal((10, 6))
    y, yt = rng.integers(0, 3, 40), rng.integers(0, 3, 10)
    model = TwoLayerNet(6, 4, 3)
    calls = []
    real = A.objective
    monkeypatch.setattr(A, "objective", lambda *a: calls.append(1) or real(*a))
    ev = A.Evaluator(model, X, y, Xt, yt, lam=1e-3)
    theta = model.init_params(np.random.default_rng(0))
    first = A.initial_metrics(ev, theta)
    assert A.initial_metrics(A.Evaluator(model, X, y, Xt, yt, lam=1e-3, every=5), theta.copy()) == first == ev(theta)
    assert len(calls) == 2                                           # the first call and ev(theta) itself
    A.initial_metrics(ev, theta + 1e-12)
    A.initial_metrics(A.Evaluator(model, X, y, Xt, yt, lam=2e-3), theta)
    A.initial_metrics(A.Evaluator(model, X.copy(), y, Xt, yt, lam=1e-3), theta)
    assert len(calls) == 5
