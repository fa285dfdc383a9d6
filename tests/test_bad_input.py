"""Nothing lost, nothing silently accepted: one case per fault, each asserting the exit code, the
key words of the message and, where results exist, that none was lost or mixed."""
import json
import os

import numpy as np
import pytest

from refimpl.cli import main
from refimpl.core.trace import Trace

TINY = ["--rounds", "3", "--hidden", "8", "--batch", "10", "--quiet"]


def _status(d):
    return json.load(open(os.path.join(d, "trace.json")))["status"]


# -- 1, 2: the output directory is checked before the first round and never silently replaced --

def _file(tmp, *under):
    (tmp / "f").write_text("x")
    return tmp.joinpath("f", *under)


@pytest.mark.parametrize("make, words", [
    (lambda tmp: _file(tmp), "not a directory"),
    (lambda tmp: _file(tmp, "sub"), "cannot write there"),
    (lambda tmp: "/proc/refimpl-x", "cannot write there"),
])
def test_out_that_cannot_hold_a_run_is_refused_before_round_one(tmp_path, capsys, make, words):
    out = make(tmp_path)
    # 10,000 rounds would take minutes: the refusal comes before the first one
    assert main(["run", "ssca", "--rounds", "10000", "--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert words in err and str(out) in err


def test_out_holding_a_trace_is_not_overwritten_without_overwrite(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "ssca", *TINY, "--out", str(out)]) == 0
    before = (out / "trace.json").read_bytes()
    assert main(["run", "ssca", *TINY, "--seed", "5", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(out) in err and "--overwrite" in err
    assert (out / "trace.json").read_bytes() == before            # nothing lost
    assert main(["run", "ssca", *TINY, "--seed", "5", "--out", str(out), "--overwrite"]) == 0
    assert json.load(open(out / "trace.json"))["config"]["seed"] == 5


def test_without_out_one_line_says_nothing_was_saved(capsys):
    assert main(["run", "ssca", "--rounds", "2", "--hidden", "8", "--batch", "10", "--eval-every", "2"]) == 0
    assert "nothing was saved" in capsys.readouterr().err
    assert main(["run", "ssca", *TINY]) == 0
    assert capsys.readouterr().err == ""                          # --quiet prints nothing


# -- 3: a blow-up is "diverged", never "finished", in every family -------------------------------

@pytest.mark.parametrize("argv, words", [
    (["run", "ssca", "--tau", "1e-12", "--gamma-a", "1", "--rho-a", "1", *TINY], "||omega||^2"),
    (["run", "sgd", "--lr", "1e7", *TINY], "diverged: round"),
    (["run", "ssca-constrained", "--diverge-sq-norm", "1e-6", *TINY], "||omega||^2"),
    (["run", "ssca", "--diverge-cost-factor", "0.5", *TINY], "training cost"),
    (["run", "flexvfl", "--eta", "1e8", "--rounds", "20", "--quiet"], "theta_k"),
    (["run", "async-vfl", "--eta", "1e8", "--time-budget", "30", "--quiet"], "diverged: event"),
    (["run", "mfcgd", "--problem", "maml", "--gamma", "500", "--steps", "300", "--quiet"], "grad F"),
])
def test_divergence_stops_with_status_diverged_and_exit_3(tmp_path, capsys, argv, words):
    out = tmp_path / "d"
    assert main([*argv, "--out", str(out)]) == 3
    status = _status(out)
    assert status.startswith("diverged:") and words in status and "holds" in status
    assert "diverged" in capsys.readouterr().err
    tr = Trace.load(out)
    key = "train_cost" if "train_cost" in tr.metrics else "train_loss" if "train_loss" in tr.metrics else "grad_norm"
    assert np.all(np.isfinite(tr.metrics[key]))                    # the trace stops at the last good round
    assert max(tr.metrics[key]) < 1e3 * max(tr.metrics[key][0], 1e-300) + 1e-12
