"""Flex-VFL in the paper's regime: communication on the clock, the authors' CPU traces, paired
adaptive schedules, protocols and the regime comparison."""
import json

import numpy as np
import pytest

from refimpl.cli import main
from refimpl.vfl import regime as RG
from refimpl.vfl.flexvfl import FlexVFL, VerticalData, run_async
from refimpl.vfl.local_optimizers import SGD
from refimpl.vfl.models import LinearEncoder, LinearFusion, VerticalModel
from refimpl.vfl.speeds import ConstantSpeed, CPUTraceSpeed, MarkovSpeed, Network, parse_speeds


@pytest.fixture
def toy():
    """Server + 2 parties (3 participants), 3 features each, 2 classes."""
    rng = np.random.default_rng(0)
    X1, X2 = rng.standard_normal((40, 3)), rng.standard_normal((40, 3))
    y = (X1[:, 0] + X2[:, 0] > 0).astype(int)
    data = VerticalData((X1, X2), y, (X1[:10], X2[:10]), y[:10])
    model = VerticalModel((LinearEncoder(3, 2), LinearEncoder(3, 2)), LinearFusion(4, 2))
    return model, data


# step times: server 0.5, party 1: 1, party 2: 3; timeout 6; server round trip S = 10; messages free
NET = Network(bandwidth=1e18, latency=0.0, server_time=10.0)
SPEEDS = ConstantSpeed((0.5, 1.0, 3.0)).sample(5, None)


@pytest.mark.parametrize("method, kw, tau, duration", [
    ("sync", dict(Q=4), [4, 4, 4], 4 * 3.0 + 10),                       # slowest party's Q steps + S
    ("flex", dict(timeout=6.0), [12, 6, 2], 6.0 + 10),                   # the timeout + S
    ("flex", dict(timeout=6.0, server_steps=5), [5, 6, 2], 6.0 + 10),    # authors: server τ = Q, free compute
    ("pbcd", {}, [1, 1, 1], 3.0 + 10),                                   # one step each, the slowest + S
])
def test_round_durations_include_the_server_round_trip(toy, method, kw, tau, duration):
    model, data = toy
    run = FlexVFL.from_method(model, data, method, [SGD()] * 3, 0.1, 8, SPEEDS, network=NET, **kw)
    tr = run.run(model.init(np.random.default_rng(1)), 3, np.random.default_rng(2))
    assert tr.arrays["tau"].tolist() == [tau] * 3
    np.testing.assert_allclose(tr.arrays["round_time"], duration, rtol=0, atol=1e-9)
    np.testing.assert_allclose(tr.series("time"), np.arange(4) * duration, atol=1e-9)


@pytest.mark.parametrize("server_free, events_at", [
    # party 1 cycles every 1 + 0.5 + 10 = 11.5 from t = 1; party 2 every 3 + 0.5 + 10 = 13.5 from t = 3
    (False, [1.0, 3.0, 12.5, 16.5, 24.0, 30.0]),
    # free server compute: cycles of 11 and 13
    (True, [1.0, 3.0, 12.0, 16.0, 23.0, 29.0]),
])
def test_async_events_pay_the_round_trip(toy, server_free, events_at):
    model, data = toy
    tr = run_async(model, data, model.init(np.random.default_rng(1)), 0.1, 8, SPEEDS, np.random.default_rng(2),
                   time_budget=31.0, network=NET, eval_every_time=0.25, server_free=server_free)
    t, n = tr.series("time"), tr.series("round")
    # an evaluation at time e counts the events strictly before e
    for e, expected in ((0.75, 0), (1.25, 1), (2.75, 1), (3.25, 2)):
        assert n[np.argmin(np.abs(t - e))] == expected
    for i, at in enumerate(events_at[2:], start=2):
        assert n[np.argmin(np.abs(t - (at - 0.25)))] == i
        assert n[np.argmin(np.abs(t - (at + 0.25)))] == i + 1


def test_overrun_is_recorded_per_party(toy):
    model, data = toy
    sp = np.array([[0.5, 1.0, 7.0], [0.5, 1.0, 3.0], [0.5, 8.0, 7.0], [0.5, 1.0, 3.0]])
    run = FlexVFL.from_method(model, data, "flex", [SGD()] * 3, 0.1, 8, sp, timeout=6.0)
    tr = run.run(model.init(np.random.default_rng(1)), 4, np.random.default_rng(2))
    assert tr.arrays["overrun"].tolist() == (sp > 6.0).tolist()
    assert tr.config["overrun_fraction"] == [0.0, 0.25, 0.5]


def test_cpu_trace_in_the_authors_format(tmp_path):
    util = np.array([[0.0, 0.5, 1.0, 0.95],       # machines × time
                     [0.25, 0.05, 0.7, 1.3],       # 1.3 is clipped to 1
                     [-0.2, 0.9, 0.1, 0.45],       # -0.2 is clipped to 0
                     [0.6, 0.6, 0.6, 0.6]])
    csv = tmp_path / "cpu.csv"
    np.savetxt(csv, util, delimiter=",")
    npy = tmp_path / "cpu.npy"
    np.save(npy, util)
    for path in (csv, npy):
        sp = parse_speeds(f"cputrace:{path}", 3, timeout=6.0)
        assert "2 of 16 values outside [0, 1] clipped" in sp.note
        tau, machines = sp.taus(6, np.random.default_rng(3), 3)
        cpu = np.clip(util, 0, 1)[machines][:, np.arange(6) % 4].T
        assert tau.tolist() == np.floor(10 * (1 - cpu) + 1).astype(int).tolist()
        assert tau.min() >= 1 and tau.max() <= 11 and len(set(machines)) == 3
        steps = sp.sample(6, np.random.default_rng(3))
        assert np.floor(6.0 / steps).astype(int).tolist() == tau.tolist()        # the clock gives τ back
        again, machines2 = sp.taus(6, np.random.default_rng(3), 3)
        assert machines2.tolist() == machines.tolist() and again.tolist() == tau.tolist()
    # hand-checked values of the formula
    assert CPUTraceSpeed(np.array([[0.0, 0.05, 0.5, 0.95, 1.0]]), 1.0).taus(5, np.random.default_rng(0), 1)[0][:, 0].tolist() \
        == [11, 10, 6, 1, 1]


def test_cpu_trace_bad_input(tmp_path):
    nan = tmp_path / "nan.csv"
    nan.write_text("0.1,0.2\nnan,0.3\n")
    with pytest.raises(ValueError, match=r"nan.csv: entry \(machine 1, time 0\) is nan"):
        parse_speeds(f"cputrace:{nan}", 2, 6.0).sample(3, np.random.default_rng(0))
    few = tmp_path / "few.csv"
    few.write_text("0.1,0.2\n0.3,0.4\n")
    with pytest.raises(ValueError, match="few.csv has 2 machines for 3 parties"):
        parse_speeds(f"cputrace:{few}", 3, 6.0).sample(3, np.random.default_rng(0))
    flat = tmp_path / "flat.npy"
    np.save(flat, np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match=r"flat.npy: expected a matrix \(rows: machines, columns: time\)"):
        parse_speeds(f"cputrace:{flat}", 2, 6.0).sample(3, np.random.default_rng(0))
    with pytest.raises(ValueError, match="cannot read it"):
        parse_speeds(f"cputrace:{tmp_path / 'missing.csv'}", 2, 6.0)
    assert main(["run", "flexvfl", "--speeds", f"cputrace:{few}", "--rounds", "2", "--parties", "4", "--quiet"]) == 2
    with pytest.raises(ValueError, match="need the number of parties"):
        CPUTraceSpeed(np.full((3, 4), 0.5), 6.0).sample(2, np.random.default_rng(0))


def test_paired_adaptive_schedule_sees_the_same_rows(toy):
    """run_vfl gives fixed Flex-VFL rows 1..R and adaptive Flex-VFL row 0 for its dummy round and
    then rows 1..R: in round r both use the same step times, so the same τ."""
    from refimpl.vfl.experiment import VFLConfig, run_vfl
    from refimpl.verification.registry import embedded
    ds = embedded()
    base = dict(rounds=6, time_budget=None, speeds="markov:0.2,1,1,1,1:0.2,6,6,6,6:0.3:0.3", timeout=6.0, seed=4,
                eval_every=6)
    fixed = run_vfl(VFLConfig(method="flexvfl", **base), ds)
    ada = run_vfl(VFLConfig(method="adaptive-flexvfl", **base), ds)
    assert fixed.arrays["tau"].tolist() == ada.arrays["tau"].tolist()
    assert len(set(map(tuple, fixed.arrays["tau"].tolist()))) > 1          # the rows do vary
    np.testing.assert_allclose(fixed.arrays["round_time"], ada.arrays["round_time"])


def test_server_time_is_in_units_of_the_fastest_party_and_validated():
    from refimpl.vfl.experiment import VFLConfig, network_of
    sp = parse_speeds("lognormal:0.2,2,1.5,3,4:0.3", 5)
    assert network_of(VFLConfig(server_time=10.0), sp).server_time == pytest.approx(15.0)
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="--server-time must be a finite number >= 0"):
            network_of(VFLConfig(server_time=bad), sp)
        with pytest.raises(ValueError, match="server time must be finite and >= 0"):
            Network(server_time=bad)
    assert main(["run", "flexvfl", "--server-time", "-2", "--rounds", "2", "--quiet"]) == 2
    assert main(["compare", "vfl", "--server-time", "1,x", "--quiet"]) == 2
    with pytest.raises(SystemExit) as exc:                                    # argparse: not in the list
        main(["compare", "vfl", "--server-time", "1", "--protocol", "fast", "--quiet"])
    assert exc.value.code == 2
    assert main(["compare", "vfl", "--protocol", "authors", "--quiet"]) == 2     # needs --server-time


def test_tuned_protocol_widens_the_grid_until_the_best_eta_is_interior(monkeypatch):
    calls = []

    def fake_time_to(cfg, ds, seeds, target, budget, keep=None):
        eta = float(cfg.eta)
        calls.append(eta)
        return 1.0 + (np.log10(eta) - np.log10(0.002)) ** 2, []
    monkeypatch.setattr(RG, "time_to", fake_time_to)
    from refimpl.vfl.experiment import VFLConfig
    eta, t, table, interior = RG.tuned_eta(VFLConfig(), None, 1, 0.85, 100.0)
    # 0.01 is best at the edge → add 0.0033 (best, at the edge) → add 0.0011: 0.0033 is interior
    assert interior and eta == pytest.approx(0.01 / 3)
    assert sorted(table) == sorted([0.01 / 9, 0.01 / 3, 0.01, 0.03, 0.1, 0.3])


def test_ratios_and_crossover():
    rows = [{"server_time": S, "method": m, "time_to_target": t} for S, m, t in
            [(1, "flexvfl", 100), (1, "async-vfl", 50), (10, "flexvfl", 200), (10, "async-vfl", 300),
             (50, "flexvfl", 400), (50, "async-vfl", None)]]
    r = RG.ratios(rows, "async-vfl")
    assert r == {1: 0.5, 10: 1.5, 50: np.inf}
    assert RG.crossover(r) == (1, 10)
    assert RG.crossover({1: 2.0, 10: 3.0}) is None


def test_compare_vfl_by_regime_writes_panels_and_table(tmp_path, capsys):
    out = tmp_path / "reg"
    assert main(["compare", "vfl", "--server-time", "0,5", "--protocol", "authors", "--rounds", "8",
                 "--time-budget", "40", "--eta", "0.02", "--targets", "0.3", "--quiet", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "S = 0:" in text and "S = 5:" in text and "async-vfl/flexvfl" in text
    doc = json.loads((out / "regimes.json").read_text())
    assert doc["summary"]["protocol"] == "authors" and len(doc["rows"]) == 8
    assert {r["server_time"] for r in doc["rows"]} == {0.0, 5.0}
    lines = (out / "time_to_target_by_regime.csv").read_text().splitlines()
    assert lines[0].startswith("server_time,method,protocol,time_to_target") and len(lines) == 9
    assert (out / "accuracy_vs_time_by_regime.png").exists()


def test_compare_vfl_tuned_protocol_runs(tmp_path):
    out = tmp_path / "tuned"
    assert main(["compare", "vfl", "--server-time", "2", "--protocol", "tuned", "--rounds", "4",
                 "--time-budget", "20", "--targets", "0.2", "--quiet", "--out", str(out)]) == 0
    doc = json.loads((out / "regimes.json").read_text())
    assert doc["summary"]["protocol"] == "tuned"
    assert all("grid" in r and r["protocol"] == "tuned" for r in doc["rows"])


@pytest.mark.parametrize("protocol", ["authors", "tuned"])
@pytest.mark.parametrize("speeds, timeout", [
    ("lognormal:0.2,1,1,2,4:0.3", 5.0),   # a round's work > 1: the largest budget needs the most rounds
    ("constant:0.02,0.05,0.05,0.1,0.1", 0.2),   # work < 1: smaller S need more rounds (fresh runs)
])
def test_one_run_serves_every_server_time_exactly(protocol, speeds, timeout, monkeypatch):
    """regime_rows (one run per seed and η, re-timed for every S) gives the rows regime_row gives
    when it runs each S on its own — the same floating-point times, including rows whose budget
    the shared run does not cover (fresh runs) and rows that miss the target."""
    from dataclasses import replace
    from refimpl.core.data import load_embedded_mnist
    from refimpl.vfl import experiment as EX
    from refimpl.vfl.experiment import VFLConfig
    ds = load_embedded_mnist()
    cfg = VFLConfig(embed_dim=4, batch=16, rounds=40, time_budget=12.0, timeout=timeout, Q=3, speeds=speeds,
                    eta="0.05", seed=3, loss_every=7)
    server_times = (0.0, 1.0, 10.0)
    runs = []
    real = EX.run_vfl
    monkeypatch.setattr(EX, "run_vfl", lambda c, d, **kw: runs.append(c.server_time) or real(c, d, **kw))
    cases = ([(m, t) for m in RG.S_INDEPENDENT for t in (0.5, 0.8)] if protocol == "authors" else
             [("flexvfl", 0.6)])
    for meth, target in cases:
        runs.clear()
        shared = RG.regime_rows(cfg, ds, server_times, meth, protocol, target=target, seeds=2)
        n_shared = len(runs)
        fresh = [RG.regime_row(cfg, ds, S, meth, protocol, target=target, seeds=2) for S in server_times]
        assert shared == fresh, (meth, target)
        assert n_shared < len(runs) - n_shared              # fewer runs than one per S
    if speeds.startswith("constant") and protocol == "authors":
        assert any(t is None for t in (r["time_to_target"] for r in shared))
    # the re-timing refuses a run that is not evaluated every round
    with pytest.raises(ValueError, match="eval_every"):
        RG.times_over_server_times(replace(cfg, eval_every=2), ds, server_times, 1, 0.5, lambda S: 10.0)


def test_time_at_server_time_reads_the_clock_round_by_round():
    from refimpl.core.trace import Trace
    tr = Trace(config={})
    for r, acc in enumerate([0.1, 0.3, 0.6, 0.9]):
        tr.record(round=r, test_accuracy=acc)
    tr.arrays["round_work"] = np.array([1.0, 2.0, 4.0])
    tr.status = "finished"
    assert RG.time_at_server_time(tr, 0.5, 100.0, 10, 0.6) == (1.0 + 0.5) + (2.0 + 0.5)
    assert RG.time_at_server_time(tr, 0.5, 3.0, 10, 0.6) == 4.0           # the budget's last round still counts
    assert RG.time_at_server_time(tr, 0.5, 1.0, 10, 0.6) is None          # the budget ends at round 1
    assert RG.time_at_server_time(tr, 0.5, 100.0, 1, 0.6) is None         # the round cap ends first
    assert RG.time_at_server_time(tr, 0.0, 100.0, 10, 0.05) == 0.0        # met at round 0
    assert RG.time_at_server_time(tr, 0.0, 100.0, 10, 0.95) is RG._UNCOVERED   # the run ended first
    tr.status = "diverged: round 4: …"
    assert RG.time_at_server_time(tr, 0.0, 100.0, 10, 0.95) is None
