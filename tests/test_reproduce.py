import json
import os
import shutil

import numpy as np
import pytest

from refimpl.cli import main
from refimpl.core.data import load_idx_dir
from refimpl.tools.reproduce import plan_for, reproduce

from conftest import FASHION, fashion_or_skip  # noqa: E402


def test_reproduction_resumes_from_finished_seeds(tmp_path):
    out = tmp_path / "r"
    reproduce("mfcgd-rates", str(out), seeds=2, quick=True, rounds=300, workers=1)
    rec = json.load(open(out / "reproduction.json"))
    ex = json.load(open(out / "execution.json"))
    assert ex["new_runs"] == 8 and rec["seeds"] == [0, 1] and "numpy" in rec["versions"]
    tid = rec["runs"][0]["tasks"][1]                                    # MFCGD, seed 1
    assert rec["runs"][0]["label"] == "MFCGD"
    before = np.load(out / "tasks" / tid / "trace.npz")["metric_grad_norm"]
    shutil.rmtree(out / "tasks" / tid)                                  # as if interrupted there
    (out / "tasks" / f".tmp-{tid}-1-host").mkdir()                      # a half-written run
    with pytest.raises(ValueError, match="--resume"):
        reproduce("mfcgd-rates", str(out), seeds=2, quick=True, rounds=300)
    reproduce("mfcgd-rates", str(out), seeds=2, quick=True, rounds=300, resume=True, workers=1)
    ex = json.load(open(out / "execution.json"))
    assert ex["new_runs"] == 1 and ex["resumed_runs"] == 7
    np.testing.assert_array_equal(np.load(out / "tasks" / tid / "trace.npz")["metric_grad_norm"], before)
    assert not [n for n in os.listdir(out / "tasks") if n.startswith(".")]
    header = (out / "curves.csv").read_text().splitlines()[0]
    assert header.startswith("run,samples,grad_norm_mean,grad_norm_std")
    assert (out / "mfcgd-rates.png").exists()


def test_plans_use_paper_settings_by_flag():
    plan, _ = plan_for("ssca-sample", quick=False, paper=True, n_train=60000)
    labels = [p[0] for p in plan]
    assert "SSCA B=6000" in labels and "FedAvg E=5 B=10" in labels
    assert all(p[2].rounds == 1000 for p in plan)
    plan, _ = plan_for("ssca-feature", quick=False, paper=True)
    assert "SSCA B=1000" in [p[0] for p in plan]
    with pytest.raises(ValueError, match="unknown reproduction"):
        plan_for("nope")


def test_cli_reproduce_and_paper_needs_data(tmp_path):
    assert main(["reproduce", "vfl-time", "--quick", "--seeds", "1", "--quiet", "--out", str(tmp_path / "v")]) == 0
    assert (tmp_path / "v" / "time_to_target.csv").exists()
    assert main(["reproduce", "ssca-sample", "--paper", "--out", str(tmp_path / "p"), "--quiet"]) == 2


def _fashion_or_fail():
    return fashion_or_skip()


def test_full_fashion_mnist_loads():
    ds = load_idx_dir(_fashion_or_fail())
    assert ds.X_train.shape == (60000, 784) and ds.X_test.shape == (10000, 784)
    assert sorted(np.unique(ds.y_train).tolist()) == list(range(10))
    assert 0.0 <= ds.X_train.min() and ds.X_train.max() <= 1.0


def test_quick_run_trains_on_fashion_mnist(tmp_path):
    d = _fashion_or_fail()
    assert main(["run", "sgdm", "--data-dir", d, "--rounds", "20", "--eval-every", "10", "--lr", "0.5",
                 "--lr-decay", "0", "--quiet", "--out", str(tmp_path)]) == 0
    doc = json.load(open(tmp_path / "trace.json"))
    assert doc["config"]["data"] == "fashion-mnist"
    assert doc["metrics"]["test_accuracy"][-1] > 0.5


def test_reproduce_with_the_authors_preset(tmp_path):
    out = tmp_path / "a"
    assert main(["reproduce", "ssca-feature", "--quick", "--seeds", "1", "--rounds", "4", "--preset", "authors",
                 "--out", str(out), "--quiet"]) == 0
    rec = json.load(open(out / "reproduction.json"))
    assert rec["preset"] == "authors"
    ssca_runs = [r["config"] for r in rec["runs"] if r["config"]["algorithm"] == "ssca"]
    assert {(c["batch"], c["tau"], c["curvature"], c["activation"], c["bias"]) for c in ssca_runs} == \
        {(10, 0.1, "fixed", "relu", True), (100, 0.2, "fixed", "relu", True)}


@pytest.mark.parametrize("preset", ["paper", "authors"])
def test_presets_run_on_full_size_data(tmp_path, preset):
    d = _fashion_or_fail()
    assert main(["run", "ssca", "--preset", preset, "--data-dir", d, "--batch", "100", "--rounds", "5",
                 "--eval-every", "5", "--quiet", "--out", str(tmp_path)]) == 0
    doc = json.load(open(tmp_path / "trace.json"))
    assert doc["config"]["preset"] == preset and doc["status"] == "finished"


#: the README's command (``reproduce ssca-sample --data-dir DIR --tune --out runs/tuned``) with the
#: reduced sizes this test adds; tests/test_doc_commands.py counts on this test running it
TUNE_ARGV = ["reproduce", "ssca-sample", "--data-dir", "DIR", "--tune", "--out", "OUT"]


def test_tune_picks_each_methods_best_on_validation_then_runs_it(tmp_path):
    d = _fashion_or_fail()
    out = tmp_path / "t"
    argv = [{"DIR": d, "OUT": str(out)}.get(a, a) for a in TUNE_ARGV]
    reduced = ["--rounds", "1", "--seeds", "1", "--workers", "2", "--quiet"]
    assert main([*argv, *reduced]) == 0
    rec = json.load(open(out / "reproduction.json"))
    tune = rec["tuning"]
    assert tune["validation_split"] == {"train": 50000, "validation": 10000, "seed": tune["validation_split"]["seed"]}
    assert set(tune["methods"]) == {"SSCA", "SGD", "SGD-m", "FedAvg E=5"}        # sample-based: FedAvg too
    for m, t in tune["methods"].items():
        assert len(t["grid"]) == tune["points_per_method"] == 6                   # the same budget per method
        ok = [g for g in t["grid"] if g["status"] == "finished"]
        assert t["chosen"] == max(ok, key=lambda g: (g["validation_accuracy"], -g["train_cost"]))["settings"]
        assert set(t["chosen_at_grid_edge"]) <= set(t["chosen"])
    assert [r["label"].split(" (")[0] for r in rec["runs"]] == ["SSCA", "SGD", "SGD-m", "FedAvg E=5"]
    assert all(len(r["tasks"]) == 1 for r in rec["runs"]) and rec["n_train"] == 60000
    rows = (out / "tuned_results.csv").read_text().splitlines()
    assert rows[0].startswith("method,final_train_cost_mean") and len(rows) == 5
    ex = json.load(open(out / "execution.json"))
    assert ex["new_runs"] == 24 + 4
    # resumable: a rerun repeats nothing
    assert main([*argv, *reduced, "--resume"]) == 0
    assert json.load(open(out / "execution.json"))["new_runs"] == 0


def test_tune_grid_takes_the_reproductions_fedavg_steps_on_the_validation_split(tmp_path, monkeypatch):
    from refimpl import papers
    from refimpl.tools import reproduce as R
    ssca = papers.get("ssca")
    # 50000 samples over 10 clients: E = min(5, 5000 // B), and no FedAvg below E = 2 (as the plan)
    for B, want in ((100, ["FedAvg E=5"]), (2000, ["FedAvg E=2"]), (6000, [])):
        grids = ssca.tune_grids("ssca-sample", B, 40, 2, 50000)
        assert [m for m in grids if m.startswith("FedAvg")] == want
        assert all(c.local_steps * B <= 5000 for m in want for c in grids[m])
    seen = []

    def stop(runs, ds):                                 # the grid reached the preflight: stop there
        seen.append((ds.n_train, sorted({m for m, _, _ in runs})))
        raise RuntimeError("stopped after the grid")
    monkeypatch.setattr(R, "_preflight", stop)
    with pytest.raises(RuntimeError, match="stopped after the grid"):
        R.tune_and_reproduce("ssca-sample", str(tmp_path / "t"), _fashion_or_fail(), batch=2000, rounds=1)
    assert seen == [(50000, ["FedAvg E=2", "SGD", "SGD-m", "SSCA"])]


def test_tune_bad_input(tmp_path, capsys):
    out = str(tmp_path / "x")
    assert main(["reproduce", "ssca-sample", "--tune", "--out", out, "--quiet"]) == 2
    assert "--tune needs --data-dir" in capsys.readouterr().err
    assert main(["reproduce", "vfl-time", "--tune", "--data-dir", "/nonexistent", "--out", out, "--quiet"]) == 2
    assert "--tune exists for ssca-sample and ssca-feature" in capsys.readouterr().err
    assert main(["reproduce", "ssca-sample", "--tune", "--quick", "--data-dir", "/x", "--out", out, "--quiet"]) == 2
    assert "drop --quick" in capsys.readouterr().err


def test_recorded_versions_are_the_packages_own_without_importing_them():
    """``versions()`` reads the installed metadata: the same strings as each package's
    ``__version__``, and cvxpy is not imported to ask (it costs a reproduction 1.5 s)."""
    import subprocess
    import sys
    code = ("import sys, json; from refimpl.tools.reproduce import versions; v = versions(); "
            "print(json.dumps([v, 'cvxpy' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    import json
    import cvxpy
    import numba
    import scipy
    v, imported = json.loads(out.stdout)
    assert not imported, "versions() imported cvxpy"
    assert (v["cvxpy"], v["numba"], v["scipy"], v["numpy"]) == (cvxpy.__version__, numba.__version__, scipy.__version__,
                                                                 np.__version__)


def test_prepare_refuses_rounds_below_one_for_every_reproduction(tmp_path):
    """The API (and ``report --rounds``) goes through ``prepare``: --rounds 0 is refused there, for
    the reproductions whose plans would otherwise take it."""
    from refimpl.tools.reproduce import names, prepare
    for name in names():
        with pytest.raises(ValueError, match="--rounds must be >= 1, got 0"):
            prepare(name, str(tmp_path / name), seeds=1, rounds=0, quick=True)
