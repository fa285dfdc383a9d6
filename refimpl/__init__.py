"""refimpl — auditable NumPy/Numba reference implementations of mini-batch SSCA (seed 001),
Flex-VFL (seed 000) and MFCGD/AdaMFCGD (seed 002), with numerical checks of their theorems."""

__version__ = "0.1.0"
