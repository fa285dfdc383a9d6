"""Numerical checks of every identity, lemma and theorem the three papers state.

Each module registers its checks with :func:`refimpl.verify.check`; ``refimpl verify`` runs them
and prints ``id | claim | measured | bound | ratio | holds``.
"""
