"""The Flower adapter: refimpl's algorithms as Flower strategies, cross-checked against refimpl's
own runner (the ``flower`` extra is installed in CI)."""
import json

import numpy as np
import pytest

from refimpl.cli import main

flwr = pytest.importorskip("flwr", reason="the flower extra (pip install 'refimpl[flower]') is part of the test setup")

ROUNDS = 20
COMMON = ["--setting", "sample", "--clients", "4", "--batch", "10", "--rounds", str(ROUNDS), "--hidden", "16",
          "--eval-every", "5", "--seed", "3", "--snapshots", ",".join(str(t) for t in range(ROUNDS + 1)), "--quiet"]


@pytest.mark.parametrize("algorithm", ["ssca", "sgd"])
def test_flower_engine_equals_refimpl_runner(tmp_path, algorithm, capsys):
    a, b = tmp_path / "refimpl", tmp_path / "flower"
    assert main(["run", algorithm, *COMMON, "--out", str(a)]) == 0
    assert main(["run", algorithm, *COMMON, "--engine", "flower", "--out", str(b)]) == 0
    cfg = json.loads((b / "trace.json").read_text())
    assert cfg["config"]["engine"] == "flower" and cfg["status"] == "finished"
    capsys.readouterr()
    # every iterate of the 20 rounds within 1e-10 relative (summation order differs: rounding only)
    assert main(["crosscheck", str(a), str(b), "--tol", "1e-10"]) == 0
    out = capsys.readouterr().out
    assert "21" in out or "20" in out


def test_flower_apps_plug_into_a_user_server_app():
    """What the README shows a Flower user: the strategy (refimpl's server step) inside their own
    ServerApp, run by Flower's simulation engine, and the refimpl trace at the end."""
    import refimpl
    from flwr.server import ServerApp, ServerAppComponents, ServerConfig
    from flwr.simulation import run_simulation
    from refimpl import ssca
    cfg = ssca.Config(algorithm="ssca-constrained", batch=10, rounds=4, clients=3, hidden=8, eval_every=2, U=0.5)
    run = ssca.flower_apps(cfg, refimpl.data.mnist_5k())
    app = ServerApp(server_fn=lambda ctx: ServerAppComponents(strategy=run.strategy, config=ServerConfig(num_rounds=4)))
    run_simulation(app, run.client_app, num_supernodes=3)
    trace = run.finish()
    ref = ssca.run(cfg, refimpl.data.mnist_5k())
    assert trace.status == "finished" and trace.metrics["round"] == [0, 2, 4]
    np.testing.assert_allclose(trace.metrics["train_cost"], ref.metrics["train_cost"], rtol=1e-12)


def test_flower_engine_refuses_what_it_cannot_run():
    assert main(["run", "ssca", "--setting", "feature", "--engine", "flower", "--rounds", "2", "--quiet"]) == 2
    assert main(["run", "sgd", "--engine", "flower", "--local-steps", "2", "--rounds", "2", "--quiet"]) == 2
