"""How many BLAS threads refimpl's own work uses: one, unless the user's environment says otherwise.

Measured with ``refimpl bench threads`` on the products and rounds refimpl's runs make (a
mini-batch of 10 clients' samples through the 784 → 128 layer and back, a Flex-VFL party's
embedding, the full-data evaluation, whole SSCA rounds), on this project's 2-core machine: with
the machine otherwise idle, two threads make the large products about 2× faster and a whole
SSCA round 1.5× faster; with one other busy process (a second run, a test suite, a browser),
two threads make the rounds 1.25–1.5× *slower* (OpenBLAS's threads wait for each other), and
users on shared machines measured single runs 2.6–7× slower than with one thread. One thread
also makes a run's arithmetic independent of where it was started: a single run, the API and
the multi-run tools' workers (which always use one) give the same trace to the bit, whereas a
threaded BLAS may split a long dot product differently. So refimpl uses one; a user with an idle
machine who prefers speed to that guarantee sets ``REFIMPL_BLAS_THREADS=2``.

The choice is applied where refimpl starts work — the ``refimpl`` command, the papers' ``run``
functions and the checks' ``run_checks`` (measured: ``ssca.theorem1_stationarity`` called from a
tutorial beside one busy process took 24.8 s with the default threads, 4.6 s with one) — with
threadpoolctl (a well-kept library for exactly this), and only while refimpl works: the caller's
BLAS setting is restored afterwards. Setting any of ``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``,
``MKL_NUM_THREADS``, ``BLIS_NUM_THREADS`` leaves BLAS as the user configured it;
``REFIMPL_BLAS_THREADS=N`` makes refimpl use N.
"""
from __future__ import annotations

import contextlib
import os

#: the environment variables with which a user sets BLAS's threads themselves
USER_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")
#: refimpl's own override
REFIMPL_VAR = "REFIMPL_BLAS_THREADS"
#: the measured choice (module docstring; ``refimpl bench threads`` repeats the measurement)
CHOSEN = 1


def blas_choice():
    """(threads or None, why): None leaves BLAS as the environment configured it."""
    v = os.environ.get(REFIMPL_VAR, "").strip()
    if v:
        if not v.isdigit() or int(v) < 1:
            raise ValueError(f"{REFIMPL_VAR}={v!r}: expected a whole number >= 1 (BLAS threads for refimpl's work)")
        return int(v), f"{REFIMPL_VAR}={v}"
    given = [f"{name}={os.environ[name]}" for name in USER_VARS if os.environ.get(name, "").strip()]
    if given:
        return None, f"as the environment sets it ({', '.join(given)})"
    return CHOSEN, f"refimpl's measured choice ({REFIMPL_VAR} or OPENBLAS_NUM_THREADS to override)"


@contextlib.contextmanager
def blas_threads():
    """Run the enclosed work with :func:`blas_choice`'s threads; the previous setting afterwards."""
    n, _ = blas_choice()
    if n is None:
        yield
        return
    import scipy.linalg  # noqa: F401  (loads SciPy's own BLAS now: threadpoolctl limits the libraries loaded)
    from threadpoolctl import threadpool_limits
    with threadpool_limits(limits=n, user_api="blas"):
        yield


def current_blas_threads():
    """The threads each loaded BLAS library uses now ({library: threads})."""
    from threadpoolctl import threadpool_info
    return {f"{i.get('internal_api')} ({os.path.basename(i.get('filepath', ''))})": i.get("num_threads")
            for i in threadpool_info() if i.get("user_api") == "blas"}
