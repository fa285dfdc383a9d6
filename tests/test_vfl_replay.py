"""Flex-VFL replay inputs, per-round dumps and convention switches, held against an independent
transcription of one round written here from docs/flexvfl.md (no refimpl algorithm code)."""
import json

import numpy as np
import pytest

from refimpl.cli import main
from refimpl.core.data import mnist_5k
from refimpl.core.replay import read_dump
from refimpl.core.trace import Trace

K, O, L, B, R = 4, 16, 10, 16, 4


# ----------------------------------------------------------------------------- the transcription

def quadrants():
    idx = np.arange(784).reshape(28, 28)
    return [idx[:14, :14].ravel(), idx[:14, 14:].ravel(), idx[14:, :14].ravel(), idx[14:, 14:].ravel()]


def softmax_grad(logits, y):
    """∂(mean cross-entropy)/∂logits."""
    Z = logits - logits.max(axis=1, keepdims=True)
    P = np.exp(Z) / np.exp(Z).sum(axis=1, keepdims=True)
    P[np.arange(len(y)), y] -= 1.0
    return P / len(y)


def transcribed_run(X, y, init, batches, taus, eta, rho, persistent):
    """Flex-VFL rounds, linear encoders h_k = X_k W_k[:,1:]ᵀ + W_k[:,0], linear head on [h_1..h_K],
    each party τ_k steps of heavy-ball momentum u = ρu + g, θ −= ηu on its own block with the
    round-start snapshot of everybody else. Returns per round {"theta{k}": (τ_k+1, n_k) rows}."""
    blocks = quadrants()
    th = [np.array(t, dtype=float) for t in init]
    u = [np.zeros_like(t) for t in th]
    out = []
    for r in range(len(batches)):
        idx = batches[r]
        Xs = [X[idx][:, b] for b in blocks]
        yb = y[idx]
        Ws = [th[k + 1].reshape(O, -1) for k in range(K)]
        H = np.hstack([Xk @ W[:, 1:].T + W[:, 0] for Xk, W in zip(Xs, Ws)])
        W0 = th[0].reshape(L, -1)
        rec, new = {}, []
        for k in range(K + 1):
            cur = th[k].copy()
            buf = u[k].copy() if persistent else np.zeros_like(cur)
            rows = [cur.copy()]
            for _ in range(int(taus[r][k])):
                if k == 0:
                    G = softmax_grad(H @ cur.reshape(L, -1)[:, 1:].T + cur.reshape(L, -1)[:, 0], yb)
                    g = np.hstack([G.sum(axis=0)[:, None], G.T @ H]).ravel()
                else:
                    Wk = cur.reshape(O, -1)
                    Hk = H.copy()
                    Hk[:, (k - 1) * O:k * O] = Xs[k - 1] @ Wk[:, 1:].T + Wk[:, 0]
                    G = softmax_grad(Hk @ W0[:, 1:].T + W0[:, 0], yb)
                    dh = G @ W0[:, 1 + (k - 1) * O:1 + k * O]
                    g = np.hstack([dh.sum(axis=0)[:, None], dh.T @ Xs[k - 1]]).ravel()
                buf = rho * buf + g
                cur = cur - eta * buf
                rows.append(cur.copy())
            rec[f"theta{k}"] = np.array(rows)
            new.append(cur)
            u[k] = buf
        th = new
        out.append(rec)
    return out


def _inputs(tmp_path, rng):
    ds = mnist_5k()
    D = [196] * K
    init = {"theta0": rng.uniform(-0.2, 0.2, L * (K * O + 1))}
    for k in range(K):
        init[f"theta{k + 1}"] = rng.uniform(-0.1, 0.1, (O, D[k] + 1))      # matrix layout, bias column 0
    np.savez(tmp_path / "init.npz", **init)
    batches = np.array([rng.choice(ds.n_train, B, replace=False) for _ in range(R)])
    taus = rng.integers(1, 5, (R, K + 1))
    np.save(tmp_path / "batches.npy", batches)
    np.save(tmp_path / "taus.npy", taus)
    return ds, init, batches, taus


def _args(tmp_path, out, *extra):
    return ["run", "flexvfl", "--rounds", str(R), "--batch", str(B), "--eta", "0.05", "--quiet",
            "--init", str(tmp_path / "init.npz"), "--batches", str(tmp_path / "batches.npy"),
            "--taus", str(tmp_path / "taus.npy"), "--dump-rounds", "all", "--out", str(out), *extra]


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


@pytest.mark.parametrize("momentum", ["reset", "persistent"])
@pytest.mark.parametrize("optimizer,rho", [("sgd", 0.0), ("momentum:0.9", 0.9)])
def test_dump_matches_transcription(tmp_path, rng, momentum, optimizer, rho):
    ds, init, batches, taus = _inputs(tmp_path, rng)
    out = tmp_path / "run"
    assert main(_args(tmp_path, out, "--optimizer", optimizer, "--momentum", momentum)) == 0
    dump = read_dump(out)
    assert sorted(dump) == list(range(1, R + 1))
    ref = transcribed_run(ds.X_train, ds.y_train, [init[f"theta{k}"].ravel() for k in range(K + 1)], batches, taus,
                          0.05, rho, momentum == "persistent")
    for r in range(1, R + 1):
        np.testing.assert_array_equal(dump[r]["batch"], batches[r - 1])
        np.testing.assert_array_equal(dump[r]["tau"], taus[r - 1])
        for k in range(K + 1):
            got, want = dump[r][f"theta{k}"], ref[r - 1][f"theta{k}"]
            assert got.shape == want.shape == (taus[r - 1][k] + 1, want.shape[1])
            assert _rel(got, want) <= 1e-12, (r, k, _rel(got, want))
    # the .mat copy holds the same dump
    mat = read_dump(out / "dump.mat")
    for r in dump:
        for name, arr in dump[r].items():
            np.testing.assert_array_equal(mat[r][name].reshape(arr.shape), arr)


def test_persistent_momentum_differs_from_reset(tmp_path, rng):
    _inputs(tmp_path, rng)
    for m in ("reset", "persistent"):
        assert main(_args(tmp_path, tmp_path / m, "--optimizer", "momentum:0.9", "--momentum", m)) == 0
    a, b = read_dump(tmp_path / "reset"), read_dump(tmp_path / "persistent")
    np.testing.assert_array_equal(a[1]["theta1"], b[1]["theta1"])          # round 1: both buffers start at 0
    assert _rel(a[2]["theta1"][-1], b[2]["theta1"][-1]) > 1e-6             # round 2 carries the buffer


def test_epoch_batches_are_one_permutation_per_epoch(tmp_path):
    n = mnist_5k().n_train
    B_ = 1000 if n % 1000 else 1500          # an epoch's last batch is the n mod B remainder
    rounds = 2 * -(-n // B_)
    assert main(["run", "sync-vfl", "--rounds", str(rounds), "--batch", str(B_), "--Q", "1", "--quiet",
                 "--batch-order", "epoch", "--out", str(tmp_path / "e")]) == 0
    tr = Trace.load(tmp_path / "e")
    per = -(-n // B_)
    dumped = read_dump(tmp_path / "e")
    rows = [dumped.get(r, {}).get("batch") for r in range(1, rounds + 1)]
    assert all(r is None for r in rows)          # no dump asked for
    doc = json.load(open(tmp_path / "e" / "trace.json"))
    assert doc["config"]["conventions"]["batch_order"] == "epoch"
    assert doc["config"]["policy"]["batches"] == "epoch"
    # batches of unequal size are not kept as one array: rerun with a dump to read them
    assert main(["run", "sync-vfl", "--rounds", str(rounds), "--batch", str(B_), "--Q", "1", "--quiet",
                 "--batch-order", "epoch", "--dump-rounds", "all", "--out", str(tmp_path / "d")]) == 0
    d = read_dump(tmp_path / "d")
    for e in range(2):
        ids = np.concatenate([d[e * per + i + 1]["batch"] for i in range(per)])
        assert np.array_equal(np.sort(ids), np.arange(n))


def test_replay_from_own_trace_is_bit_identical(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    base = ["--rounds", "5", "--batch", "24", "--optimizer", "momentum:0.9", "--quiet"]
    assert main(["run", "flexvfl", *base, "--seed", "3", "--out", str(a)]) == 0
    npz = str(a / "trace.npz")
    assert main(["run", "flexvfl", *base, "--seed", "8", "--init", npz, "--batches", npz, "--taus", npz,
                 "--out", str(b)]) == 0
    ta, tb = Trace.load(a), Trace.load(b)
    for k in range(K + 1):
        np.testing.assert_array_equal(ta.arrays[f"final_theta{k}"], tb.arrays[f"final_theta{k}"])
    np.testing.assert_array_equal(ta.arrays["tau"], tb.arrays["tau"])
    assert ta.metrics["train_loss"] == tb.metrics["train_loss"]


def test_adaptive_replay_pins_the_round_one_rate(tmp_path):
    """Adaptive Flex-VFL (the paper's rule) takes η^1 from a dummy round's τ^0; the trace stores
    τ^0 and --taus TRACE replays it, so another seed changes nothing but the simulated clock (whose
    step times come from --speeds and the seed)."""
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["run", "adaptive-flexvfl", "--rounds", "3", "--quiet", "--out", str(a)]) == 0
    assert main(["run", "adaptive-flexvfl", "--rounds", "3", "--quiet", "--seed", "5", "--init", str(a),
                 "--batches", str(a), "--taus", str(a), "--out", str(b)]) == 0
    za, zb = np.load(a / "trace.npz"), np.load(b / "trace.npz")
    assert "array_tau0" in za.files
    differ = sorted(k for k in za.files if not np.array_equal(za[k], zb[k]))
    assert differ == ["array_round_time", "array_round_work", "array_step_times", "metric_time"], differ
    # the step times as drawn pin the clock too: then nothing differs
    c = tmp_path / "c"
    assert main(["run", "adaptive-flexvfl", "--rounds", "3", "--quiet", "--seed", "5", "--init", str(a),
                 "--batches", str(a), "--taus", str(a), "--speeds", f"steptimes:{a}", "--out", str(c)]) == 0
    zc = np.load(c / "trace.npz")
    assert [k for k in za.files if not np.array_equal(za[k], zc[k])] == []


def test_async_replays_its_batches(tmp_path):
    """The event order follows the clock (the speeds); given the same speeds, the initial point
    and the per-event batches replay the run whatever the seed."""
    a, b = tmp_path / "a", tmp_path / "b"
    base = ["--time-budget", "10", "--batch", "16", "--quiet", "--speeds", "constant:0.2,1,1.5,2,3"]
    assert main(["run", "async-vfl", *base, "--seed", "1", "--out", str(a)]) == 0
    npz = str(a / "trace.npz")
    assert main(["run", "async-vfl", *base, "--seed", "5", "--init", npz, "--batches", npz, "--out", str(b)]) == 0
    ta, tb = Trace.load(a), Trace.load(b)
    np.testing.assert_array_equal(ta.arrays["event_party"], tb.arrays["event_party"])
    for k in range(K + 1):
        np.testing.assert_array_equal(ta.arrays[f"final_theta{k}"], tb.arrays[f"final_theta{k}"])


def test_authors_pbcd_gives_the_server_one_step(tmp_path):
    assert main(["run", "pbcd", "--rounds", "2", "--protocol", "authors", "--quiet", "--out", str(tmp_path / "p")]) == 0
    assert Trace.load(tmp_path / "p").arrays["tau"].tolist() == [[1, 1, 1, 1, 1]] * 2
    assert main(["run", "sync-vfl", "--rounds", "1", "--Q", "4", "--protocol", "authors", "--quiet",
                 "--out", str(tmp_path / "s")]) == 0
    assert Trace.load(tmp_path / "s").arrays["tau"].tolist() == [[4, 4, 4, 4, 4]]


def test_authors_taumax_adaptive_rule(tmp_path):
    """η^1 = lr/τ^max, then η^{r+1} = η^r τ^{r−1}/τ^r (τ^0 = τ^max): lr/τ^r, no w̄."""
    taus = np.array([[2, 3, 1, 4, 2], [4, 1, 2, 2, 2], [1, 1, 4, 3, 2]])
    np.save(tmp_path / "t.npy", taus)
    assert main(["run", "adaptive-flexvfl", "--rounds", "3", "--A", "0.3", "--adaptive-rule", "authors-taumax",
                 "--optimizer", "momentum:0.9", "--taus", str(tmp_path / "t.npy"), "--quiet",
                 "--out", str(tmp_path / "a")]) == 0
    eta = Trace.load(tmp_path / "a").arrays["eta"]
    tmax = taus.max(axis=0)
    np.testing.assert_allclose(eta[0], 0.3 / tmax, rtol=1e-15)
    np.testing.assert_allclose(eta[1], 0.3 / taus[0], rtol=1e-15)
    np.testing.assert_allclose(eta[2], 0.3 / taus[1], rtol=1e-15)


def test_authors_adaptive_rule_from_the_utilisation_rows(tmp_path, capsys):
    """The authors' code: lrs = lr/(10·max(1 − cpu) + 1) over the machine's whole (clipped) row,
    local_epochs_prev = int(10·max(1 − cpu) + 1), then lrs *= prev/τ after each round."""
    cpu = np.random.default_rng(3).uniform(-0.1, 1.05, size=(7, 9))
    np.save(tmp_path / "cpu.npy", cpu)
    base = ["run", "adaptive-flexvfl", "--rounds", "3", "--A", "0.3", "--optimizer", "momentum:0.9", "--quiet",
            "--timeout", "10"]
    assert main([*base, "--adaptive-rule", "authors", "--speeds", f"cputrace:{tmp_path / 'cpu.npy'}",
                 "--out", str(tmp_path / "a")]) == 0
    tr = Trace.load(tmp_path / "a")
    m, tau, eta = tr.arrays["machines"], tr.arrays["tau"], tr.arrays["eta"]
    rows = np.clip(cpu[m], 0, 1)
    d = np.array([10 * max(1 - c for c in row) + 1 for row in rows])
    np.testing.assert_array_equal(tau, [[int(10 * (1 - rows[k, r]) + 1) for k in range(5)] for r in (1, 2, 3)])
    np.testing.assert_allclose(eta[0], 0.3 / d, rtol=1e-15)
    np.testing.assert_allclose(eta[1], 0.3 / d * d.astype(int) / tau[0], rtol=1e-15)
    np.testing.assert_allclose(eta[2], 0.3 / d * d.astype(int) / tau[0] * tau[0] / tau[1], rtol=1e-15)
    assert np.any(np.abs(d - tau.max(axis=0)) > 0.05)                  # not the τ^max rule
    np.testing.assert_array_equal(tr.arrays["lr_denominator"], d)
    # a replay from the trace's τ table and d_k, without the CPU trace and under another seed
    assert main([*base, "--adaptive-rule", "authors", "--taus", str(tmp_path / "a"), "--seed", "6",
                 "--speeds", "constant:1", "--out", str(tmp_path / "b")]) == 0
    np.testing.assert_array_equal(Trace.load(tmp_path / "b").arrays["eta"], eta)
    # neither a CPU trace nor d_k: refused, naming both and the τ^max rule
    capsys.readouterr()
    np.save(tmp_path / "t.npy", tau)
    assert main([*base, "--adaptive-rule", "authors", "--taus", str(tmp_path / "t.npy"),
                 "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "cputrace:FILE" in err and "'lr_denominator'" in err and "authors-taumax" in err


def test_torch_init_scheme(tmp_path):
    assert main(["run", "flexvfl", "--rounds", "1", "--init-scheme", "torch", "--quiet", "--out", str(tmp_path)]) == 0
    tr = Trace.load(tmp_path)
    W0 = tr.arrays["init_theta0"].reshape(L, -1)
    assert np.all(W0[:, 0] == 0) and 0.007 < W0[:, 1:].std() < 0.013
    W1 = tr.arrays["init_theta1"].reshape(O, -1)
    assert np.max(np.abs(W1)) <= 1 / np.sqrt(196)


def test_server_time_unit(tmp_path):
    for unit in ("step", "timeout-over-Q"):
        assert main(["run", "flexvfl", "--rounds", "1", "--server-time", "2", "--timeout", "10",
                     "--server-time-unit", unit, "--speeds", "constant:1,3,3,3,3", "--quiet",
                     "--out", str(tmp_path / unit)]) == 0
    st = {u: json.load(open(tmp_path / u / "trace.json"))["config"]["server_time_absolute"]
          for u in ("step", "timeout-over-Q")}
    assert st == {"step": 6.0, "timeout-over-Q": 2.0}          # fastest party's step 3; timeout/Q = 10/10


# ----------------------------------------------------------------------------- bad input

BAD = [
    ("init-shape", lambda p, rng: np.savez(p / "i.npz", **{f"theta{k}": np.zeros(3) for k in range(K + 1)}),
     ["--init", "{p}/i.npz"], ["theta0", "shape (3,)", "expected"]),
    ("init-missing", lambda p, rng: np.savez(p / "i.npz", theta0=np.zeros(L * (K * O + 1))),
     ["--init", "{p}/i.npz"], ["missing array 'theta1'"]),
    ("init-nan", lambda p, rng: np.savez(p / "i.npz", **{"theta0": np.full(L * (K * O + 1), np.nan)}),
     ["--init", "{p}/i.npz"], ["theta0", "finite"]),
    ("init-text", lambda p, rng: (p / "i.npz").write_text("hello"), ["--init", "{p}/i.npz"], ["i.npz", "not a"]),
    ("init-nofile", lambda p, rng: None, ["--init", "{p}/none.npz"], ["no such file"]),
    ("batches-range", lambda p, rng: np.save(p / "b.npy", np.full((3, 8), 10 ** 6)),
     ["--batches", "{p}/b.npy", "--batch", "8"], ["out of range", "0..3999"]),
    ("batches-float", lambda p, rng: np.save(p / "b.npy", np.full((3, 8), 1.5)),
     ["--batches", "{p}/b.npy", "--batch", "8"], ["not a whole number"]),
    ("batches-rounds", lambda p, rng: np.save(p / "b.npy", np.arange(8)[None]),
     ["--batches", "{p}/b.npy", "--batch", "8"], ["holds 1 rounds", "needs 3"]),
    ("batches-repeat", lambda p, rng: np.save(p / "b.npy", np.zeros((3, 8), dtype=int)),
     ["--batches", "{p}/b.npy", "--batch", "8"], ["repeats a sample id"]),
    ("taus-zero", lambda p, rng: np.save(p / "t.npy", np.zeros((3, K + 1), dtype=int)),
     ["--taus", "{p}/t.npy"], ["τ[0, 0] = 0", "whole numbers >= 1"]),
    ("taus-float", lambda p, rng: np.save(p / "t.npy", np.full((3, K + 1), 2.5)),
     ["--taus", "{p}/t.npy"], ["2.5", "whole numbers"]),
    ("taus-parties", lambda p, rng: np.save(p / "t.npy", np.ones((3, 2), dtype=int)),
     ["--taus", "{p}/t.npy"], ["shape (rounds, 5)"]),
    ("dump-outside", lambda p, rng: None, ["--dump-rounds", "7"], ["round 7 is outside the run"]),
]


@pytest.mark.parametrize("name,make,flags,words", BAD, ids=[b[0] for b in BAD])
def test_bad_replay_input(tmp_path, rng, capsys, name, make, flags, words):
    make(tmp_path, rng)
    out = tmp_path / "out"
    code = main(["run", "flexvfl", "--rounds", "3", "--quiet", "--out", str(out),
                 *[f.format(p=tmp_path) for f in flags]])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    for w in words:
        assert w in err, (w, err)
    assert not out.exists()


def test_mat_v73_init_refused(tmp_path, capsys):
    # a v7.3 file: MATLAB's 128-byte header with version 0x0200, then HDF5
    head = b"MATLAB 7.3 MAT-file".ljust(116, b" ") + b"\x00" * 8 + b"\x00\x02IM"
    (tmp_path / "i.mat").write_bytes(head + b"\x89HDF\r\n\x1a\n" + b"\x00" * 64)
    assert main(["run", "flexvfl", "--rounds", "1", "--quiet", "--init", str(tmp_path / "i.mat")]) == 2
    assert "v7.3" in capsys.readouterr().err


def test_config_keys_that_do_not_apply(tmp_path, capsys):
    (tmp_path / "a.toml").write_text('samples = "x.npz"\n')
    assert main(["run", "flexvfl", "--config", str(tmp_path / "a.toml")]) == 2
    assert "samples" in capsys.readouterr().err
    (tmp_path / "b.toml").write_text('nope = 1\n')
    assert main(["run", "flexvfl", "--config", str(tmp_path / "b.toml")]) == 2
    assert "nope" in capsys.readouterr().err
    (tmp_path / "c.toml").write_text('init = "missing.npz"\nbatches = "missing.npy"\n')
    assert main(["run", "flexvfl", "--rounds", "1", "--config", str(tmp_path / "c.toml")]) == 2
    assert "missing.npz" in capsys.readouterr().err
    (tmp_path / "d.toml").write_text('batches = "b.npy"\n')
    assert main(["run", "mfcgd", "--config", str(tmp_path / "d.toml")]) == 2
    assert "batches" in capsys.readouterr().err


def test_dumped_run_equals_undumped_run(tmp_path):
    base = ["run", "flexvfl", "--rounds", "4", "--batch", "24", "--optimizer", "momentum:0.9", "--quiet"]
    assert main([*base, "--out", str(tmp_path / "a")]) == 0
    assert main([*base, "--dump-rounds", "all", "--momentum", "persistent", "--out", str(tmp_path / "p")]) == 0
    assert main([*base, "--momentum", "persistent", "--out", str(tmp_path / "q")]) == 0
    assert main([*base, "--dump-rounds", "2,3", "--out", str(tmp_path / "b")]) == 0
    ta, tb = Trace.load(tmp_path / "a"), Trace.load(tmp_path / "b")
    tp, tq = Trace.load(tmp_path / "p"), Trace.load(tmp_path / "q")
    dump_b = read_dump(tmp_path / "b")
    for k in range(K + 1):
        np.testing.assert_array_equal(ta.arrays[f"final_theta{k}"], tb.arrays[f"final_theta{k}"])
        np.testing.assert_array_equal(tp.arrays[f"final_theta{k}"], tq.arrays[f"final_theta{k}"])
        # the dump's last row of round r is the next round's first
        np.testing.assert_array_equal(dump_b[2]["theta%d" % k][-1], dump_b[3]["theta%d" % k][0])


def test_every_dumped_name_is_in_the_guide(tmp_path):
    """The guide's tables name every quantity a dump stores (for each paper)."""
    import re
    from pathlib import Path
    guide = (Path(__file__).resolve().parents[1] / "docs" / "guide.md").read_text()
    runs = [["run", "flexvfl", "--labels", "server", "--optimizer", "momentum:0.9", "--rounds", "1"],
            ["run", "ssca", "--rounds", "1", "--hidden", "4", "--batch", "10"],
            ["run", "ssca-constrained", "--rounds", "1", "--hidden", "4", "--batch", "10"],
            ["run", "sgdm", "--rounds", "1", "--hidden", "4", "--batch", "10"],
            ["run", "adamfcgd", "--steps", "2"], ["run", "local-scgdm", "--steps", "2"]]
    for i, args in enumerate(runs):
        out = tmp_path / str(i)
        assert main([*args, "--dump-rounds", "1", "--quiet", "--out", str(out)]) == 0
        names = {re.sub(r"\d+$", "<k>", n) for n in read_dump(out)[1]}
        missing = [n for n in names if f"`{n}`" not in guide]
        assert not missing, (args[1], missing)


def test_epoch_batch_order_dynamics_match_transcription(tmp_path, rng):
    """With --batch-order epoch the run's own batches (read from its dump) drive the transcription
    to the same parameters; each epoch's batches are disjoint."""
    ds, init, _, taus = _inputs(tmp_path, rng)
    out = tmp_path / "e"
    args = [a for a in _args(tmp_path, out, "--optimizer", "momentum:0.9", "--batch-order", "epoch")]
    i = args.index("--batches")
    del args[i:i + 2]
    assert main(args) == 0
    dump = read_dump(out)
    batches = np.array([dump[r]["batch"] for r in range(1, R + 1)])
    assert np.unique(batches).size == batches.size            # R·B < n: one epoch, no sample twice
    ref = transcribed_run(ds.X_train, ds.y_train, [init[f"theta{k}"].ravel() for k in range(K + 1)], batches, taus,
                          0.05, 0.9, False)
    for r in range(1, R + 1):
        for k in range(K + 1):
            assert _rel(dump[r][f"theta{k}"], ref[r - 1][f"theta{k}"]) <= 1e-12


def test_init_arrays_of_the_wrong_kind(tmp_path, capsys):
    n0 = L * (K * O + 1)
    np.savez(tmp_path / "c.npz", **{"theta0": np.zeros(n0, dtype=complex)})
    assert main(["run", "flexvfl", "--rounds", "1", "--quiet", "--init", str(tmp_path / "c.npz")]) == 2
    assert "dtype complex128" in capsys.readouterr().err
    arrays = {f"theta{k}": np.zeros(n0 if k == 0 else O * 197) for k in range(K + 2)}
    np.savez(tmp_path / "x.npz", **arrays)
    assert main(["run", "flexvfl", "--rounds", "1", "--quiet", "--init", str(tmp_path / "x.npz")]) == 2
    assert "beyond K = 4" in capsys.readouterr().err


def test_taus_for_three_parties_need_no_speeds(tmp_path, capsys):
    """--taus fixes the local steps; for K ≠ 4 the default speed model (written for 4 parties)
    gives way to unit step times, said in a note and kept in the trace; without --taus the
    default is refused for K = 3, naming what to give."""
    taus = np.array([[2, 3, 1, 4], [1, 2, 2, 3]])
    np.save(tmp_path / "t.npy", taus)
    assert main(["run", "flexvfl", "--parties", "3", "--rounds", "2", "--taus", str(tmp_path / "t.npy"),
                 "--out", str(tmp_path / "o")]) == 0
    assert "unit step times (constant:1)" in capsys.readouterr().err
    tr = Trace.load(tmp_path / "o")
    assert tr.arrays["tau"].tolist() == taus.tolist() and np.all(tr.arrays["step_times"] == 1.0)
    assert "--taus without --speeds for 3 parties" in tr.config["speeds_note"]
    assert main(["run", "flexvfl", "--parties", "3", "--rounds", "2", "--quiet"]) == 2
    assert "give --speeds with 4 values, server first" in capsys.readouterr().err


def test_q_and_timeout_where_the_authors_protocol_uses_them(tmp_path, capsys):
    """--Q sets Flex-VFL's server steps under --protocol authors, --timeout the unit of S for
    synchronous VFL under it (timeout / Q); where they change nothing they are refused."""
    assert main(["run", "flexvfl", "--rounds", "2", "--Q", "20", "--protocol", "authors", "--quiet",
                 "--out", str(tmp_path / "f")]) == 0
    assert Trace.load(tmp_path / "f").arrays["tau"][:, 0].tolist() == [20, 20]
    assert main(["run", "sync-vfl", "--rounds", "1", "--timeout", "30", "--Q", "10", "--server-time", "2",
                 "--protocol", "authors", "--quiet", "--out", str(tmp_path / "s")]) == 0
    assert Trace.load(tmp_path / "s").config["server_time_absolute"] == 2 * 30 / 10
    capsys.readouterr()
    assert main(["run", "flexvfl", "--rounds", "1", "--Q", "20", "--quiet"]) == 2
    assert "--Q changes nothing in this flexvfl run" in capsys.readouterr().err
    assert main(["run", "sync-vfl", "--rounds", "1", "--timeout", "30", "--quiet"]) == 2
    assert "--timeout changes nothing in this sync-vfl run" in capsys.readouterr().err


def test_a_ragged_epoch_schedule_is_stored_and_replayed(tmp_path, capsys):
    """--batch-order epoch with B not dividing n: the epoch's last batch is shorter; the trace
    stores the schedule padded with −1 at the row's end, and a replay under another seed from the
    trace's inputs reproduces every array. A −1 before an id, or a row of padding only, is refused."""
    base = ["run", "flexvfl", "--rounds", "3", "--batch-order", "epoch", "--batch", "1500", "--quiet"]
    assert main([*base, "--out", str(tmp_path / "a")]) == 0
    a = Trace.load(tmp_path / "a")
    b = np.asarray(a.batches)
    assert b.shape == (3, 1500) and (b == -1).sum(axis=1).tolist() == [0, 0, 500]
    assert sorted(np.concatenate([b[0], b[1], b[2][:1000]]).tolist()) == list(range(4000))   # one epoch
    d = str(tmp_path / "a")
    assert main([*base, "--seed", "5", "--init", d, "--batches", d, "--taus", d, "--out", str(tmp_path / "b")]) == 0
    r = Trace.load(tmp_path / "b")
    for k, v in a.arrays.items():
        if k.startswith(("final_theta", "init_theta", "tau", "eta")):
            np.testing.assert_array_equal(r.arrays[k], v)
    bad = b.copy()
    bad[2, 5] = -1
    np.save(tmp_path / "bad.npy", bad)
    capsys.readouterr()
    assert main([*base, "--batches", str(tmp_path / "bad.npy"), "--out", str(tmp_path / "c")]) == 2
    assert "−1 pads a shorter batch at its end only" in capsys.readouterr().err
    empty = b.copy()
    empty[1] = -1
    np.save(tmp_path / "empty.npy", empty)
    assert main([*base, "--batches", str(tmp_path / "empty.npy"), "--out", str(tmp_path / "d")]) == 2
    assert "row 1 holds no sample id" in capsys.readouterr().err
