"""MFCGD / AdaMFCGD replay inputs and per-step dumps, held against a transcription of Algorithm 1
on the nonlinear synthetic problem written here from docs/mfcgd.md (no refimpl algorithm code)."""
import numpy as np
import pytest

from refimpl.cli import main
from refimpl.core.replay import read_dump
from refimpl.core.trace import Trace
from refimpl.mfcgd.problems import NonlinearComposition

M, D, P, T, Q = 10, 20, 4, 23, 5
K_, N_, C_, GAMMA, RHO, THETA = 1.0, 1000.0, 10.0, 0.5, 0.2, 0.9


def problem(seed):
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(3)[0])
    return NonlinearComposition.random(M=M, d=D, heterogeneity=0.5, rng=rng)


def phi(z):
    return z / np.sqrt(1 + z * z)


def dphi(z):
    return (1 + z * z) ** -1.5


def transcription(pr, x1, samples, adaptive, estimators=None):
    """Algorithm 1: A_t = I (MFCGD) or the Adam-type diag(sqrt(a_t) + ρ) (AdaMFCGD), refreshed at
    communication steps t ≡ 0 mod q (and once from w̄_1); STORM recursions with projections."""
    A, b, c = pr.A, pr.b, pr.c
    Cg, Cf = np.linalg.norm(A) + pr.r_g, np.sqrt(P) + pr.r_f

    def split(z):
        return z[:P], z[P:].reshape(P, D)

    def g(m, x, z):
        e, E = split(z)
        return (A + E) @ phi(x) + b[m] + e

    def J(m, x, z):
        return (A + split(z)[1]) * dphi(x)[None, :]

    def gf(m, y, xi):
        return phi(y - c[m]) + xi

    def proj(v, r):
        n = np.linalg.norm(v)
        return v if n <= r else v * (r / n)

    z0, xi0, Z, XI = samples
    X = np.tile(x1, (M, 1))
    if estimators is None:
        H = np.array([np.mean([g(m, X[m], z0[m, j]) for j in range(Q)], axis=0) for m in range(M)])
        U = np.array([np.mean([J(m, X[m], z0[m, j]) for j in range(Q)], axis=0) for m in range(M)])
        V = np.array([np.mean([gf(m, H[m], xi0[m, j]) for j in range(Q)], axis=0) for m in range(M)])
    else:
        H, U, V = (np.array(e) for e in estimators)
    W = np.einsum("mpd,mp->md", U, V)
    a = np.zeros(D)
    if adaptive:
        a = THETA * a + (1 - THETA) * W.mean(axis=0) ** 2
    Ad = np.sqrt(a) + RHO if adaptive else np.ones(D)
    out = {}
    for t in range(1, T + 1):
        eta = K_ / (N_ + t) ** (1 / 3)
        if t % Q == 0 and adaptive:
            a = THETA * a + (1 - THETA) * W.mean(axis=0) ** 2
            Ad = np.sqrt(a) + RHO
        if t % Q == 0:
            Xn = np.tile(X.mean(axis=0) - GAMMA * eta * W.mean(axis=0) / Ad, (M, 1))
        else:
            Xn = X - GAMMA * eta * W / Ad
        out[t] = {"x": X.copy(), "h": H.copy(), "u": U.copy(), "v": V.copy(), "w": W.copy(), "A": Ad.copy(),
                  "x_next": Xn.copy()}
        al = be = ro = min(1.0, C_ * eta ** 2)
        Hn, Un, Vn = H.copy(), U.copy(), V.copy()
        for m in range(M):
            Hn[m] = g(m, Xn[m], Z[t - 1, m]) + (1 - al) * (H[m] - g(m, X[m], Z[t - 1, m]))
            Un[m] = proj(J(m, Xn[m], Z[t - 1, m]) + (1 - be) * (U[m] - J(m, X[m], Z[t - 1, m])), Cg)
            Vn[m] = proj(gf(m, Hn[m], XI[t - 1, m]) + (1 - ro) * (V[m] - gf(m, H[m], XI[t - 1, m])), Cf)
        H, U, V = Hn, Un, Vn
        W = np.einsum("mpd,mp->md", U, V)
        X = Xn
    return out


@pytest.mark.parametrize("method,estimators", [("mfcgd", False), ("adamfcgd", True), ("adamfcgd", False)])
def test_dump_matches_transcription(tmp_path, rng, method, estimators):
    pr = problem(3)
    x1 = rng.uniform(-1, 1, D)
    samples = (rng.standard_normal((M, Q, P + P * D)), rng.standard_normal((M, Q, P)) * 0.1,
               rng.standard_normal((T, M, P + P * D)), rng.standard_normal((T, M, P)) * 0.1)
    np.savez(tmp_path / "s.npz", zeta0=samples[0], xi0=samples[1], zeta=samples[2], xi=samples[3])
    init = {"x1": x1}
    est = None
    if estimators:
        est = (rng.standard_normal((M, P)), rng.standard_normal((M, P, D)) * 0.1, rng.standard_normal((M, P)))
        init.update(h1=est[0], u1=est[1], v1=est[2])
    np.savez(tmp_path / "i.npz", **init)
    out = tmp_path / "run"
    extra = ["--rho", str(RHO)] if method == "adamfcgd" else []
    assert main(["run", method, "--problem", "nonlinear", "--steps", str(T), "--q", str(Q), "--seed", "11",
                 "--problem-seed", "3", *extra, "--init", str(tmp_path / "i.npz"),
                 "--samples", str(tmp_path / "s.npz"), "--dump-rounds", "all", "--eval-every", "5",
                 "--quiet", "--out", str(out)]) == 0
    dump = read_dump(out)
    ref = transcription(pr, x1, samples, method == "adamfcgd", est)
    assert sorted(dump) == list(range(1, T + 1))
    worst = 0.0
    for t in range(1, T + 1):
        for name, want in ref[t].items():
            got = dump[t][name]
            assert got.shape == want.shape, (t, name)
            worst = max(worst, float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-300)))
    assert worst <= 1e-12, worst
    # the projections bind somewhere, so the test exercises Π (the clipping branch)
    Cg = np.linalg.norm(pr.A) + pr.r_g
    assert any(np.isclose(np.linalg.norm(dump[t]["u"][m]), Cg) for t in dump for m in range(M))
    mat = read_dump(out / "dump.mat")
    np.testing.assert_array_equal(mat[5]["u"], dump[5]["u"])


@pytest.mark.parametrize("method", ["mfcgd", "comfedl", "local-scgdm"])
def test_replay_from_own_trace(tmp_path, method):
    a, b = tmp_path / "a", tmp_path / "b"
    base = ["run", method, "--steps", "30", "--eval-every", "5", "--quiet"]
    assert main([*base, "--seed", "2", "--keep-samples", "--out", str(a)]) == 0
    npz = str(a / "trace.npz")
    assert main([*base, "--seed", "7", "--problem-seed", "2", "--init", npz, "--samples", npz, "--out", str(b)]) == 0
    ta, tb = Trace.load(a), Trace.load(b)
    assert ta.metrics["grad_norm"] == tb.metrics["grad_norm"]
    if "x_bar" in ta.arrays:
        np.testing.assert_array_equal(ta.arrays["x_bar"], tb.arrays["x_bar"])


BAD = [
    ("init-missing", lambda p: np.savez(p / "i.npz", y=np.zeros(20)), ["--init", "{p}/i.npz"], ["missing array 'x1'"]),
    ("init-shape", lambda p: np.savez(p / "i.npz", x1=np.zeros(3)), ["--init", "{p}/i.npz"], ["'x1'", "(20,)"]),
    ("init-partial", lambda p: np.savez(p / "i.npz", x1=np.zeros(20), h1=np.zeros((10, 5))),
     ["--init", "{p}/i.npz"], ["h1, u1, v1"]),
    ("samples-missing", lambda p: np.savez(p / "s.npz", zeta=np.zeros(3)), ["--samples", "{p}/s.npz"],
     ["missing array 'zeta0'"]),
    ("samples-shape", lambda p: np.savez(p / "s.npz", zeta0=np.zeros((10, 10, 5)), xi0=np.zeros((10, 10, 5)),
                                         zeta=np.zeros((2, 10, 5)), xi=np.zeros((20, 10, 5))),
     ["--samples", "{p}/s.npz"], ["'zeta'", "(20, 10, 5)"]),
    ("dump-outside", lambda p: None, ["--dump-rounds", "0"], ["outside the run"]),
]


@pytest.mark.parametrize("name,make,flags,words", BAD, ids=[b[0] for b in BAD])
def test_bad_replay_input(tmp_path, capsys, name, make, flags, words):
    make(tmp_path)
    out = tmp_path / "out"
    code = main(["run", "mfcgd", "--steps", "20", "--quiet", "--out", str(out), *[f.format(p=tmp_path) for f in flags]])
    err = capsys.readouterr().err
    assert code == 2, err
    for w in words:
        assert w in err, (w, err)
    assert not out.exists()
