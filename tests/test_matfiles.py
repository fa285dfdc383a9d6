"""Cross-checks from MATLAB files written by scipy.io.savemat (the format of the authors' scripts)."""
import numpy as np
import pytest
from scipy.io import savemat

from refimpl.cli import main
from refimpl.core.trace import Trace

RUN = ["run", "ssca", "--activation", "relu", "--bias", "--batch", "10", "--rounds", "4", "--hidden", "8",
       "--eval-every", "4", "--snapshots", "0,2,4", "--quiet"]


def test_crosscheck_reads_iterates_from_a_mat_file(tmp_path, capsys):
    assert main([*RUN, "--out", str(tmp_path / "ours")]) == 0
    tr = Trace.load(tmp_path / "ours")
    savemat(tmp_path / "theirs.mat", {f"Theta{i + 1}a_{r}": tr.snapshots[r][i] for r in (2, 4) for i in (0, 1)})
    assert main(["crosscheck", str(tmp_path / "ours"), str(tmp_path / "theirs.mat")]) == 0
    out = capsys.readouterr().out
    assert "W1@2" in out and "W2@4" in out and "DIFFERS" not in out
    W2 = tr.snapshots[4][1].copy()
    W2[0, 0] += 1e-3
    savemat(tmp_path / "off.mat", {"Theta1a": tr.snapshots[4][0], "Theta2a": W2})
    assert main(["crosscheck", str(tmp_path / "ours"), str(tmp_path / "off.mat"), "--round", "4"]) == 1
    assert "DIFFERS" in capsys.readouterr().out


def test_mat_variables_are_mapped_and_errors_name_them(tmp_path, capsys):
    assert main([*RUN, "--out", str(tmp_path / "ours")]) == 0
    tr = Trace.load(tmp_path / "ours")
    savemat(tmp_path / "named.mat", {"A_4": tr.snapshots[4][0], "B_4": tr.snapshots[4][1]})
    assert main(["crosscheck", str(tmp_path / "ours"), str(tmp_path / "named.mat"), "--map", "W1=A,W2=B"]) == 0
    capsys.readouterr()
    assert main(["crosscheck", str(tmp_path / "ours"), str(tmp_path / "named.mat")]) == 2
    assert "no variable 'Theta1a'" in capsys.readouterr().err
    # the authors' Theta1/Theta2 are the surrogate minimiser, not the iterate: the default refuses them and says so
    savemat(tmp_path / "bar.mat", {"Theta1_4": tr.snapshots[4][0], "Theta2_4": tr.snapshots[4][1]})
    assert main(["crosscheck", str(tmp_path / "ours"), str(tmp_path / "bar.mat")]) == 2
    assert "surrogate minimiser" in capsys.readouterr().err
    savemat(tmp_path / "plain.mat", {"Theta1a": tr.snapshots[4][0], "Theta2a": tr.snapshots[4][1]})
    assert main(["crosscheck", str(tmp_path / "ours"), str(tmp_path / "plain.mat")]) == 2
    assert "give --round R" in capsys.readouterr().err
    savemat(tmp_path / "wrong.mat", {"Theta1a_4": tr.snapshots[4][0][:, :5], "Theta2a_4": tr.snapshots[4][1]})
    assert main(["crosscheck", str(tmp_path / "ours"), str(tmp_path / "wrong.mat")]) == 1
    assert "shape" in capsys.readouterr().out
    # a v7.3 header (MATLAB's HDF5-based format): refused with the way out
    (tmp_path / "v73.mat").write_bytes(b"MATLAB 7.3 MAT-file".ljust(116) + b"\x00" * 8 + b"\x00\x02IM" + b"\x00" * 512)
    assert main(["crosscheck", str(tmp_path / "ours"), str(tmp_path / "v73.mat")]) == 2
    assert "save(FILE, ..., '-v7')" in capsys.readouterr().err


def test_init_takes_the_authors_initial_theta_files(tmp_path):
    assert main([*RUN, "--out", str(tmp_path / "a")]) == 0
    tr = Trace.load(tmp_path / "a")
    savemat(tmp_path / "initial_Theta1.mat", {"initial_Theta1": tr.snapshots[0][0]})
    savemat(tmp_path / "initial_Theta2.mat", {"initial_Theta2": tr.snapshots[0][1]})
    np.save(tmp_path / "b.npy", tr.batches)
    assert main([*RUN, "--seed", "9", "--init", str(tmp_path / "initial_Theta1.mat"), "--batches",
                 str(tmp_path / "b.npy"), "--out", str(tmp_path / "b")]) == 0
    assert np.array_equal(Trace.load(tmp_path / "b").snapshots[4][0], tr.snapshots[4][0])


def test_init_takes_a_mat_file_of_w1_w2_or_a_flat_omega_in_either_orientation(tmp_path, capsys):
    """A .mat not named initial_Theta1: W1 and W2, or the flat ω^0 (W1 then W2, row-major) saved
    as MATLAB saves a vector, 1×P or P×1 — each the same run as the trace's own initial point."""
    assert main([*RUN, "--out", str(tmp_path / "a")]) == 0
    tr = Trace.load(tmp_path / "a")
    W1, W2 = tr.snapshots[0]
    flat = np.concatenate([W1.ravel(), W2.ravel()])
    np.save(tmp_path / "b.npy", tr.batches)
    savemat(tmp_path / "pair.mat", {"W1": W1, "W2": W2})
    savemat(tmp_path / "row.mat", {"omega_0": flat[None, :]})
    savemat(tmp_path / "col.mat", {"omega_0": flat[:, None]})
    for name in ("pair", "row", "col"):
        assert main([*RUN, "--seed", "9", "--init", str(tmp_path / f"{name}.mat"), "--batches",
                     str(tmp_path / "b.npy"), "--out", str(tmp_path / name)]) == 0
        assert np.array_equal(Trace.load(tmp_path / name).snapshots[4][0], tr.snapshots[4][0])
    savemat(tmp_path / "other.mat", {"theta": flat})
    capsys.readouterr()
    assert main([*RUN, "--init", str(tmp_path / "other.mat"), "--out", str(tmp_path / "x")]) == 2
    assert "needs arrays W1 and W2" in capsys.readouterr().err


def test_one_based_labels_of_the_authors_data_are_shifted_by_a_flag(tmp_path):
    """The authors' MATLAB data label digits 1..10: --label-base 1 reads them as classes 0..9 and
    gives the same run as the 0-based file; without the flag such a file is refused only if a
    class is missing, and a 0 label under --label-base 1 is an error naming the entry."""
    import json
    rng = np.random.default_rng(0)
    X, Xt = rng.random((60, 12)), rng.random((20, 12))
    y, yt = np.arange(60) % 4, np.arange(20) % 4
    np.savez(tmp_path / "zero.npz", X_train=X, y_train=y, X_test=Xt, y_test=yt)
    np.savez(tmp_path / "one.npz", X_train=X, y_train=y + 1, X_test=Xt, y_test=yt + 1)
    args = ["run", "ssca", "--rounds", "3", "--hidden", "4", "--clients", "3", "--batch", "5", "--quiet"]
    assert main([*args, "--data", str(tmp_path / "zero.npz"), "--out", str(tmp_path / "a")]) == 0
    assert main([*args, "--data", str(tmp_path / "one.npz"), "--label-base", "1", "--out", str(tmp_path / "b")]) == 0
    ta = json.loads((tmp_path / "a" / "trace.json").read_text())["metrics"]["train_cost"]
    tb = json.loads((tmp_path / "b" / "trace.json").read_text())["metrics"]["train_cost"]
    assert ta == tb
    assert main([*args, "--data", str(tmp_path / "zero.npz"), "--label-base", "1"]) == 2      # label 0
    assert main([*args, "--label-base", "1"]) == 2                                             # no --data
    from refimpl.core.data import load_npz_dataset
    with pytest.raises(ValueError, match=r"y_train\[0\] = 0 but --label-base 1 expects labels 1..L"):
        load_npz_dataset(tmp_path / "zero.npz", label_base=1)
