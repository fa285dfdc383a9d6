"""The conformance families, one module per paper (and one for the shared core), each family one
:class:`~refimpl.conformance.family.Family` record beside its reference function and its cases."""
