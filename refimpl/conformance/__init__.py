"""A conformance kit for other implementations of the three papers (docs/conformance.md).

- :mod:`refimpl.conformance.vectors`: the test vectors (generated from refimpl's NumPy twins,
  exported as JSON with a JSON Schema per file and a checksummed manifest);
- :mod:`refimpl.conformance.adapter`: refimpl's own adapter (one function per equation family);
- ``python -m pytest --pyargs refimpl.conformance`` with ``REFIMPL_IMPL=mypkg.adapter`` runs every
  vector against another implementation's adapter (``REFIMPL_VECTORS=DIR``: an exported
  directory instead of freshly generated vectors).
"""
