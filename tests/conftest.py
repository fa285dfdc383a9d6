import os
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


# `refimpl verify --claims` records the claims' last verdicts in a cache directory: the tests'
# records go to a directory of their own, never the user's ~/.cache
os.environ["REFIMPL_CACHE_DIR"] = tempfile.mkdtemp(prefix="refimpl-test-cache-")
