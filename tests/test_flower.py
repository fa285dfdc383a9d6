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


#: the README's three commands (Flower engine, refimpl's runner, crosscheck), as written; this
#: test runs them (tests/test_doc_commands.py counts on it), adding only the reduced size below
README_FLOWER = ["run ssca --engine flower --clients 4 --batch 10 --rounds 20 --snapshots 0,10,20 --out runs/fl",
                 "run ssca --clients 4 --batch 10 --rounds 20 --snapshots 0,10,20 --out runs/own",
                 "crosscheck runs/own runs/fl --tol 1e-10"]


def test_the_readme_commands_agree(tmp_path, capsys):
    """Flower's simulation engine and refimpl's runner as the README runs them: every snapshot the
    command keeps (rounds 0, 10, 20) within 1e-10 relative."""
    paths = {"runs/fl": str(tmp_path / "fl"), "runs/own": str(tmp_path / "own")}
    for i, text in enumerate(README_FLOWER):
        argv = [paths.get(a, a) for a in text.split()]
        extra = ["--hidden", "16", "--quiet"] if argv[0] == "run" else []
        assert main([*argv, *extra]) == 0, text
    out = capsys.readouterr().out
    assert "W1@20" in out and "W1@10" in out and "DIFFERS" not in out


@pytest.mark.parametrize("algorithm", ["sgd"])       # SSCA: test_the_readme_commands_agree
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


# -- a real implementation nobody here wrote: Flower's own FedAvg --------------------------------

def _numpy_sgd_client_steps(W1, W2, X, y, eta, E, B, n_classes=10):
    """E plain-SGD steps of a client on the two-layer swish network without biases (mean
    cross-entropy), written here from docs/ssca.md alone — not refimpl's model code."""
    for e in range(E):
        Xb, yb = X[e * B:(e + 1) * B], y[e * B:(e + 1) * B]
        Z = Xb @ W1.T
        s = 1.0 / (1.0 + np.exp(-Z))
        A = Z * s
        O = A @ W2.T
        P = np.exp(O - O.max(axis=1, keepdims=True))
        P /= P.sum(axis=1, keepdims=True)
        D2 = (P - np.eye(n_classes)[yb]) / len(yb)
        gW2 = D2.T @ A
        D1 = (D2 @ W2) * (s * (1.0 + Z * (1.0 - s)))
        gW1 = D1.T @ Xb
        W1, W2 = W1 - eta * gW1, W2 - eta * gW2
    return W1, W2


def _flower_fedavg(trace, data, K, E, B, rounds, lr0, decay):
    """Flower's FedAvg strategy and a NumPyClient per partition (contiguous split, refimpl's batch
    schedule read from the trace), run by Flower's simulation engine; returns the global model
    after every round (Flower's evaluate_fn sees it)."""
    from flwr.client import ClientApp, NumPyClient
    from flwr.common import ndarrays_to_parameters
    from flwr.server import ServerApp, ServerAppComponents, ServerConfig
    from flwr.server.strategy import FedAvg
    from flwr.simulation import run_simulation
    parts = np.array_split(np.arange(data.n_train), K)
    seen = {}

    class Client(NumPyClient):
        def __init__(self, k):
            self.k = k

        def fit(self, parameters, config):
            t = int(config["round"])
            idx = trace.batches[t - 1, self.k]
            W1, W2 = _numpy_sgd_client_steps(parameters[0], parameters[1], data.X_train[idx], data.y_train[idx],
                                             lr0 / t ** decay, E, B)
            return [W1, W2], len(parts[self.k]), {}

    def client_fn(context):
        return Client(int(context.node_config["partition-id"])).to_client()

    def evaluate_fn(server_round, parameters, config):
        seen[server_round] = [p.copy() for p in parameters]
        return 0.0, {}

    W1, W2 = trace.snapshots[0]
    strategy = FedAvg(fraction_fit=1.0, fraction_evaluate=0.0, min_fit_clients=K, min_available_clients=K,
                      initial_parameters=ndarrays_to_parameters([W1, W2]), evaluate_fn=evaluate_fn,
                      on_fit_config_fn=lambda r: {"round": r})
    app = ServerApp(server_fn=lambda ctx: ServerAppComponents(strategy=strategy,
                                                              config=ServerConfig(num_rounds=rounds)))
    run_simulation(app, ClientApp(client_fn=client_fn), num_supernodes=K,
                   backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0}})
    return seen


def test_flowers_own_fedavg_equals_refimpls_fedavg():
    """Flower's FedAvg (weights num_examples) with a plain-NumPy ClientApp taking E local SGD steps,
    against refimpl's FedAvg on the same initial point, partition and batches: every round's
    global model agrees to 1e-12 relative when num_examples is the client's partition size N_k
    (refimpl weights clients by N_k/N; the contiguous split of 4,000 into 3 is 1334/1333/1333).
    Reporting the batch size instead (another common convention) weights the clients equally:
    the two part at round 1 in ω (shown on the same client steps)."""
    import refimpl
    from refimpl import ssca
    K, E, B, R = 3, 2, 10, 5
    cfg = ssca.Config(algorithm="sgd", setting="sample", clients=K, batch=B, local_steps=E, rounds=R, hidden=8,
                      eval_every=R, seed=4, snapshots=list(range(R + 1)))
    data = refimpl.data.mnist_5k()
    ours = ssca.run(cfg, data)
    assert ours.batches.shape == (R, K, E * B)
    theirs = _flower_fedavg(ours, data, K, E, B, R, cfg.lr, cfg.lr_decay)
    assert sorted(theirs) == list(range(R + 1))
    for t in range(R + 1):
        for a, b in zip(ours.snapshots[t], theirs[t]):
            assert np.max(np.abs(a - b)) <= 1e-12 * np.max(np.abs(a)), t
    # num_examples = the batch size: FedAvg's weighted mean becomes the plain mean of the clients'
    # models (the same client steps, aggregated here): not N_k/N, so round 1 already parts
    W1, W2 = ours.snapshots[0]
    models = [_numpy_sgd_client_steps(W1, W2, data.X_train[ours.batches[0, k]], data.y_train[ours.batches[0, k]],
                                      cfg.lr, E, B) for k in range(K)]
    equal = [sum(m[i] for m in models) / K for i in (0, 1)]
    gap = max(np.max(np.abs(a - b)) / np.max(np.abs(a)) for a, b in zip(ours.snapshots[1], equal))
    assert gap > 1e-9
