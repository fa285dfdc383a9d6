"""Flex-VFL and Adaptive Flex-VFL ([FlexVFL] Algorithms 1 and 2) with the synchronous,
asynchronous and P-BCD baselines, on a simulated clock.

Public API::

    from refimpl import vfl
    trace = vfl.run(vfl.Config(method="flexvfl", time_budget=200))

``Config``'s field names are the options of ``refimpl run flexvfl`` (and the other VFL methods)
and the keys of a sweep spec. Modules: :mod:`~refimpl.vfl.models` (encoders and fusion model),
:mod:`~refimpl.vfl.local_optimizers` (optimizers as gradient weights, (8)),
:mod:`~refimpl.vfl.speeds` (party speeds, network), :mod:`~refimpl.vfl.flexvfl` (the rounds,
the asynchronous event queue, theory quantities).
"""
from refimpl.core.threads import blas_threads
from refimpl.core.data import Dataset, mnist_5k
from refimpl.core.trace import Trace
from refimpl.vfl.experiment import VFL_METHODS
from refimpl.vfl.experiment import VFLConfig as Config
from refimpl.vfl.experiment import run_vfl

__all__ = ["Config", "METHODS", "run"]

METHODS = tuple(VFL_METHODS)


def run(config: Config | None = None, data: Dataset | None = None, *, progress=None, dump_writer=None) -> Trace:
    """Run one vertical-FL method (``config.method``: flexvfl, adaptive-flexvfl, sync-vfl,
    async-vfl, pbcd) on ``data`` split into ``config.parties`` feature blocks (default: the
    embedded MNIST subset in image quadrants). ``progress(round, trace)`` is called at every
    evaluation; ``dump_writer``: as for :func:`refimpl.ssca.run`."""
    config = Config() if config is None else config
    with blas_threads():
        return run_vfl(config, mnist_5k() if data is None else data, progress, dump_writer)
