"""Comparison of an adapter's outputs with a vector's expected values, with messages that show
the first differing entry, both values and the tolerance."""
from __future__ import annotations

import importlib
import os

import numpy as np

from refimpl.conformance.vectors import decode, families, generate, load

IMPL_ENV, VECTORS_ENV = "REFIMPL_IMPL", "REFIMPL_VECTORS"


def adapter_module():
    name = os.environ.get(IMPL_ENV, "refimpl.conformance.adapter")
    if not name.strip():
        raise RuntimeError(f"{IMPL_ENV} is set but empty: name your adapter module, e.g. {IMPL_ENV}=mypkg.adapter "
                           "(unset it to test refimpl's own adapter)")
    try:
        return importlib.import_module(name.strip())
    except ImportError as exc:
        raise RuntimeError(f"{IMPL_ENV}={name}: cannot import the adapter module ({exc})")


def documents():
    d = os.environ.get(VECTORS_ENV)
    return load(d) if d else generate()


def ulp_distance(a, b):
    """Units in the last place between float64 arrays (monotone integer mapping of the bits)."""
    ia = np.asarray(a, dtype=np.float64).view(np.int64)
    ib = np.asarray(b, dtype=np.float64).view(np.int64)
    ia = np.where(ia < 0, np.int64(-2 ** 63) - ia, ia)
    ib = np.where(ib < 0, np.int64(-2 ** 63) - ib, ib)
    return np.abs(ia - ib)


def _shown(x):
    """A value as a reader expects it: 3, not 3.0; NaN and inf named."""
    x = float(x)
    if not np.isfinite(x):
        return repr(x)
    return str(int(x)) if x == int(x) else repr(x)


def compare(name, expected, got, tol):
    """None when ``got`` matches ``expected`` within ``tol``, else a message."""
    if isinstance(expected, str):
        return None if got == expected else f"{name}: expected {expected!r}, got {got!r}"
    whole = np.asarray(expected).dtype.kind in "iub"          # counts, indices, flags: shown as integers
    exp = np.asarray(expected, dtype=np.float64)
    try:
        val = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        return f"{name}: not numeric ({exc})"
    if val.shape != exp.shape:
        if val.size == exp.size and val.size == 1:
            val = val.reshape(exp.shape)
        else:
            return f"{name}: shape {val.shape}, expected {exp.shape}"
    if exp.size == 0:
        return None
    if "ulps" in tol:
        d = ulp_distance(exp, val)
        bad = np.flatnonzero(d.ravel() > tol["ulps"])
        if bad.size:
            i = tuple(int(j) for j in np.unravel_index(bad[0], exp.shape))
            return (f"{name}{list(i)}: got {val[i].item()!r}, expected {exp[i].item()!r} ({int(d[i])} ulps; tolerance "
                    f"{tol['ulps']} ulps; {bad.size} of {exp.size} entries beyond it)")
        return None
    scale = max(float(np.max(np.abs(exp))), 1e-300)
    diff = np.abs(val - exp)
    bad = np.flatnonzero(~(diff.ravel() <= tol["rel"] * scale))
    if bad.size and whole and tol["rel"] == 0:
        i = tuple(int(j) for j in np.unravel_index(bad[0], exp.shape))
        shown = _shown(val[i])
        return (f"{name}{list(i) if exp.ndim else ''}: got {shown}, expected {int(exp[i])} (whole numbers, compared "
                f"exactly; {bad.size} of {exp.size} entries differ)")
    if bad.size:
        i = tuple(int(j) for j in np.unravel_index(bad[0], exp.shape))
        return (f"{name}{list(i) if exp.ndim else ''}: got {val[i].item()!r}, expected {exp[i].item()!r} (|Δ| {diff[i]:.3g} > "
                f"rel tolerance {tol['rel']:g} × max|expected| {scale:.3g}; {bad.size} of {exp.size} entries beyond it)")
    return None


def run_case(adapter, family, case):
    """(outcome, message): outcome "pass", "fail" or "skip"."""
    fn = getattr(adapter, family, None)
    if fn is None:
        return "skip", f"the adapter has no function {family!r} ({families()[family].equation}); its vectors are skipped"
    record = families()[family]
    ins, outs = record.inputs, record.outputs
    args = [decode(case["inputs"][k]) for k in ins]
    got = fn(*args)
    if isinstance(got, dict):
        missing = [k for k in outs if k not in got]
        if missing:
            return "fail", f"{family} returned no {missing}"
        got = [got[k] for k in outs]
    elif len(outs) == 1 and not isinstance(got, (tuple, list)):
        got = [got]
    if len(got) != len(outs):
        return "fail", f"{family} returned {len(got)} values, expected {len(outs)} ({', '.join(outs)})"
    msgs = [m for m in (compare(k, decode(case["expected"][k]), g, case["tol"]) for k, g in zip(outs, got)) if m]
    if msgs:
        return "fail", f"{case['id']} ({case['equation']}; {case['comment']}): " + "; ".join(msgs)
    return "pass", ""
