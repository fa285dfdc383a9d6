"""The public Python API per paper and the per-algorithm command line built on it."""
import json
import re

import numpy as np
import pytest

import refimpl
from refimpl import mfcgd, ssca, vfl
from refimpl.cli import main
from refimpl.core.trace import Trace
from refimpl.papers import algorithms, options_for


def test_ssca_run_through_the_api_equals_the_command_line(tmp_path):
    cfg = ssca.Config(batch=10, rounds=4, hidden=8, eval_every=2, snapshots=[0, 4])
    tr = ssca.run(cfg, data=refimpl.data.mnist_5k())
    assert tr.status == "finished" and tr.metrics["round"] == [0, 2, 4]
    W1, W2 = tr.iterate(4)
    assert W1.shape == (8, 784) and W2.shape == (10, 8)
    with pytest.raises(KeyError, match=r"snapshots at rounds \[0, 4\]"):
        tr.iterate(3)
    tr.save(tmp_path / "api")
    assert main(["run", "ssca", "--batch", "10", "--rounds", "4", "--hidden", "8", "--eval-every", "2",
                 "--snapshots", "0,4", "--quiet", "--out", str(tmp_path / "cli")]) == 0
    a, b = Trace.load(tmp_path / "api"), Trace.load(tmp_path / "cli")
    assert np.array_equal(a.iterate(4)[0], b.iterate(4)[0]) and a.metrics == b.metrics


def test_vfl_and_mfcgd_run_through_the_api(tmp_path):
    tr = vfl.run(vfl.Config(method="flexvfl", rounds=3, eval_every=1))
    assert tr.metrics["time"][-1] > 0 and len(tr.metrics["test_accuracy"]) >= 3
    tm = mfcgd.run(mfcgd.Config(method="adamfcgd", steps=40, eval_every=10))
    assert len(tm.metrics["grad_norm"]) == 5 and np.all(np.isfinite(tm.metrics["grad_norm"]))
    pytest.importorskip("matplotlib")
    for t, name in ((tr, "v.png"), (tm, "m.png")):
        assert t.plot(tmp_path / name) == tmp_path / name and (tmp_path / name).stat().st_size > 0


@pytest.mark.parametrize("algorithm", algorithms())
def test_run_help_lists_only_the_algorithms_options_with_defaults(algorithm, capsys):
    with pytest.raises(SystemExit):
        main(["run", algorithm, "--help"])
    text = capsys.readouterr().out
    assert len(text.splitlines()) < 60                    # one screen
    listed = set(re.findall(r"^\s+(--[a-zA-Z][\w-]*)", text, re.M))
    from refimpl import papers
    own = {o.name for o, _ in options_for(algorithm)}
    assert own <= listed
    own |= {"--" + f.replace("_", "-") for f, _ in papers.of_algorithm(algorithm).replay_args}
    others = {o.name for p in papers.papers() for a in p.algorithms for o, _ in p.options_for(a)} - own
    assert not listed & others, sorted(listed & others)   # no option of another algorithm
    # every option has a help line; every option with a default shows it
    for opt, default in options_for(algorithm):
        if default not in (None, "", False):
            block = text[text.index(opt.name + " "):]
            assert "(default:" in block.split("\n  --")[0], opt.name


def test_option_of_another_algorithm_is_an_error(capsys):
    assert main(["run", "ssca", "--eta", "0.1"]) == 2
    assert "--eta does not apply to ssca" in capsys.readouterr().err
    assert main(["run", "mfcgd", "--rho", "0.5"]) == 2          # AdaMFCGD's ρ, not plain MFCGD's
    assert "it is an option of adamfcgd" in capsys.readouterr().err
    assert main(["run", "sgd", "--U=0.2"]) == 2
    assert "ssca-constrained" in capsys.readouterr().err


def test_config_file_sets_options_and_flags_override_it(tmp_path):
    (tmp_path / "run.toml").write_text('batch = 10\nrounds = 6\nhidden = 8\neval_every = 3\ntau = 0.25\n'
                                       'snapshots = [0, 3]\n')
    out = tmp_path / "o"
    assert main(["run", "ssca", "--config", str(tmp_path / "run.toml"), "--rounds", "3", "--quiet",
                 "--out", str(out)]) == 0
    cfg = json.load(open(out / "trace.json"))["config"]
    assert (cfg["batch"], cfg["rounds"], cfg["tau"], cfg["hidden"]) == (10, 3, 0.25, 8)
    assert cfg["rho_alpha"] == 0.1                # resolved: the paper's α for B = 10 is recorded
    (tmp_path / "bad.toml").write_text("eta = 0.1\n")
    assert main(["run", "ssca", "--config", str(tmp_path / "bad.toml")]) == 2


def test_config_file_takes_a_sweep_specs_fixed_table(tmp_path):
    (tmp_path / "spec.toml").write_text('runner = "mfcgd"\n[fixed]\nsteps = 30\neval_every = 10\n')
    out = tmp_path / "m"
    assert main(["run", "mfcgd", "--config", str(tmp_path / "spec.toml"), "--quiet", "--out", str(out)]) == 0
    assert json.load(open(out / "trace.json"))["config"]["steps"] == 30


@pytest.mark.parametrize("extra, named", [
    ('runner = "sgd"\n', "['runner']"),                  # another runner than the one run
    ("seeds = [7]\n", "['seeds']"),
    ('runner = "ssca"\n[grid]\ntau = [0.1, 0.2]\n', "['grid']"),
])
def test_config_refuses_the_parts_of_a_sweep_spec_one_run_cannot_take(tmp_path, capsys, extra, named):
    (tmp_path / "spec.toml").write_text(extra.split("[grid]")[0] + "[fixed]\nrounds = 2\n" +
                                        ("[grid]" + extra.split("[grid]")[1] if "[grid]" in extra else ""))
    assert main(["run", "ssca", "--config", str(tmp_path / "spec.toml"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "is a sweep spec" in err and named in err and "refimpl sweep" in err
