"""Agreement with the authors' own update loop: an independent NumPy transcription of their MATLAB
scripts (ReLU network with bias columns, A ≡ τ, the same initial point and batches) against
``refimpl run ssca --curvature fixed``."""
import numpy as np
import pytest

from refimpl.cli import main
from refimpl.core.data import load_embedded_mnist
from refimpl.core.trace import Trace

ROUNDS = 30
# the authors' sample-based script, B = 100 per client: a1, a2, alpha, tau
AUTHORS_B100 = dict(a1=0.3, a2=0.3, alpha=0.1, tau=0.05)


def authors_loop(W1, W2, X, Y, batches, a1, a2, alpha, tau, rounds):
    """Transcription of the authors' loop: a1 = [1; x], z2 = Θ1 a1, a2 = [1; relu(z2)], z3 = Θ2 a2,
    softmax cross-entropy; B ← (1−ρ)B + ρ(g − 2τω); ω̄ = −B/(2τ); ω ← (1−γ)ω + γ ω̄."""
    Bt1, Bt2 = np.zeros_like(W1), np.zeros_like(W2)
    out = {}
    for t in range(1, rounds + 1):
        idx = batches[t - 1].ravel()
        x = np.vstack([np.ones((1, idx.size)), X[idx].T])
        z2 = W1 @ x
        h = np.vstack([np.ones((1, idx.size)), np.maximum(z2, 0.0)])
        z3 = W2 @ h
        p = np.exp(z3 - z3.max(axis=0))
        p /= p.sum(axis=0)
        d3 = p.copy()
        d3[Y[idx], np.arange(idx.size)] -= 1.0
        g2 = d3 @ h.T / idx.size
        g1 = ((W2[:, 1:].T @ d3) * (z2 > 0)) @ x.T / idx.size
        rho, gamma = a1 / t ** alpha, a2 / t ** (alpha + 0.05)
        Bt1 = (1 - rho) * Bt1 + rho * (g1 - 2 * tau * W1)
        Bt2 = (1 - rho) * Bt2 + rho * (g2 - 2 * tau * W2)
        W1 = (1 - gamma) * W1 + gamma * (-Bt1 / (2 * tau))
        W2 = (1 - gamma) * W2 + gamma * (-Bt2 / (2 * tau))
        out[t] = (W1, W2)
    return out


def _relative(a, b):
    return max(float(np.max(np.abs(x - y)) / np.max(np.abs(y))) for x, y in zip(a, b))


@pytest.mark.parametrize("curvature, a1", [("fixed", AUTHORS_B100["a1"]), ("recursive", 1.0)])
def test_refimpl_equals_the_authors_update_loop(tmp_path, curvature, a1):
    s = dict(AUTHORS_B100, a1=a1)
    first = tmp_path / "first"
    base = ["run", "ssca", "--activation", "relu", "--bias", "--batch", "100", "--rounds", str(ROUNDS),
            "--tau", str(s["tau"]), "--rho-a", str(s["a1"]), "--rho-alpha", str(s["alpha"]),
            "--gamma-a", str(s["a2"]), "--gamma-alpha", str(s["alpha"] + 0.05), "--curvature", curvature,
            "--eval-every", str(ROUNDS), "--snapshots", "1,2,10,30", "--quiet"]
    assert main([*base, "--out", str(first)]) == 0
    tr = Trace.load(first)
    np.savez(tmp_path / "init.npz", W1=tr.snapshots[0][0], W2=tr.snapshots[0][1])
    np.save(tmp_path / "batches.npy", tr.batches)
    second = tmp_path / "second"                  # the documented cross-check command: init and batches given
    assert main([*base, "--seed", "7", "--init", str(tmp_path / "init.npz"), "--batches",
                 str(tmp_path / "batches.npy"), "--out", str(second)]) == 0
    ours = Trace.load(second)
    d = load_embedded_mnist()
    ref = authors_loop(*tr.snapshots[0], d.X_train, d.y_train, tr.batches, s["a1"], s["a2"], s["alpha"], s["tau"],
                       ROUNDS)
    assert _relative(ours.snapshots[1], ref[1]) < 1e-13
    for r in (2, 10, 30):
        assert _relative(ours.snapshots[r], ref[r]) <= 1e-10, r
    print(f"{curvature}: relative difference {_relative(ours.snapshots[1], ref[1]):.2e} (round 1), "
          f"{_relative(ours.snapshots[30], ref[30]):.2e} (round 30)")


def test_the_curvatures_differ_when_rho1_is_below_one(tmp_path):
    """With a1 < 1 the paper's recursion takes a first step 1/ρ_1 times longer: the runs part."""
    outs = {}
    for curv in ("fixed", "recursive"):
        outs[curv] = tmp_path / curv
        assert main(["run", "ssca", "--rounds", "3", "--hidden", "8", "--batch", "10", "--rho-a", "0.3",
                     "--curvature", curv, "--quiet", "--out", str(outs[curv])]) == 0
    a, b = Trace.load(outs["fixed"]), Trace.load(outs["recursive"])
    assert a.config["curvature"] == "fixed" and b.config["curvature"] == "recursive"
    assert _relative(a.snapshots[3], b.snapshots[3]) > 1e-3


def test_unknown_curvature_is_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", "ssca", "--curvature", "flat"])
    assert exc.value.code == 2 and "invalid choice: 'flat'" in capsys.readouterr().err
    from refimpl import ssca
    with pytest.raises(ValueError, match="curvature must be one of"):
        ssca.run(ssca.Config(curvature="flat", rounds=1))


@pytest.mark.parametrize("curvature", ["fixed", "recursive"])
def test_both_curvatures_in_the_constrained_closed_form_and_the_qcqp(curvature):
    from refimpl import ssca
    cfg = dict(algorithm="ssca-constrained", rounds=4, hidden=6, batch=10, eval_every=4, rho_a=0.5, tau=0.1,
               curvature=curvature, snapshots=[4])
    cf = ssca.run(ssca.Config(**cfg, solver="closed-form"))
    qp = ssca.run(ssca.Config(**cfg, solver="cvxpy"))
    A = cf.extra["final_state"].surrogates[0].A
    if curvature == "fixed":
        assert A == 0.1 and qp.extra["final_state"].surrogates[0].A == 0.1
    else:                                            # A^4 = τ(1 − Π_t (1 − ρ_t)) < τ with ρ_1 = 0.5
        assert 0.0 < A < 0.1
    assert _relative(qp.iterate(4), cf.iterate(4)) < 1e-5


def test_constrained_slack_is_charged_at_an_active_constraint():
    """In the constraint-active branch the slack is max(0, q(ω̄) − U) at the returned point."""
    from refimpl.ssca.constrained import closed_form_step
    from refimpl.ssca.surrogate import SurrogateState
    rng = np.random.default_rng(3)
    for _ in range(50):
        B = rng.standard_normal(20)
        st = SurrogateState(0.3, B, 5.0)
        step = closed_form_step(st, 1.0, 1e5)
        assert step.branch == "constraint-active"
        assert step.slack[0] == max(0.0, st.value(step.omega_bar) - 1.0)


def test_mfcgd_cap_steps_are_recorded_and_match_the_schedule():
    from refimpl import mfcgd
    from refimpl.mfcgd.algorithm import MFCGDParams
    par = MFCGDParams(k=1.0, n=8.0, c1=10.0, c2=10.0, c3=10.0)
    capped = par.capped_steps(100)
    assert capped["alpha"] == sum(par.momentum(t)[0] == 1.0 for t in range(1, 101)) > 0
    tr = mfcgd.run(mfcgd.Config(method="mfcgd", steps=50, n=8.0, c=10.0, eval_every=10))
    assert tr.config["capped_steps"]["alpha"] == MFCGDParams(k=1.0, n=8.0, c1=10, c2=10, c3=10).capped_steps(50)["alpha"]
    assert mfcgd.run(mfcgd.Config(method="mfcgd", steps=50, n=1e4, eval_every=10)).config["capped_steps"] == \
        {"alpha": 0, "beta": 0, "rho": 0}


@pytest.mark.parametrize("method", ["scgd", "storm"])
def test_single_machine_baselines_run_with_one_client(method):
    from refimpl import mfcgd
    tr = mfcgd.run(mfcgd.Config(method=method, steps=30, eval_every=10))
    assert tr.config["clients"] == 1 and tr.metrics["rounds"][-1] in (0, 30)


def test_authors_preset_sets_their_script_and_refuses_a_conflicting_flag(tmp_path, capsys):
    out = tmp_path / "p"
    assert main(["run", "ssca", "--preset", "authors", "--batch", "100", "--rounds", "2", "--hidden", "8",
                 "--quiet", "--out", str(out)]) == 0
    import json
    c = json.load(open(out / "trace.json"))["config"]
    assert (c["rho_a"], c["gamma_a"], c["rho_alpha"], c["tau"], c["curvature"], c["activation"], c["bias"]) == \
        (0.3, 0.3, 0.1, 0.05, "fixed", "relu", True)
    assert main(["run", "ssca", "--preset", "authors", "--curvature", "recursive", "--rounds", "2"]) == 2
    assert "--curvature recursive conflicts with --preset authors" in capsys.readouterr().err
    assert main(["run", "ssca", "--preset", "authors", "--batch", "50", "--rounds", "2"]) == 2
    assert "allowed: [10, 100, 6000]" in capsys.readouterr().err
    assert main(["reproduce", "vfl-time", "--preset", "authors", "--out", str(tmp_path / "v")]) == 2
    assert "SSCA reproductions" in capsys.readouterr().err
