"""Nothing lost, nothing silently accepted: one case per fault, each asserting the exit code, the
key words of the message and, where results exist, that none was lost or mixed."""
import json
import os

import numpy as np
import pytest

from refimpl.cli import main
from refimpl.core.trace import Trace
from conftest import flat_dump  # noqa: E402

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
    # ||∇F|| stays bounded on these problems while x̄ runs away: the iterate's norm is tested
    (["run", "mfcgd", "--gamma", "1e12", "--steps", "200", "--quiet"], "||x_bar||^2"),
    (["run", "adamfcgd", "--gamma", "1e12", "--steps", "200", "--quiet"], "||x_bar||^2"),
    (["run", "comfedl", "--eta", "1e12", "--steps", "200", "--quiet"], "||x_bar||^2"),
    (["run", "local-scgdm", "--eta", "1e12", "--steps", "200", "--quiet", "--backend", "numpy"], "||x_bar||^2"),
    (["run", "mfcgd", "--diverge-sq-norm", "1e-9", "--steps", "50", "--eval-every", "10", "--quiet"],
     "||x_bar||^2"),
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


# -- 4: labels of --data FILE.npz ------------------------------------------------------------------

def _npz(tmp_path, name="d.npz", **over):
    from refimpl.core.data import load_embedded_mnist
    d = load_embedded_mnist()
    arrays = dict(X_train=d.X_train[:200], y_train=d.y_train[:200], X_test=d.X_test[:50], y_test=d.y_test[:50])
    arrays.update(over)
    np.savez(tmp_path / name, **arrays)
    return str(tmp_path / name)


def _labels_with_gap():
    from refimpl.core.data import load_embedded_mnist
    y = load_embedded_mnist().y_train[:200].copy()
    y[y == 3] = 12
    return y


def _labels_with_nan():
    from refimpl.core.data import load_embedded_mnist
    y = load_embedded_mnist().y_train[:200].astype(float)
    y[5] = np.nan
    return y


@pytest.mark.parametrize("over, words", [
    (lambda: {"y_train": _labels_with_gap()}, "never occur in y_train"),
    (lambda: {"y_train": _labels_with_nan()}, "y_train[5] = nan"),
    (lambda: {"y_train": _labels_with_gap(), "n_classes": np.array(10)}, "n_classes is 10"),
    (lambda: {"X_test": np.zeros((0, 784)), "y_test": np.zeros(0, int)}, "X_test must be a non-empty"),
])
def test_npz_labels_and_shapes_are_validated(tmp_path, capsys, over, words):
    path = _npz(tmp_path, **over())
    assert main(["run", "ssca", *TINY, "--data", path]) == 2
    assert words in capsys.readouterr().err


def test_npz_classes_are_inferred_and_reported(tmp_path, capsys):
    path = _npz(tmp_path)
    assert main(["run", "ssca", "--rounds", "2", "--hidden", "8", "--batch", "5", "--data", path]) == 0
    assert "10 classes" in capsys.readouterr().err


def test_not_an_npz_and_a_corrupt_idx_gz_are_named(tmp_path, capsys):
    (tmp_path / "x.npz").write_text("hello")
    assert main(["run", "ssca", *TINY, "--data", str(tmp_path / "x.npz")]) == 2
    assert "not an .npz archive" in capsys.readouterr().err
    import gzip
    blob = gzip.compress(b"\x00\x00\x08\x03" + b"\x00" * 100)
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(blob[:12] + b"garbage-in-the-deflate-stream" + blob[40:])
    from refimpl.core.data import read_idx
    with pytest.raises(ValueError, match="corrupt, truncated or not gzip"):
        read_idx(tmp_path / "train-images-idx3-ubyte.gz")


# -- 5, 6: indices must be integers; feature blocks and --clients must agree ------------------------

def test_float_batch_indices_name_the_entry(tmp_path, capsys):
    out = tmp_path / "a"
    assert main(["run", "ssca", *TINY, "--snapshots", "0", "--out", str(out)]) == 0
    b = Trace.load(out).batches.astype(float)
    b[1, 2, 3] = 13.5
    np.save(tmp_path / "b.npy", b)
    assert main(["run", "ssca", *TINY, "--batches", str(tmp_path / "b.npy")]) == 2
    assert "entry (1, 2, 3) = 13.5 is not a whole number" in capsys.readouterr().err
    b = Trace.load(out).batches.copy()
    b[2, 0, 1] = 3999                                   # a sample of client 9, given to client 0
    np.save(tmp_path / "c.npy", b)
    assert main(["run", "ssca", *TINY, "--batches", str(tmp_path / "c.npy")]) == 2
    assert "round 3, client 0, position 1 holds sample 3999" in capsys.readouterr().err


@pytest.mark.parametrize("blocks, words", [
    ([[0.5] + list(range(1, 392)), list(range(392, 784))], "entry 0 is 0.5"),
    ([list(range(0, 392)), [2.9] + list(range(393, 784))], "entry 0 is 2.9"),
    ({"a": [1]}, "expected a non-empty JSON list"),
    ("[[0, 1], [2", "not valid JSON"),
])
def test_feature_blocks_are_validated_and_named(tmp_path, capsys, blocks, words):
    path = tmp_path / "blocks.json"
    path.write_text(blocks if isinstance(blocks, str) else json.dumps(blocks))
    assert main(["run", "ssca", "--setting", "feature", *TINY, "--feature-blocks", str(path)]) == 2
    err = capsys.readouterr().err
    assert words in err and str(path) in err


def test_feature_blocks_set_the_client_count_and_refuse_a_contradiction(tmp_path, capsys):
    path = tmp_path / "blocks.json"
    path.write_text(json.dumps([list(range(k * 196, (k + 1) * 196)) for k in range(4)]))
    out = tmp_path / "f"
    assert main(["run", "ssca", "--setting", "feature", *TINY, "--feature-blocks", str(path), "--out", str(out)]) == 0
    doc = json.load(open(out / "trace.json"))
    assert doc["config"]["clients"] == 4 and len({m["sender"] for m in doc["ledger_round1"]} - {"server"}) >= 4
    assert main(["run", "ssca", "--setting", "feature", *TINY, "--feature-blocks", str(path), "--clients", "10"]) == 2
    assert "--clients 10 contradicts" in capsys.readouterr().err


# -- 7: refimpl bound mfcgd validates every constant and parameter ---------------------------------

CONSTANTS = {"C_f": 2.3, "C_g": 3.0, "L_f": 1.0, "L_g": 0.0, "sigma": 0.3, "delta_f": 1.0, "delta_g": 1.0, "F_gap": 5.0}


@pytest.mark.parametrize("extra, words", [
    (["--A-rms=-1"], "belong to Theorem 1"),
    (["--theorem", "1", "--A-rms=-1"], "A-rms"),
    (["--T", "0"], "T must be an integer >= 1"),
    (["--theorem", "1", "--rho", "0"], "rho must be finite and > 0"),
    (["--theorem", "1", "--rho=-1"], "rho must be finite and > 0"),
    (["--params", "P:n=-5"], "parameter n must be"),
    (["--params", "P:k=0"], "parameter k must be"),
    (["--params", "P:gamma=-1"], "parameter gamma must be"),
    (["--constants-override", "C_f=-1"], "constant C_f"),
    (["--constants-override", "sigma=nan"], "constant sigma"),
])
def test_bound_refuses_out_of_range_inputs(tmp_path, capsys, extra, words):
    consts = dict(CONSTANTS)
    argv = ["bound", "mfcgd"]
    if extra[0] == "--constants-override":
        k, v = extra[1].split("=")
        consts[k] = float(v)
        extra = []
    (tmp_path / "c.json").write_text(json.dumps(consts).replace("NaN", "NaN"))
    if extra[:1] == ["--params"]:
        k, v = extra[1][2:].split("=")
        params = {"k": 1, "n": 1e6, "c1": 1, "c2": 1, "c3": 1, "gamma": 1, "q": 1, "B": 1, k: float(v)}
        (tmp_path / "p.json").write_text(json.dumps(params))
        extra = ["--params", str(tmp_path / "p.json")]
    assert main([*argv, "--constants", str(tmp_path / "c.json"), *extra]) == 2
    assert words in capsys.readouterr().err


# -- 8, 9: sweeps and reproductions never mix results of different settings ------------------------

SWEEP = 'runner = "ssca"\nseeds = 1\n[fixed]\nrounds = {rounds}\nhidden = 8\nbatch = 10\neval_every = 2\n[grid]\ntau = [0.1]\n'


def test_sweep_with_another_spec_into_the_same_directory_is_refused(tmp_path, capsys):
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    a.write_text(SWEEP.format(rounds=2))
    b.write_text(SWEEP.format(rounds=4))
    out = tmp_path / "s"
    assert main(["sweep", str(a), "--out", str(out), "--workers", "1", "--quiet"]) == 0
    spec_before, tasks_before = (out / "spec.json").read_text(), sorted(os.listdir(out / "tasks"))
    assert main(["sweep", str(b), "--out", str(out), "--workers", "1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "another spec" in err and "fixed.rounds: 2 -> 4" in err and "--overwrite" in err
    assert (out / "spec.json").read_text() == spec_before and sorted(os.listdir(out / "tasks")) == tasks_before
    assert main(["sweep", str(b), "--out", str(out), "--workers", "1", "--quiet", "--overwrite"]) == 0
    assert sorted(os.listdir(out / "tasks")) != tasks_before and len(os.listdir(out / "tasks")) == 1


def test_reproduce_resume_never_reuses_runs_of_other_settings(tmp_path):
    """--resume is the engine's resume: a changed setting is a different task (a new run), never a
    reused one; the old runs are kept and listed as unused."""
    out = tmp_path / "r"
    args = ["reproduce", "mfcgd-rates", "--quick", "--rounds", "40", "--out", str(out), "--quiet", "--workers", "1"]
    assert main(args + ["--seeds", "1"]) == 0
    first = json.load(open(out / "reproduction.json"))
    assert main(args[:4] + ["50"] + args[5:] + ["--seeds", "1", "--resume"]) == 0
    ex = json.load(open(out / "execution.json"))
    assert ex["resumed_runs"] == 0 and ex["new_runs"] == 4
    assert sorted(ex["unused_tasks"]) == sorted(t for r in first["runs"] for t in r["tasks"])
    assert all(r["config"]["steps"] == 50 for r in json.load(open(out / "reproduction.json"))["runs"])
    assert main(args + ["--seeds", "2", "--resume"]) == 0              # same settings, one more seed: resumes
    assert json.load(open(out / "execution.json"))["resumed_runs"] == 4


def test_reproduce_checks_the_data_before_the_first_run(tmp_path, capsys):
    path = _npz(tmp_path)                                          # 200 samples: 20 per client
    os.makedirs(tmp_path / "idx")
    from refimpl.core.data import load_npz_dataset
    ds = load_npz_dataset(path)
    from refimpl.tools.reproduce import _preflight, plan_for
    plan, _ = plan_for("ssca-sample", quick=True, n_train=ds.n_train)
    with pytest.raises(ValueError, match="needs batches of"):
        _preflight(plan, ds)


def test_unwritable_out_for_sweep_and_reproduce(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    spec = tmp_path / "a.toml"
    spec.write_text(SWEEP.format(rounds=2))
    assert main(["sweep", str(spec), "--out", str(tmp_path / "f" / "s"), "--quiet"]) == 2
    assert "cannot write there" in capsys.readouterr().err
    assert main(["reproduce", "mfcgd-rates", "--quick", "--out", str(tmp_path / "f"), "--quiet"]) == 2
    assert "not a directory" in capsys.readouterr().err


# -- messages: one line naming the flag or file, the value and what is allowed ---------------------

@pytest.mark.parametrize("argv, words", [
    (["run", "flexvfl", "--speeds", "constant:a,b", "--rounds", "2"], "--speeds 'constant:a,b': 'a' is not a number"),
    (["run", "flexvfl", "--optimizer", "momentum:abc", "--rounds", "2"], "'abc' is not a number"),
    (["run", "ssca", "--snapshots", "1,abc", "--rounds", "2"], "--snapshots takes a comma-separated list of integers"),
    (["run", "mfcgd", "--rho", "-0.5"], "it is an option of adamfcgd"),
    (["run", "mfcgd", "--theta", "1.5"], "it is an option of adamfcgd"),
    (["run", "adamfcgd", "--theta", "1.5", "--steps", "10"], "theta (ϑ, the adaptive matrix's averaging weight) must be in (0, 1]"),
    (["run", "ssca", "--rho-a", "0", "--rounds", "2"], "rho_a (a1 of ρ_t"),
    (["run", "ssca", "--gamma-a", "0", "--rounds", "2"], "gamma_a (a2 of γ_t"),
    (["run", "ssca", "--partition", "label_skew", "--clients", "3000", "--batch", "1", "--rounds", "2"],
     "at most 2000 clients"),
    (["run", "ssca", "--lam", "0,-1e-3", "--rounds", "2"], "--lam 0,-1e-3: the value -0.001 is not allowed"),
    (["run", "ssca-constrained", "--U", "0.5,-0.1", "--rounds", "2"], "--U 0.5,-0.1: the value -0.1"),
])
def test_one_line_messages(tmp_path, capsys, argv, words):
    out = tmp_path / "never"
    assert main([*argv, "--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()                                        # nothing partial is left


def test_sweep_field_of_the_wrong_type_is_named(tmp_path, capsys):
    spec = tmp_path / "a.toml"
    spec.write_text(SWEEP.format(rounds='"three"'))
    assert main(["sweep", str(spec), "--out", str(tmp_path / "s"), "--quiet"]) == 2
    assert "rounds must be a whole number (an int, not 'three')" in capsys.readouterr().err


def test_interrupt_exits_130_with_a_resume_hint(monkeypatch, capsys, tmp_path):
    import refimpl.tools.reproduce as R

    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(R, "reproduce", interrupted)
    assert main(["reproduce", "mfcgd-rates", "--quick", "--out", str(tmp_path / "r")]) == 130
    err = capsys.readouterr().err
    assert err.strip() == "refimpl: interrupted; finished runs are kept, continue with --resume"


# -- 10: constrained runs say whether the true constraint holds -----------------------------------

def test_constrained_run_reports_the_true_constraint(tmp_path, capsys):
    out = tmp_path / "c"
    assert main(["run", "ssca-constrained", "--rounds", "6", "--hidden", "8", "--batch", "10", "--eval-every", "3",
                 "--U", "1e-6", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "(U 1e-06)" in err and "violated by" in err
    check = json.load(open(out / "trace.json"))["config"]["constraint_check"]
    assert check["holds"] is False and check["violation"] > 0 and check["U"] == 1e-6
    # the warning appears exactly when the surrogate problem was feasible (no slack) at the end
    assert ("surrogate subproblem was feasible" in err) == (check["final_slack"] == 0.0)


# -- also: traces keep the initial and last iterate; crosscheck and sweep-summary say what they did -

def test_trace_keeps_initial_and_last_iterate_by_default(tmp_path):
    out = tmp_path / "t"
    assert main(["run", "ssca", *TINY, "--out", str(out)]) == 0
    assert sorted(Trace.load(out).snapshots) == [0, 3]


def test_crosscheck_says_when_configs_differ_and_when_no_iterate_was_compared(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["run", "ssca", *TINY, "--out", str(a)]) == 0
    assert main(["run", "ssca", *TINY, "--seed", "1", "--out", str(b)]) == 0
    main(["crosscheck", str(a), str(b)])
    assert "seed: 0 vs 1" in capsys.readouterr().err
    for d in (a, b):                                                # drop the iterates: metrics only
        tr = Trace.load(d)
        tr.snapshots = {}
        tr.save(d)
    assert main(["crosscheck", str(a), str(a)]) == 1
    assert "no iterates were compared" in capsys.readouterr().err
    assert main(["crosscheck", str(a), str(a), "--metrics-only"]) == 0


def test_sweep_summary_says_where_it_wrote_and_always_writes_failures_csv(tmp_path, capsys):
    spec = tmp_path / "a.toml"
    spec.write_text(SWEEP.format(rounds=2))
    out = tmp_path / "s"
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "1", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["sweep-summary", str(out)]) == 0
    err = capsys.readouterr().err
    assert "summary.csv" in err and "curves.csv" in err and "failures.csv" in err
    assert (out / "failures.csv").read_text().strip() == "task,cell,seed,error"


def test_flower_engine_without_the_extra_says_how_to_install(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "flwr", None)          # as if flwr were not installed
    monkeypatch.setitem(sys.modules, "flwr.simulation", None)
    from refimpl.cli import main
    from refimpl.ssca.flower import INSTALL_HINT, _flwr
    with pytest.raises(ValueError, match=r"pip install 'refimpl\[flower\]'"):
        _flwr()
    assert "refimpl[flower]" in INSTALL_HINT
    assert main(["run", "ssca", "--engine", "flower", "--rounds", "2", "--quiet"]) == 2


def test_overwrite_leaves_only_the_new_result(tmp_path):
    """--overwrite over a λ study: the old lam=* runs and the trade-off table go; a file refimpl
    did not write stays."""
    out = tmp_path / "o"
    assert main(["run", "ssca", *TINY, "--lam", "0.1,0.2", "--out", str(out)]) == 0
    assert (out / "lam=0.1" / "trace.json").exists() and (out / "tradeoff.csv").exists()
    (out / "notes.txt").write_text("mine")
    assert main(["run", "ssca", *TINY, "--out", str(out), "--overwrite"]) == 0
    names = set(os.listdir(out))
    assert not any(n.startswith("lam=") for n in names) and "tradeoff.csv" not in names
    assert {"trace.json", "trace.npz", "notes.txt"} <= names
    # and a study over a single run's files: the single run's trace goes
    assert main(["run", "ssca", *TINY, "--lam", "0.1,0.3", "--out", str(out), "--overwrite"]) == 0
    names = set(os.listdir(out))
    assert "trace.json" not in names and {"lam=0.1", "lam=0.3", "tradeoff.csv"} <= names and "lam=0.2" not in names


def test_preset_conflicts_from_a_config_file_and_abbreviations_are_errors(tmp_path, capsys):
    """--preset authors over a value the user gave in --config is an error naming both; an
    abbreviated flag (argparse's prefix matching) is refused, never read as the full one."""
    (tmp_path / "run.toml").write_text("tau = 0.5\n")
    assert main(["run", "ssca", *TINY, "--preset", "authors", "--config", str(tmp_path / "run.toml")]) == 2
    err = capsys.readouterr().err
    assert "sets tau = 0.5" in err and "--preset authors (tau = 0.2)" in err
    # the preset's own value in the file is no conflict
    (tmp_path / "same.toml").write_text("tau = 0.2\n")
    assert main(["run", "ssca", *TINY, "--preset", "authors", "--config", str(tmp_path / "same.toml")]) == 0
    for abbrev in (["--ta", "0.5"], ["--activ", "swish"]):
        with pytest.raises(SystemExit) as exc:
            main(["run", "ssca", *TINY, "--preset", "authors", *abbrev])
        assert exc.value.code == 2
        assert "unrecognized arguments" in capsys.readouterr().err


# -- accepted nonsense, now one-line errors ---------------------------------------------------------

def _two_traces(tmp_path):
    a = tmp_path / "a"
    assert main(["run", "ssca", *TINY, "--snapshots", "0,3", "--out", str(a)]) == 0
    return str(a)


@pytest.mark.parametrize("argv, words", [
    (["run", "flexvfl", "--time-budget", "-5", "--rounds", "2"], "--time-budget must be a finite simulated time > 0"),
    (["run", "flexvfl", "--time-budget", "0", "--rounds", "2"], "got 0.0"),
    (["run", "async-vfl", "--time-budget", "nan"], "--time-budget must be a finite"),
    (["run", "flexvfl", "--target", "2", "--rounds", "2"], "--target is a test accuracy in (0, 1], got 2.0"),
    (["run", "ssca", "--rounds", "2", "--snapshots", "5"], "--snapshots 5: 5 is not a round of this run (allowed: "
                                                           "whole numbers 0..2)"),
    (["run", "ssca", "--rounds", "2", "--snapshots=-1"], "-1 is not a round"),
    (["run", "ssca", "--rounds", "2", "--scheduler", "tcp://localhost:8786"], None),   # run takes no scheduler
    (["sweep", "SPEC", "--out", "OUT", "--scheduler", "tcp://localhost:8786"], "needs --executor dask"),
])
def test_nonsense_is_refused_in_one_line(tmp_path, capsys, argv, words):
    spec = tmp_path / "s.toml"
    spec.write_text(SWEEP.format(rounds=2))
    argv = [str(spec) if a == "SPEC" else str(tmp_path / "o") if a == "OUT" else a for a in argv]
    if words is None:
        with pytest.raises(SystemExit):
            main([*argv, "--quiet"])
        return
    assert main([*argv, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "o" / "tasks").exists() or not os.listdir(tmp_path / "o" / "tasks")


@pytest.mark.parametrize("tol", ["-1", "nan"])
def test_crosscheck_refuses_a_tolerance_that_is_not_a_distance(tmp_path, capsys, tol):
    a = _two_traces(tmp_path)
    assert main(["crosscheck", a, a, "--tol", tol]) == 2
    assert "--tol must be a finite number >= 0" in capsys.readouterr().err


def test_sweep_summary_top_and_metric_are_checked(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text(SWEEP.format(rounds=2))
    out = tmp_path / "o"
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "1", "--quiet"]) == 0
    assert main(["sweep-summary", str(out), "--top", "-1"]) == 2
    assert "--top must be >= 1" in capsys.readouterr().err
    assert main(["sweep-summary", str(out), "--metric", "nope"]) == 2
    err = capsys.readouterr().err
    assert "--metric nope: not a metric of these runs" in err and "train_cost" in err
    assert main(["sweep-summary", str(out), "--criterion", "final:nope"]) == 2
    assert "'nope' is not a metric of these runs" in capsys.readouterr().err
    assert main(["sweep-summary", str(out), "--criterion", "first:train_cost<=abc"]) == 2
    assert "'abc' after <= is not a number" in capsys.readouterr().err


@pytest.mark.parametrize("text, words", [
    ('runner = "ssca"\nseeds = true\n', "seeds must be a positive count or a list of integers, got True"),
    ('runner = "ssca"\nseeds = [-1]\n', "seeds must be whole numbers >= 0, got [-1]"),
    ('runner = "ssca"\nfixed = 3\n', "[fixed] must be a table of settings (name = value), got 3"),
    ('runner = "ssca"\n[grid]\ntau = [0.1, "x"]\n', "tau must be a number, got 'x'"),
    ('runner = "ssca"\n[grid]\ntau = { start = 0.1, stop = 0.2, num = "three" }\n', "num must be a whole number"),
    ('runner = "ssca"\n[grid]\ntau = { start = 0.0, stop = 0.2, num = 3, log = true }\n',
     "a log range needs start and stop > 0, got 0 to 0.2"),
    ('runner = "ssca"\n[grid]\ntau = { start = 0.1, stop = 0.2, num = 2.7 }\n', "num must be a whole number"),
    ('runner = "ssca"\n[grid]\ntau = { start = 0.1, stop = 0.2, num = 10000 }\nlam = { start = 0.1, stop = 1, '
     'num = 1000 }\n', "the grid has 10,000,000 cells (tau: 10000 × lam: 1000), above the limit of 10,000"),
])
def test_sweep_spec_nonsense_is_refused_before_anything_runs(tmp_path, capsys, text, words):
    import time
    spec = tmp_path / "s.toml"
    spec.write_text(text)
    t0 = time.time()
    assert main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert time.time() - t0 < 10
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err
    if "cells" in words:
        assert "--max-cells 10000000" in err


def test_npz_n_classes_must_be_a_whole_number(tmp_path, capsys):
    from refimpl.core.data import load_embedded_mnist
    d = load_embedded_mnist()
    for bad in (10.7, [10, 10], "ten"):
        p = tmp_path / "d.npz"
        np.savez(p, X_train=d.X_train[:50], y_train=d.y_train[:50], X_test=d.X_test[:20], y_test=d.y_test[:20],
                 n_classes=np.array(bad))
        assert main(["run", "ssca", *TINY, "--data", str(p)]) == 2
        assert "n_classes must be one whole number >= 1" in capsys.readouterr().err


def test_a_full_disk_leaves_the_old_trace_whole_and_says_what_was_needed(tmp_path, capsys, monkeypatch):
    import builtins
    import errno
    from refimpl.core import trace as T
    out = tmp_path / "o"
    assert main(["run", "ssca", *TINY, "--out", str(out)]) == 0
    before = {n: (out / n).read_bytes() for n in ("trace.json", "trace.npz")}
    real_open = builtins.open

    class Full:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, data):
            self.f.write(bytes(data[:10]))
            raise OSError(errno.ENOSPC, "No space left on device")

    def full_open(path, mode="r", *a, **kw):
        f = real_open(path, mode, *a, **kw)
        return Full(f) if str(path).endswith("trace.json.tmp") else f
    monkeypatch.setattr(T, "open", full_open, raising=False)
    assert main(["run", "ssca", *TINY, "--seed", "3", "--out", str(out), "--overwrite"]) == 2
    err = capsys.readouterr().err
    assert "no space left on the device" in err and "MB, " in err and "nothing was replaced" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert {n: (out / n).read_bytes() for n in ("trace.json", "trace.npz")} == before
    assert not [n for n in os.listdir(out) if n.endswith(".tmp")]


@pytest.mark.parametrize("argv, words", [
    (["run", "ssca", "--config", "DIR", "--rounds", "2"], "DIR: Is a directory"),
    (["run", "ssca", "--data", "DIR", "--rounds", "2"], "DIR: Is a directory"),
    (["run", "ssca", "--config", "CFG:rounds = 'three'"], "rounds must be a whole number (an int, not 'three')"),
    (["run", "ssca", "--config", "CFG:bias = 'yes'", "--rounds", "2"], "bias must be true or false, got 'yes'"),
    (["run", "ssca", "--config", "CFG:seed = -5", "--rounds", "2"], "seed must be a whole number >= 0, got -5"),
    (["run", "ssca", "--seed", "-5", "--rounds", "2"], "--seed must be a whole number >= 0, got -5"),
    (["check-schedule", "--rho-a", "0", "--rho-alpha", "0.5", "--gamma-alpha", "0.6"], "--rho-a 0 / --rho-alpha 0.5"),
    (["check-schedule", "--gamma-a", "0", "--rho-alpha", "0.5", "--gamma-alpha", "0.6"], "--gamma-a 0"),
    (["run", "ssca", "--rounds", "1000000000"], "would need 7,450.6 GiB of memory"),
    (["compare", "vfl", "--targets", "abc"], "--targets takes a number"),
    (["reproduce", "mfcgd-rates", "--rounds", "-5", "--out", "OUT"], "--rounds must be >= 1, got -5"),
    (["run", "ssca", "--rounds", "2", "--out", "LOOP"], "is a symbolic link to nothing"),
    (["run", "ssca", "--rounds", "2", "--out", "DANGLING"], "is a symbolic link to nothing"),
    (["report", "--quick", "--out", "FILE"], "File exists"),
])
def test_what_gave_a_traceback_is_one_line(tmp_path, capsys, argv, words):
    (tmp_path / "d").mkdir()
    (tmp_path / "f.txt").write_text("x")
    os.symlink(tmp_path / "l2", tmp_path / "l1")
    os.symlink(tmp_path / "l1", tmp_path / "l2")
    os.symlink(tmp_path / "nowhere" / "x", tmp_path / "dang")
    subs = {"DIR": str(tmp_path / "d"), "OUT": str(tmp_path / "o"), "LOOP": str(tmp_path / "l1"),
            "DANGLING": str(tmp_path / "dang"), "FILE": str(tmp_path / "f.txt")}
    out = []
    for a in argv:
        if a.startswith("CFG:"):
            (tmp_path / "c.toml").write_text(a[4:].replace("'", '"') + "\n")
            a = str(tmp_path / "c.toml")
        out.append(subs.get(a, a))
    assert main([*out] + ([] if out[0] == "check-schedule" else ["--quiet"])) == 2
    err = capsys.readouterr().err
    assert words.replace("DIR", str(tmp_path / "d")) in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_a_damaged_trace_or_task_file_is_named(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["run", "ssca", *TINY, "--out", str(out)]) == 0
    (out / "trace.json").write_text("{bad")
    assert main(["crosscheck", str(out), str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{out / 'trace.json'}: not valid JSON" in err and "Traceback" not in err
    spec = tmp_path / "s.toml"
    spec.write_text(SWEEP.format(rounds=2))
    sw = tmp_path / "s"
    assert main(["sweep", str(spec), "--out", str(sw), "--workers", "1", "--quiet"]) == 0
    task = next(p for p in (sw / "tasks").iterdir() if not p.name.startswith("."))
    (task / "task.json").write_text("")
    assert main(["sweep-summary", str(sw)]) == 2
    assert "task.json: not valid JSON" in capsys.readouterr().err


def test_data_and_replay_files_that_are_not_what_they_claim(tmp_path, capsys):
    from refimpl.core.data import load_embedded_mnist
    d = load_embedded_mnist()
    base = dict(X_train=d.X_train[:50], y_train=d.y_train[:50], X_test=d.X_test[:20], y_test=d.y_test[:20])
    (tmp_path / "t.txt").write_text("hello")
    cases = [
        (dict(base, X_train=base["X_train"].astype(complex)), [], "X_train has dtype complex128; features must be "
                                                                  "real numbers"),
        (dict(base, y_train=np.where(np.arange(50) == 0, 2.5, base["y_train"] + 1), y_test=base["y_test"] + 1),
         ["--label-base", "1"], "y_train[0] = 2.5 in the file (1.5 after --label-base 1)"),
        (dict(base, y_train=np.where(np.arange(50) == 0, 10 ** 12, base["y_train"])), [],
         "is not a class index (at most 100,000 classes)"),
        (dict(base, y_train=base["y_train"] > 4), [], "y_train must hold integer class indices, got dtype bool"),
    ]
    for arrays, extra, words in cases:
        np.savez(tmp_path / "d.npz", **arrays)
        assert main(["run", "ssca", "--rounds", "2", "--batch", "2", "--clients", "2", "--quiet",
                     "--data", str(tmp_path / "d.npz"), *extra]) == 2
        err = capsys.readouterr().err
        assert words in err and "Traceback" not in err, words
    for flag in ("--init", "--batches"):
        assert main(["run", "ssca", *TINY, flag, str(tmp_path / "t.txt")]) == 2
        assert f"{flag} {tmp_path / 't.txt'}: not a .npy/.npz/.mat file" in capsys.readouterr().err


def test_mat_inputs_that_hold_no_matrix_are_named(tmp_path, capsys):
    import scipy.io as sio
    out = tmp_path / "o"
    assert main(["run", "ssca", *TINY, "--out", str(out)]) == 0
    sio.savemat(tmp_path / "empty.mat", {})
    sio.savemat(tmp_path / "text.mat", {"Theta1a_3": "abc", "Theta2a_3": np.ones((2, 2))})
    sio.savemat(tmp_path / "cell.mat", {"Theta1a_3": np.array([np.ones(2), np.ones(3)], dtype=object),
                                        "Theta2a_3": np.ones((2, 2))})
    sio.savemat(tmp_path / "plain.mat", {"Theta1a": np.ones((2, 2)), "Theta2a": np.ones((2, 2))})
    for name, extra, words in [
            ("empty.mat", [], "the .mat file holds no variables"),
            ("text.mat", [], "variable 'Theta1a_3' holds a string; expected a real numeric matrix"),
            ("cell.mat", [], "variable 'Theta1a_3' holds a cell array or struct"),
            ("plain.mat", ["--round", "-1"], "--round -1: a round is an integer ≥ 0")]:
        assert main(["crosscheck", str(out), str(tmp_path / name), *extra]) == 2, name
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1 and "Traceback" not in err, (name, err)


def test_nested_partition_lists_and_overflowing_constants_are_one_line(tmp_path, capsys):
    (tmp_path / "p.json").write_text("[[0, 1], [2, [3, 4]]]")
    assert main(["partition-stats", "--partition-file", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert "client 1, entry 1 is a list ([3, 4]); each client is a flat list of integer sample ids" in err
    (tmp_path / "c.json").write_text(json.dumps(dict(CONSTANTS, L_f=1e308)))
    assert main(["bound", "mfcgd", "--constants", str(tmp_path / "c.json")]) == 2
    err = capsys.readouterr().err
    assert "overflow the float range" in err and "L_f = 1e+308" in err and "Traceback" not in err
    # an overflow after the derived constants were computed still names a key of the file (L_f), never a
    # derived one (L_fg = L_f·C_g = 3e150 is larger, and is no constant the user wrote)
    (tmp_path / "c.json").write_text(json.dumps(dict(CONSTANTS, L_f=1e150)))
    assert main(["bound", "mfcgd", "--constants", str(tmp_path / "c.json")]) == 2
    err = capsys.readouterr().err
    assert "largest: L_f = 1e+150" in err and "L_fg" not in err, err
    (tmp_path / "c.json").write_text(json.dumps(CONSTANTS))
    assert main(["bound", "mfcgd", "--constants", str(tmp_path / "c.json"), "--T", str(10 ** 21)]) == 2
    assert "beyond 2^53" in capsys.readouterr().err


def test_cpu_trace_outside_the_unit_interval_runs_clipped_with_a_note(tmp_path, capsys):
    cpu = np.random.default_rng(0).uniform(-0.3, 1.3, (6, 8))
    np.savetxt(tmp_path / "cpu.csv", cpu, delimiter=",")
    assert main(["run", "flexvfl", "--speeds", f"cputrace:{tmp_path / 'cpu.csv'}", "--rounds", "2",
                 "--out", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    n_out = int(np.sum((cpu < 0) | (cpu > 1)))
    assert f"values outside [0, 1] clipped" in err and f"{n_out} of 48" in err
    assert "[flexvfl] final: 2 rounds, simulated time" in err and "test accuracy" in err
    assert json.load(open(tmp_path / "o" / "trace.json"))["config"]["speeds_note"].startswith("CPU trace")


@pytest.mark.parametrize("times, key", [
    (np.ones((4, 3)), "expected (rounds, 5)"),                          # wrong number of parties
    (np.ones((2, 5)), "2 rows of step times, but the run needs 4"),     # shorter than rounds + 1
    (np.where(np.eye(4, 5) > 0, 0.0, 1.0), "step time of party 0 in row 0 is 0.0"),
    (np.full((4, 5), np.nan), "holds nan at (0, 0)"),
    (np.ones((4, 5), dtype=complex), "dtype complex128"),
])
def test_bad_recorded_step_times_are_one_line(tmp_path, capsys, times, key):
    np.save(tmp_path / "st.npy", times)
    assert main(["run", "flexvfl", "--rounds", "3", "--speeds", f"steptimes:{tmp_path / 'st.npy'}", "--quiet",
                 "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert key in err and "steptimes:" in err and "Traceback" not in err, err


def test_damaged_files_given_to_the_cross_check_tools_are_one_line(tmp_path, capsys):
    """A truncated .npz, a 0-byte .mat and a snapshot key without a round number, to crosscheck and
    diagnose: one line naming the file (and the key), exit 2, no traceback."""
    out = tmp_path / "o"
    assert main(["run", "ssca", *TINY, "--dump-rounds", "1", "--out", str(out)]) == 0
    (tmp_path / "trunc.npz").write_bytes((out / "trace.npz").read_bytes()[:100])
    (tmp_path / "empty.mat").write_bytes(b"")
    (tmp_path / "final").mkdir()
    np.savez(tmp_path / "final" / "trace.npz", W1_final=np.ones((2, 2)), W2_final=np.ones((2, 2)))
    cases = [(["crosscheck", str(out), str(tmp_path / "trunc.npz")], "trunc.npz: not a readable trace"),
             (["diagnose", str(out), str(tmp_path / "trunc.npz")], "trunc.npz: not a readable .npy/.npz/.mat file"),
             (["crosscheck", str(out), str(tmp_path / "empty.mat")], "empty.mat: not a readable .mat file"),
             (["diagnose", str(out), str(tmp_path / "empty.mat")], "empty.mat: not a readable .mat file"),
             (["crosscheck", str(out), str(tmp_path / "final")], "array 'W1_final': an iterate snapshot is named")]
    capsys.readouterr()
    for argv, words in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1 and "Traceback" not in err, (argv, err)


def test_a_damaged_vectors_manifest_and_an_empty_adapter_name_are_one_line(tmp_path, monkeypatch):
    from refimpl.conformance import harness
    from refimpl.conformance.vectors import load
    assert main(["vectors", "export", str(tmp_path / "v"), "--paper", "core", "--quiet"]) == 0
    (tmp_path / "v" / "manifest.json").write_text("{bad")
    with pytest.raises(ValueError, match=r"manifest.json: a damaged manifest .*export the vectors again"):
        load(str(tmp_path / "v"))
    (tmp_path / "v" / "manifest.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="a damaged manifest"):
        load(str(tmp_path / "v"))
    monkeypatch.setenv(harness.IMPL_ENV, "")
    with pytest.raises(RuntimeError, match="REFIMPL_IMPL is set but empty"):
        harness.adapter_module()


def test_bound_says_when_it_is_vacuous_and_refuses_a_flag_given_twice(tmp_path, capsys):
    import json
    c = {"C_f": 3.0, "C_g": 1.0, "L_f": 1.0, "L_g": 1.0, "sigma": 0.1, "delta_f": 0.0, "delta_g": 0.0, "F_gap": 1.0}
    (tmp_path / "c.json").write_text(json.dumps(c))
    capsys.readouterr()
    assert main(["bound", "mfcgd", "--constants", str(tmp_path / "c.json")]) == 0
    out = capsys.readouterr().out
    doc = json.loads(out[out.index("\n{\n") + 1:out.rindex("\n}") + 2])
    assert doc["cap"] == 3.0 == c["C_f"] * c["C_g"]                   # the cap by hand
    assert doc["right_hand_side"] >= 3.0 and doc["vacuous"] is True
    assert out.strip().splitlines()[-1].startswith("verdict: vacuous: the right side")
    T0 = doc["informative_from_T"]
    assert T0 > 10000 and doc["tight_condition"]
    # the smallest informative T: below the cap there, not one step earlier (same parameters)
    (tmp_path / "p.json").write_text(json.dumps(doc["params"] | {"q": int(doc["params"]["q"])}))
    for T, vac in ((T0, False), (T0 - 1, True)):
        assert main(["bound", "mfcgd", "--constants", str(tmp_path / "c.json"), "--params", str(tmp_path / "p.json"),
                     "--T", str(T)]) == 0
        out = capsys.readouterr().out
        assert json.loads(out[out.index("\n{\n") + 1:out.rindex("\n}") + 2])["vacuous"] is vac, T
    # q in the parameters file and on the command line, different: refused naming both
    assert main(["bound", "mfcgd", "--constants", str(tmp_path / "c.json"), "--params", str(tmp_path / "p.json"),
                 "--q", "7"]) == 2
    assert f"q given twice: --q 7 and q = {int(doc['params']['q'])} in --params" in capsys.readouterr().err
    # help: defaults and every constant defined
    with pytest.raises(SystemExit):
        main(["bound", "--help"])
    helptext = capsys.readouterr().out
    assert "(default: 10000)" in helptext and "(default: 2)" in helptext and "default 10" in helptext
    for name in ("C_f, C_g", "L_f, L_g", "sigma", "delta_f", "delta_g", "F_gap"):
        assert f"  {name}" in helptext, name


def test_check_schedule_takes_a_sequence_of_ones_own(tmp_path, capsys):
    """A .npy of values or an expression in t: a verdict per condition, the sequence named as
    what it is (not 'a power law'), the first value outside (0, 1] named."""
    t = np.arange(1, 2001, dtype=float)
    np.save(tmp_path / "g.npy", np.r_[[1.2], 0.5 * t[1:] ** -0.8])
    assert main(["check-schedule", "--rho", "np.minimum(1, 2 / t**0.6)", "--gamma", str(tmp_path / "g.npy")]) == 1
    out = capsys.readouterr().out
    assert "sequence of 2000 values" in out and "power law" not in out
    assert "gamma_in_(0,1]         NOT MET" in out and "gamma_1 = 1.2 is outside (0, 1]" in out
    assert "(4) sum_rho_sq_finite      met" in out and out.strip().endswith("verdict: not met: gamma_in_(0,1]")
    assert main(["check-schedule", "--rho-alpha", "0.55", "--gamma", "0.9 * t**-0.9"]) == 0
    assert "verdict: every condition of (4) and (6) is met" in capsys.readouterr().out
    # γ decaying no faster than ρ: the ratio condition fails
    assert main(["check-schedule", "--rho", "t**-0.9", "--gamma", "0.5 * t**-0.6"]) == 1
    assert "gamma_over_rho_to_0    NOT MET" in capsys.readouterr().out
    for argv, words in ((["--rho-alpha", "0.5", "--gamma", "foo(t)"], "not an expression in t"),
                        (["--rho-alpha", "0.5", "--gamma", "t", "--gamma-alpha", "0.6"], "both give gamma_t"),
                        (["--rho-alpha", "0.5"], "give gamma_t as a power law")):
        assert main(["check-schedule", *argv]) == 2, argv
        assert words in capsys.readouterr().err, argv


def test_vectors_export_overwrite_leaves_only_what_the_manifest_lists(tmp_path):
    import json
    from refimpl.conformance.vectors import load
    d = tmp_path / "v"
    assert main(["vectors", "export", str(d), "--quiet"]) == 0
    everything = set(json.load(open(d / "manifest.json"))["files"])
    assert main(["vectors", "export", str(d), "--paper", "core", "--overwrite", "--quiet"]) == 0
    listed = set(json.load(open(d / "manifest.json"))["files"])
    assert listed < everything
    assert {p.name for p in d.iterdir()} == listed | {"manifest.json"}       # no stale file left
    assert set(load(str(d))) <= {n[:-len(".json")] for n in listed}
    (d / "extra.json").write_text("{}")
    (d / "notes.txt").write_text("mine")                                      # not a kind an export writes
    with pytest.raises(ValueError, match=r"extra.json not listed in manifest.json"):
        load(str(d))
    assert main(["vectors", "export", str(d), "--paper", "core", "--overwrite", "--quiet"]) == 0
    assert not (d / "extra.json").exists() and (d / "notes.txt").exists()


# ----------------------------------------------------------------------------- nothing cast, nothing cut short silently

@pytest.mark.parametrize("kind,word", [(complex, "complex"), (bool, "boolean"), (str, "text")])
def test_an_initial_point_of_another_kind_is_refused_not_cast(tmp_path, capsys, kind, word):
    rng = np.random.default_rng(0)
    W1, W2 = rng.standard_normal((8, 784)) * 0.01, rng.standard_normal((10, 8))
    np.savez(tmp_path / "init.npz", W1=(W1 > 0) if kind is bool else W1.astype(kind), W2=W2)
    assert main(["run", "ssca", "--rounds", "1", "--hidden", "8", "--init", str(tmp_path / "init.npz"), "--quiet"]) == 2
    assert f"W1 holds {word} values" in capsys.readouterr().err


def test_a_sample_repeated_inside_one_ssca_mini_batch_is_refused(tmp_path, capsys):
    b = np.arange(3 * 10 * 5).reshape(3, 10, 5) % 400 + np.arange(10)[None, :, None] * 400
    b[1, 2, 4] = b[1, 2, 0]
    np.save(tmp_path / "b.npy", b)
    assert main(["run", "ssca", "--rounds", "3", "--batch", "5", "--hidden", "8", "--batches", str(tmp_path / "b.npy"),
                 "--quiet"]) == 2
    assert "round 2, client 2, sample" in capsys.readouterr().err


def test_an_mfcgd_initial_point_that_is_a_matrix_is_refused(tmp_path, capsys):
    np.savez(tmp_path / "x.npz", x1=np.zeros((4, 5)))
    assert main(["run", "mfcgd", "--steps", "5", "--init", str(tmp_path / "x.npz"), "--quiet"]) == 2
    assert "has shape (4, 5); expected (20,)" in capsys.readouterr().err
    np.savez(tmp_path / "col.npz", x1=np.zeros((20, 1)))           # a MATLAB column vector is a point
    assert main(["run", "mfcgd", "--steps", "5", "--init", str(tmp_path / "col.npz"), "--quiet"]) == 0


def test_diagnose_refuses_a_complex_dump_and_checks_its_report_first(tmp_path, capsys):
    base = ["run", "pbcd", "--rounds", "2", "--dump-rounds", "all", "--quiet"]
    assert main([*base, "--out", str(tmp_path / "ours")]) == 0
    dump = flat_dump(tmp_path / "ours")
    np.savez(tmp_path / "same.npz", **dump)
    np.savez(tmp_path / "complex.npz", **{**dump, "r1_H": dump["r1_H"].astype(complex)})
    capsys.readouterr()
    assert main(["diagnose", str(tmp_path / "ours"), str(tmp_path / "complex.npz")]) == 2
    assert "r1_H holds complex values" in capsys.readouterr().err
    (tmp_path / "afile").write_text("")
    assert main(["diagnose", str(tmp_path / "ours"), str(tmp_path / "same.npz"), "--report", str(tmp_path / "afile")]) == 2
    assert "--report" in capsys.readouterr().err
    rep = ["diagnose", str(tmp_path / "ours"), str(tmp_path / "same.npz"), "--report", str(tmp_path / "rep")]
    assert main(rep) == 0
    assert main(rep) == 2 and "already holds a result" in capsys.readouterr().err
    assert main([*rep, "--overwrite"]) == 0


def test_an_async_replay_shorter_than_the_budget_says_so_and_exits_3(tmp_path, capsys):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "b.npy", np.array([rng.choice(4000, 64, replace=False) for _ in range(5)]))
    assert main(["run", "async-vfl", "--rounds", "30", "--time-budget", "20", "--batches", str(tmp_path / "b.npy"),
                 "--quiet"]) == 3
    assert "5 events are used up" in capsys.readouterr().err


def test_text_and_pickled_files_and_another_papers_dump_are_named(tmp_path, capsys):
    (tmp_path / "ids.txt").write_text("1 2 3\n")
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    assert main(["run", "ssca", *TINY, "--batches", str(tmp_path / "ids.txt")]) == 2
    err = capsys.readouterr().err
    assert "not a .npy/.npz/.mat file (it starts like text" in err and "allow_pickle" not in err
    assert main(["run", "ssca", *TINY, "--batches", str(tmp_path / "obj.npy")]) == 2
    err = capsys.readouterr().err
    assert "holds pickled Python objects (an object array), which refimpl never loads" in err
    assert main(["run", "ssca", *TINY, "--dump-rounds", "all", "--out", str(tmp_path / "s")]) == 0
    assert main(["run", "pbcd", "--rounds", "2", "--dump-rounds", "all", "--quiet", "--out", str(tmp_path / "v")]) == 0
    capsys.readouterr()
    assert main(["diagnose", str(tmp_path / "s"), str(tmp_path / "v")]) == 2
    assert "THEIRS is a dump of Flex-VFL (it holds theta0" in capsys.readouterr().err


def test_text_labels_with_label_base_and_a_negative_problem_seed_are_named(tmp_path, capsys):
    from refimpl.core.data import mnist_5k
    d = mnist_5k()
    np.savez(tmp_path / "s.npz", X_train=d.X_train[:100], y_train=np.array([str(v + 1) for v in d.y_train[:100]]),
             X_test=d.X_test[:20], y_test=np.array([str(v + 1) for v in d.y_test[:20]]))
    assert main(["run", "ssca", "--rounds", "2", "--hidden", "8", "--batch", "2", "--clients", "2", "--quiet",
                 "--data", str(tmp_path / "s.npz"), "--label-base", "1"]) == 2
    assert "y_train must hold integer class indices, got dtype <U2" in capsys.readouterr().err
    assert main(["run", "mfcgd", "--problem", "maml", "--steps", "3", "--problem-seed", "-1", "--quiet"]) == 2
    assert "--problem-seed must be a whole number >= 0, got -1" in capsys.readouterr().err


def _number_options():
    """(algorithm, flag) for every option of ``refimpl run`` that takes a float."""
    from refimpl.cli import build_parser
    from refimpl.cli.common import RUN_PARSERS
    build_parser()
    return [(alg, a.option_strings[0]) for alg, p in sorted(RUN_PARSERS.items()) for a in p._actions
            if a.option_strings and a.type is float and not a.choices]


@pytest.mark.parametrize("alg, flag", _number_options())
def test_every_number_option_refuses_nan_naming_its_flag(alg, flag, capsys):
    """Every float option of every algorithm (the common check of the run options): ``nan`` is
    refused in one line that names the flag, before any work. Before, 60 of these 121 either named
    an internal name (``n_clients`` for --parties, ``divergence cost_factor``, ``power-law exponent
    alpha`` for both --rho-alpha and --gamma-alpha), crashed with a traceback inside a Numba kernel
    (ZeroDivisionError: ``run scgd --eta nan``, ``run mfcgd --heterogeneity nan``) or ran
    (``--max-dump-gb nan``, ``--index-base nan``)."""
    code = main(["run", alg, flag, "nan", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("refimpl: error: ") and err.count("\n") == 1, err[-400:]
    assert flag in err, err


@pytest.mark.parametrize("argv, named", [
    (["run", "flexvfl", "--parties", "0"], "--parties: parties must be a positive integer"),
    (["run", "ssca", "--gamma-alpha", "-1"], "--gamma-alpha: gamma_alpha"),
    (["run", "ssca", "--rho-alpha", "-1"], "--rho-alpha: rho_alpha"),
    (["run", "sgd", "--lr-decay", "-1"], "--lr-decay: lr_decay"),
    (["run", "flexvfl", "--eta", "0.1,-1"], "--eta: eta (the learning rates η_k) must be finite and > 0, got -1.0"),
    (["run", "adamfcgd", "--rho", "0"], "--rho: rho (ρ of the adaptive matrix"),
    (["run", "adamfcgd", "--theta", "1.5"], "--theta: theta (ϑ"),
    (["run", "mfcgd", "--diverge-sq-norm", "-1"], "--diverge-sq-norm: diverge_sq_norm must be a finite number > 0"),
    (["run", "ssca", "--index-base", "2"], "--index-base must be 0 or 1"),
    (["run", "ssca", "--rounds", "2", "--tau", "-1"], "--tau: tau must be finite and > 0"),
])
def test_a_refused_value_names_the_flag_that_set_it(argv, named, capsys):
    """The library's checks name a Config field; the command line puts the flag that sets it in
    front (``name_the_flag``), so the error says which option to change."""
    assert main(argv + ["--quiet"]) == 2
    assert named in capsys.readouterr().err


def test_eta_is_refused_where_it_changes_nothing(capsys, tmp_path):
    """Adaptive Flex-VFL takes every rate from --A (both rules): a run with --eta 0.05 and one with
    --eta 0.5 were the same to the bit, so a given --eta is refused, saying where the rates come
    from; Flex-VFL still takes it."""
    assert main(["run", "adaptive-flexvfl", "--eta", "0.5", "--rounds", "2", "--quiet"]) == 2
    assert "--eta changes nothing in an adaptive-flexvfl run" in capsys.readouterr().err
    assert main(["run", "flexvfl", "--eta", "0.5", "--rounds", "2", "--quiet"]) == 0


def test_data_is_refused_where_no_problem_reads_it(capsys):
    """MFCGD's synthetic, nonlinear and meta-learning problems are drawn from --seed: --data-dir for
    them was ignored without a word; it is refused, naming the one problem that reads data."""
    assert main(["run", "mfcgd", "--data-dir", "/nonexistent", "--steps", "20", "--quiet"]) == 2
    assert "--data-dir change(s) nothing for --problem synthetic: only --problem drfl" in capsys.readouterr().err
