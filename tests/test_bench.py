"""The benchmark's reference points compute what the library computes (a fast wrong baseline
would make every ratio meaningless), and the breakdown's rows carry what the issue asks for."""
import json

import numpy as np
import pytest

from refimpl.cli import main
from refimpl.core.model import TwoLayerNet
from refimpl.core.partition import sample_based_schedule, sample_partition
from refimpl.core.schedules import PowerLaw
from refimpl.ssca.algorithms import SSCA
from refimpl.ssca.protocols import SampleBasedProtocol
from refimpl.tools import bench


def _setup(B=20, K=4, D=30, J=8, L=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((K * 50, D))
    y = rng.integers(0, L, K * 50)
    model = TwoLayerNet(D, J, L)
    parts = sample_partition(X.shape[0], K)
    proto = SampleBasedProtocol(model, X, y, parts)
    algo = SSCA(proto, PowerLaw(1.0, 0.1), PowerLaw(0.3, 0.15), tau=0.05)
    batch = sample_based_schedule(parts, 1, B, rng).indices[0]
    state = algo.apply(algo.init(model.init_params(rng)), 1, batch)[0]
    return X, y, model, proto, algo, batch, state


def test_plain_numpy_round_is_the_library_round():
    X, y, model, proto, algo, batch, state = _setup()
    W1, W2 = model.unpack(state.omega)
    rho, gamma = algo.rho(2), algo.gamma(2)
    loss, g, omega, Bnew = bench.plain_numpy_round(X, y, batch, W1, W2, state.surrogate.B, algo.tau, rho, gamma)
    ref_loss, ref_g, _ = proto.collect(state.omega, batch)
    new = algo.apply(state, 2, batch)[0]
    assert abs(loss - ref_loss) <= 1e-12 * abs(ref_loss)
    np.testing.assert_allclose(g, ref_g, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(omega, new.omega, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(Bnew, new.surrogate.B, rtol=1e-10, atol=1e-14)


def test_breakdown_phases_are_the_round_operations():
    """Each timed phase recomputes a piece of the round: composed, they give the round's gradient."""
    from refimpl.core.kernels import KERNELS
    X, y, model, proto, algo, batch, state = _setup()
    act, xent = KERNELS[model.backend]
    W1, W2 = model.unpack(state.omega)
    idx = np.concatenate(batch)
    sizes = np.array([len(b) for b in batch])
    w = np.repeat(proto.client_weight / sizes, sizes)
    Z = X[idx] @ W1.T
    A, dA = act(Z, np.zeros(W1.shape[0]), model.activation)
    loss, D2 = xent(A @ W2.T, np.zeros(W2.shape[0]), y[idx], w)
    gW2, gW1 = D2.T @ A, ((D2 @ W2) * dA).T @ X[idx]
    ref_loss, ref_g, _ = proto.collect(state.omega, batch)
    np.testing.assert_allclose(np.concatenate([gW1.ravel(), gW2.ravel()]), ref_g, rtol=1e-12, atol=1e-15)
    assert set(bench.PRODUCTS) < set(bench.PHASES)


def test_round_in_sequence_is_the_library_round():
    """The in-round timing runs the library's operations in its order: same loss and gradient bits."""
    X, y, model, proto, algo, batch, state = _setup()
    times, loss, grad = bench.round_in_sequence(model, proto, algo, state, batch, repeats=2)
    ref_loss, ref_g, _ = proto.collect(state.omega, batch)
    assert loss == ref_loss and np.array_equal(grad, ref_g)
    assert set(times) == set(bench.PHASES) - {"rest"} and all(t >= 0 for t in times.values())


def test_bench_breakdown_json(tmp_path, capsys):
    out = tmp_path / "b.json"
    assert main(["bench", "ssca", "--breakdown", "--batches", "10", "--repeats", "1", "--quiet",
                 "--json", str(out)]) == 0
    rows = json.load(open(out))
    assert len(rows) == 1
    r = rows[0]
    assert set(r["phases_s"]) == set(bench.PHASES)
    assert abs(sum(r["phases_s"].values()) - r["round_s"]) <= 1e-9 + 1e-6 * r["round_s"] or r["phases_s"]["rest"] == 0
    for k in ("ratio_to_floor", "ratio_to_floor_plus_gather", "ratio_to_plain_numpy", "ratio_to_torch_stacked",
              "ratio_to_torch_per_client"):
        assert k in r
    assert r["ratio_to_floor"] >= r["ratio_to_floor_plus_gather"] > 0
    assert set(r["in_round_s"]) == set(bench.PHASES) and r["round_median_s"] > 0 and r["blas_threads"]
    assert "softmax-xent" in capsys.readouterr().out


@pytest.mark.parametrize("argv, msg", [
    (["bench", "vfl", "--breakdown"], "--breakdown applies to bench ssca only"),
    (["bench", "ssca", "--batches", "10,x"], "comma-separated whole numbers"),
    (["bench", "ssca", "--repeats", "0"], "--repeats must be >= 1"),
])
def test_bench_bad_input(argv, msg, capsys):
    assert main(argv + ["--quiet"]) == 2
    assert msg in capsys.readouterr().err


def test_bench_says_when_the_machine_was_busy_and_why_torch_shows_a_dash():
    cores = __import__("os").cpu_count() or 1
    idle = bench.bench_conditions(0.1, 1.0, torch_columns=True, rows=[{"ratio_to_torch": 1.2}])
    assert idle[1:] == [f"load average 0.10 before, 1.00 after, on {cores} cores"]
    busy = bench.bench_conditions(float(cores), 1.0, torch_columns=True, rows=[{"ratio_to_torch": None}])
    assert busy[2].startswith("warning: the machine was busy") and "torch is not installed" in busy[3]
    only_blas = bench.bench_conditions(None, None)
    assert len(only_blas) == 1 and only_blas[0].startswith("BLAS threads during this bench:")
