"""refimpl's own adapter for the conformance harness: each function is refimpl's NumPy twin of one
equation family (:func:`refimpl.conformance.vectors.families` gives the signatures). An adapter
for another implementation has the same function names, takes NumPy arrays, numbers and strings,
and returns its outputs as a tuple in the documented order (or a dict by name)."""
from refimpl.conformance.vectors import families


def _make(record):
    def fn(*args):
        out = record.evaluate(dict(zip(record.inputs, args)))
        return tuple(out[k] for k in record.outputs)
    fn.__name__ = record.name
    fn.__doc__ = f"{record.equation}: {record.description}"
    return fn


for _f in families().values():
    globals()[_f.name] = _make(_f)
