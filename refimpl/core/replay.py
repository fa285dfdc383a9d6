"""Replay inputs and per-round dumps, shared by the three papers.

A replay input is an array file another implementation (or an earlier refimpl run) wrote: an
initial point, a batch or sample schedule, a table of local steps. Each reader here accepts a
``.npy`` (one array), a ``.npz`` (named arrays, loaded without pickle) — including a refimpl
``trace.npz``, whose arrays carry the prefix ``array_`` — or a MATLAB ``.mat`` (v7 and older), and
every failure is a one-line ``ValueError`` naming the file, the array and what is allowed.

A dump is the set of ``r<round>_<name>`` arrays a run stores for the rounds of ``--dump-rounds``;
:mod:`refimpl.core.dumps` writes them beside the trace (``dump/r<round>.npz`` and ``dump.mat``) and
:func:`read_dump` reads either back as {round: {name: array}}.
"""
from __future__ import annotations

import os
import zipfile

import numpy as np

from refimpl.core.dumps import dump_arrays, read_rounds


def _open(path, what):
    if isinstance(path, (str, os.PathLike)) and os.path.isdir(path):
        inner = os.path.join(path, "trace.npz")
        if not os.path.isfile(inner):
            raise ValueError(f"{what} {path}: a directory without a trace.npz; give a refimpl run's --out "
                             "directory, its trace.npz, or a .npy/.npz/.mat file")
        path = inner                       # a run's --out directory: its trace
    if not isinstance(path, (str, os.PathLike)) or not os.path.isfile(path):
        raise ValueError(f"{what} {path}: no such file")
    low = str(path).lower()
    if low.endswith(".mat"):
        from refimpl.core.matfiles import load_mat
        return {k: np.asarray(v) for k, v in load_mat(path).items()}
    with open(path, "rb") as fh:
        head = fh.read(6)
    if not (head.startswith(b"\x93NUMPY") or head.startswith(b"PK")):
        looks = "text" if head and all(32 <= b < 127 or b in (9, 10, 13) for b in head) else "another format"
        raise ValueError(f"{what} {path}: not a .npy/.npz/.mat file (it starts like {looks}, not NumPy's header or a "
                         "zip archive); write arrays with numpy.save / numpy.savez or scipy.io.savemat")
    try:
        if low.endswith(".npy"):
            return {"": np.load(path, allow_pickle=False)}
        with np.load(path, allow_pickle=False) as z:
            if not hasattr(z, "files"):
                return {"": np.asarray(z)}
            return {k: z[k] for k in z.files}
    except ValueError as exc:
        if "pickle" in str(exc):
            raise ValueError(f"{what} {path}: holds pickled Python objects (an object array), which refimpl never "
                             "loads; save plain numeric arrays")
        raise ValueError(f"{what} {path}: not a readable NumPy array file ({exc})")
    except (OSError, EOFError, zipfile.BadZipFile) as exc:     # BadZipFile: a truncated or corrupt .npz
        raise ValueError(f"{what} {path}: not a readable .npy/.npz/.mat file ({exc})")


def read_arrays(path, what):
    """All arrays of a replay file {name: array}; a trace.npz's ``array_<name>`` become ``<name>``
    (``batches`` kept as it is); a .npy gives {"": array}."""
    raw = _open(path, what)
    out = {}
    for k, v in raw.items():
        out[k[len("array_"):] if k.startswith("array_") else k] = v
    return out


def read_one(path, names, what):
    """The first of ``names`` found in the file (a .npy's single array always matches)."""
    return pick_one(read_arrays(path, what), names, what, path)


def pick_one(arrays, names, what, path):
    """:func:`read_one` on arrays already read from ``path``."""
    if "" in arrays:
        return arrays[""]
    for n in names:
        if n in arrays:
            return arrays[n]
    raise ValueError(f"{what} {path}: no array named {' or '.join(repr(n) for n in names)} "
                     f"(found {sorted(arrays) or 'none'})")


def numeric(arr, what, name):
    """A real, finite float64 copy of ``arr``, or a one-line error."""
    a = np.asarray(arr)
    if a.dtype.kind not in "fiu" or a.dtype.kind == "b":
        raise ValueError(f"{what}: array {name!r} has dtype {a.dtype}; a real (float or integer) array is needed")
    a = a.astype(np.float64)
    bad = np.argwhere(~np.isfinite(a))
    if bad.size:
        raise ValueError(f"{what}: array {name!r} holds {a[tuple(bad[0])]} at {tuple(int(i) for i in bad[0])}; "
                         "entries must be finite")
    return a


def one_based_hint(ids, n):
    """A hint when sample ids look 1-based (MATLAB): none is 0 and one equals n."""
    a = np.asarray(ids)
    if a.size and a.dtype.kind in "iuf" and np.all(np.isfinite(a)) and a.min() >= 1 and a.max() == n:
        return (f" (no id is 0 and one is {n}: 1-based ids, as MATLAB writes them? give --index-base 1 "
                "to read them as such)")
    return ""


def sample_ids(arr, what, shape_text=""):
    """Sample ids as int64: integers, or whole numbers stored as floats (MATLAB saves doubles);
    anything else is refused naming the first bad entry."""
    a = np.asarray(arr)
    if a.dtype.kind == "f":
        bad = np.argwhere(~np.isfinite(a) | (a != np.round(a)))
        if bad.size:
            at = tuple(int(i) for i in bad[0])
            raise ValueError(f"{what}: entry {at} = {a[at].item()!r} is not a whole number: sample ids are integers")
        return a.astype(np.int64)
    if a.dtype.kind not in "iu":
        raise ValueError(f"{what}: expected integer sample ids{' ' + shape_text if shape_text else ''}, "
                         f"got dtype {a.dtype}")
    return a.astype(np.int64)


def check_index_base(base):
    """``--index-base``: 0 or 1 (None: not given, 0)."""
    if base not in (None, 0, 1, "0", "1"):
        raise ValueError(f"--index-base must be 0 or 1 (the id of the first sample), got {base!r}")


def from_index_base(ids, base, what):
    """Sample ids read with ``--index-base`` 0 (as given) or 1 (MATLAB: each id minus 1, so 1 is
    the first sample); a 1-based table holding an id below 1 is refused."""
    check_index_base(base)
    if base in (0, "0", None):
        return ids
    a = np.asarray(ids)
    if a.dtype.kind not in "iuf":
        raise ValueError(f"{what}: expected integer sample ids, got dtype {a.dtype}")
    if a.size and np.nanmin(a) < 1:
        at = tuple(int(i) for i in np.argwhere(a < 1)[0])
        raise ValueError(f"{what}: entry {at} = {a[at].item()} is below 1, but --index-base 1 says the ids start at 1")
    return a - 1


def index_table(arr, what, shape_text, rounds, n, *, distinct_axis=None):
    """An integer index table whose first axis is the round: at least ``rounds`` rows, every
    entry a whole number in 0..n−1. ``distinct_axis``: indices along it must differ (draws
    without replacement). Returns int64."""
    a = sample_ids(arr, what, shape_text)
    if a.ndim == 0 or a.shape[0] < rounds:
        raise ValueError(f"{what}: holds {a.shape[0] if a.ndim else 0} rounds{' ' + shape_text if shape_text else ''}, "
                         f"the run needs {rounds}")
    bad = np.argwhere((a < 0) | (a >= n))
    if bad.size:
        raise ValueError(f"{what}: entry {tuple(int(i) for i in bad[0])} = {a[tuple(bad[0])].item()} is out of range: "
                         f"sample ids are 0..{n - 1}" + one_based_hint(a, n))
    if distinct_axis is not None:
        srt = np.sort(a, axis=distinct_axis)
        dup = np.argwhere(np.diff(srt, axis=distinct_axis) == 0)
        if dup.size:
            at = tuple(int(i) for i in dup[0])
            raise ValueError(f"{what}: a mini-batch repeats a sample id (at {at[:-1] if len(at) > 1 else at}): "
                             "batches draw without replacement")
    return a


# ----------------------------------------------------------------------------- dumps



def parse_dump_rounds(text, rounds):
    """'1,2,10' or 'all' (or '' for none) → sorted rounds, each in 1..rounds."""
    text = "" if text is None else str(text).strip()
    if not text:
        return []
    if text == "all":
        return list(range(1, rounds + 1))
    out = []
    for part in text.split(","):
        try:
            r = int(part)
        except ValueError:
            raise ValueError(f"--dump-rounds {text!r}: expected 'all' or comma-separated round numbers, got {part!r}")
        if not 1 <= r <= rounds:
            raise ValueError(f"--dump-rounds {text!r}: round {r} is outside the run (rounds 1..{rounds})")
        out.append(r)
    return sorted(set(out))




def read_dump(path):
    """{round: {name: array}} from a trace directory, a trace.npz or a dump .mat (1-D arrays that
    MATLAB stored as columns come back 1-D, and 1×1 matrices as scalars)."""
    if os.path.isdir(path):
        path = os.path.join(path, "trace.npz")
    return dump_view(read_arrays(path, "dump"), path)


def dump_view(arrays, path):
    """:func:`read_dump` of the arrays already read from ``path`` (the file is not read again)."""
    out = dump_arrays(arrays)
    if os.path.basename(str(path)) == "trace.npz":
        out.update(read_rounds(os.path.dirname(str(path))))         # a refimpl run's streamed rounds
    if str(path).lower().endswith(".mat"):
        for rnd in out.values():
            for k, v in rnd.items():
                if v.shape == (1, 1):
                    rnd[k] = v.reshape(())
                elif v.ndim == 2 and v.shape[1] == 1:
                    rnd[k] = v[:, 0]
    return out
