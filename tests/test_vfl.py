import numpy as np
import pytest

from refimpl.cli import main
from refimpl.vfl.flexvfl import (FlexVFL, VerticalData, condition20, estimate_smoothness, linear_party_phase_nb,
                             max_change_factor, party_local_phase, quadrant_blocks, run_async, server_local_phase,
                             time_to_target)
from refimpl.vfl.local_optimizers import (SGD, LocalMomentum, Proximal, TimeVaryingLR, make_optimizer, weight_summary,
                                      weights_assumption)
from refimpl.vfl.speeds import ConstantSpeed, LogNormalSpeed, MarkovSpeed, Network, TraceSpeed, parse_speeds
from refimpl.vfl.models import LinearEncoder, LinearFusion, SwishEncoder, VerticalModel


@pytest.fixture(scope="module")
def vdata(mnist):
    return VerticalData.from_dataset(mnist, quadrant_blocks())


@pytest.fixture
def model():
    return VerticalModel((LinearEncoder(196, 8), SwishEncoder(196, 8, 12), LinearEncoder(196, 8),
                          LinearEncoder(196, 8)), LinearFusion(32, 10))


def test_quadrants_cover_the_image():
    b = quadrant_blocks()
    assert sorted(np.concatenate(b).tolist()) == list(range(784)) and all(len(x) == 196 for x in b)
    assert b[0][:3].tolist() == [0, 1, 2] and b[1][0] == 14 and b[2][0] == 14 * 28


@pytest.mark.parametrize("enc", [LinearEncoder(6, 3), SwishEncoder(6, 3, 5)])
def test_encoder_and_fusion_gradients_fd(enc, rng):
    m = VerticalModel((enc, LinearEncoder(4, 2)), LinearFusion(5, 3))
    thetas = m.init(rng)
    Xs, y = [rng.standard_normal((7, 6)), rng.standard_normal((7, 4))], rng.integers(0, 3, 7)
    _, grads = m.block_gradients(thetas, Xs, y)
    for k in range(3):
        for i in rng.choice(thetas[k].size, 6, replace=False):
            e = np.zeros_like(thetas[k])
            e[i] = 1e-6
            plus = [t + (e if j == k else 0) for j, t in enumerate(thetas)]
            minus = [t - (e if j == k else 0) for j, t in enumerate(thetas)]
            fd = (m.loss(plus, Xs, y) - m.loss(minus, Xs, y)) / 2e-6
            assert abs(fd - grads[k][i]) < 1e-7 * max(1, abs(fd))


@pytest.mark.parametrize("opt", [SGD(), LocalMomentum(0.7), Proximal(0.8), TimeVaryingLR(0.3)])
def test_cumulative_update_equals_weighted_gradients(opt, model, vdata, rng):
    thetas = model.init(rng)
    idx = rng.choice(vdata.n, 16, replace=False)
    Xb, yb = [X[idx] for X in vdata.Xs_train], vdata.y_train[idx]
    H = np.hstack(model.embeddings(thetas, Xb))
    for tau in (1, 5):
        end, grads, _ = server_local_phase(model, thetas[0], H, yb, opt, 0.1, tau, record=True)
        np.testing.assert_allclose(end - thetas[0], -0.1 * sum(w * g for w, g in zip(opt.weights(tau, 0.1), grads)),
                                   rtol=1e-12, atol=1e-15)
        end, grads, _ = party_local_phase(model, 2, thetas[2], thetas[0], H, Xb[1], yb, opt, 0.1, tau, record=True)
        np.testing.assert_allclose(end - thetas[2], -0.1 * sum(w * g for w, g in zip(opt.weights(tau, 0.1), grads)),
                                   rtol=1e-12, atol=1e-15)


def test_weight_summaries_and_assumption():
    assert weight_summary(SGD(), 4, 0.1) == (1.0, 4.0)
    wb, W = weight_summary(LocalMomentum(0.5), 3, 0.1)
    assert wb == pytest.approx(1.75) and W == pytest.approx(1.75 + 1.5 + 1.0)
    assert not weights_assumption(Proximal(1.0), 3, 0.1)         # (1 − ημ)^k < 1 breaks w ≥ 1
    assert weights_assumption(LocalMomentum(0.5), 3, 0.1)
    assert make_optimizer("momentum:0.3").rho == 0.3 and make_optimizer("proximal").mu == 0.1
    with pytest.raises(ValueError, match="momentum ρ"):
        LocalMomentum(1.0)
    with pytest.raises(ValueError, match="proximal μ"):
        Proximal(-0.1)
    with pytest.raises(ValueError, match="local optimizer"):
        make_optimizer("adam")


@pytest.mark.parametrize("opt", [SGD(), LocalMomentum(0.9), Proximal(0.5)])
def test_numba_local_loop_equals_numpy(opt, vdata, rng):
    m = VerticalModel(tuple(LinearEncoder(196, 8) for _ in range(4)), LinearFusion(32, 10))
    thetas = m.init(rng)
    idx = rng.choice(vdata.n, 20, replace=False)
    Xb, yb = [X[idx] for X in vdata.Xs_train], vdata.y_train[idx]
    H = np.hstack(m.embeddings(thetas, Xb))
    a = linear_party_phase_nb(m, 3, thetas[3], thetas[0], H, Xb[2], yb, opt, 0.07, 6)[0]
    b = party_local_phase(m, 3, thetas[3], thetas[0], H, Xb[2], yb, opt, 0.07, 6)[0]
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_speed_models(tmp_path):
    rng = np.random.default_rng(0)
    assert np.all(ConstantSpeed((1, 2)).sample(3, rng) == [[1, 2]] * 3)
    ln = LogNormalSpeed((1.0, 4.0), 0.3).sample(20000, np.random.default_rng(1))
    np.testing.assert_allclose(ln.mean(axis=0), [1.0, 4.0], rtol=0.02)
    mk = MarkovSpeed((1.0,), (5.0,), 0.2, 0.4).sample(20000, np.random.default_rng(2))
    assert set(np.unique(mk)) == {1.0, 5.0}
    assert abs(np.mean(mk == 5.0) - 0.2 / 0.6) < 0.02                 # stationary slow fraction
    np.testing.assert_array_equal(MarkovSpeed((1.0,), (5.0,)).sample(50, np.random.default_rng(3)),
                                  MarkovSpeed((1.0,), (5.0,)).sample(50, np.random.default_rng(3)))
    np.savetxt(tmp_path / "cpu.csv", [0.0, 0.9, 0.4], delimiter=",")
    tr = TraceSpeed.from_file(tmp_path / "cpu.csv", (1.0, 2.0)).sample(4, rng)
    np.testing.assert_allclose(tr[:, 0], [10.0, 1.0, 2.0, 10.0])
    # τ = floor(timeout / step) with timeout = 10·base reproduces floor(10(1 − cpu) + 1)
    np.testing.assert_array_equal(np.floor(10.0 / tr[:3, 0] + 1e-9), np.floor(10 * np.array([0.0, 0.9, 0.4]) + 1))
    np.save(tmp_path / "bad.npy", np.array([0.5, np.nan]))
    with pytest.raises(ValueError, match="row 1"):
        TraceSpeed.from_file(tmp_path / "bad.npy", (1.0,)).sample(2, rng)
    with pytest.raises(ValueError, match="party 1"):
        ConstantSpeed((1.0, -2.0)).sample(2, rng)
    assert isinstance(parse_speeds("markov:1:5:0.1", 3), MarkovSpeed)
    with pytest.raises(ValueError, match="2 values for 3 parties"):
        parse_speeds("constant:1,2", 3)
    with pytest.raises(ValueError, match="unknown speed model"):
        parse_speeds("gamma:1", 3)


def _runner(model, vdata, method, speeds, **kw):
    opts = kw.pop("opts", [SGD()] * (model.K + 1))
    return FlexVFL.from_method(model, vdata, method, opts, kw.pop("eta", 0.05), 16, speeds, **kw)


def test_taus_durations_and_messages(model, vdata):
    sp = np.array([[0.5, 1.0, 2.0, 3.0, 4.0]] * 3)
    net = Network(bandwidth=8e3, latency=0.5)
    flex = _runner(model, vdata, "flex", sp, timeout=6.0, network=net)
    np.testing.assert_array_equal(flex.taus(sp[0]), [12, 6, 3, 2, 1])
    np.testing.assert_array_equal(_runner(model, vdata, "sync", sp, Q=3).taus(sp[0]), [3] * 5)
    np.testing.assert_array_equal(_runner(model, vdata, "pbcd", sp).taus(sp[0]), [1] * 5)
    up, down = flex.messages()
    K, B, sum_o = 4, 16, 32
    assert down == K * (model.fusion.n_params + B * sum_o) and up == B * sum_o    # K(|θ_0| + B Σ O_k)
    assert flex.round_duration(sp[0], flex.taus(sp[0]), up, down) == pytest.approx(6.0 + 1.0 + (up + down) / 1e3)
    tr = flex.run(model.init(np.random.default_rng(0)), 3, np.random.default_rng(1), eval_every=1)
    assert tr.metrics["comm_floats"][-1] == 3 * (up + down)
    np.testing.assert_allclose(np.diff(tr.series("time")), tr.arrays["round_time"])
    sync = _runner(model, vdata, "sync", sp, Q=3, network=net)
    assert sync.round_duration(sp[0], sync.taus(sp[0]), up, down) == pytest.approx(12.0 + 1.0 + (up + down) / 1e3)


def test_flex_learns_and_is_reproducible(model, vdata):
    sp = LogNormalSpeed((0.2, 1, 1, 2, 4), 0.3).sample(30, np.random.default_rng(0))
    run = _runner(model, vdata, "flex", sp, timeout=5.0, opts=[SGD(), LocalMomentum(0.5), Proximal(0.1),
                                                               TimeVaryingLR(0.2), SGD()])
    a = run.run(model.init(np.random.default_rng(1)), 30, np.random.default_rng(2), eval_every=10)
    b = run.run(model.init(np.random.default_rng(1)), 30, np.random.default_rng(2), eval_every=10)
    assert a.series("test_accuracy")[-1] > 0.5
    np.testing.assert_array_equal(a.series("test_accuracy"), b.series("test_accuracy"))
    np.testing.assert_array_equal(a.arrays["tau"], b.arrays["tau"])
    assert np.all(np.diff(a.arrays["S"]) > 0)


def test_adaptive_learning_rates_follow_algorithm2(model, vdata):
    sp = MarkovSpeed((0.2, 1, 1, 1, 1), (0.2, 4, 4, 4, 4), 0.3, 0.3).sample(21, np.random.default_rng(0))
    opts = [SGD(), LocalMomentum(0.5), SGD(), SGD(), SGD()]
    run = _runner(model, vdata, "adaptive", sp, timeout=5.0, A=[0.5] * 5, opts=opts)
    tr = run.run(model.init(np.random.default_rng(1)), 20, np.random.default_rng(2), eval_every=20)
    a = tr.arrays
    # η^{r+1} = A / (τ^r w̄^r), and the first round uses the dummy round's τ^0 (speeds row 0)
    np.testing.assert_allclose(a["eta"][1:], 0.5 / (a["tau"][:-1] * a["w_bar"][:-1]))
    tau0 = np.maximum(1, np.floor(5.0 / sp[0]))
    wb0 = np.array([weight_summary(o, int(t), 0.5 / t)[0] for o, t in zip(opts, tau0)])
    np.testing.assert_allclose(a["eta"][0], 0.5 / (tau0 * wb0))
    alpha = max_change_factor(a["tau"], a["w_bar"])
    assert alpha >= 1 and condition20([1e-9] * 5, 1.0, [1.0] * 5, alpha).all()


def test_labels_at_server_only(model, vdata):
    sp = ConstantSpeed((0.5, 1, 1, 1, 1)).sample(5, np.random.default_rng(0))
    a = _runner(model, vdata, "flex", sp, timeout=3.0).run(model.init(np.random.default_rng(1)), 5,
                                                           np.random.default_rng(2), eval_every=5)
    run_b = _runner(model, vdata, "flex", sp, timeout=3.0, labels="server")
    b = run_b.run(model.init(np.random.default_rng(1)), 5, np.random.default_rng(2), eval_every=5)
    assert run_b.messages()[1] == _runner(model, vdata, "flex", sp, timeout=3.0).messages()[1] + 16 * 32
    assert a.series("test_accuracy")[-1] != b.series("test_accuracy")[-1]
    # with τ = 1 both modes take the same step (∂l/∂h_k is fresh either way)
    sp1 = ConstantSpeed((1.0,) * 5).sample(3, np.random.default_rng(0))
    c = _runner(model, vdata, "pbcd", sp1).run(model.init(np.random.default_rng(1)), 3, np.random.default_rng(2))
    d = _runner(model, vdata, "pbcd", sp1, labels="server").run(model.init(np.random.default_rng(1)), 3,
                                                                np.random.default_rng(2))
    np.testing.assert_allclose(c.series("train_loss"), d.series("train_loss"), rtol=1e-12)


def test_async_vfl(model, vdata):
    sp = LogNormalSpeed((0.2, 1, 1, 2, 8), 0.3).sample(100, np.random.default_rng(0))
    th = model.init(np.random.default_rng(1))
    a = run_async(model, vdata, th, 0.05, 16, sp, np.random.default_rng(2), 60.0, eval_every_time=10.0)
    b = run_async(model, vdata, th, 0.05, 16, sp, np.random.default_rng(2), 60.0, eval_every_time=10.0)
    assert a.status == "finished" and a.series("round")[-1] > 30
    np.testing.assert_array_equal(a.series("test_accuracy"), b.series("test_accuracy"))
    assert np.all(np.diff(a.series("time")) > 0) and a.series("staleness")[-1] > 0
    with pytest.raises(ValueError, match="party 2"):
        run_async(model, vdata, th, [0.1, 0.1, -1, 0.1, 0.1], 16, sp, np.random.default_rng(2), 10.0)


def test_bad_vfl_input(model, vdata):
    sp = ConstantSpeed((0.5, 1, 1, 1, 6)).sample(3, np.random.default_rng(0))
    with pytest.raises(ValueError, match="party 4"):
        _runner(model, vdata, "flex", sp, timeout=5.0)                  # slower than the timeout
    with pytest.raises(ValueError, match="party 2"):
        _runner(model, vdata, "flex", sp, timeout=10.0, eta=[0.1, 0.1, 0.0, 0.1, 0.1])
    bad = VerticalData.__new__(VerticalData)
    with pytest.raises(ValueError, match="aligned"):
        VerticalData((vdata.Xs_train[0][:10],) + vdata.Xs_train[1:], vdata.y_train, vdata.Xs_test, vdata.y_test)
    with pytest.raises(ValueError, match="holds 196 features but its encoder takes 100"):
        FlexVFL.from_method(VerticalModel((LinearEncoder(100, 8),) + model.encoders[1:], model.fusion), vdata, "pbcd",
                [SGD()] * 5, 0.1, 16, sp)
    with pytest.raises(ValueError, match="speed schedule holds 3 rounds"):
        _runner(model, vdata, "pbcd", sp).run(model.init(np.random.default_rng(0)), 5, np.random.default_rng(0))
    del bad


def test_smoothness_and_condition14(model, vdata):
    rng = np.random.default_rng(0)
    th = model.init(rng)
    Xs, y = [X[:200] for X in vdata.Xs_train], vdata.y_train[:200]
    L, Lk = estimate_smoothness(model, th, Xs, y, rng, iters=20)
    assert L > 0 and np.all(Lk > 0) and np.all(Lk <= L * 1.05)         # a block's curvature ≤ the whole
    sp = ConstantSpeed((0.5, 1, 1, 1, 1)).sample(4, rng)
    run = _runner(model, vdata, "flex", sp, timeout=3.0, eta=1.0, smoothness=(L, Lk))
    tr = run.run(th, 4, rng, eval_every=4)
    assert not tr.arrays["cond14"].any()


def test_time_to_target_and_cli(tmp_path):
    assert main(["run", "pbcd", "--rounds", "5", "--quiet", "--out", str(tmp_path / "p"), "--encoder", "swish",
                 "--embed-dim", "4"]) == 0
    assert main(["run", "sync-vfl", "--rounds", "3", "--quiet", "--Q", "2"]) == 0
    assert main(["run", "adaptive-flexvfl", "--rounds", "3", "--quiet", "--optimizer", "momentum:0.5"]) == 0
    assert main(["run", "async-vfl", "--rounds", "5", "--quiet"]) == 2                 # needs --time-budget
    assert main(["run", "flexvfl", "--rounds", "3", "--quiet", "--timeout", "1.0"]) == 2  # slower than timeout
    assert main(["compare", "vfl", "--time-budget", "40", "--rounds", "20", "--quiet", "--out", str(tmp_path / "c")]) == 0
    text = (tmp_path / "c" / "time_to_target.csv").read_text()
    assert text.startswith("method,time_to_0.8") and "async-vfl" in text
    assert (tmp_path / "c" / "accuracy_vs_time.png").exists()
    from refimpl.core.trace import Trace
    tr = Trace.load(tmp_path / "p")
    assert tr.arrays["tau"].shape == (5, 5) and time_to_target(tr, 2.0) is None


def test_cli_theory_quantities(tmp_path):
    import json
    assert main(["run", "adaptive-flexvfl", "--rounds", "6", "--smoothness", "estimate", "--theory-every", "3",
                 "--quiet", "--out", str(tmp_path)]) == 0
    doc = json.load(open(tmp_path / "trace.json"))
    assert len(doc["metrics"]["grad_sq"]) == len(doc["metrics"]["round"]) == 7
    assert doc["config"]["L"] > 0 and len(doc["config"]["L_k"]) == 5
    assert {"alpha", "met"} <= set(doc["config"]["condition20"])
    assert main(["run", "flexvfl", "--rounds", "2", "--smoothness", "1,2", "--quiet"]) == 2


def test_adaptive_needs_a_dummy_row(model, vdata):
    sp = ConstantSpeed((0.5, 1, 1, 1, 1)).sample(3, np.random.default_rng(0))
    run = _runner(model, vdata, "adaptive", sp, timeout=3.0, A=[0.5] * 5)
    with pytest.raises(ValueError, match="needs 4"):
        run.run(model.init(np.random.default_rng(1)), 3, np.random.default_rng(2))
    assert run.run(model.init(np.random.default_rng(1)), 2, np.random.default_rng(2)).status == "finished"


def test_feature_blocks_set_the_parties_split(tmp_path, capsys):
    """--feature-blocks FILE.json: the four quadrants written out give the default run bit for bit;
    two halves run with --parties 2; a count that disagrees with --parties, or blocks that do not
    cover every feature once, are refused naming the file."""
    import json
    from refimpl.cli import main
    q = [[(r0 + i) * 28 + c0 + j for i in range(14) for j in range(14)] for r0, c0 in ((0, 0), (0, 14), (14, 0), (14, 14))]
    (tmp_path / "quad.json").write_text(json.dumps(q))
    (tmp_path / "two.json").write_text(json.dumps([list(range(392)), list(range(392, 784))]))
    (tmp_path / "gap.json").write_text(json.dumps([list(range(390)), list(range(392, 784))]))
    base = ["run", "flexvfl", "--rounds", "2", "--quiet"]
    assert main([*base, "--out", str(tmp_path / "d")]) == 0
    assert main([*base, "--feature-blocks", str(tmp_path / "quad.json"), "--out", str(tmp_path / "q")]) == 0
    a, b = np.load(tmp_path / "d" / "trace.npz"), np.load(tmp_path / "q" / "trace.npz")
    assert all(np.array_equal(a[k], b[k]) for k in a.files)
    two = [*base, "--parties", "2", "--speeds", "constant:0.2,1,1"]
    assert main([*two, "--feature-blocks", str(tmp_path / "two.json"), "--out", str(tmp_path / "t")]) == 0
    capsys.readouterr()
    assert main([*base, "--feature-blocks", str(tmp_path / "two.json")]) == 2
    assert "holds 2 blocks but --parties is 4" in capsys.readouterr().err
    assert main([*two, "--feature-blocks", str(tmp_path / "gap.json")]) == 2
    assert "cover every feature exactly once" in capsys.readouterr().err


def test_async_evaluates_each_state_once(model, vdata, monkeypatch):
    """Clock ticks with no event between them see the same parameters: the run computes the
    training loss and the accuracy of a state once and records the same values at every tick,
    exactly what a fresh evaluation of that state gives."""
    sp = ConstantSpeed((0.2, 3, 3, 3, 3)).sample(2, np.random.default_rng(0))
    th = model.init(np.random.default_rng(1))
    calls = []
    real = type(model).loss
    monkeypatch.setattr(type(model), "loss", lambda self, *a: calls.append(1) or real(self, *a))
    tr = run_async(model, vdata, th, 0.05, 16, sp, np.random.default_rng(2), 20.0, eval_every_time=0.5)
    events, loss = tr.series("round"), tr.series("train_loss")
    assert len(events) == 41 and len(np.unique(events)) < len(events)         # ticks without an event
    assert len(calls) == len(np.unique(events))
    thetas = [tr.arrays[f"init_theta{k}"] for k in range(model.K + 1)]
    assert loss[0] == real(model, thetas, vdata.Xs_train, vdata.y_train)
    for a, b, la, lb in zip(events, events[1:], loss, loss[1:]):
        assert a != b or la == lb


def test_a_datasets_split_is_made_once_read_only_and_forgotten_with_the_dataset():
    """``VerticalData.from_dataset`` gives the same split again for the same blocks of the same
    arrays (its feature arrays read-only, so no run can change what the next one reads), a new one
    for other blocks or another array, and keeps nothing once the dataset is gone."""
    import dataclasses
    import gc

    from refimpl.core.data import Dataset
    from refimpl.vfl import flexvfl
    rng = np.random.default_rng(0)
    ds = Dataset(rng.standard_normal((30, 6)), rng.integers(0, 3, 30), rng.standard_normal((10, 6)),
                 rng.integers(0, 3, 10), n_classes=3, name="probe")
    a = VerticalData.from_dataset(ds, [[0, 2, 4], [1, 3, 5]])
    assert VerticalData.from_dataset(ds, [np.array([0, 2, 4]), [1, 3, 5]]) is a
    np.testing.assert_array_equal(a.Xs_train[1], ds.X_train[:, [1, 3, 5]])
    with pytest.raises(ValueError, match="read-only"):
        a.Xs_train[0][0, 0] = 1.0
    b = VerticalData.from_dataset(ds, [[0, 1, 2], [3, 4, 5]])
    assert b is not a and VerticalData.from_dataset(ds, [[0, 1, 2], [3, 4, 5]]) is b
    other = dataclasses.replace(ds, X_train=ds.X_train * 2)
    c = VerticalData.from_dataset(other, [[0, 1, 2], [3, 4, 5]])
    np.testing.assert_array_equal(c.Xs_train[0], 2 * b.Xs_train[0])
    key = id(ds)
    del ds, a, b
    gc.collect()
    assert key not in flexvfl._SPLITS and id(other) in flexvfl._SPLITS


def test_compare_vfl_says_which_methods_diverged(tmp_path, capsys):
    """At η = 3 and a bound of 300 on Σ_k ||θ_k||², Flex-VFL blows up at round 1 and adaptive Flex-VFL
    finishes: the table's "final" accuracy of a diverged method is the one before its blow-up, so
    each row says how its run ended."""
    assert main(["compare", "vfl", "--time-budget", "40", "--rounds", "20", "--eta", "3", "--diverge-sq-norm", "300",
                 "--quiet", "--out", str(tmp_path / "c")]) == 0
    rows = {ln.split()[0]: ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("method=")}
    assert "status=diverged: round 1:" in rows["method=flexvfl"]
    assert rows["method=adaptive-flexvfl"].endswith("status=finished")
    text = (tmp_path / "c" / "time_to_target.csv").read_text().splitlines()
    assert text[0].endswith(",final_accuracy,status") and text[2].endswith(",finished")
