"""refimpl — auditable NumPy/Numba reference implementations of mini-batch SSCA ([SSCA]),
Flex-VFL ([FlexVFL]) and MFCGD/AdaMFCGD ([MFCGD]), with numerical checks of their theorems.

One subpackage per paper — :mod:`refimpl.ssca`, :mod:`refimpl.vfl`, :mod:`refimpl.mfcgd`, each
with ``Config`` and ``run`` — over :mod:`refimpl.core` (network, kernels, data, partitions,
schedules, traces, plots); :mod:`refimpl.verification` holds the checks and :mod:`refimpl.tools`
the multi-run tools (sweep, reproduce, report, bench, verify runner).
"""

__version__ = "0.1.0"

from refimpl.core import data  # noqa: E402  (refimpl.data.mnist_5k() and the loaders)
from refimpl.core.trace import Trace  # noqa: E402

__all__ = ["Trace", "data", "__version__"]
