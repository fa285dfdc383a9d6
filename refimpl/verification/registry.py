"""Registry of the verification checks, and the data the check modules share.

A check is a function ``fn(quick: bool) -> dict`` registered with :func:`check`. It returns
``measured`` and ``bound`` (numbers or None), optionally ``holds`` (default: measured ≤ bound)
and ``details`` (a JSON-able dict). The runner (:mod:`refimpl.tools.verify`) adds ``ratio`` =
measured / bound and catches exceptions (a crashed check is reported as not holding).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from refimpl.core.data import load_embedded_mnist

REGISTRY: dict = {}


@dataclass
class CheckRecord:
    id: str
    claim: str
    source: str
    measured: float | None
    bound: float | None
    ratio: float | None
    holds: bool
    details: dict = field(default_factory=dict)


KINDS = ("theorem", "claim")


def check(id, claim, source, kind="theorem"):
    """Register ``fn(quick) -> {"measured", "bound", ["holds"], ["details"]}`` under ``id``.

    ``kind``: "theorem" for identities, lemmas, theorems and implementation checks (a failure is
    a defect); "claim" for a paper's experimental claim (it may honestly not reproduce here)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")

    def deco(fn):
        if id in REGISTRY:
            raise ValueError(f"check id {id!r} registered twice")
        REGISTRY[id] = (claim, source, fn, kind)
        return fn
    return deco


@lru_cache(maxsize=1)
def embedded():
    """The embedded MNIST subset, loaded once per process for every check that uses it."""
    return load_embedded_mnist()
