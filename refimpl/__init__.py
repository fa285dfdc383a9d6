"""refimpl — auditable NumPy/Numba reference implementations of mini-batch SSCA ([SSCA]),
Flex-VFL ([FlexVFL]) and MFCGD/AdaMFCGD ([MFCGD]), with numerical checks of their theorems."""

__version__ = "0.1.0"
