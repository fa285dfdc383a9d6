"""MFCGD and AdaMFCGD for federated compositional optimisation ([MFCGD] Algorithm 1), with
ComFedL-style local SCGD, Local-SCGDM, SCGD and STORM-compositional baselines.

Public API::

    from refimpl import mfcgd
    trace = mfcgd.run(mfcgd.Config(method="adamfcgd", steps=2000))

``Config``'s field names are the options of ``refimpl run mfcgd`` (and the other methods) and the
keys of a sweep spec. Modules: :mod:`~refimpl.mfcgd.problems` (problem classes with derived
constants), :mod:`~refimpl.mfcgd.algorithm` (Algorithm 1, adaptive matrices, baselines, Numba
kernels), :mod:`~refimpl.mfcgd.bounds` (Theorems 1–2: conditions and right-hand sides).
"""
from refimpl.core.threads import blas_threads
from refimpl.core.data import Dataset
from refimpl.core.trace import Trace
from refimpl.mfcgd.experiment import METHODS, PROBLEMS
from refimpl.mfcgd.experiment import MFCGDConfig as Config
from refimpl.mfcgd.experiment import run_mfcgd_config

__all__ = ["Config", "METHODS", "PROBLEMS", "run"]


def run(config: Config | None = None, data: Dataset | None = None, *, progress=None, dump_writer=None) -> Trace:
    """Run one compositional method (``config.method``) on ``config.problem``; ``data`` is used
    by the distributionally robust problem (default: the embedded MNIST subset).
    ``progress(step, x_bar)`` is called at every evaluation; ``dump_writer``: as for
    :func:`refimpl.ssca.run` (the kernels collect their steps' quantities, a few kB each, and the
    writer receives them when the run ends)."""
    config = Config() if config is None else config
    with blas_threads():
        return run_mfcgd_config(config, data, progress, dump_writer)
