"""One conformance family as one record: what an adapter's function takes and returns, the
paper's equation, refimpl's reference function and the cases, together
(:mod:`refimpl.conformance.families` holds the records of the core and each paper; a paper
written elsewhere names its own module in its description's ``vectors_module``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Family:
    """``name``: the function an adapter provides; ``paper``: ``core`` or a paper key;
    ``equation``: the paper's equation it implements; ``inputs`` / ``outputs``: argument and result
    names in order; ``description``: the definition an implementer codes against;
    ``reference(**inputs)``: refimpl's NumPy twin (a value or a tuple in the order of
    ``outputs``); ``cases(rng)``: the cases ``{id, comment, flags, inputs, tol}``."""
    name: str
    paper: str
    equation: str
    inputs: tuple
    outputs: tuple
    description: str
    reference: Callable
    cases: Callable

    def evaluate(self, inputs):
        """The reference outputs on decoded ``inputs``, as a dict."""
        out = self.reference(**inputs)
        return dict(zip(self.outputs, out if isinstance(out, tuple) else (out,)))
