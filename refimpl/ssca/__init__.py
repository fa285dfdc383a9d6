"""Mini-batch SSCA for sample-based and feature-based federated learning, unconstrained and
constrained ([SSCA] Algorithms 1–4), with the SGD / FedAvg / SGD-m baselines.

Public API::

    from refimpl import ssca, data
    trace = ssca.run(ssca.Config(setting="sample", batch=10, rounds=300), data=data.mnist_5k())

``Config`` holds every setting of a run (the paper's values by default, docs/ssca.md); its field
names are the options of ``refimpl run ssca`` and the keys of a sweep spec. Modules:
:mod:`~refimpl.ssca.surrogate` (recursion, closed form, move), :mod:`~refimpl.ssca.constrained`
(Lemma 1 and the cvxpy QCQP), :mod:`~refimpl.ssca.protocols` (who computes what),
:mod:`~refimpl.ssca.algorithms` and :mod:`~refimpl.ssca.constrained_algorithms` (the rounds),
:mod:`~refimpl.ssca.kernels` (the fused server step).
"""
from refimpl.core.threads import blas_threads
from refimpl.core.data import Dataset, mnist_5k
from refimpl.core.trace import Trace
from refimpl.ssca.experiment import ALGORITHMS
from refimpl.ssca.experiment import RunConfig as Config
from refimpl.ssca.experiment import run_experiment

__all__ = ["ALGORITHMS", "Config", "run", "flower_apps"]


def run(config: Config | None = None, data: Dataset | None = None, *, init=None, batches=None,
        progress=None, dump_writer=None) -> Trace:
    """Run one SSCA-family algorithm (``config.algorithm``: ssca, ssca-constrained, sgd, sgdm).

    ``data``: a :class:`~refimpl.core.data.Dataset` (default: the embedded MNIST subset);
    ``init``: ``(W1, W2)`` initial point; ``batches``: an explicit batch schedule ((T, K, B)
    sample-based, (T, B) feature-based); ``progress(round, metrics)`` is called at every
    evaluation; ``dump_writer``: a :class:`~refimpl.core.dumps.DumpWriter` that writes the
    rounds of ``config.dump_rounds`` to disk as they finish (else they stay in ``trace.arrays``).
    Returns the :class:`~refimpl.core.trace.Trace`; its ``status`` says whether the run finished."""
    config = Config() if config is None else config
    with blas_threads():
        return run_experiment(config.resolved(), mnist_5k() if data is None else data, init, batches, progress,
                              dump_writer=dump_writer)


def flower_apps(config: Config | None = None, data: Dataset | None = None, *, init=None, batches=None, progress=None):
    """Flower ``ServerApp``/``ClientApp`` (and the ``strategy`` inside) running this configuration's
    sample-based SSCA, constrained SSCA (closed form), SGD or SGD-m with refimpl's server step; see
    :mod:`refimpl.ssca.flower`. Needs the ``flower`` extra."""
    from refimpl.ssca.flower import ssca_flower_apps
    return ssca_flower_apps(config or Config(), mnist_5k() if data is None else data, init, batches, progress)
