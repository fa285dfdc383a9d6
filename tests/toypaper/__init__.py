"""A fourth paper written outside refimpl, in the tests' own directory: FedAvg on a least-squares
problem with two conventions, one check, one conformance family and one mutation. Registered
with ``REFIMPL_PAPERS=toypaper.paper`` (tests/test_toy_paper.py), it gets refimpl's tools without
an edit anywhere else."""
