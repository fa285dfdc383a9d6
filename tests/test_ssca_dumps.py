"""SSCA per-round dumps, held against a transcription of Algorithm 1 written here from
docs/ssca.md (two-layer swish network, surrogate (7), closed form (10); no refimpl algorithm code)."""
import numpy as np
import pytest

from refimpl.cli import main
from refimpl.core.data import mnist_5k
from refimpl.core.replay import read_dump

J, L, K, B, T = 8, 10, 10, 10, 5
TAU, RA, RAL, GA, GAL = 0.1, 0.9, 0.6, 0.5, 0.65


def swish_net_grad(W1, W2, X, y, w):
    """Σ_n w_n ℓ_n and its gradient for logits = swish(X W1ᵀ) W2ᵀ, ℓ = cross-entropy."""
    Z = X @ W1.T
    S = 1 / (1 + np.exp(-Z))
    Ah = Z * S
    logits = Ah @ W2.T
    logits = logits - logits.max(axis=1, keepdims=True)
    P = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    loss = float(np.sum(w * -np.log(P[np.arange(len(y)), y])))
    G = P.copy()
    G[np.arange(len(y)), y] -= 1
    G *= w[:, None]
    gW2 = G.T @ Ah
    dZ = (G @ W2) * S * (1 + Z * (1 - S))
    return loss, np.concatenate([(dZ.T @ X).ravel(), gW2.ravel()])


def transcription(X, y, W1, W2, batches, curvature):
    omega = np.concatenate([W1.ravel(), W2.ravel()])
    n1 = W1.size
    A, Bv, C = 0.0, np.zeros_like(omega), 0.0
    out = {}
    for t in range(1, T + 1):
        idx = batches[t - 1].ravel()
        w = np.full(idx.size, 1.0 / K / B)            # N_k/N = 1/K (equal contiguous shards), 1/B each
        lh, gh = swish_net_grad(omega[:n1].reshape(W1.shape), omega[n1:].reshape(W2.shape), X[idx], y[idx], w)
        rho, gamma = RA / t ** RAL, GA / t ** GAL
        A = TAU if curvature == "fixed" else (1 - rho) * A + rho * TAU
        Bv = (1 - rho) * Bv + rho * (gh - 2 * TAU * omega)
        C = (1 - rho) * C + rho * (lh - gh @ omega + TAU * omega @ omega)
        bar = -Bv / (2 * A)
        nxt = (1 - gamma) * omega + gamma * bar
        out[t] = {"omega": omega, "loss_hat": lh, "grad_hat": gh, "rho": rho, "gamma": gamma, "A": A, "B": Bv,
                  "C": C, "omega_bar": bar, "omega_next": nxt}
        omega = nxt
    return out


@pytest.mark.parametrize("curvature", ["recursive", "fixed"])
def test_dump_matches_transcription(tmp_path, rng, curvature):
    ds = mnist_5k()
    W1, W2 = rng.uniform(-0.1, 0.1, (J, ds.n_features)), rng.uniform(-0.3, 0.3, (L, J))
    np.savez(tmp_path / "init.npz", W1=W1, W2=W2)
    per = ds.n_train // K
    batches = np.array([[k * per + rng.choice(per, B, replace=False) for k in range(K)] for _ in range(T)])
    np.save(tmp_path / "b.npy", batches)
    out = tmp_path / "run"
    assert main(["run", "ssca", "--rounds", str(T), "--batch", str(B), "--hidden", str(J), "--tau", str(TAU),
                 "--rho-a", str(RA), "--rho-alpha", str(RAL), "--gamma-a", str(GA), "--gamma-alpha", str(GAL),
                 "--curvature", curvature, "--init", str(tmp_path / "init.npz"), "--batches", str(tmp_path / "b.npy"),
                 "--dump-rounds", "all", "--quiet", "--out", str(out)]) == 0
    dump = read_dump(out)
    ref = transcription(ds.X_train, ds.y_train, W1, W2, batches, curvature)
    for t in range(1, T + 1):
        for name, want in ref[t].items():
            got = dump[t][name]
            scale = max(float(np.max(np.abs(want))), 1e-300)
            assert float(np.max(np.abs(got - want))) / scale <= 1e-12, (t, name)
        # the aggregate is the weighted sum of the clients' own means
        np.testing.assert_allclose(dump[t]["client_grad"].mean(axis=0), dump[t]["grad_hat"], rtol=1e-12, atol=1e-15)
    # under the recursion A^1 = ρ_1 τ < τ, under the authors' convention A^t = τ
    assert (dump[1]["A"] == TAU) == (curvature == "fixed")
    mat = read_dump(out / "dump.mat")
    np.testing.assert_array_equal(mat[2]["B"], dump[2]["B"])
    assert mat[2]["A"].shape == ()


def test_constrained_dump_has_multiplier_and_slack(tmp_path):
    out = tmp_path / "c"
    assert main(["run", "ssca-constrained", "--rounds", "3", "--batch", "10", "--hidden", "8", "--dump-rounds", "1,3",
                 "--quiet", "--out", str(out)]) == 0
    d = read_dump(out)
    assert sorted(d) == [1, 3]
    for r in d.values():
        assert r["multiplier"].shape == (1,) and r["slack"].shape == (1,) and r["multiplier"][0] >= 0
        # ω^{t+1} = (1 − γ) ω^t + γ ω̄^t  (5)
        np.testing.assert_allclose(r["omega_next"], (1 - r["gamma"]) * r["omega"] + r["gamma"] * r["omega_bar"],
                                   rtol=1e-12, atol=1e-15)


def test_flower_refuses_dumps(tmp_path, capsys):
    assert main(["run", "ssca", "--rounds", "2", "--engine", "flower", "--dump-rounds", "1", "--quiet"]) == 2
    assert "--dump-rounds" in capsys.readouterr().err


def test_pooled_sampling_is_the_plain_mean_over_the_pooled_batch(tmp_path, rng):
    """--sampling pooled (the authors' scripts): the round's K·B ids come from the whole training
    set and ĝ is their plain mean; the same arithmetic as one client holding all K·B samples."""
    ds = mnist_5k()
    W1, W2 = rng.uniform(-0.1, 0.1, (J, ds.n_features)), rng.uniform(-0.3, 0.3, (L, J))
    np.savez(tmp_path / "init.npz", W1=W1, W2=W2)
    batches = np.array([rng.choice(ds.n_train, K * B, replace=False) for _ in range(T)])
    np.save(tmp_path / "b.npy", batches)
    steps = ["--tau", str(TAU), "--rho-a", str(RA), "--rho-alpha", str(RAL), "--gamma-a", str(GA),
             "--gamma-alpha", str(GAL), "--hidden", str(J), "--rounds", str(T), "--init", str(tmp_path / "init.npz"),
             "--quiet"]
    out = tmp_path / "p"
    assert main(["run", "ssca", "--sampling", "pooled", "--batch", str(B), "--batches", str(tmp_path / "b.npy"),
                 "--dump-rounds", "1", *steps, "--out", str(out)]) == 0
    d = read_dump(out)[1]
    lh, gh = swish_net_grad(W1, W2, ds.X_train[batches[0]], ds.y_train[batches[0]], np.full(K * B, 1.0 / (K * B)))
    assert abs(float(d["loss_hat"]) - lh) <= 1e-13 * lh
    assert float(np.max(np.abs(d["grad_hat"] - gh))) <= 1e-12 * float(np.max(np.abs(gh)))
    assert d["client_count"].sum() == K * B
    np.testing.assert_allclose((d["client_count"][:, None] * d["client_grad"]).sum(axis=0) / (K * B), d["grad_hat"],
                               rtol=1e-12, atol=1e-15)
    # one client holding the whole training set, K·B per round: the same iterates
    np.save(tmp_path / "b1.npy", batches[:, None, :])
    one = tmp_path / "one"
    assert main(["run", "ssca", "--clients", "1", "--batch", str(K * B), "--batches", str(tmp_path / "b1.npy"),
                 *steps, "--out", str(one)]) == 0
    from refimpl.core.trace import Trace
    a, b = Trace.load(out).snapshots[T], Trace.load(one).snapshots[T]
    for x, y in zip(a, b):
        assert float(np.max(np.abs(x - y))) <= 1e-13 * float(np.max(np.abs(y)))


def test_preset_authors_pools_and_records_their_cost(tmp_path, capsys):
    out = tmp_path / "a"
    assert main(["run", "ssca", "--preset", "authors", "--batch", "10", "--rounds", "2", "--hidden", "8", "--quiet",
                 "--out", str(out)]) == 0
    import json
    doc = json.load(open(out / "trace.json"))
    assert doc["config"]["sampling"] == "pooled" and "authors_cost" in doc["metrics"]
    from refimpl.core.trace import Trace
    assert Trace.load(out).batches.shape == (2, 100)
    assert main(["run", "sgd", "--sampling", "pooled", "--local-steps", "2", "--rounds", "1", "--quiet"]) == 2
    assert "--local-steps 1" in capsys.readouterr().err
