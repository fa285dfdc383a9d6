"""refimpl diagnose: the first (round, quantity) where two dumps part, and the convention switch
under which refimpl, rerun from the other side's inputs, agrees."""
import numpy as np
import pytest

from refimpl.cli import main
from refimpl.core.data import mnist_5k
from conftest import flat_dump  # noqa: E402
from refimpl.tools.transcriptions import their_ssca

SSCA = ["run", "ssca", "--rounds", "5", "--batch", "10", "--hidden", "8", "--rho-a", "0.8", "--dump-rounds", "all",
        "--quiet"]


def _out(capsys):
    c = capsys.readouterr()
    return c.out + c.err


def test_ssca_curvature_between_two_traces(tmp_path, capsys):
    assert main([*SSCA, "--out", str(tmp_path / "ours")]) == 0
    assert main([*SSCA, "--curvature", "fixed", "--out", str(tmp_path / "theirs")]) == 0
    capsys.readouterr()
    assert main(["diagnose", str(tmp_path / "ours"), str(tmp_path / "theirs"), "--report", str(tmp_path / "rep")]) == 3
    out = _out(capsys)
    assert "round 1, A: 0.08 vs 0.1" in out
    assert "grad_hat 0" in out and "rho 0" in out                 # what still agrees before it
    assert "with --curvature fixed all rounds agree" in out
    assert (tmp_path / "rep" / "diagnose.md").read_text().count("| --curvature fixed | True | True | True |") == 1
    assert main(["diagnose", str(tmp_path / "ours"), str(tmp_path / "ours")]) == 0


SSCA_THEIRS = ["--rho-a", "0.8", "--rho-alpha", "0.6", "--gamma-a", "0.5", "--gamma-alpha", "0.65"]


def test_ssca_against_an_independent_transcription(tmp_path, rng, capsys):
    """Their side: a 20-line SSCA with A^t = τ (the authors' convention) writing its own dump in
    refimpl's names plus its initial point and batches; ours: refimpl with the paper's recursion."""
    ds = mnist_5k()
    J, K, B, T, tau = 8, 10, 10, 4, 0.1
    arrays, W1, W2, batches = their_ssca(ds, rng, J, K, B, T, tau)
    np.savez(tmp_path / "theirs.npz", **arrays)
    np.savez(tmp_path / "init.npz", W1=W1, W2=W2)
    np.save(tmp_path / "b.npy", batches)
    assert main(["run", "ssca", "--rounds", str(T), "--batch", str(B), "--hidden", str(J), "--tau", str(tau),
                 *SSCA_THEIRS, "--init", str(tmp_path / "init.npz"), "--batches", str(tmp_path / "b.npy"),
                 "--dump-rounds", "all", "--quiet", "--out", str(tmp_path / "ours")]) == 0
    capsys.readouterr()
    assert main(["diagnose", str(tmp_path / "ours"), str(tmp_path / "theirs.npz"), "--tol", "1e-9"]) == 3
    out = _out(capsys)
    assert "round 1, A: 0.08 vs 0.1" in out and "grad_hat" in out.split("round 1, A")[1]
    assert "with --curvature fixed all rounds agree" in out
    assert "not compared: " in out and "C (only in ours)" in out and "compared 6 quantities × 4 rounds" in out


def test_vfl_momentum_reset_vs_persistent(tmp_path, capsys):
    base = ["run", "flexvfl", "--rounds", "3", "--optimizer", "momentum:0.9", "--dump-rounds", "all", "--quiet"]
    assert main([*base, "--out", str(tmp_path / "ours")]) == 0
    assert main([*base, "--momentum", "persistent", "--out", str(tmp_path / "theirs")]) == 0
    capsys.readouterr()
    assert main(["diagnose", str(tmp_path / "ours"), str(tmp_path / "theirs")]) == 3
    out = _out(capsys)
    # the first sub-round step that differs: party 0's momentum buffer at local step 0 of round 2
    # (carried over, or fresh), not the iterate θ_0 it moved afterwards
    assert "round 2, momentum0 at local step 0" in out and "tau 0" in out
    assert "with --momentum persistent all rounds agree" in out
    assert "--adaptive-rule" not in out                      # not an option of flexvfl


def test_mfcgd_adaptive_matrix(tmp_path, capsys):
    base = ["run", "adamfcgd", "--steps", "12", "--dump-rounds", "all", "--quiet"]
    assert main([*base, "--out", str(tmp_path / "ours")]) == 0
    assert main([*base, "--matrix", "amsgrad", "--out", str(tmp_path / "theirs")]) == 0
    capsys.readouterr()
    assert main(["diagnose", str(tmp_path / "ours"), str(tmp_path / "theirs")]) == 3
    out = _out(capsys)
    assert "A at entry" in out and "with --matrix amsgrad all rounds agree" in out


def test_bad_input_and_nan(tmp_path, capsys):
    assert main([*SSCA, "--out", str(tmp_path / "o")]) == 0
    theirs = flat_dump(tmp_path / "o")
    nan = dict(theirs)
    nan["r3_B"] = nan["r3_B"].copy()
    nan["r3_B"][5] = np.nan
    np.savez(tmp_path / "nan.npz", **nan)
    capsys.readouterr()
    assert main(["diagnose", str(tmp_path / "o"), str(tmp_path / "nan.npz"), "--no-rerun"]) == 1
    out = _out(capsys)
    assert "round 3, B" in out and "nan" in out
    shaped = dict(theirs)
    shaped["r2_omega"] = shaped["r2_omega"][:10]
    np.savez(tmp_path / "shape.npz", **shaped)
    assert main(["diagnose", str(tmp_path / "o"), str(tmp_path / "shape.npz"), "--no-rerun"]) == 1
    assert "round 2, omega: shapes" in _out(capsys)
    np.savez(tmp_path / "late.npz", **{k.replace("r1_", "r9_"): v for k, v in theirs.items() if k.startswith("r1_")})
    assert main(["diagnose", str(tmp_path / "o"), str(tmp_path / "late.npz")]) == 2
    assert "no round is dumped on both sides" in _out(capsys)
    assert main(["diagnose", str(tmp_path / "o"), str(tmp_path / "o"), "--tol", "-1"]) == 2
    assert "--tol" in _out(capsys)
    np.savez(tmp_path / "none.npz", x=np.zeros(3))
    assert main(["diagnose", str(tmp_path / "o"), str(tmp_path / "none.npz")]) == 2
    assert "THEIRS holds no per-round dump" in _out(capsys)
    renamed = {k.replace("_omega_bar", "_wbar"): v for k, v in theirs.items()}
    np.savez(tmp_path / "renamed.npz", **renamed)
    assert main(["diagnose", str(tmp_path / "o"), str(tmp_path / "renamed.npz"), "--map", "omega_bar=wbar"]) == 0
    assert main(["diagnose", str(tmp_path / "o"), str(tmp_path / "renamed.npz"), "--map", "omega_bar"]) == 2


# ----------------------------------------------------------------------------- no reason without evidence

def _per_round(trace_dir):
    return flat_dump(trace_dir)


def test_inputs_not_a_no_op_switch_explain_runs_from_other_inputs(tmp_path, capsys):
    """THEIRS: the same method and conventions from another initial point and batch schedule. The
    baseline rerun from THEIR inputs agrees, so the verdict names the inputs (exit 4); a switch
    that changes nothing here (the server's time unit) is never credited."""
    base = ["run", "flexvfl", "--rounds", "3", "--dump-rounds", "all", "--quiet"]
    assert main([*base, "--out", str(tmp_path / "ours")]) == 0
    assert main([*base, "--seed", "7", "--out", str(tmp_path / "theirs")]) == 0
    capsys.readouterr()
    assert main(["diagnose", str(tmp_path / "ours"), str(tmp_path / "theirs")]) == 4
    out = _out(capsys)
    assert "the difference is in the inputs (batch schedule, initial point, τ table)" in out
    assert "all rounds agree" not in out.split("rerun from THEIR inputs")[0]
    assert "with --" not in out


def test_nothing_agrees_that_was_not_compared(tmp_path, capsys):
    assert main([*SSCA, "--out", str(tmp_path / "o")]) == 0
    theirs = _per_round(tmp_path / "o")
    # their quantities under other names: only the batch is compared
    renamed = {(k if k.endswith("_batch") else k.replace("_", "_their_", 1)): v for k, v in theirs.items()}
    np.savez(tmp_path / "renamed.npz", **renamed)
    capsys.readouterr()
    assert main(["diagnose", str(tmp_path / "o"), str(tmp_path / "renamed.npz"), "--no-rerun"]) == 1
    out = _out(capsys)
    assert "not compared: " in out and "omega (only in ours)" in out and "compared 1 quantity × 5 rounds" in out
    assert "every compared value agrees" in out
    # the same NaN on both sides is not an agreement
    both = {n: v.copy() for n, v in theirs.items()}
    both["r2_B"][0] = np.nan
    np.savez(tmp_path / "nan_theirs.npz", **both)
    z = flat_dump(tmp_path / "o")
    z["r2_B"] = z["r2_B"].copy()
    z["r2_B"][0] = np.nan
    np.savez(tmp_path / "nan_ours.npz", **z)
    capsys.readouterr()
    assert main(["diagnose", str(tmp_path / "nan_ours.npz"), str(tmp_path / "nan_theirs.npz"), "--no-rerun"]) == 1
    out = _out(capsys)
    assert "round 2, B" in out and "B is not finite (NaN or inf) in round 2" in out
    # THEIRS holds more rounds than OURS: named, and accepted only when asked
    more = dict(theirs)
    more.update({k.replace("r5_", "r6_"): v for k, v in theirs.items() if k.startswith("r5_")})
    np.savez(tmp_path / "more.npz", **more)
    capsys.readouterr()
    assert main(["diagnose", str(tmp_path / "o"), str(tmp_path / "more.npz"), "--no-rerun"]) == 1
    assert "not compared: rounds 6 (only in theirs)" in _out(capsys)
    assert main(["diagnose", str(tmp_path / "o"), str(tmp_path / "more.npz"), "--no-rerun",
                 "--allow-missing", "rounds"]) == 0
    out = _out(capsys)
    assert "not compared" not in out and "compared 13 quantities × 5 rounds (65 pairs)" in out


def test_reruns_use_the_data_the_run_used(tmp_path, capsys):
    """A pair of runs on the user's own data: the reruns load that data (from the trace's record),
    so the curvature switch is found; the file gone or changed is refused, naming it."""
    d = mnist_5k()
    X = d.X_train[:400].reshape(400, 28, 28)[:, ::4, ::4].reshape(400, 49)
    Xt = d.X_test[:100].reshape(100, 28, 28)[:, ::4, ::4].reshape(100, 49)
    data = tmp_path / "mine.npz"
    np.savez(data, X_train=X, y_train=d.y_train[:400], X_test=Xt, y_test=d.y_test[:100])
    run = [*SSCA, "--data", str(data)]
    assert main([*run, "--out", str(tmp_path / "ours")]) == 0
    assert main([*run, "--curvature", "fixed", "--out", str(tmp_path / "theirs")]) == 0
    capsys.readouterr()
    assert main(["diagnose", str(tmp_path / "ours"), str(tmp_path / "theirs")]) == 3
    out = _out(capsys)
    assert "reruns on mine.npz (400 training samples, the data OURS's run used)" in out
    assert "with --curvature fixed all rounds agree" in out
    moved = tmp_path / "elsewhere.npz"
    data.rename(moved)
    assert main(["diagnose", str(tmp_path / "ours"), str(tmp_path / "theirs")]) == 2
    assert f"{data} is not reachable here; give the data with --data FILE.npz" in _out(capsys)
    assert main(["diagnose", str(tmp_path / "ours"), str(tmp_path / "theirs"), "--data", str(moved)]) == 3
    capsys.readouterr()
    np.savez(data, X_train=X + 0.5, y_train=d.y_train[:400], X_test=Xt, y_test=d.y_test[:100])
    assert main(["diagnose", str(tmp_path / "ours"), str(tmp_path / "theirs")]) == 2
    assert "has changed since the run" in _out(capsys)


def test_their_other_inputs_and_their_bug_against_an_independent_transcription(tmp_path, rng, capsys):
    """THEIR side from the transcription above, never from refimpl. With the paper's recursion and
    their own initial point and batches, OURS (refimpl's own inputs) differs from round 1, and the
    baseline rerun from THEIR inputs agrees: the verdict names the inputs (exit 4), not a switch.
    With γ_t's exponent planted wrong in their code (0.66 for 0.65), the baseline, every switch and
    every pair differ: named as unexplained (exit 1) at round 2, where γ_2 first differs."""
    ds = mnist_5k()
    J, K, B, T, tau = 8, 10, 10, 4, 0.1
    run = ["run", "ssca", "--rounds", str(T), "--batch", str(B), "--hidden", str(J), "--tau", str(tau), *SSCA_THEIRS,
           "--dump-rounds", "all", "--quiet"]
    assert main([*run, "--out", str(tmp_path / "ours")]) == 0
    arrays, *_ = their_ssca(ds, rng, J, K, B, T, tau, curvature="recursive")
    np.savez(tmp_path / "theirs.npz", **arrays)
    capsys.readouterr()
    assert main(["diagnose", str(tmp_path / "ours"), str(tmp_path / "theirs.npz"), "--tol", "1e-9"]) == 4
    out = _out(capsys)
    assert "round 1, omega" in out
    assert "the difference is in the inputs (batch schedule, initial point), not in a convention" in out
    assert "with --" not in out
    bug, *_ = their_ssca(ds, np.random.default_rng(5), J, K, B, T, tau, curvature="recursive", gamma_alpha=0.66)
    np.savez(tmp_path / "bug.npz", **bug)
    capsys.readouterr()
    assert main(["diagnose", str(tmp_path / "ours"), str(tmp_path / "bug.npz"), "--tol", "1e-9"]) == 1
    out = _out(capsys)
    assert "no switch (baseline): differs at round 2, omega_next" in out
    assert "no convention switch of refimpl (nor a pair) makes every round agree" in out
    assert "all rounds agree" not in out


def test_sub_round_steps_are_walked_in_the_order_one_local_step_computes_them():
    """Flex-VFL's per-step dumps (row t of theta<k>, grad<k>, momentum<k>: local step t): the first
    differing (step, quantity) is named, not the first differing whole array in name order."""
    from refimpl.tools import diagnose as DG
    rng = np.random.default_rng(0)
    ours = {1: {"tau": np.array([3, 3]), "theta0": rng.standard_normal((4, 2)), "grad0": rng.standard_normal((3, 2)),
                "theta1": rng.standard_normal((4, 2)), "grad1": rng.standard_normal((3, 2)),
                "momentum1": rng.standard_normal((3, 2))}}
    theirs = {1: {k: v.copy() for k, v in ours[1].items()}}
    theirs[1]["theta0"][2] += 1.0          # party 0: step 2's input differs
    theirs[1]["momentum1"][1] += 1.0       # party 1: step 1's momentum buffer differs (and so everything after)
    theirs[1]["theta1"][2:] += 1.0
    theirs[1]["grad1"][2:] += 1.0
    d = DG.compare_dumps(ours, theirs, 1e-12).divergence
    assert (d.round, d.quantity, d.step) == (1, "momentum1", 1)
    theirs[1]["grad1"][1] += 1.0           # now party 1's gradient of step 1 differs first
    d = DG.compare_dumps(ours, theirs, 1e-12).divergence
    assert (d.quantity, d.step) == ("grad1", 1)
    np.testing.assert_array_equal(d.ours, ours[1]["grad1"][1])
    # a quantity outside the per-step ones keeps the round-level answer
    theirs[1]["tau"] = np.array([3, 4])
    d = DG.compare_dumps(ours, theirs, 1e-12).divergence
    assert (d.quantity, d.step) == ("tau", None)


def test_a_convention_on_the_inputs_is_tried_when_their_dump_lacks_that_input(tmp_path, capsys):
    """THEIR dump without the batch schedule: the rerun draws its own batches, so --batch-order
    can explain the difference and is tried (and credited); with the schedule in THEIR dump it is
    not tried (THEIR batches decide)."""
    base = ["run", "flexvfl", "--rounds", "3", "--dump-rounds", "all", "--quiet"]
    assert main([*base, "--out", str(tmp_path / "ours")]) == 0
    assert main([*base, "--batch-order", "epoch", "--out", str(tmp_path / "theirs")]) == 0
    dump = flat_dump(tmp_path / "theirs")
    # rounds 1 and 3 only: THEIR batch schedule cannot be rebuilt from the dump
    np.savez(tmp_path / "dump_13.npz", **{k: v for k, v in dump.items() if not k.startswith("r2_")})
    capsys.readouterr()
    assert main(["diagnose", str(tmp_path / "ours"), str(tmp_path / "dump_13.npz"), "--allow-missing", "rounds"]) == 3
    out = _out(capsys)
    assert "round 1, batch" in out and "with --batch-order epoch all rounds agree" in out
    # every round dumped: THEIR schedule (r<t>_batch), τ table and initial point (r1_theta<k>) are
    # rebuilt from the dump and the rerun from them agrees — the difference is in the inputs
    np.savez(tmp_path / "dump_only.npz", **dump)
    capsys.readouterr()
    assert main(["diagnose", str(tmp_path / "ours"), str(tmp_path / "dump_only.npz")]) == 4
    assert "the difference is in the inputs (batch schedule)" in _out(capsys)
    capsys.readouterr()
    code = main(["diagnose", str(tmp_path / "ours"), str(tmp_path / "theirs")])
    captured = capsys.readouterr()
    assert code == 4 and "--batch-order" not in captured.out + captured.err


def test_a_layout_difference_is_named(tmp_path, capsys):
    """THEIR batch ids 1-based, or an array transposed: the report says what the numbers show."""
    from refimpl.tools.diagnose import layout_hint
    assert main(["run", "pbcd", "--rounds", "2", "--dump-rounds", "all", "--quiet", "--out", str(tmp_path / "o")]) == 0
    dump = flat_dump(tmp_path / "o")
    np.savez(tmp_path / "one_based.npz", **{**dump, "r1_batch": dump["r1_batch"] + 1})
    capsys.readouterr()
    assert main(["diagnose", str(tmp_path / "o"), str(tmp_path / "one_based.npz"), "--no-rerun"]) == 1
    assert "batch: THEIR values are OURS + 1 everywhere: 1-based" in _out(capsys)
    # --index-base 1 reads THEIR ids minus 1: every round's ids 1-based, then everything agrees
    shifted = {k: (v + 1 if k.endswith("_batch") else v) for k, v in dump.items()}
    np.savez(tmp_path / "all_one_based.npz", **shifted)
    assert main(["diagnose", str(tmp_path / "o"), str(tmp_path / "all_one_based.npz"), "--no-rerun",
                 "--index-base", "1"]) == 0
    capsys.readouterr()
    zero = dict(shifted)
    zero["r2_batch"] = np.where(np.arange(zero["r2_batch"].size) == 3, 0, zero["r2_batch"])
    np.savez(tmp_path / "zero.npz", **zero)
    assert main(["diagnose", str(tmp_path / "o"), str(tmp_path / "zero.npz"), "--no-rerun",
                 "--index-base", "1"]) == 2                          # round 2's ids hold a 0
    err = _out(capsys)
    assert "THEIRS r2_batch: entry" in err and "--index-base 1 says the ids start at 1" in err
    a = np.arange(6.0).reshape(2, 3)
    assert "transposed" in layout_hint(a, a.T)
    assert "column-major" in layout_hint(a, a.reshape(-1, order="F").reshape(2, 3))
    assert "permuted" in layout_hint(a, a[:, ::-1])
    assert layout_hint(a, a * 1.5) is None and layout_hint(a, a) is None


def test_replay_inputs_are_rebuilt_from_a_complete_per_round_dump_only():
    from refimpl import papers
    ssca, vfl = papers.get("ssca"), papers.get("vfl")
    dump = {r: {"batch": np.full((2, 3), r), "omega": np.zeros(4)} for r in (1, 2, 3)}
    np.testing.assert_array_equal(ssca.replay_from_dump(dump)["batches"][:, 0, 0], [1, 2, 3])
    del dump[2]
    # a gap: the schedule is not THEIRS to rebuild; the initial point (r1_omega) still is
    assert list(ssca.replay_from_dump(dump)) == ["omega_0"]
    np.testing.assert_array_equal(ssca.replay_from_dump(dump)["omega_0"], np.zeros(4))
    del dump[1]
    assert ssca.replay_from_dump(dump) == {}
    v = {1: {"batch": np.arange(4), "tau": np.array([2, 3]), "theta0": np.arange(6.0).reshape(3, 2)},
         2: {"batch": np.arange(4) + 4, "tau": np.array([2, 2]), "theta0": np.zeros((3, 2))}}
    out = vfl.replay_from_dump(v)
    np.testing.assert_array_equal(out["init_theta0"], [0.0, 1.0])     # row 0 of round 1: Θ^{1,0}
    assert out["batches"].shape == (2, 4) and out["tau"].tolist() == [[2, 3], [2, 2]]


SSCA_OURS = ["run", "ssca", "--rounds", "4", "--batch", "10", "--hidden", "8", "--tau", "0.1", *SSCA_THEIRS,
             "--dump-rounds", "all", "--quiet"]


@pytest.mark.parametrize("their, named", [
    (dict(curvature="recursive", activation="relu"), "with --activation relu all rounds agree"),
    (dict(curvature="fixed", activation="relu"), "with --curvature fixed + --activation relu all rounds agree"),
])
def test_each_ssca_convention_and_a_pair_named_from_an_independent_transcription(tmp_path, capsys, their, named):
    """THEIR dump from the transcription above, in the documented per-round names only (their
    initial point is r1_omega, their schedule r<t>_batch): the rerun reads THEIR inputs from it,
    and diagnose names exactly the convention (or the pair) their code follows."""
    ds = mnist_5k()
    arrays, *_ = their_ssca(ds, np.random.default_rng(11), 8, 10, 10, 4, 0.1, inputs=False, **their)
    np.savez(tmp_path / "theirs.npz", **arrays)
    assert main([*SSCA_OURS, "--out", str(tmp_path / "ours")]) == 0
    capsys.readouterr()
    assert main(["diagnose", str(tmp_path / "ours"), str(tmp_path / "theirs.npz"), "--tol", "1e-9"]) == 3
    out = _out(capsys)
    assert named in out
    assert out.count("all rounds agree (worst") == 1           # exactly one switch (or pair) credited
    if "+" in named:                                             # a pair only when no single switch explains
        assert "with --curvature fixed all rounds agree" not in out
        assert "with --activation relu all rounds agree" not in out


def test_the_reruns_say_which_inputs_are_theirs(tmp_path, capsys):
    """THEIR per-round dump without r<t>_batch: the reruns start from THEIR initial point (r1_omega)
    and say that the batch schedule is OURS's; never "from THEIR … batch schedule"."""
    arrays, *_ = their_ssca(mnist_5k(), np.random.default_rng(11), 8, 10, 10, 4, 0.1, inputs=False,
                             curvature="recursive", activation="relu")
    np.savez(tmp_path / "nobatch.npz", **{k: v for k, v in arrays.items() if not k.endswith("_batch")})
    np.savez(tmp_path / "full.npz", **arrays)
    assert main([*SSCA_OURS, "--out", str(tmp_path / "ours")]) == 0
    capsys.readouterr()
    assert main(["diagnose", str(tmp_path / "ours"), str(tmp_path / "nobatch.npz"), "--tol", "1e-9"]) == 1
    out = _out(capsys)
    assert "the reruns start from THEIR initial point; THEIR file holds no batch schedule: the reruns use OURS's" in out
    capsys.readouterr()
    assert main(["diagnose", str(tmp_path / "ours"), str(tmp_path / "full.npz"), "--tol", "1e-9"]) == 3
    out = _out(capsys)
    assert "the reruns start from THEIR initial point, batch schedule (read from THEIR file)" in out


def test_an_epoch_permutation_schedule_is_named_with_its_flag(tmp_path, capsys):
    """THEIR batches cut from one permutation of the samples (a DataLoader with shuffle=True): the
    report names the epoch order and --batch-order epoch; independent draws are not named so."""
    from refimpl.tools.diagnose import epoch_order_hint
    assert main(["run", "flexvfl", "--rounds", "2", "--dump-rounds", "1,2", "--quiet", "--out", str(tmp_path / "o")]) == 0
    rng = np.random.default_rng(3)
    perm = rng.permutation(4000)[:20 * 64].reshape(20, 64)
    np.savez(tmp_path / "theirs.npz", batches=perm, r1_batch=perm[0], r2_batch=perm[1])
    capsys.readouterr()
    assert main(["diagnose", str(tmp_path / "o"), str(tmp_path / "theirs.npz"), "--allow-missing", "rounds"]) in (1, 4)
    out = _out(capsys)
    assert "an epoch-permutation batch order, which refimpl draws with --batch-order epoch" in out
    independent = np.stack([rng.choice(4000, 64, replace=False) for _ in range(20)])
    assert epoch_order_hint(independent, 4000) is None
    assert epoch_order_hint(perm[:3], 4000) is None          # too few draws to tell (p ≈ 0.2)


def test_the_first_differing_entry_is_named_in_the_papers_terms(tmp_path, capsys):
    """An entry of ω-sized SSCA quantities is W1[row, column] or W2[row, column] of the flat ω; an
    MFCGD per-client entry is its client and coordinate."""
    assert main([*SSCA, "--out", str(tmp_path / "o")]) == 0
    theirs = _per_round(tmp_path / "o")
    J, D = 8, 784
    k = J * D + 3 * J + 5                              # W2[3, 5]
    theirs["r2_omega_bar"] = theirs["r2_omega_bar"].copy()
    theirs["r2_omega_bar"][k] += 1.0
    np.savez(tmp_path / "t.npz", **theirs)
    capsys.readouterr()
    assert main(["diagnose", str(tmp_path / "o"), str(tmp_path / "t.npz"), "--no-rerun"]) == 1
    assert f"round 2, omega_bar at entry ({k},) = W2[3, 5]:" in _out(capsys)
    from refimpl import papers
    from refimpl.core.data import mnist_5k
    ssca = papers.get("ssca")
    assert ssca.entry_words("omega", (785 + 2,), {"hidden": 8, "bias": True}, mnist_5k()) == "W1[1, 2]"
    assert ssca.entry_words("omega", (785,), {"hidden": 8, "bias": True}, mnist_5k()) == "W1[1, 0] (bias)"
    assert ssca.entry_words("omega", (3,), {"hidden": 8}, None) is None          # no data: no sizes
    assert papers.get("mfcgd").entry_words("u", (2, 1, 7), {}, None) == "client 2, row, column 1, 7"
    vfl, cfg = papers.get("vfl"), {"parties": 4, "embed_dim": 16, "encoder": "linear", "hidden": 32}
    assert vfl.entry_words("theta2", (3, 197 * 2 + 5), cfg, mnist_5k()) == "party 2, local step 3, W[2, 5]"
    assert vfl.entry_words("grad0", (1, 65 + 3), cfg, mnist_5k()) == "party 0, local step 1, head[1, 3]"
    swish = {**cfg, "encoder": "swish"}
    assert vfl.entry_words("theta1", (0, 197 * 32 + 33 * 2 + 1), swish, mnist_5k()) == "party 1, local step 0, W2[2, 1]"
