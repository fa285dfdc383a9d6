import json
import os
import subprocess
import sys

import numpy as np
import pytest

from refimpl.cli import main
from refimpl.core.trace import Trace

SMALL = ["--rounds", "6", "--hidden", "8", "--batch", "10", "--eval-every", "2", "--quiet"]


def test_run_writes_trace_and_replays_exactly(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["run", "ssca", *SMALL, "--snapshots", "0,3,6", "--out", str(a)]) == 0
    tr = Trace.load(a)
    assert sorted(tr.snapshots) == [0, 3, 6]
    assert tr.batches.shape == (6, 10, 10)
    assert tr.metrics["round"] == [0, 2, 4, 6]
    doc = json.load(open(a / "trace.json"))
    assert doc["status"] == "finished" and doc["config"]["tau"] == 0.1
    assert (a / "trace.png").exists()
    # replay: the initial point and batch schedule of run a, given as files, reproduce it
    W1, W2 = tr.snapshots[0]
    np.savez(tmp_path / "init.npz", W1=W1, W2=W2)
    np.save(tmp_path / "batches.npy", tr.batches)
    assert main(["run", "ssca", *SMALL, "--seed", "99", "--snapshots", "0,3,6", "--out", str(b),
                 "--init", str(tmp_path / "init.npz"), "--batches", str(tmp_path / "batches.npy")]) == 0
    assert main(["crosscheck", str(a), str(b), "--tol", "0"]) == 0


def test_crosscheck_detects_difference(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    main(["run", "sgd", *SMALL, "--snapshots", "6", "--out", str(a)])
    main(["run", "sgd", *SMALL, "--snapshots", "6", "--out", str(b), "--seed", "1"])
    assert main(["crosscheck", str(a), str(b)]) == 1
    assert "DIFFERS" in capsys.readouterr().out


def test_numpy_backend_matches_numba(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d, be in ((a, "numba"), (b, "numpy")):
        assert main(["run", "ssca", "--setting", "feature", *SMALL, "--snapshots", "6", "--out", str(d),
                     "--backend", be, "--bias"]) == 0
    assert main(["crosscheck", str(a), str(b), "--tol", "1e-10"]) == 0


@pytest.mark.parametrize("alg", ["sgd", "sgdm"])
@pytest.mark.parametrize("setting", ["sample", "feature"])
def test_baselines_run(alg, setting, tmp_path):
    assert main(["run", alg, "--setting", setting, *SMALL, "--out", str(tmp_path)]) == 0
    assert Trace.load(tmp_path).status == "finished"


def test_data_file(tmp_path, rng):
    X, y = rng.random((60, 12)), rng.integers(0, 3, 60)
    np.savez(tmp_path / "d.npz", X_train=X[:40], y_train=y[:40], X_test=X[40:], y_test=y[40:])
    assert main(["run", "ssca", "--data", str(tmp_path / "d.npz"), "--clients", "4", *SMALL,
                 "--out", str(tmp_path / "o")]) == 0
    tr = Trace.load(tmp_path / "o")
    assert tr.config["data"] == "d.npz"


def test_bad_input_messages(tmp_path, capsys):
    cases = [
        (["run", "ssca", *SMALL, "--tau", "0"], "tau must be finite and > 0"),
        (["run", "ssca", *SMALL, "--lam", "-1"], "--lam: lam (λ) must be finite and >= 0"),
        (["run", "ssca", *SMALL, "--gamma-a", "1.5"], "must be in (0, 1]"),
        (["run", "ssca", *SMALL, "--batch", "500"], "larger than client"),
        (["run", "ssca", "--rounds", "0"], "rounds must be a positive integer"),
    ]
    for argv, msg in cases:
        assert main(argv) == 2
        assert msg in capsys.readouterr().err
    np.save(tmp_path / "b.npy", np.zeros((6, 10, 3), dtype=np.int64))
    assert main(["run", "ssca", *SMALL, "--batches", str(tmp_path / "b.npy")]) == 2
    assert "shape (T, 10, 10)" in capsys.readouterr().err
    np.savez(tmp_path / "i.npz", W1=np.zeros((3, 3)), W2=np.zeros((10, 8)))
    assert main(["run", "ssca", *SMALL, "--init", str(tmp_path / "i.npz")]) == 2
    assert "W1 must have shape (8, 784)" in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_divergent_run_exits_nonzero_and_keeps_trace(tmp_path, capsys):
    code = main(["run", "sgd", *SMALL, "--lr", "1e300", "--lr-decay", "0", "--out", str(tmp_path)])
    assert code == 3
    assert "diverged: round" in capsys.readouterr().err
    doc = json.load(open(tmp_path / "trace.json"))
    assert doc["status"].startswith("diverged")
    assert doc["metrics"]["round"][0] == 0


def test_check_schedule_command(capsys):
    assert main(["check-schedule", "--rho-alpha", "0.1", "--gamma-alpha", "0.15"]) == 1
    assert "sum_rho_sq_finite      NOT MET" in capsys.readouterr().out
    assert main(["check-schedule", "--rho-alpha", "0.6", "--gamma-alpha", "0.7"]) == 0


def test_python_dash_m_and_console_script(tmp_path):
    out = subprocess.run([sys.executable, "-m", "refimpl", "verify", "--only", "kernels.numba_numpy",
                          "--json", str(tmp_path / "v.json"), "--quiet"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    rec = json.load(open(tmp_path / "v.json"))
    assert rec[0]["id"] == "kernels.numba_numpy" and rec[0]["holds"] is True
    assert set(rec[0]) == {"id", "claim", "source", "measured", "bound", "ratio", "holds", "details"}
    assert "kernels.numba_numpy" in out.stdout


def test_bench_runs(tmp_path, capsys):
    assert main(["bench", "ssca", "--batches", "10", "--repeats", "1", "--json", str(tmp_path / "b.json")]) == 0
    rows = json.load(open(tmp_path / "b.json"))
    assert {"batch_per_client", "seconds_per_round", "floor_seconds", "ratio_to_floor",
            "ratio_to_torch"} <= set(rows[0])
    assert rows[0]["ratio_to_floor"] > 0


def test_feature_blocks_file(tmp_path, capsys):
    blocks = [list(range(0, 784, 2)), list(range(1, 784, 2))]
    (tmp_path / "b.json").write_text(json.dumps(blocks))
    assert main(["run", "ssca", "--setting", "feature", *SMALL, "--feature-blocks", str(tmp_path / "b.json"),
                 "--out", str(tmp_path / "o")]) == 0
    doc = json.load(open(tmp_path / "o" / "trace.json"))
    assert sum(1 for m in doc["ledger_round1"] if m["payload"] == "grad_W1_block") == 2
    (tmp_path / "bad.json").write_text(json.dumps([list(range(0, 700))]))
    assert main(["run", "ssca", "--setting", "feature", *SMALL, "--feature-blocks", str(tmp_path / "bad.json")]) == 2
    assert "84 missing" in capsys.readouterr().err


def test_a_run_outside_the_step_size_conditions_says_what_to_expect(capsys):
    """SSCA at the paper's ρ_t = 1/t^0.1: the run says which conditions of (4)/(6) fail and that the
    training cost may spike early; a schedule meeting them prints no such note."""
    from refimpl.cli import main
    assert main(["run", "ssca", "--rounds", "2", "--hidden", "8", "--batch", "10"]) == 0
    out = capsys.readouterr()
    text = out.out + out.err
    assert "sum_rho_sq_finite" in text and "training cost may spike in the early rounds" in text
    assert main(["run", "ssca", "--rounds", "2", "--hidden", "8", "--batch", "10", "--rho-alpha", "0.55",
                 "--gamma-alpha", "0.6"]) == 0
    out = capsys.readouterr()
    assert "may spike" not in out.out + out.err
