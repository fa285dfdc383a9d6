"""refimpl's own adapter for the conformance harness: each function is refimpl's NumPy twin of one
equation family (:data:`refimpl.conformance.vectors.FAMILIES` gives the signatures). An adapter
for another implementation has the same function names, takes NumPy arrays, numbers and strings,
and returns its outputs as a tuple in the documented order (or a dict by name)."""
from refimpl.conformance.vectors import FAMILIES, reference


def _make(family):
    names = FAMILIES[family][2]

    def fn(*args):
        out = reference(family, dict(zip(names, args)))
        return tuple(out[k] for k in FAMILIES[family][3])
    fn.__name__ = family
    fn.__doc__ = f"{FAMILIES[family][1]}: {FAMILIES[family][4]}"
    return fn


for _f in FAMILIES:
    globals()[_f] = _make(_f)
