"""Boundary checks shared by every layer: each error names the value and what is allowed."""
from __future__ import annotations

import numpy as np


def finite_array(name, a, ndim=None, shape=None, dtype=np.float64, allow_bool=False):
    """Return ``a`` as a float array after checking its values' kind (real numbers: complex
    values, text, objects and — unless ``allow_bool`` — booleans are refused, never cast), rank,
    shape and finiteness."""
    kind = np.asarray(a).dtype.kind
    if kind in "cUSOV" or (kind == "b" and not allow_bool):
        what = {"c": "complex", "U": "text", "S": "text", "O": "object", "V": "structured", "b": "boolean"}[kind]
        raise ValueError(f"{name} holds {what} values (dtype {np.asarray(a).dtype}); real numbers are required "
                         "(refused, not cast)")
    arr = np.asarray(a, dtype=dtype)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-d array, got shape {arr.shape}")
    if shape is not None and arr.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(f"{name} contains NaN/inf (first at index {tuple(int(i) for i in bad)}); "
                         "only finite values are allowed")
    return arr


def positive(name, v, allow_zero=False):
    v = float(v)
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        rel = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be finite and {rel}, got {v}")
    return v


def relative_tolerance(tol):
    """``--tol`` of the cross-check tools (a relative difference that still agrees): a finite
    number >= 0 (0: exact agreement), refused otherwise, before any file is read."""
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.floating, np.integer)) \
            or not (np.isfinite(tol) and tol >= 0):
        raise ValueError(f"--tol must be a finite number >= 0 (a relative difference), got {tol}")
    return float(tol)


def positive_int(name, v):
    try:
        ok = not isinstance(v, bool) and int(v) == v and int(v) > 0
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise ValueError(f"{name} must be a positive integer, got {v!r}")
    return int(v)


def unit_interval(name, v):
    """Step sizes of [SSCA] (4), (6): ρ_t, γ_t ∈ (0, 1]."""
    v = float(v)
    if not (0.0 < v <= 1.0):
        raise ValueError(f"{name} = {v} is outside (0, 1]; the step-size rules (4)/(6) of "
                         "[SSCA] require values in (0, 1]")
    return v


def labels(name, y, n_classes, n=None):
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-d array of class indices, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} entries but the data have {n} samples")
    if arr.size and (not np.issubdtype(arr.dtype, np.integer)):
        if not np.all(arr == np.round(arr)):
            raise ValueError(f"{name} must hold integer class indices")
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= n_classes):
        raise ValueError(f"{name} must lie in 0..{n_classes - 1}, got range "
                         f"{arr.min()}..{arr.max()}")
    return arr


def index_array(name, a):
    """Integer indices: an integer array, or floats holding exactly integral finite values;
    anything else (13.5, NaN, booleans, strings) is refused, naming the first offending entry."""
    try:
        arr = np.asarray(a)
    except ValueError as exc:           # ragged nested lists
        raise ValueError(f"{name} must be a rectangular array of integer indices ({exc})")
    if np.issubdtype(arr.dtype, np.integer):
        return arr.astype(np.int64)
    if np.issubdtype(arr.dtype, np.floating):
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            at = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ValueError(f"{name} must hold integer indices; entry {at if arr.ndim > 1 else at[0]} "
                             f"is {arr[at].item()!r}")
        return arr.astype(np.int64)
    raise ValueError(f"{name} must hold integer indices, got values of type {arr.dtype}")
