"""MATLAB ``.mat`` files for cross-checks: iterates and initial points written by other
implementations (e.g. the SSCA authors' MATLAB scripts, whose weights keep the bias in column 0,
the same layout as ``--bias`` here). Read with ``scipy.io.loadmat`` (formats up to v7; v7.3
files are HDF5 and must be saved again with ``save(..., '-v7')``)."""
from __future__ import annotations

import os
import re

import numpy as np


def load_mat(path):
    """The variables of a .mat file (MATLAB's own ``__header__`` entries dropped)."""
    from scipy.io import loadmat
    from scipy.io.matlab import MatReadError, matfile_version
    try:
        if matfile_version(path)[0] == 2:          # v7.3: an HDF5 file behind a MATLAB header
            raise ValueError(f"{path}: a MATLAB v7.3 (HDF5) file, which scipy.io cannot read; save it in MATLAB "
                             "with save(FILE, ..., '-v7')")
        raw = loadmat(path)
    except ValueError as exc:
        if "v7.3" in str(exc):
            raise
        raise ValueError(f"{path}: not a readable .mat file ({exc})")
    except (OSError, TypeError, MatReadError) as exc:   # MatReadError: empty or truncated
        raise ValueError(f"{path}: not a readable .mat file ({exc or type(exc).__name__})")
    return {k: v for k, v in raw.items() if not k.startswith("__")}


def parse_map(text):
    """``W1=Theta1a,W2=Theta2a`` → {"W1": "Theta1a", "W2": "Theta2a"} (both names required)."""
    out = {}
    for item in str(text).split(","):
        key, sep, name = item.partition("=")
        if not sep or key.strip() not in ("W1", "W2") or not name.strip():
            raise ValueError(f"--map {text!r}: expected W1=NAME,W2=NAME (the .mat variables holding W1 and W2)")
        out[key.strip()] = name.strip()
    if set(out) != {"W1", "W2"}:
        raise ValueError(f"--map {text!r}: name both W1 and W2, e.g. W1=Theta1a,W2=Theta2a")
    return out


def numeric_matrix(path, name, value):
    """A .mat variable as a float64 array, or a ValueError naming the file, the variable and what
    it holds instead (MATLAB strings load as text arrays, cell arrays as object arrays)."""
    arr = np.asarray(value)
    kinds = {"U": "a string", "S": "a string", "O": "a cell array or struct", "c": "complex numbers",
             "b": "logical values", "V": "a struct"}
    if arr.dtype.kind not in "fiu":
        what = kinds.get(arr.dtype.kind, f"values of type {arr.dtype}")
        raise ValueError(f"{path}: variable {name!r} holds {what}; expected a real numeric matrix")
    if arr.size == 0:
        raise ValueError(f"{path}: variable {name!r} is empty; expected a real numeric matrix")
    return np.asarray(arr, dtype=np.float64)


def mat_snapshots(path, mapping, round_=None):
    """Iterate snapshots {round: (W1, W2)} from a .mat file: variables ``<name>_<round>`` (e.g.
    Theta1_30, Theta2_30) give their round; plain ``<name>`` variables need ``round_``."""
    if round_ is not None and (isinstance(round_, bool) or int(round_) != round_ or round_ < 0):
        raise ValueError(f"--round {round_}: a round is an integer ≥ 0 (0 is the initial point)")
    var = load_mat(path)
    if not var:
        raise ValueError(f"{path}: the .mat file holds no variables; expected the iterates "
                         f"{mapping['W1']!r}, {mapping['W2']!r} (or <name>_<round>)")
    rounds = {}
    for key in ("W1", "W2"):
        name = mapping[key]
        pat = re.compile(rf"^{re.escape(name)}_(\d+)$")
        for v in var:
            m = pat.match(v)
            if m:
                rounds.setdefault(int(m.group(1)), {})[key] = numeric_matrix(path, v, var[v])
        if name in var:
            if round_ is None:
                raise ValueError(f"{path}: variable {name!r} has no round in its name; give --round R "
                                 f"(or name the variables {name}_<round>)")
            rounds.setdefault(int(round_), {})[key] = numeric_matrix(path, name, var[name])
    if not rounds:
        hint = ""
        if mapping["W1"] == "Theta1a" and any(re.match(r"^Theta1(_\d+)?$", v) for v in var):
            hint = (" (in the authors' scripts Theta1/Theta2 hold the surrogate minimiser ω̄ and Theta1a/Theta2a "
                    "the iterate ω; to compare ω̄ anyway, give --map W1=Theta1,W2=Theta2)")
        raise ValueError(f"{path}: no variable {mapping['W1']!r}, {mapping['W2']!r} or <name>_<round> among "
                         f"{sorted(var)}; map them with --map W1=NAME,W2=NAME{hint}")
    incomplete = sorted(r for r, d in rounds.items() if set(d) != {"W1", "W2"})
    if incomplete:
        raise ValueError(f"{path}: rounds {incomplete} hold only one of W1 and W2")
    return {r: (d["W1"], d["W2"]) for r, d in rounds.items()}


def _single_array(path):
    var = load_mat(path)
    arrays = {k: v for k, v in var.items() if isinstance(v, np.ndarray) and v.dtype.kind in "fiu"}
    if len(arrays) != 1:
        found = ", ".join(f"{k} ({'numeric' if k in arrays else 'not numeric'})" for k in sorted(var))
        raise ValueError(f"{path}: expected exactly one numeric matrix, found {found or 'no variables'}")
    name, value = next(iter(arrays.items()))
    return numeric_matrix(path, name, value)


def mat_initial_point(path):
    """``--init`` from the authors' files: ``initial_Theta1.mat`` (given) and its sibling
    ``initial_Theta2.mat``, each holding one matrix; returns (W1, W2)."""
    folder, name = os.path.split(path)
    if "Theta1" not in name:
        raise ValueError(f"--init {path}: give the initial_Theta1.mat file (its initial_Theta2.mat sibling is read too)")
    other = os.path.join(folder, name.replace("Theta1", "Theta2"))
    if not os.path.exists(other):
        raise ValueError(f"--init {path}: its sibling {other} is missing")
    return _single_array(path), _single_array(other)
