import atexit
import os
import shutil
import tempfile

import numpy as np
import pytest

from refimpl.core.data import load_embedded_mnist


@pytest.fixture(scope="session")
def mnist():
    return load_embedded_mnist()


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


# The suite runs on two pytest-xdist workers over two cores: a worker's BLAS gets one thread, as
# refimpl's own work does (refimpl.core.threads). With the default (a thread per core), a test that
# calls the library below its entry points (a protocol, a kernel, the model) oversubscribes the
# cores while the other worker is busy, and OpenBLAS's threads then wait for each other (measured:
# a check 3.2 s alone, 24.8 s beside one busy process). Tests that set threads themselves
# (tests/test_tiers.py) do so inside threadpoolctl contexts, which restore this setting.
import scipy.linalg  # noqa: E402,F401  (SciPy's own BLAS is loaded now, so the limit covers it too)
from threadpoolctl import threadpool_limits  # noqa: E402

threadpool_limits(limits=1, user_api="blas")

# `refimpl verify --claims` records the claims' last verdicts in a cache directory: the tests'
# records go to a directory of their own, never the user's ~/.cache, removed when the process ends
# (each pytest-xdist worker and the controller make and remove their own)
os.environ["REFIMPL_CACHE_DIR"] = tempfile.mkdtemp(prefix="refimpl-test-cache-")
atexit.register(shutil.rmtree, os.environ["REFIMPL_CACHE_DIR"], ignore_errors=True)


#: Debian's Fashion-MNIST (package dataset-fashion-mnist), which a few tests train on
FASHION = os.environ.get("REFIMPL_FASHION_DIR", "/usr/share/datasets/fashion-mnist")


def fashion_or_skip():
    """The Fashion-MNIST directory; without it the test skips with the install hint, except where
    the data is required (``REFIMPL_REQUIRE_DATA=1`` or ``CI`` set: .ci/run installs it), where a
    skip would hide a test CI should have run, so it fails."""
    if not os.path.isdir(FASHION):
        if os.environ.get("REFIMPL_REQUIRE_DATA") or os.environ.get("CI"):
            pytest.fail(f"{FASHION} missing: .ci/run installs Debian's dataset-fashion-mnist")
        pytest.skip(f"{FASHION} not installed (apt-get install dataset-fashion-mnist, or REFIMPL_FASHION_DIR=DIR)")
    return FASHION


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """Under pytest-xdist (``-n 2``), a file's tests stay together on one worker, in order: the
    doc-command tests read what the commands before them wrote. A ``--dist`` the user gives wins.
    The controlling process (or a run without workers) first warms Numba's on-disk cache."""
    if getattr(config.option, "dist", None) == "load" and not any(a.startswith("--dist") for a in config.invocation_params.args):
        config.option.dist = "loadfile"
        config.option.loadscopereorder = False      # keep LONGEST_FIRST's order (below)
    if not hasattr(config, "workerinput"):
        warm_numba_cache()


def warm_numba_cache():
    """Every refimpl kernel compiled once into Numba's on-disk cache before any test runs
    (``refimpl.tools.engine.ensure_kernel_cache``: two processes, one per core). From a fresh
    checkout (CI) the cache is empty: without this, each worker and each subprocess compiled the
    kernels it met first, and the mutation runner's copies of the package, taken while the cache
    was still filling, compiled them again in every child (measured on a fresh checkout: one
    mutation-runner test 173 s, against 21 s with a warm cache). A warm cache is left as it is
    (``kernel_cache_looks_cold``: file times)."""
    import sys

    from refimpl.tools.engine import ensure_kernel_cache
    failed = ensure_kernel_cache()
    if failed:                  # the tests of those kernels say what is wrong; the rest still run
        sys.stderr.write(f"note: warming Numba's cache failed for {failed}\n")


def flat_dump(run_dir):
    """A run's per-round dump as one flat {r<t>_<name>: array} (the names another implementation
    writes into one .npz), read from the run's streamed round files."""
    from refimpl.core.replay import read_dump
    return {f"r{t}_{name}": v for t, q in read_dump(str(run_dir)).items() for name, v in q.items()}


#: the files whose tests take longest (seconds on 2 busy cores, measured with ``--durations=0``):
#: pytest-xdist hands out whole files in collection order (``pytest_configure`` turns off its own
#: reordering by test count, which would start the many-test files first), so these go first and
#: the run does not end on one of them while the other worker sits idle (longest-first
#: scheduling); the rest keep their order, and every file keeps its own tests' order
LONGEST_FIRST = ("test_doc_commands.py",  # every command of the documents, ~2 min
                 "test_mutations.py",     # the mutation runner on one entry per first-named check
                 "test_verify.py",        # the quick report: both verify tiers, the smoke reproductions
                 "test_engine.py", "test_bad_input.py", "test_sweep.py", "test_reproduce.py", "test_flower.py",
                 "test_conformance.py", "test_examples.py", "test_mfcgd.py", "test_vfl_replay.py",
                 "test_vfl_regime.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda it: rank.get(os.path.basename(str(it.fspath)), len(rank)))
