import json

import numpy as np
import pytest

from refimpl.cli import main
from refimpl.mfcgd.problems import DistributionallyRobustFL, LeastSquaresMAML, SyntheticComposition
from refimpl.mfcgd.algorithm import (AdamType, AMSGradType, Identity, MFCGDParams, NormType, make_matrix, project_ball,
                           run_local_scgd, run_local_scgd_synthetic_nb, run_mfcgd, run_mfcgd_synthetic_nb)
from refimpl.mfcgd.bounds import Constants, find_theorem_parameters, theorem2_bound, theorem_conditions


@pytest.fixture(scope="module")
def syn():
    return SyntheticComposition.random(M=4, p=3, d=6, rng=np.random.default_rng(0))


def _fd_jac(fun, x, h=1e-6):
    return np.stack([(fun(x + h * e) - fun(x - h * e)) / (2 * h) for e in np.eye(x.size)], axis=-1)


@pytest.mark.parametrize("kind", ["synthetic", "maml", "drfl"])
def test_problem_derivatives_finite_differences(kind, mnist, rng):
    if kind == "synthetic":
        pr = SyntheticComposition.random(M=3, p=3, d=5, rng=rng)
    elif kind == "maml":
        pr = LeastSquaresMAML.random(M=3, d=4, rng=rng)
    else:
        pr = DistributionallyRobustFL((mnist.X_train[:40, :12], mnist.X_train[40:80, :12]),
                                      (mnist.y_train[:40], mnist.y_train[40:80]), batch=8)
    x = rng.standard_normal(pr.d) * 0.1
    zeta, xi = pr.draw_zeta(rng, ()), pr.draw_xi(rng, ())
    J = _fd_jac(lambda z: pr.g(1, z, zeta), x)
    np.testing.assert_allclose(pr.jac_g(1, x, zeta), J, atol=1e-6)
    Je = _fd_jac(lambda z: pr.g_exact(1, z), x)
    np.testing.assert_allclose(pr.jac_g_exact(1, x), Je, atol=1e-6)
    gF = _fd_jac(lambda z: np.array([pr.F(z)]), x)[0]
    np.testing.assert_allclose(pr.grad_F(x), gF, atol=1e-6)
    if kind == "synthetic":
        y = rng.standard_normal(pr.p)
        f = lambda yy: np.sum(np.sqrt(1 + (yy - pr.c[1]) ** 2)) + xi @ yy
        np.testing.assert_allclose(pr.grad_f(1, y, xi), _fd_jac(lambda yy: np.array([f(yy)]), y)[0], atol=1e-6)


def test_synthetic_constants_hold_numerically(syn, rng):
    C = syn.constants()
    for _ in range(200):
        y = rng.standard_normal(syn.p) * 5
        xi = syn.draw_xi(rng, ())
        assert np.linalg.norm(syn.grad_f(0, y, xi)) <= C["C_f"] + 1e-12
    assert np.linalg.norm(syn.jac_g(0, None, None)) <= C["C_g"] + 1e-12
    x = rng.standard_normal(syn.d)
    assert syn.F(x) >= C["F_star"] - 1e-9 and np.linalg.norm(syn.grad_F(np.zeros(syn.d))) > 0


def test_projection():
    v = np.array([3.0, 4.0])
    np.testing.assert_allclose(project_ball(v, 1.0), [0.6, 0.8])
    assert project_ball(v, 10.0) is v
    M = np.ones((2, 2))
    assert np.linalg.norm(project_ball(M, 1.0)) == pytest.approx(1.0)


def test_adaptive_matrices():
    w = np.array([3.0, -4.0])
    a, A = AdamType(0.1, 0.5).update(AdamType().init(2), w)
    np.testing.assert_allclose(A, np.sqrt(0.5 * w ** 2) + 0.1)
    a2, A2 = NormType(0.1, 0.5).update(0.0, w)
    np.testing.assert_allclose(A2, [0.5 * 5 + 0.1] * 2)
    st, A3 = AMSGradType(0.1, 0.5).update(AMSGradType().init(2), w)
    st, A4 = AMSGradType(0.1, 0.5).update(st, np.zeros(2))          # a shrinks, the max does not
    np.testing.assert_allclose(A4, A3)
    assert Identity().update(None, w)[1] is None
    with pytest.raises(ValueError, match="ρ"):
        AdamType(0.0)
    with pytest.raises(ValueError, match="ϑ"):
        NormType(0.1, 1.5)
    with pytest.raises(ValueError, match="adaptive matrix"):
        make_matrix("rmsprop")


def _noise(pr, T, q, rng):
    M = pr.M
    return pr.draw_zeta(rng, (M, q)), pr.draw_xi(rng, (M, q)), pr.draw_zeta(rng, (T, M)), pr.draw_xi(rng, (T, M))


@pytest.mark.parametrize("mat", [Identity(), AdamType(0.2), NormType(0.2), AMSGradType(0.2)])
def test_numba_kernel_equals_numpy_on_same_samples(mat, syn):
    C = syn.constants()
    # both projections bind: C_g below ||A||_F (u = A otherwise) and C_f below the typical ||v||
    par = MFCGDParams(k=1, n=8, c1=5, c2=5, c3=5, gamma=0.5, q=3, C_g=0.9 * C["C_g"], C_f=0.5)
    noise = _noise(syn, 60, 3, np.random.default_rng(1))
    a = run_mfcgd(syn, np.zeros(syn.d), 60, par, mat, np.random.default_rng(2), noise=noise, lemma2=True)
    assert a.bound_u > 0 and a.bound_v > 0
    b = run_mfcgd_synthetic_nb(syn, np.zeros(syn.d), 60, par, mat, np.random.default_rng(2), noise=noise, lemma2=True)
    np.testing.assert_allclose(b.x_bar, a.x_bar, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(b.lemma2_rhs, a.lemma2_rhs, rtol=1e-10)
    np.testing.assert_allclose(b.A_norm, a.A_norm, rtol=1e-12)
    np.testing.assert_array_equal(b.samples, a.samples)
    np.testing.assert_array_equal(b.rounds, a.rounds)


def test_recursions_and_communication(syn):
    """Between communications clients differ; at t ≡ 0 mod q every client receives x̄_{t+1}; with
    α = β = ϱ = 1 the recursions are the plain estimators h = g(x_{t+1}; ζ), v = Π ∇f(h; ξ)."""
    C = syn.constants()
    q, T = 4, 12
    par = MFCGDParams(k=1, n=1, c1=1e6, c2=1e6, c3=1e6, gamma=0.5, q=q, C_g=C["C_g"], C_f=C["C_f"])
    assert par.momentum(1) == (1.0, 1.0, 1.0)
    noise = _noise(syn, T, q, np.random.default_rng(3))
    r = run_mfcgd(syn, np.zeros(syn.d), T, par, Identity(), np.random.default_rng(0), noise=noise, record_states=True)
    st = r.states
    assert list(r.rounds[:8]) == [0, 0, 0, 1, 1, 1, 1, 2]
    assert r.samples[0] == 2 * 4 * syn.M + 2 * syn.M
    for t in range(1, T + 1):
        xn = st["X_next"][t - 1]
        spread = np.max(np.abs(xn - xn.mean(axis=0)))
        if t % q == 0:
            assert spread == 0.0                                   # everyone holds x̄_{t+1}
            xb = st["X"][t - 1].mean(axis=0)
            w_bar = np.mean([st["U"][t - 1, m].T @ st["V"][t - 1, m] for m in range(syn.M)], axis=0)
            np.testing.assert_allclose(xn[0], xb - 0.5 * par.eta(t) * w_bar, rtol=1e-13, atol=1e-15)
        else:
            assert spread > 1e-8                                   # local steps on different w^m
        if t < T:
            for m in range(syn.M):                                 # state at t+1 from the plain estimators
                h = syn.g(m, xn[m], noise[2][t - 1, m])
                np.testing.assert_allclose(st["H"][t, m], h, rtol=1e-13, atol=1e-15)
                v = project_ball(syn.grad_f(m, h, noise[3][t - 1, m]), par.C_f)
                np.testing.assert_allclose(st["V"][t, m], v, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("kind", ["identity", "adam", "norm", "amsgrad"])
@pytest.mark.parametrize("problem", ["synthetic", "nonlinear", "maml", "drfl"])
def test_run_mfcgd_equals_literal_algorithm1(kind, problem, syn):
    """Algorithm 1 transcribed line by line (per-client dictionaries, refimpl.verification.mfcgd_literal)
    against run_mfcgd on the same sample stream, on every problem class."""
    from refimpl.mfcgd.problems import NonlinearComposition
    from refimpl.verification.mfcgd_literal import algorithm1_literal
    if problem == "synthetic":
        pr = syn
    elif problem == "nonlinear":
        pr = NonlinearComposition.random(rng=np.random.default_rng(5))
    elif problem == "maml":
        pr = LeastSquaresMAML.random(M=4, d=5, rng=np.random.default_rng(2))
    else:
        rng = np.random.default_rng(4)
        Xs = tuple(rng.standard_normal((40, 6)) for _ in range(3))
        ys = tuple(rng.integers(0, 3, 40) for _ in range(3))
        pr = DistributionallyRobustFL(Xs, ys, n_classes=3, batch=8)
    q, T = 3, 30 if problem == "drfl" else 60
    par = MFCGDParams(k=1, n=8, c1=2, c2=5, c3=12, gamma=0.3, q=q, C_g=2.0, C_f=0.8)
    noise = _noise(pr, T, q, np.random.default_rng(7))
    x1 = np.full(pr.d, 0.1)
    a = run_mfcgd(pr, x1, T, par, make_matrix(kind, 0.1, 0.9), np.random.default_rng(0), noise=noise)
    lit, binds = algorithm1_literal(pr, x1, T, k=1, n=8, c1=2, c2=5, c3=12, gamma=0.3, q=q, C_g=2.0, C_f=0.8,
                                    matrix=kind, rho=0.1, theta=0.9, noise=noise)
    lit = np.array(lit)
    assert np.max(np.abs(a.x_bar - lit)) <= 1e-12 * np.max(np.abs(lit))
    assert binds["u"] == a.bound_u and binds["v"] == a.bound_v


def test_lemma2_holds_along_a_run(syn):
    C = syn.constants()
    par = MFCGDParams(k=1, n=8, c1=10, c2=10, c3=10, gamma=0.5, q=5, C_g=C["C_g"], C_f=C["C_f"])
    r = run_mfcgd_synthetic_nb(syn, np.zeros(syn.d), 500, par, AdamType(0.2), np.random.default_rng(0), lemma2=True)
    assert np.all(r.lemma2_lhs <= r.lemma2_rhs * (1 + 1e-12))


@pytest.mark.parametrize("alpha", [None, 0.3])
def test_baselines_numpy_and_numba_statistically_agree(alpha, syn):
    """The two implementations draw from different generators, so they agree in distribution only:
    the mean over 12 seeds of the average ||∇F|| over the last 100 steps must differ by less than
    4 standard errors of the difference."""
    T, S = 300, 12
    va, vb = [], []
    for s in range(S):
        a = run_local_scgd(syn, np.zeros(syn.d), T, 5, 0.1, 0.5, alpha, np.random.default_rng(100 + s))
        gn, samples, rounds = run_local_scgd_synthetic_nb(syn, np.zeros(syn.d), T, 5, 0.1, 0.5, alpha,
                                                          np.random.default_rng(200 + s))
        assert a.grad_norm[0] == pytest.approx(gn[0])                  # same start
        assert samples[-1] == a.samples[-1] and rounds[-1] == T // 5
        va.append(np.mean(a.grad_norm[-100:]))
        vb.append(np.mean(gn[-100:]))
    va, vb = np.array(va), np.array(vb)
    se = np.sqrt(va.var(ddof=1) / S + vb.var(ddof=1) / S)
    assert abs(va.mean() - vb.mean()) <= 4 * se, (va.mean(), vb.mean(), se)
    assert vb.mean() < 0.5 * gn[0]                                     # and both make progress
    with pytest.raises(ValueError, match="eta"):
        run_local_scgd(syn, np.zeros(syn.d), 5, 5, 0.0, 0.5)


def test_bad_parameters():
    for kw, msg in ((dict(gamma=0), "gamma"), (dict(k=-1), "k"), (dict(q=0), "q must be"), (dict(C_g=0), "C_g")):
        with pytest.raises(ValueError, match=msg):
            MFCGDParams(**kw)


def test_bounds_conditions_and_search(tmp_path):
    c = Constants(2.3, 2.2, 1.0, 0.0, 0.22, 2.4, 2.3, 0.5)
    p, info = find_theorem_parameters(c, 10000, 10)
    conds = theorem_conditions(c, p, 1.0)
    assert all(r["met"] for r in conds) and len(conds) == 11
    assert theorem2_bound(c, p, 10000) > theorem2_bound(c, p, 100000)      # decays in T
    bad = p.__class__(**{**p.__dict__, "gamma": p.gamma * 1e3})
    assert not all(r["met"] for r in theorem_conditions(c, bad, 1.0))
    with pytest.raises(ValueError, match="C_f must be > 0"):
        Constants(0.0, 1, 1, 0, 1, 1, 1, 1)
    with pytest.raises(ValueError, match="sigma must be finite and >= 0"):
        Constants(1, 1, 1, 0, -1, 1, 1, 1)
    (tmp_path / "c.json").write_text(json.dumps({"C_f": 1, "C_g": 1}))
    with pytest.raises(ValueError, match="missing constants"):
        Constants.from_json(tmp_path / "c.json")


def test_cli_mfcgd(tmp_path, capsys):
    (tmp_path / "c.json").write_text(json.dumps({"C_f": 2.3, "C_g": 2.2, "L_f": 1, "L_g": 0, "sigma": 0.22,
                                                 "delta_f": 2.4, "delta_g": 2.3, "F_gap": 0.5}))
    assert main(["bound", "mfcgd", "--constants", str(tmp_path / "c.json"), "--T", "5000"]) == 0
    assert "right_hand_side" in capsys.readouterr().out
    (tmp_path / "bad.json").write_text(json.dumps({"C_f": -1}))
    assert main(["bound", "mfcgd", "--constants", str(tmp_path / "bad.json")]) == 2
    for meth, prob in (("mfcgd", "synthetic"), ("adamfcgd", "maml"), ("comfedl", "synthetic"),
                       ("local-scgdm", "maml"), ("storm", "synthetic"), ("scgd", "synthetic")):
        assert main(["run", meth, "--problem", prob, "--steps", "60", "--quiet", "--out", str(tmp_path / meth)]) == 0
    assert main(["run", "mfcgd", "--problem", "drfl", "--steps", "12", "--q", "4", "--quiet",
                 "--out", str(tmp_path / "drfl")]) == 0
    doc = json.load(open(tmp_path / "drfl" / "trace.json"))
    assert "worst_client_accuracy" in doc["metrics"] and "fedavg_same_split" in doc["config"]
    assert main(["compare", "mfcgd", "--steps", "100", "--quiet", "--out", str(tmp_path / "cmp")]) == 0
    assert (tmp_path / "cmp" / "grad_norm.png").exists()
    assert main(["bench", "mfcgd", "--repeats", "1"]) == 0


def test_dimension_mismatch_and_theorem_report(syn, capsys):
    class Bad(SyntheticComposition):
        def jac_g(self, m, x, zeta):
            return self.A[:, :-1]
    bad = Bad(syn.A, syn.b, syn.c)
    par = MFCGDParams(k=1, n=8, c1=1, c2=1, c3=1, gamma=0.5, q=2)
    with pytest.raises(ValueError, match="oracle shapes"):
        run_mfcgd(bad, np.zeros(syn.d), 5, par, Identity(), np.random.default_rng(0))
    with pytest.raises(ValueError, match="x1 must have shape"):
        run_mfcgd(syn, np.zeros(syn.d + 1), 5, par, Identity(), np.random.default_rng(0))
    assert main(["run", "mfcgd", "--steps", "20"]) == 0
    assert "violate" in capsys.readouterr().err


def test_projections_bind_only_below_the_a_priori_radii(tmp_path, capsys):
    """The nonlinear class at the theorems' radii C_g, C_f: neither projection acts; at
    --radius-scale 0.5 both do, and the counts the trace records are those of the dumped
    estimators that sit on their ball's surface (an independent recount; the dump stops before
    the last update)."""
    from refimpl.core.replay import read_dump
    counts = {}
    for scale in ("1", "0.5"):
        out = tmp_path / scale
        assert main(["run", "mfcgd", "--problem", "nonlinear", "--steps", "40", "--clients", "3", "--radius-scale",
                     scale, "--dump-rounds", "all", "--quiet", "--out", str(out)]) == 0
        cfg = json.load(open(out / "trace.json"))["config"]
        radii, counts[scale] = cfg["projection_radii"], cfg["projected_client_steps"]
        dump = read_dump(str(out))
        on_surface = {"u": 0, "v": 0}
        for t in range(2, 41):
            for name, C in (("u", radii["C_g"]), ("v", radii["C_f"])):
                norms = np.linalg.norm(dump[t][name].reshape(3, -1), axis=1)
                assert np.all(norms <= C * (1 + 1e-12))
                on_surface[name] += int(np.sum(norms >= C * (1 - 1e-12)))
        for k in ("u", "v"):      # step t's dump holds u_t, v_t: the last update (to u_41, v_41) is not dumped
            assert 0 <= counts[scale][k] - on_surface[k] <= 3
    assert counts["1"]["u"] == counts["1"]["v"] == 0
    assert counts["0.5"]["u"] > 0 and counts["0.5"]["v"] > 0
    assert main(["run", "mfcgd", "--radius-scale", "0", "--steps", "5", "--quiet", "--out", str(tmp_path / "z")]) == 2
    assert "--radius-scale must be a finite number > 0" in capsys.readouterr().err
