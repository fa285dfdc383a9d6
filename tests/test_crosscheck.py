"""crosscheck on traces another implementation wrote: metrics aligned by their round arrays, no
traceback on incomplete files, an off-by-one snapshot convention named."""
import numpy as np

from refimpl.cli import main
from refimpl.core.trace import Trace

RUN = ["run", "ssca", "--rounds", "6", "--hidden", "8", "--batch", "10", "--eval-every", "1", "--snapshots",
       "0,1,2,3,4,5,6", "--quiet"]


def _write(path, tr, metrics, snapshots):
    arrays = {f"metric_{k}": np.asarray(v, dtype=float) for k, v in metrics.items()}
    for r, (W1, W2) in snapshots.items():
        arrays[f"W1_{r}"], arrays[f"W2_{r}"] = W1, W2
    path.mkdir()
    np.savez(path / "trace.npz", **arrays)


def test_a_metric_recorded_less_often_is_not_paired_with_the_wrong_rounds(tmp_path, capsys):
    assert main([*RUN, "--out", str(tmp_path / "ours")]) == 0
    tr = Trace.load(tmp_path / "ours")
    m = {k: list(v) for k, v in tr.metrics.items()}
    theirs = dict(m, train_cost=m["train_cost"][::3])            # every 3rd round, one value per evaluation
    _write(tmp_path / "theirs", tr, theirs, tr.snapshots)
    capsys.readouterr()
    # a metric that cannot be aligned is not compared: named, exit 1 unless allowed
    assert main(["crosscheck", str(tmp_path / "ours"), str(tmp_path / "theirs"), "--tol", "1e-12"]) == 1
    out = capsys.readouterr().out
    assert "DIFFERS" not in out and "train_cost" in out and "not compared" in out and "3 values for 7 rounds" in out
    assert "compared 14 snapshot arrays and 4 metrics" in out
    assert main(["crosscheck", str(tmp_path / "ours"), str(tmp_path / "theirs"), "--tol", "1e-12",
                 "--allow-missing", "train_cost"]) == 0
    # swapped: no traceback either way
    assert main(["crosscheck", str(tmp_path / "theirs"), str(tmp_path / "ours"), "--tol", "1e-12",
                 "--allow-missing", "train_cost"]) == 0
    # NaN where the implementation did not evaluate: the evaluated rounds are compared, the others named
    nan = dict(m, train_cost=[v if i % 3 == 0 else np.nan for i, v in enumerate(m["train_cost"])])
    _write(tmp_path / "nan", tr, nan, tr.snapshots)
    capsys.readouterr()
    assert main(["crosscheck", str(tmp_path / "ours"), str(tmp_path / "nan"), "--tol", "1e-12"]) == 1
    out = capsys.readouterr().out
    assert "train_cost             max|Δ| 0.000e+00" in out and "train_cost at 4 rounds (NaN on one side" in out
    assert main(["crosscheck", str(tmp_path / "ours"), str(tmp_path / "nan"), "--tol", "1e-12",
                 "--allow-missing", "train_cost"]) == 0
    # an infinite cost never agrees, not even with itself
    inf = dict(m, train_cost=[np.inf if i == 6 else v for i, v in enumerate(m["train_cost"])])
    _write(tmp_path / "inf", tr, inf, tr.snapshots)
    _write(tmp_path / "inf2", tr, inf, tr.snapshots)
    capsys.readouterr()
    assert main(["crosscheck", str(tmp_path / "ours"), str(tmp_path / "inf"), "--tol", "1e-12"]) == 1
    assert "infinite at round 6" in capsys.readouterr().out
    assert main(["crosscheck", str(tmp_path / "inf2"), str(tmp_path / "inf"), "--tol", "1e-12"]) == 1
    # a metric of one trace only is named
    only = {k: v for k, v in m.items() if k != "sq_norm"}
    _write(tmp_path / "only", tr, only, tr.snapshots)
    capsys.readouterr()
    assert main(["crosscheck", str(tmp_path / "ours"), str(tmp_path / "only"), "--tol", "1e-12"]) == 1
    assert "sq_norm                not compared: only the first trace records it" in capsys.readouterr().out


def test_half_a_snapshot_is_an_error_naming_it(tmp_path, capsys):
    assert main([*RUN, "--out", str(tmp_path / "ours")]) == 0
    tr = Trace.load(tmp_path / "ours")
    (tmp_path / "half").mkdir()
    np.savez(tmp_path / "half" / "trace.npz", W1_5=tr.snapshots[5][0], metric_round=np.arange(7.0))
    capsys.readouterr()
    assert main(["crosscheck", str(tmp_path / "ours"), str(tmp_path / "half")]) == 2
    assert "W1_5 has no W2_5" in capsys.readouterr().err


def test_an_off_by_one_snapshot_convention_is_named(tmp_path, capsys):
    assert main([*RUN, "--out", str(tmp_path / "ours")]) == 0
    tr = Trace.load(tmp_path / "ours")
    shifted = {r + 1: w for r, w in tr.snapshots.items()}        # their W_r is our W_{r-1}
    _write(tmp_path / "theirs", tr, {"round": tr.metrics["round"]}, shifted)
    capsys.readouterr()
    assert main(["crosscheck", str(tmp_path / "ours"), str(tmp_path / "theirs")]) == 1
    c = capsys.readouterr()
    assert "equals the second trace's round 3" in c.out
    assert "shift of one round" in c.err


def test_the_readmes_compare_vfl_command_runs_as_written(tmp_path):
    # README: refimpl compare vfl --out runs/vfl (reduced in size by --rounds and --batch only)
    assert main(["compare", "vfl", "--out", str(tmp_path / "vfl"), "--rounds", "30", "--batch", "16", "--quiet"]) == 0
    assert (tmp_path / "vfl" / "time_to_target.csv").exists()


def test_a_run_that_diverged_early_does_not_agree_with_the_full_run(tmp_path, capsys):
    """Their run diverged after round 1 and holds rounds 0..1, equal to ours: ours' rounds 2..3 have
    nothing to be compared with, so the verdict is not "agree" (exit 1) unless --allow-missing."""
    from refimpl.core.trace import Trace
    cost = [2.0, 1.5, 1.0, 0.5]
    Trace(config={}, metrics={"round": [0, 1, 2, 3], "train_cost": cost}, status="finished").save(tmp_path / "ours")
    Trace(config={}, metrics={"round": [0, 1], "train_cost": cost[:2]},
          status="diverged: round 2: x").save(tmp_path / "theirs")
    assert main(["crosscheck", str(tmp_path / "ours"), str(tmp_path / "theirs"), "--metrics-only"]) == 1
    out = capsys.readouterr()
    assert "train_cost at rounds 2, 3 of the first trace only" in out.out
    assert "the second trace's run did not finish (diverged: round 2: x)" in out.err
    assert main(["crosscheck", str(tmp_path / "ours"), str(tmp_path / "theirs"), "--metrics-only",
                 "--allow-missing", "train_cost"]) == 0


def test_crosscheck_names_a_run_whose_solver_failed(tmp_path, capsys):
    """SSCA's constrained run can end with 'solver failed: round t: …': crosscheck asks the one rule for
    a finished run (its own copy named only 'diverged' and 'stopped')."""
    from refimpl.core.trace import Trace
    Trace(config={}, metrics={"round": [0, 1], "train_cost": [2.0, 1.5]}, status="finished").save(tmp_path / "a")
    Trace(config={}, metrics={"round": [0, 1], "train_cost": [2.0, 1.5]},
          status="solver failed: round 2: x").save(tmp_path / "b")
    assert main(["crosscheck", str(tmp_path / "a"), str(tmp_path / "b"), "--metrics-only"]) == 0
    assert "the second trace's run did not finish (solver failed: round 2: x)" in capsys.readouterr().err
