"""One conformance family as one record: what an adapter's function takes and returns, the
paper's equation, refimpl's reference function and the cases, together
(:mod:`refimpl.conformance.families` holds the records of the core and each paper; a paper
written elsewhere names its own module in its description's ``vectors_module``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


#: the flags that let a case hold NaN or inf (in its inputs or its expected values)
NON_FINITE_FLAGS = ("not-finite", "nan-accuracy")


@dataclass(frozen=True)
class Family:
    """``name``: the function an adapter provides; ``paper``: ``core`` or a paper key;
    ``equation``: the paper's equation it implements; ``inputs`` / ``outputs``: argument and result
    names in order; ``description``: the definition an implementer codes against;
    ``reference(**inputs)``: refimpl's NumPy twin (a value or a tuple in the order of
    ``outputs``); ``cases(rng)``: the cases ``{id, comment, flags, inputs, tol}``; ``witnesses``:
    {flag: witness(case) -> bool}, what each flag claims as a test of a case (its decoded
    ``inputs``, ``expected`` and ``tol``), written from the flag's meaning in plain NumPy, never by
    calling ``reference`` (``tools.vector_flags`` runs them: every flag a case carries has a
    witness, the witness holds on that case and refuses some case of the family without the flag).
    A case may hold NaN or inf only where one of its flags is in :data:`NON_FINITE_FLAGS`."""
    name: str
    paper: str
    equation: str
    inputs: tuple
    outputs: tuple
    description: str
    reference: Callable
    cases: Callable
    witnesses: dict = field(default_factory=dict)

    def evaluate(self, inputs):
        """The reference outputs on decoded ``inputs``, as a dict."""
        out = self.reference(**inputs)
        return dict(zip(self.outputs, out if isinstance(out, tuple) else (out,)))
