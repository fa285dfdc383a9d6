"""The replay inputs as other implementations write them: 1-based ids (--index-base 1), .npy,
.npz and .mat for every reader, a run's --out directory as a replay input, SSCA's flat ω^0."""
import numpy as np
import pytest
import scipy.io

from refimpl.cli import main

SSCA = ["run", "ssca", "--rounds", "3", "--batch", "10", "--hidden", "8", "--quiet"]
VFL = ["run", "flexvfl", "--rounds", "2", "--quiet"]


def _err(capsys):
    c = capsys.readouterr()
    return c.out + c.err


@pytest.fixture(scope="module")
def ssca_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("ssca")
    assert main([*SSCA, "--out", str(d / "run")]) == 0
    z = np.load(d / "run" / "trace.npz")
    return d, {k: z[k] for k in z.files}


def _same_run(a, b):
    za, zb = np.load(a / "trace.npz"), np.load(b / "trace.npz")
    return all(np.array_equal(za[k], zb[k]) for k in ("metric_train_cost", "W1_3", "W2_3", "batches"))


@pytest.mark.parametrize("fmt", ["npy", "npz", "mat"])
def test_ssca_one_based_batches_in_every_format(ssca_run, tmp_path, capsys, fmt):
    d, z = ssca_run
    one = z["batches"] + 1
    path = tmp_path / f"b.{fmt}"
    if fmt == "npy":
        np.save(path, one)
    elif fmt == "npz":
        np.savez(path, batches=one)
    else:
        scipy.io.savemat(path, {"batches": one.astype(float)})          # MATLAB stores doubles
    init = ["--init", str(d / "run")]                                     # a run's --out directory
    assert main([*SSCA, *init, "--batches", str(path), "--index-base", "1", "--out", str(tmp_path / "o")]) == 0
    assert _same_run(d / "run", tmp_path / "o")
    # without --index-base the 1-based ids are refused, with the hint
    assert main([*SSCA, *init, "--batches", str(path), "--out", str(tmp_path / "o2")]) == 2
    assert "1-based ids, as MATLAB writes them? give --index-base 1" in _err(capsys)


def test_ssca_batches_and_init_from_a_trace_and_a_flat_initial_point(ssca_run, tmp_path, capsys):
    d, z = ssca_run
    run = d / "run"
    assert main([*SSCA, "--init", str(run), "--batches", str(run), "--out", str(tmp_path / "a")]) == 0
    assert _same_run(run, tmp_path / "a")
    np.save(tmp_path / "flat.npy", np.concatenate([z["W1_0"].ravel(), z["W2_0"].ravel()]))
    assert main([*SSCA, "--init", str(tmp_path / "flat.npy"), "--batches", str(run / "trace.npz"),
                 "--out", str(tmp_path / "b")]) == 0
    assert _same_run(run, tmp_path / "b")
    np.save(tmp_path / "short.npy", np.zeros(5))
    assert main([*SSCA, "--init", str(tmp_path / "short.npy"), "--out", str(tmp_path / "c")]) == 2
    assert "must have 6352 entries (W1 8×784 then W2 10×8, row-major), got shape (5,)" in _err(capsys)
    np.save(tmp_path / "zero.npy", np.zeros_like(z["batches"]))
    assert main([*SSCA, "--batches", str(tmp_path / "zero.npy"), "--index-base", "1", "--out", str(tmp_path / "d")]) == 2
    assert "is below 1, but --index-base 1 says the ids start at 1" in _err(capsys)
    (tmp_path / "empty").mkdir()
    assert main([*SSCA, "--init", str(tmp_path / "empty"), "--out", str(tmp_path / "e")]) == 2
    assert "a directory without a trace.npz" in _err(capsys)
    np.save(tmp_path / "half.npy", z["batches"] + 0.5)
    assert main([*SSCA, "--batches", str(tmp_path / "half.npy"), "--out", str(tmp_path / "f")]) == 2
    assert "is not a whole number: sample ids are integers" in _err(capsys)


def test_vfl_one_based_batches(tmp_path, capsys):
    assert main([*VFL, "--out", str(tmp_path / "run")]) == 0
    b = np.load(tmp_path / "run" / "trace.npz")["batches"]
    np.save(tmp_path / "b1.npy", b + 1)
    assert main([*VFL, "--batches", str(tmp_path / "b1.npy"), "--index-base", "1", "--init", str(tmp_path / "run"),
                 "--taus", str(tmp_path / "run"), "--out", str(tmp_path / "o")]) == 0
    za, zb = np.load(tmp_path / "run" / "trace.npz"), np.load(tmp_path / "o" / "trace.npz")
    assert np.array_equal(za["batches"], zb["batches"]) and np.array_equal(za["metric_train_loss"],
                                                                           zb["metric_train_loss"])
    top = b.copy()
    top[0, 0] = 3999                                   # the last sample, so a 1-based table holds 4000
    np.save(tmp_path / "top.npy", top + 1)
    assert main([*VFL, "--batches", str(tmp_path / "top.npy"), "--out", str(tmp_path / "p")]) == 2
    assert "no id is 0 and one is 4000: 1-based ids" in _err(capsys)


def test_ssca_pooled_schedule_shape_is_named(tmp_path, capsys):
    assert main([*SSCA, "--sampling", "pooled", "--out", str(tmp_path / "p")]) == 0
    b = np.load(tmp_path / "p" / "trace.npz")["batches"]
    assert b.shape == (3, 100)
    np.save(tmp_path / "kb.npy", b.reshape(3, 10, 10))
    assert main([*SSCA, "--sampling", "pooled", "--batches", str(tmp_path / "kb.npy"), "--out", str(tmp_path / "q")]) == 2
    err = _err(capsys)
    assert "pooled (--sampling pooled) batch schedule must have shape (T, K·B) = (T, 100)" in err
    assert "feature-based" not in err
