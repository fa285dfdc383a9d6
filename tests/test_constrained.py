import numpy as np
import pytest

from refimpl.ssca.algorithms import train
from refimpl.cli import main
from refimpl.ssca.constrained import QCQPStep, SolverError, closed_form_step, subproblem_kkt_residuals
from refimpl.ssca.constrained_algorithms import ConstrainedEvaluator, ConstrainedSSCA, kkt_residuals
from refimpl.core.model import TwoLayerNet, full_gradient
from refimpl.core.partition import feature_partition, sample_based_schedule, sample_partition
from refimpl.ssca.protocols import FeatureBasedProtocol, SampleBasedProtocol
from refimpl.core.schedules import PowerLaw
from refimpl.ssca.surrogate import SurrogateState
from refimpl.core.trace import Trace
from refimpl.verification.ssca import random_instance


def _kkt_ok(step, st, U, c, tol=1e-9):
    r = subproblem_kkt_residuals(step, [st], U, c)
    return all(v <= tol * max(1.0, c) for v in r.values())


def test_closed_form_branch_c_le_u(rng):
    st, U = random_instance(rng, 10, "C<=U")
    s = closed_form_step(st, U, 10.0)
    assert s.branch == "C<=U" and np.all(s.omega_bar == 0) and s.nu[0] == 0 and s.slack[0] == 0
    assert _kkt_ok(s, st, U, 10.0)


def test_closed_form_branch_constraint_active(rng):
    st, U = random_instance(rng, 10, "active")
    s = closed_form_step(st, U, 1e5)
    assert s.branch == "constraint-active" and 0 < s.nu[0] < 1e5 and s.slack[0] == 0
    assert st.value(s.omega_bar) == pytest.approx(U, abs=1e-12)     # the constraint binds
    assert _kkt_ok(s, st, U, 1e5)


def test_closed_form_branch_slack_active(rng):
    st, U = random_instance(rng, 10, "active")
    s = closed_form_step(st, U, 1e-3)
    assert s.branch == "slack-active" and s.nu[0] == 1e-3 and s.slack[0] > 0
    assert _kkt_ok(s, st, U, 1e-3)


def test_closed_form_branch_b_zero(rng):
    st, U = random_instance(rng, 10, "b=0")
    s = closed_form_step(st, U, 5.0)
    assert s.branch == "b=0" and s.nu[0] == 5.0
    assert s.slack[0] == pytest.approx(st.C - U) and np.all(s.omega_bar == 0)


def test_closed_form_no_cancellation_when_d_tiny():
    st = SurrogateState(0.5, np.full(4, 10.0), 1.0 + 1e-14)
    s = closed_form_step(st, 1.0, 1e5)
    d, b = 4 * 0.5 * 1e-14, 400.0
    assert s.nu[0] == pytest.approx(d / (0.5 * b * 2), rel=1e-6)    # ν° ≈ d/(2Ab) for d ≪ b


def test_closed_form_bad_input():
    st = SurrogateState(0.1, np.ones(3), 1.0)
    for U in (0.0, -1.0, np.nan):
        with pytest.raises(ValueError, match="U must be finite and > 0"):
            closed_form_step(st, U, 1.0)
    with pytest.raises(ValueError, match="penalty c"):
        closed_form_step(st, 0.5, 0.0)
    with pytest.raises(ValueError, match="A\\^t must be > 0"):
        closed_form_step(SurrogateState.zeros(3), 0.5, 1.0)


@pytest.mark.parametrize("formulation", ["full", "span"])
def test_cvxpy_equals_closed_form_every_branch(formulation, rng):
    for branch, c in (("C<=U", 1e5), ("active", 1e5), ("active", 0.05), ("b=0", 1e5)):
        q = QCQPStep(12, c, formulation=formulation)
        for _ in range(5):
            st, U = random_instance(rng, 12, branch)
            a, b = closed_form_step(st, U, c), q.solve([st], U)
            np.testing.assert_allclose(b.omega_bar, a.omega_bar, atol=1e-6 * max(1, np.abs(a.omega_bar).max()))
            assert abs(b.nu[0] - a.nu[0]) <= 1e-5 * max(1.0, a.nu[0])
            assert abs(b.slack[0] - a.slack[0]) <= 1e-6 * max(1.0, a.slack[0])


def test_cvxpy_multi_constraint_kkt_and_ball(rng):
    n, m = 15, 4
    states = [SurrogateState(0.2, rng.standard_normal(n), 2.0) for _ in range(m)]
    U = np.full(m, 0.8)
    s = QCQPStep(n, 10.0, m).solve(states, U)
    res = subproblem_kkt_residuals(s, states, U, 10.0)
    assert res["stationarity"] < 1e-6 and res["primal"] < 1e-8
    radius = 0.5 * np.linalg.norm(s.omega_bar)
    sb = QCQPStep(n, 10.0, m, ball_radius=radius).solve(states, U)
    assert np.linalg.norm(sb.omega_bar) <= radius * (1 + 1e-6) and sb.ball_multiplier > 0
    res = subproblem_kkt_residuals(sb, states, U, 10.0, radius)
    assert res["stationarity"] < 1e-4 and res["complementarity"] < 1e-4


def test_cvxpy_bad_solver_and_shapes():
    with pytest.raises(ValueError, match="not installed"):
        QCQPStep(5, 1.0, solver="NOPE")
    with pytest.raises(ValueError, match="formulation"):
        QCQPStep(5, 1.0, formulation="dense")
    with pytest.raises(ValueError, match="full-space DPP formulation is limited"):
        QCQPStep(10 ** 5, 1.0, formulation="full")
    q = QCQPStep(5, 1.0, n_constraints=2)
    with pytest.raises(ValueError, match="built for 2 constraints"):
        q.solve([SurrogateState(0.1, np.ones(5), 1.0)], 0.5)


@pytest.fixture
def setup(mnist):
    m = TwoLayerNet(mnist.n_features, 8, 10)
    parts = sample_partition(1000, 4)
    X, y = mnist.X_train[:1000], mnist.y_train[:1000]
    pr = SampleBasedProtocol(m, X, y, parts)
    sched = sample_based_schedule(parts, 12, 25, np.random.default_rng(0))
    return m, X, y, parts, pr, sched


def _run(algo, setup, T=12, per_client=False):
    m, X, y, parts, pr, sched = setup
    ev = ConstrainedEvaluator(m, X, y, X[:100], y[:100], 0.0, 4, U=algo.U, parts=parts if per_client else None)
    tr = Trace({})
    tr.extra["final"] = train(algo, m.init_params(np.random.default_rng(1)), sched, T, ev, tr)
    return tr


def test_constrained_closed_form_and_cvxpy_runs_agree(setup):
    pr = setup[4]
    args = (pr, PowerLaw(1, 0.55), PowerLaw(0.5, 0.6), 0.05, 0.6, 1e5)
    a = _run(ConstrainedSSCA(*args), setup)
    b = _run(ConstrainedSSCA(*args, solver="cvxpy"), setup)
    np.testing.assert_allclose(a.series("sq_norm"), b.series("sq_norm"), rtol=1e-5)
    np.testing.assert_allclose(a.series("multiplier"), b.series("multiplier"), rtol=1e-4)
    for k in ("constraint_value", "slack", "kkt_stationarity", "kkt_feasibility", "kkt_complementarity"):
        assert k in a.metrics


def test_unreachable_U_reports_persistent_slack(setup):
    pr = setup[4]
    tr = _run(ConstrainedSSCA(pr, PowerLaw(1, 0.55), PowerLaw(0.5, 0.6), 0.05, 1e-6, 1.0), setup)
    assert tr.status == "finished"
    assert np.all(tr.series("slack")[1:] > 0.1)


def test_per_client_constraints_run(setup):
    pr = setup[4]
    algo = ConstrainedSSCA(pr, PowerLaw(1, 0.55), PowerLaw(0.5, 0.6), 0.05, [0.9, 0.9, 1.0, 1.0], 1e3,
                           solver="cvxpy", per_client=True)
    tr = _run(algo, setup, per_client=True)
    assert tr.status == "finished" and tr.series("multiplier")[-1] >= 0


def test_solver_failure_falls_back_and_is_recorded(setup, monkeypatch):
    pr = setup[4]
    algo = ConstrainedSSCA(pr, PowerLaw(1, 0.55), PowerLaw(0.5, 0.6), 0.05, 0.6, 1e5, solver="cvxpy")

    def fail(states, U):
        raise SolverError("cvxpy solver CLARABEL returned 'infeasible_inaccurate'")
    monkeypatch.setattr(algo.qcqp, "solve", fail)
    tr = _run(algo, setup)
    assert tr.status == "finished"
    assert tr.series("solver_fallbacks")[-1] == 12
    assert "infeasible_inaccurate" in tr.extra["final"].note and "used the closed form" in tr.extra["final"].note


def test_solver_failure_without_closed_form_stops_run(setup, monkeypatch):
    pr = setup[4]
    algo = ConstrainedSSCA(pr, PowerLaw(1, 0.55), PowerLaw(0.5, 0.6), 0.05, [1.0] * 4, 1e5, solver="cvxpy",
                           per_client=True)
    monkeypatch.setattr(algo.qcqp, "solve", lambda s, U: (_ for _ in ()).throw(SolverError("CLARABEL: 'solver_error'")))
    tr = _run(algo, setup, per_client=True)
    assert tr.status.startswith("solver failed: round 1") and "CLARABEL" in tr.status


def test_constrained_bad_input(setup, mnist):
    pr = setup[4]
    sched = (pr, PowerLaw(1, 0.55), PowerLaw(0.5, 0.6), 0.05)
    with pytest.raises(ValueError, match="U must be finite and > 0"):
        ConstrainedSSCA(*sched, 0.0, 1.0)
    with pytest.raises(ValueError, match="penalty c"):
        ConstrainedSSCA(*sched, 0.5, -1.0)
    with pytest.raises(ValueError, match="closed form covers one constraint"):
        ConstrainedSSCA(*sched, 0.5, 1.0, per_client=True)
    with pytest.raises(ValueError, match="one bound or 4 bounds"):
        ConstrainedSSCA(*sched, [0.5, 0.5], 1.0, solver="cvxpy", per_client=True)
    fpr = FeatureBasedProtocol(setup[0], mnist.X_train, mnist.y_train, feature_partition(784, 4))
    with pytest.raises(ValueError, match="per-client constraints need the sample-based"):
        ConstrainedSSCA(fpr, PowerLaw(1, 0.5), PowerLaw(1, 0.6), 0.1, 0.5, 1.0, solver="cvxpy", per_client=True)


def test_kkt_residuals_zero_at_constructed_kkt_point(setup):
    """A genuine KKT point of min ||ω||² s.t. f(ω) ≤ U: for a fixed ν > 0, the minimiser ω* of
    ||ω||² + ν f(ω) satisfies 2ω* + ν∇f(ω*) = 0; with U = f(ω*) the constraint is active, so
    feasibility and complementarity vanish too. The residuals must be ~0 there and not elsewhere."""
    from scipy.optimize import minimize
    m, X, y = setup[0], setup[1][:200], setup[2][:200]
    nu = 5.0

    def fun(th):
        return float(th @ th) + nu * m.loss(th, X, y), 2 * th + nu * full_gradient(m, th, X, y, 0.0)
    res0 = minimize(fun, m.init_params(np.random.default_rng(5)), jac=True, method="L-BFGS-B",
                    options={"gtol": 1e-11, "ftol": 1e-15, "maxiter": 20000})
    theta = res0.x
    U = m.loss(theta, X, y)
    res, f = kkt_residuals(m, theta, np.array([nu]), X, y, U)
    assert res["kkt_stationarity_rel"] < 1e-6, res
    assert res["kkt_feasibility"] == 0 and res["kkt_complementarity"] < 1e-12
    # the same residuals elsewhere: a perturbed point and a wrong multiplier are far from KKT
    off, _ = kkt_residuals(m, theta * 1.1, np.array([nu]), X, y, U)
    assert off["kkt_stationarity_rel"] > 1e-3
    wrong, _ = kkt_residuals(m, theta, np.array([2 * nu]), X, y, U)
    assert wrong["kkt_stationarity_rel"] > 0.1


def test_cli_tradeoff_study(tmp_path):
    out = tmp_path / "t"
    assert main(["run", "ssca-constrained", "--rounds", "4", "--hidden", "4", "--eval-every", "2", "--quiet",
                 "--U", "0.5,1.0", "--out", str(out)]) == 0
    lines = (out / "tradeoff.csv").read_text().splitlines()
    assert lines[0].startswith("U,round,sq_norm,data_loss") and len(lines) == 3
    assert (out / "tradeoff.png").exists() and (out / "U=0.5" / "trace.npz").exists()
    assert main(["run", "ssca", "--rounds", "4", "--hidden", "4", "--quiet", "--lam", "0,0.01",
                 "--out", str(tmp_path / "l")]) == 0
    assert (tmp_path / "l" / "tradeoff.csv").read_text().startswith("lam,")
    assert main(["run", "ssca", "--rounds", "2", "--U", "0.1,0.2"]) == 2


def test_cli_constrained_cvxpy_solver(tmp_path):
    assert main(["run", "ssca-constrained", "--solver", "cvxpy", "--rounds", "3", "--hidden", "4", "--quiet",
                 "--U", "0.8", "--out", str(tmp_path)]) == 0
    assert main(["run", "ssca-constrained", "--U", "0", "--rounds", "2"]) == 2


def test_lemma1_active_constraint_point_is_feasible_in_float64():
    """At an active constraint the closed form's ω̄ satisfies q(ω̄) ≤ U in floating point (no
    rounding-level slack for the penalty c to multiply), on badly scaled instances."""
    from refimpl.ssca.constrained import closed_form_step
    from refimpl.ssca.surrogate import SurrogateState
    rng = np.random.default_rng(5)
    active = 0
    for _ in range(300):
        A = 10 ** rng.uniform(-4, 2)
        B = rng.standard_normal(6) * 10 ** rng.uniform(-3, 3, 6)
        U = 10 ** rng.uniform(-3, 2)
        st = SurrogateState(A, B, U + rng.uniform(0.01, 0.99) * (B @ B) / (4 * A))
        step = closed_form_step(st, U, 1e6)
        if step.branch == "constraint-active":
            active += 1
            assert st.value(step.omega_bar) <= U
            assert step.slack[0] == 0.0
            # the nudge is a few ulps of ν: ω̄ still solves the dual's stationarity to rounding
            nu = step.nu[0]
            np.testing.assert_allclose(step.omega_bar, -nu * B / (2 * (1 + nu * A)), rtol=1e-15)
    assert active > 250
