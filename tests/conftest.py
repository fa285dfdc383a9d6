import numpy as np
import pytest

from refimpl.core.data import load_embedded_mnist


@pytest.fixture(scope="session")
def mnist():
    return load_embedded_mnist()


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
