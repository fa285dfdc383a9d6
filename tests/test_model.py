import numpy as np
import pytest

from refimpl.core.kernels import (activation_nb, activation_np, exp_nonpos_nb, gather_rows_nb, gather_rows_np, softmax_xent_nb,
                             softmax_xent_np)
from refimpl.core.model import TwoLayerNet, full_gradient, objective
from refimpl.verification.core import fd_relative_error


@pytest.mark.parametrize("activation", ["swish", "relu"])
@pytest.mark.parametrize("bias", [False, True])
def test_gradient_matches_central_differences(activation, bias, rng):
    m = TwoLayerNet(8, 5, 3, activation, bias)
    theta = m.init_params(rng, eps=1.0)
    X, y = rng.standard_normal((6, 8)), rng.integers(0, 3, 6)
    assert fd_relative_error(m, theta, X, y) < 1e-6


@pytest.mark.parametrize("activation", ["swish", "relu"])
@pytest.mark.parametrize("bias", [False, True])
def test_numba_and_numpy_paths_agree(activation, bias, rng):
    a = TwoLayerNet(20, 7, 4, activation, bias, "numba")
    b = TwoLayerNet(20, 7, 4, activation, bias, "numpy")
    theta = a.init_params(rng) * 5
    X, y = rng.standard_normal((11, 20)), rng.integers(0, 4, 11)
    w = rng.random(11)
    la, ga = a.loss_grad(theta, X, y, w)
    lb, gb = b.loss_grad(theta, X, y, w)
    assert abs(la - lb) <= 1e-13 * abs(lb)
    np.testing.assert_allclose(ga, gb, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(a.predict(theta, X), b.predict(theta, X))


@pytest.mark.parametrize("kind", ["swish", "relu"])
def test_activation_kernel_extremes(kind):
    Z = np.array([[-1e3, -50.0, -1e-8, 0.0, 1e-8, 50.0, 1e3]])
    b = np.zeros(7)
    A1, d1 = activation_nb(Z, b, kind)
    A2, d2 = activation_np(Z, b, kind)
    assert np.all(np.isfinite(A1)) and np.all(np.isfinite(d1))
    np.testing.assert_allclose(A1, A2, rtol=1e-14, atol=0)
    np.testing.assert_allclose(d1, d2, rtol=1e-14, atol=1e-300)
    if kind == "swish":
        # swish(z) → z for z → ∞, → 0 for z → −∞; derivative → 1 and 0
        assert A1[0, -1] == 1e3 and abs(A1[0, 0]) < 1e-300
        assert d1[0, -1] == 1.0 and abs(d1[0, 0]) < 1e-300
        assert d1[0, 3] == 0.5


def test_exp_nonpos_is_within_one_ulp_of_the_c_library():
    rng = np.random.default_rng(5)
    x = -np.concatenate([rng.uniform(0, 746, 10**6), rng.exponential(1.0, 10**6), rng.uniform(0, 1e-6, 10**4),
                         [0.0, 5e-324, 1e-300, 708.0, 708.4, 709.0, 744.4, 745.1, 745.2, 746.0, 800.0, np.inf]])
    mine, ref = exp_nonpos_nb(x), np.exp(x)
    ulps = np.abs(mine.view(np.int64) - ref.view(np.int64))      # same sign: the bit distance is the ulp distance
    assert ulps.max() <= 1, (ulps.max(), x[ulps.argmax()])
    assert (ulps == 0).mean() > 0.85                             # a 1-ulp-everywhere result would also be wrong
    assert mine[-12] == 1.0 and mine[-1] == 0.0 and mine[-2] == 0.0
    assert np.all(mine[(ref > 0) & (ref < 2.3e-308)] > 0)           # subnormal results are kept, not flushed
    # inside kernels: the activation with a strided bias column (W[:, 0]) gives the same bits as a contiguous one
    W = rng.standard_normal((40, 8))
    Z = rng.standard_normal((30, 40)) * 4
    A1, d1 = activation_nb(Z, W[:, 0], "swish")
    A2, d2 = activation_nb(Z, W[:, 0].copy(), "swish")
    assert np.array_equal(A1, A2) and np.array_equal(d1, d2)


def test_softmax_kernel_extremes_and_twin(rng):
    O = rng.standard_normal((9, 5)) * 4
    O[0] = [-1e3, 1e3, 0, 999, -5]
    y, w, b = rng.integers(0, 5, 9), rng.random(9), rng.standard_normal(5)
    l1, D1 = softmax_xent_nb(O, b, y, w)
    l2, D2 = softmax_xent_np(O, b, y, w)
    assert np.isfinite(l1) and np.all(np.isfinite(D1))
    assert abs(l1 - l2) < 1e-12 * max(1, abs(l2))
    np.testing.assert_allclose(D1, D2, atol=1e-15)
    np.testing.assert_allclose(D1.sum(axis=1), 0, atol=1e-12)   # Σ_l (p_l − y_l) = 0


def test_gather_twin(rng):
    X = rng.standard_normal((30, 4))
    idx = rng.choice(30, 12, replace=False)
    np.testing.assert_array_equal(gather_rows_nb(X, idx), gather_rows_np(X, idx))


def test_large_preactivation_loss_is_finite(rng):
    m = TwoLayerNet(4, 3, 2)
    theta = np.full(m.n_params, 100.0)
    X = np.full((2, 4), 3.0)                   # z = 1200, o = 3.6e5
    l, g = m.loss_grad(theta, X, np.array([0, 1]))
    assert np.isfinite(l) and np.all(np.isfinite(g))


def test_pack_unpack_and_shapes(rng):
    m = TwoLayerNet(6, 4, 3, bias=True)
    assert m.shape_W1 == (4, 7) and m.shape_W2 == (3, 5) and m.n_params == 28 + 15
    W1, W2 = rng.standard_normal(m.shape_W1), rng.standard_normal(m.shape_W2)
    theta = m.pack(W1, W2)
    a, b = m.unpack(theta)
    np.testing.assert_array_equal(a, W1)
    np.testing.assert_array_equal(b, W2)
    with pytest.raises(ValueError, match="shape"):
        m.pack(W1[:, 1:], W2)
    with pytest.raises(ValueError, match="NaN"):
        m.pack(np.full(m.shape_W1, np.nan), W2)
    with pytest.raises(ValueError, match="parameter vector"):
        m.unpack(theta[:-1])


def test_bad_model_options():
    with pytest.raises(ValueError, match="activation"):
        TwoLayerNet(3, activation="tanh")
    with pytest.raises(ValueError, match="positive integer"):
        TwoLayerNet(0)
    with pytest.raises(ValueError, match="backend"):
        TwoLayerNet(3, backend="cuda")


def test_full_gradient_is_gradient_of_objective(rng):
    m = TwoLayerNet(5, 4, 3)
    theta = m.init_params(rng)
    X, y = rng.standard_normal((40, 5)), rng.integers(0, 3, 40)
    lam = 0.01
    g = full_gradient(m, theta, X, y, lam, chunk=7)
    v = rng.standard_normal(theta.size)
    h = 1e-6
    fd = (objective(m, theta + h * v, X, y, lam) - objective(m, theta - h * v, X, y, lam)) / (2 * h)
    assert abs(fd - g @ v) < 1e-7 * np.linalg.norm(g) * np.linalg.norm(v)


def test_one_vs_all_cost_of_the_authors():
    """J = mean_n Σ_l [−y log p − (1 − y) log(1 − p)], p = softmax: written out here; and the
    round-0 relation of their saved curves (softmax cross-entropy 2.337 ↔ J 3.289 for a near-
    uniform softmax) holds."""
    from refimpl.core.model import TwoLayerNet
    rng = np.random.default_rng(4)
    m = TwoLayerNet(12, 5, 10, bias=True, activation="relu")
    th = m.init_params(rng) * 3
    X, y = rng.random((40, 12)), rng.integers(0, 10, 40)
    Z = m.logits(th, X)
    P = np.exp(Z - Z.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    Y = np.eye(10)[y]
    want = float(np.mean(np.sum(-Y * np.log(P) - (1 - Y) * np.log(1 - P), axis=1)))
    assert abs(m.one_vs_all_cost(th, X, y, chunk=7) - want) <= 1e-13 * want
    p_y = np.exp(-2.337)
    J = 2.337 - 9 * np.log(1 - (1 - p_y) / 9)
    assert abs(J - 3.289) < 5e-4
