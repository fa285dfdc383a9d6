"""Sample-based SSCA and its baselines as Flower strategies (extra ``refimpl[flower]``).

The server math is refimpl's own: a :class:`RefimplStrategy` holds a refimpl algorithm object
(:class:`~refimpl.ssca.algorithms.SSCA`, :class:`~refimpl.ssca.constrained_algorithms.ConstrainedSSCA`
with the closed-form step, or :class:`~refimpl.ssca.algorithms.FedAvg` with one local step — SGD,
and SGD-m with ``momentum``) and drives it with :class:`~refimpl.ssca.algorithms.Trainer`, the
round loop of ``refimpl run``. Only the gradient collection changes hands: the algorithm's
protocol is replaced by :class:`FlowerCollection`, which returns the estimates assembled from the
clients' replies of the current Flower round.

Round t:
  1. ``configure_fit`` sends ω^t and *every* client's batch of round t (from refimpl's batch
     schedule, as JSON keyed by partition id) to every client; a client takes its own entry, so
     the run does not depend on the order in which Flower's engine calls clients;
  2. the :class:`GradientClient` of partition k returns Σ_{n∈B_k} ∇ℓ_n and Σ_{n∈B_k} ℓ_n
     (:meth:`SampleBasedProtocol.client_sums`, i.e. ``TwoLayerNet.loss_grad``);
  3. ``aggregate_fit`` sorts the replies by partition id, forms ĝ^t = Σ_k (N_k/N)(1/B_k) Σ ∇ℓ_n and
     ℓ̂^t likewise, and takes the refimpl server step (surrogate recursion, closed form, move).

Against refimpl's own runner the only difference is the order of the sums (per client, then
across clients, instead of one stacked pass), so iterates agree to rounding (the tests ask for
1e-10 relative over 20 rounds).

Feature-based SSCA (Algorithm 3) is not offered: its round is three dependent exchanges
(clients → designated client → clients → server) within one round, while a Flower round is one
server→clients→server exchange; it would take three Flower rounds per SSCA round with
client-to-client relays through the server, which changes the protocol being cross-checked.
"""
from __future__ import annotations

import functools
import json

import numpy as np

from refimpl.ssca.protocols import SampleBasedProtocol, sample_round_messages

INSTALL_HINT = "the Flower engine needs the flower extra: pip install 'refimpl[flower]' (Python >= 3.11)"


def _flwr():
    try:
        import flwr  # noqa: F401
        from flwr.simulation import run_simulation  # noqa: F401
    except ImportError as exc:
        raise ValueError(f"{INSTALL_HINT} ({exc})")
    import flwr
    return flwr


class FlowerCollection:
    """Stands in for :class:`SampleBasedProtocol` on the server: ``collect`` returns the estimates
    the strategy assembled from the current round's replies, with the same message ledger."""

    def __init__(self, protocol: SampleBasedProtocol):
        self.model, self.client_weight, self.parts = protocol.model, protocol.client_weight, protocol.parts
        self.pending = None

    def assemble(self, replies):
        """``replies``: {partition id: (loss sum, gradient sum, batch size)} → (ℓ̂, ĝ), summed in
        partition order."""
        K = len(self.parts)
        if sorted(replies) != list(range(K)):
            raise RuntimeError(f"a round needs replies from partitions 0..{K - 1}, got {sorted(replies)}")
        loss, grad = 0.0, np.zeros(self.model.n_params)
        for k in range(K):
            lsum, gsum, b = replies[k]
            loss += self.client_weight[k] / b * lsum
            grad += self.client_weight[k] / b * gsum
        self.pending = (loss, grad)

    def collect(self, theta, batches):
        if self.pending is None:
            raise RuntimeError("no Flower replies were assembled for this round")
        (loss, grad), self.pending = self.pending, None
        return loss, grad, sample_round_messages(self.model.n_params, len(batches))


def batches_config(batches):
    """The round's batches for the clients: JSON {"k": [sample ids]}."""
    return json.dumps({str(k): [int(i) for i in np.asarray(b)] for k, b in enumerate(batches)})


def partition_of(context):
    """The partition a Flower client stands for: its node's ``partition-id`` (Flower's simulation
    numbers the K partitions 0..K−1)."""
    return int(context.node_config["partition-id"])


def fit_config(schedule, server_round):
    """What the strategy sends every client in Flower's round ``server_round`` (counted from 1):
    the batches of refimpl's round t = server_round, row t − 1 of the schedule."""
    return {"batches": batches_config(schedule.indices[server_round - 1])}


def fit_plan(trainer, schedule, server_round):
    """The strategy's fit instructions for Flower's round ``server_round``: :func:`fit_config` while
    ``trainer`` runs, None once it has finished, stopped or diverged (Flower may ask for more rounds
    than refimpl runs; those send nothing)."""
    if not trainer.running:
        return None
    return fit_config(schedule, server_round)


def fit_instructions(trainer, schedule, server_round, client_manager, K, make_ins):
    """The strategy's ``configure_fit``: all K clients, sampled from Flower's client manager, get one
    ``make_ins(config)`` (Flower's FitIns: ω^t and the round's :func:`fit_plan`); none once the run
    has ended."""
    cfg = fit_plan(trainer, schedule, server_round)
    if cfg is None:
        return []
    ins = make_ins(cfg)
    return [(c, ins) for c in client_manager.sample(num_clients=K, min_num_clients=K)]


def client_reply(protocol: SampleBasedProtocol, pid, parameters, config):
    """What the client of partition ``pid`` answers to a fit request (ω^t as ``parameters[0]``, the
    round's batches as ``config["batches"]``): ([Σ_{n∈B_pid} ∇ℓ_n], |B_pid|, {"pid", "loss_sum"}),
    on its own entry of the batches."""
    batch = np.asarray(json.loads(config["batches"])[str(pid)], dtype=np.int64)
    lsum, gsum = protocol.client_sums(np.asarray(parameters[0], dtype=np.float64), pid, batch)
    return [gsum], int(batch.size), {"pid": pid, "loss_sum": float(lsum)}


def replies_by_partition(results, to_arrays):
    """The strategy's keying of a round's replies: {partition id: (loss sum, gradient sum, batch
    size)} from Flower's (client, FitRes) pairs in any arrival order, each reply keyed by the
    partition id its client reported (``to_arrays``: a FitRes's parameters as NumPy arrays)."""
    replies = {}
    for _, res in results:
        pid = int(res.metrics["pid"])
        if pid in replies:
            raise RuntimeError(f"two replies from partition {pid} in one round")
        replies[pid] = (float(res.metrics["loss_sum"]), to_arrays(res.parameters)[0], int(res.num_examples))
    return replies


def server_step(trainer, collection, schedule, server_round, results, to_arrays):
    """The strategy's work on Flower round ``server_round`` (from 1): the replies keyed by partition
    and assembled, then refimpl's server step of round r on schedule row r − 1 (the batches
    :func:`fit_config` sent); returns ω after the step."""
    collection.assemble(replies_by_partition(results, to_arrays))
    trainer.step(server_round, schedule.indices[server_round - 1])
    return trainer.state.omega


@functools.lru_cache(maxsize=1)
def _gradient_client_class():
    """Flower's ``NumPyClient`` whose fit is :func:`client_reply` (defined once, when Flower is
    first needed)."""
    from flwr.client import NumPyClient

    class GradientClient(NumPyClient):
        def __init__(self, protocol, pid):
            self.protocol, self.pid = protocol, pid

        def fit(self, parameters, config):
            return client_reply(self.protocol, self.pid, parameters, config)

    return GradientClient


def gradient_client(protocol: SampleBasedProtocol, context):
    """The Flower client of a ``ClientApp`` for ``context``'s node: the ``GradientClient`` of
    partition :func:`partition_of` (context), as Flower's ``Client``."""
    return _gradient_client_class()(protocol, partition_of(context)).to_client()


def make_client_app(protocol: SampleBasedProtocol):
    """A Flower ``ClientApp`` whose client of partition k (``node_config["partition-id"]``) returns
    its loss and gradient sums on the batch the server named for it."""
    _flwr()
    from flwr.client import ClientApp

    def client_fn(context):
        return gradient_client(protocol, context)

    return ClientApp(client_fn=client_fn)


def make_strategy(trainer, schedule, collection: FlowerCollection):
    """A Flower ``Strategy`` running refimpl's server step through ``trainer`` (a started
    :class:`~refimpl.ssca.algorithms.Trainer` whose algorithm's protocol is ``collection``)."""
    _flwr()
    from flwr.common import FitIns, ndarrays_to_parameters, parameters_to_ndarrays
    from flwr.server.strategy import Strategy

    K = len(collection.parts)

    class RefimplStrategy(Strategy):
        """refimpl's algorithm as a Flower strategy (see the module docstring)."""

        def initialize_parameters(self, client_manager):
            return ndarrays_to_parameters([trainer.state.omega])

        def configure_fit(self, server_round, parameters, client_manager):
            return fit_instructions(trainer, schedule, server_round, client_manager, K,
                                    lambda cfg: FitIns(ndarrays_to_parameters([trainer.state.omega]), cfg))

        def aggregate_fit(self, server_round, results, failures):
            if failures:
                raise RuntimeError(f"round {server_round}: {len(failures)} client(s) failed: {failures[:1]}")
            return ndarrays_to_parameters([server_step(trainer, collection, schedule, server_round, results,
                                                       parameters_to_ndarrays)]), {}

        def configure_evaluate(self, server_round, parameters, client_manager):
            return []

        def aggregate_evaluate(self, server_round, results, failures):
            return None, {}

        def evaluate(self, server_round, parameters):
            return None

    return RefimplStrategy()


class FlowerRun:
    """What :func:`flower_apps` returns: the Flower ``strategy`` (refimpl's server step), the
    ``server_app`` and ``client_app`` built around it, and the refimpl ``trace`` the strategy fills
    while Flower runs (``state``: the last state of the algorithm)."""

    def __init__(self, strategy, server_app, client_app, trainer, trace, restore):
        self.strategy, self.server_app, self.client_app = strategy, server_app, client_app
        self.trainer, self.trace, self._restore = trainer, trace, restore

    @property
    def state(self):
        return self.trainer.state

    def finish(self):
        """Give the algorithm its own protocol back and close the trace's status."""
        self._restore()
        if self.trace.status == "running":
            self.trace.status = f"stopped: the Flower run ended before round {self.trainer.rounds}"
        self.trace.config["engine"] = "flower"
        return self.trace


def flower_apps(algorithm, theta0, schedule, rounds, evaluator, trace, snapshots=(), progress=None, divergence=None):
    """Flower's ``ServerApp`` and ``ClientApp`` for a built refimpl run (see
    :func:`refimpl.ssca.experiment.build`): ``algorithm`` must use a :class:`SampleBasedProtocol`,
    which is swapped for a :class:`FlowerCollection` until :meth:`FlowerRun.finish`."""
    from refimpl.ssca.algorithms import FedAvg, Trainer
    protocol = algorithm.protocol
    if not isinstance(protocol, SampleBasedProtocol):
        raise ValueError("the Flower engine runs the sample-based protocol only (--setting sample); "
                         "feature-based SSCA needs three exchanges per round (see refimpl.ssca.flower)")
    if isinstance(algorithm, FedAvg) and algorithm.E != 1:
        raise ValueError("the Flower engine runs SGD and SGD-m with one local step (--local-steps 1)")
    _flwr()                       # what Flower cannot run is refused first, with or without Flower installed
    from flwr.server import ServerApp, ServerAppComponents, ServerConfig
    collection = FlowerCollection(protocol)
    algorithm.protocol = collection

    def restore():
        algorithm.protocol = protocol
    trainer = Trainer(algorithm, theta0, rounds, evaluator, trace, snapshots, progress, None, divergence)
    trainer.start()
    strategy = make_strategy(trainer, schedule, collection)

    def server_fn(context):
        return ServerAppComponents(strategy=strategy, config=ServerConfig(num_rounds=rounds))
    return FlowerRun(strategy, ServerApp(server_fn=server_fn), make_client_app(protocol), trainer, trace, restore)


def ssca_flower_apps(config, data, init=None, batches=None, progress=None):
    """:class:`FlowerRun` for a :class:`~refimpl.ssca.experiment.RunConfig` (sample-based SSCA,
    constrained SSCA with the closed-form step, SGD, SGD-m): run its apps with Flower's
    ``run_simulation`` (one SuperNode per client) or plug ``.strategy`` into your own ServerApp,
    then ``.finish()`` for the refimpl trace."""
    from dataclasses import replace

    from refimpl.ssca.assembly import run_inputs
    cfg = replace(config, engine="flower").resolved()
    algo, theta0, schedule, evaluator, trace, snapshots, rule = run_inputs(cfg, data, init, batches)
    return flower_apps(algo, theta0, schedule, cfg.rounds, evaluator, trace, snapshots, progress, rule)


def run_flower(algorithm, theta0, schedule, rounds, evaluator, trace, snapshots=(), progress=None, divergence=None,
               verbose=False):
    """:func:`~refimpl.ssca.algorithms.train` with Flower's simulation engine as the transport:
    one virtual SuperNode per client, ``rounds`` Flower rounds."""
    _flwr()
    import logging

    from flwr.common.logger import FLOWER_LOGGER as flwr_logger
    from flwr.simulation import run_simulation
    run = flower_apps(algorithm, theta0, schedule, rounds, evaluator, trace, snapshots, progress, divergence)
    try:
        if not verbose:
            flwr_logger.setLevel(logging.WARNING)
        run_simulation(run.server_app, run.client_app, num_supernodes=len(run.trainer.algorithm.protocol.parts),
                       backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0}},
                       verbose_logging=verbose)
    finally:
        run.finish()
    return run.state
