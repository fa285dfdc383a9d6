"""Client partitions and batch schedules (docs/ssca.md).

A batch schedule is an explicit object holding every sample index a run will use, so that a run
can be exported, replayed by another implementation, and replayed here from their indices.
Indices are 0-based global training-set row numbers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from refimpl.core import validate as V


# ---------------------------------------------------------------- sample-based (horizontal)

PARTITION_KINDS = ("contiguous", "iid", "label_skew", "dirichlet:ALPHA[:MIN_SIZE]", "quantity:SIGMA")


def parse_partition(kind):
    """``(name, parameters)`` of a partition spec; errors name the value and what is allowed."""
    name, _, rest = str(kind).partition(":")
    args = rest.split(":") if rest else []
    allowed = f"allowed: {', '.join(PARTITION_KINDS)}"
    if name in ("contiguous", "iid", "label_skew") and not args:
        return name, {}
    try:
        vals = [float(a) for a in args]
    except ValueError:
        raise ValueError(f"partition {kind!r}: {args} are not numbers; {allowed}")
    if name == "dirichlet" and len(vals) in (1, 2):
        alpha = vals[0]
        if not (np.isfinite(alpha) and alpha > 0):
            raise ValueError(f"partition {kind!r}: the Dirichlet concentration α must be finite and > 0, got {alpha}")
        min_size = vals[1] if len(vals) == 2 else 1.0
        if not (np.isfinite(min_size) and min_size >= 0 and float(min_size).is_integer()):
            raise ValueError(f"partition {kind!r}: MIN_SIZE must be an integer >= 0, got {min_size}")
        return name, {"alpha": alpha, "min_size": int(min_size)}
    if name == "quantity" and len(vals) == 1:
        if not (np.isfinite(vals[0]) and vals[0] >= 0):
            raise ValueError(f"partition {kind!r}: the log-normal σ must be finite and >= 0, got {vals[0]}")
        return name, {"sigma": vals[0]}
    raise ValueError(f"partition kind {kind!r} is not known; {allowed}")


def sample_partition(n_samples, n_clients, kind="contiguous", rng=None, labels=None,
                     classes_per_client=2, max_tries=100):
    """Split sample ids 0..N−1 among K clients.

    ``contiguous``: K consecutive blocks (the authors' split of MNIST); ``iid``: a random
    permutation cut into K blocks; ``label_skew``: samples sorted by label and cut into
    K·classes_per_client shards, each client receiving ``classes_per_client`` random shards;
    ``dirichlet:α[:MIN_SIZE]``: for every class, proportions p ~ Dir(α·1_K) split that class's
    samples among the clients (α → ∞: iid labels; α → 0: one class per client), redrawn until
    every client holds at least MIN_SIZE samples (at most ``max_tries`` draws);
    ``quantity:σ``: client sizes ∝ exp(σ·N(0, 1)) (log-normal), labels iid.
    """
    N, K = V.positive_int("n_samples", n_samples), V.positive_int("n_clients", n_clients)
    if K > N:
        raise ValueError(f"n_clients = {K} exceeds the {N} samples")
    name, par = parse_partition(kind)
    if name == "contiguous":
        return [np.asarray(b, dtype=np.int64) for b in np.array_split(np.arange(N), K)]
    if rng is None:
        raise ValueError(f"partition kind {kind!r} needs a numpy.random.Generator")
    if name == "iid":
        return [np.sort(b) for b in np.array_split(rng.permutation(N), K)]
    if name == "quantity":
        lw = par["sigma"] * rng.standard_normal(K)
        with np.errstate(over="ignore", under="ignore"):
            w = np.exp(lw)
        if not (np.isfinite(w.sum()) and w.sum() > 0):
            # σ so large that exp overflows or underflows: the same shares, computed shifted
            w = np.exp(lw - lw.max())
        sizes = 1 + np.floor(w / w.sum() * (N - K)).astype(np.int64)       # every client at least one sample
        sizes[np.argmax(sizes)] += N - sizes.sum()
        if sizes.sum() != N or sizes.min() < 1:            # never, by construction: a guard, not a retry
            raise ValueError(f"quantity:{par['sigma']:g} drew client sizes {sizes.tolist()} that are not a split "
                             f"of {N} samples into {K} non-empty clients")
        cuts = np.cumsum(sizes)[:-1]
        return [np.sort(b) for b in np.split(rng.permutation(N), cuts)]
    if labels is None or len(labels) != N:
        raise ValueError(f"{name} partition needs the N training labels")
    labels = np.asarray(labels)
    if name == "label_skew":
        if K * classes_per_client > N:
            raise ValueError(f"label_skew with {K} clients needs {K * classes_per_client} shards of the {N} samples; "
                             f"allowed: at most {N // classes_per_client} clients")
        order = np.argsort(labels, kind="stable")
        shards = np.array_split(order, K * classes_per_client)
        pick = rng.permutation(len(shards)).reshape(K, classes_per_client)
        return [np.sort(np.concatenate([shards[s] for s in row])) for row in pick]
    min_size = par["min_size"]
    if min_size * K > N:
        raise ValueError(f"partition {kind!r}: MIN_SIZE {min_size} x {K} clients exceeds the {N} samples; "
                         f"allowed: MIN_SIZE <= {N // K}")
    classes = np.unique(labels)
    for _ in range(max_tries):
        parts = [[] for _ in range(K)]
        for c in classes:
            idx = rng.permutation(np.flatnonzero(labels == c))
            p = rng.dirichlet(np.full(K, par["alpha"]))
            cuts = np.floor(np.cumsum(p)[:-1] * idx.size).astype(np.int64)
            for k, chunk in enumerate(np.split(idx, cuts)):
                parts[k].append(chunk)
        parts = [np.sort(np.concatenate(c)).astype(np.int64) for c in parts]
        if min(len(b) for b in parts) >= max(min_size, 1):
            return parts
    raise ValueError(f"partition {kind!r}: no draw in {max_tries} gave every client at least {max(min_size, 1)} "
                     "samples; raise α or lower MIN_SIZE")


def _check_exact_cover(index_sets, n, what, cover):
    """Every index in 0..n−1 in exactly one of the sets; the errors name what is missing or repeated."""
    allx = np.concatenate(index_sets)
    if allx.min() < 0 or allx.max() >= n:
        raise ValueError(f"{what} must lie in 0..{n - 1}, got {allx.min()}..{allx.max()}")
    counts = np.bincount(allx, minlength=n)
    missing, repeated = np.flatnonzero(counts == 0), np.flatnonzero(counts > 1)
    if missing.size or repeated.size:
        raise ValueError(f"{cover}: {missing.size} missing (first {missing[:5].tolist()}), "
                         f"{repeated.size} repeated (first {repeated[:5].tolist()})")


def read_partition_file(path, n_samples):
    """``--partition-file FILE.json``: one list of sample ids per client, covering 0..N−1 once."""
    import json
    try:
        with open(path) as fh:
            parts = json.load(fh)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--partition-file {path}: not valid JSON ({exc})")
    if not isinstance(parts, list) or not parts or not all(isinstance(b, list) and b for b in parts):
        raise ValueError(f"--partition-file {path}: expected a JSON list of non-empty index lists, one per client")
    for k, b in enumerate(parts):
        nested = next((i for i, v in enumerate(b) if isinstance(v, (list, dict))), None)
        if nested is not None:
            raise ValueError(f"--partition-file {path}: client {k}, entry {nested} is a "
                             f"{'list' if isinstance(b[nested], list) else 'JSON object'} ({json.dumps(b[nested])[:40]}); "
                             "each client is a flat list of integer sample ids, e.g. [[0, 1, 2], [3, 4]]")
    parts = [V.index_array(f"--partition-file {path}: client {k}", b) for k, b in enumerate(parts)]
    _check_exact_cover(parts, n_samples, f"--partition-file {path}: sample ids",
                       f"--partition-file {path}: every sample must belong to exactly one client")
    return [np.sort(b) for b in parts]


def partition_stats(parts, labels, n_classes):
    """Per-client sample counts and the client × class count matrix."""
    labels = np.asarray(labels)
    counts = np.array([np.bincount(labels[b], minlength=n_classes) for b in parts])
    return {"sizes": [int(len(b)) for b in parts], "label_counts": counts}


# ---------------------------------------------------------------- feature-based (vertical)

def read_feature_blocks(path):
    """The feature blocks of ``--feature-blocks FILE.json``: a JSON list of index lists, one per
    client or party (validated against the data's features in :func:`~refimpl.core.partition.feature_partition`)."""
    import json
    try:
        with open(path) as fh:
            blocks = json.load(fh)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--feature-blocks {path}: not valid JSON ({exc})")
    except OSError as exc:
        raise ValueError(f"--feature-blocks {path}: cannot read it ({exc.strerror or exc})")
    if not isinstance(blocks, list) or not blocks or not all(isinstance(b, list) for b in blocks):
        raise ValueError(f"--feature-blocks {path}: expected a non-empty JSON list of index lists, one per client, "
                         "e.g. [[0, 1, 2], [3, 4]]")
    return blocks


def feature_partition(n_features, n_clients=None, blocks=None):
    """Feature index sets of the K clients: contiguous blocks, or validated user-given sets.

    Given sets must cover every feature 0..D−1 exactly once.
    """
    D = V.positive_int("n_features", n_features)
    if blocks is None:
        K = V.positive_int("n_clients", n_clients)
        if K > D:
            raise ValueError(f"n_clients = {K} exceeds the {D} features")
        return [np.asarray(b, dtype=np.int64) for b in np.array_split(np.arange(D), K)]
    if not isinstance(blocks, (list, tuple)) or not all(isinstance(b, (list, tuple, np.ndarray)) for b in blocks):
        raise ValueError("feature blocks must be a list of index lists, one per client, e.g. [[0, 1], [2, 3]]")
    blocks = [V.index_array(f"feature block {k}", b).ravel() for k, b in enumerate(blocks)]
    if any(b.size == 0 for b in blocks):
        raise ValueError("every client's feature block must be non-empty")
    _check_exact_cover(blocks, D, "feature indices", "feature blocks must cover every feature exactly once")
    return blocks


# ---------------------------------------------------------------- batch schedules

@dataclass(frozen=True)
class BatchSchedule:
    """All mini-batch indices of a run.

    ``indices`` has shape (T, K, B) for sample-based runs (row t, k: client k's batch at round
    t + 1) or (T, B) for feature-based runs (the server's batch). FedAvg with E local steps uses
    (T, K, E·B), step e taking columns e·B … (e+1)·B − 1.
    """

    indices: np.ndarray

    def __post_init__(self):
        object.__setattr__(self, "indices", V.index_array("batch schedule", self.indices))

    def save(self, path):
        np.save(path, self.indices, allow_pickle=False)

    @classmethod
    def load(cls, path):
        arr = np.load(path, allow_pickle=False)
        if not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"{path}: batch indices must be integers, got dtype {arr.dtype}")
        return cls(arr.astype(np.int64))

    def validate_sample_based(self, parts, rounds, per_client):
        idx = self.indices
        K = len(parts)
        if idx.ndim != 3 or idx.shape[1] != K or idx.shape[2] != per_client:
            raise ValueError(f"sample-based batch schedule must have shape (T, {K}, {per_client}), "
                             f"got {idx.shape}")
        if idx.shape[0] < rounds:
            raise ValueError(f"batch schedule holds {idx.shape[0]} rounds, the run needs {rounds}")
        _no_repeats(idx[:rounds], "client {k}, ")
        for k, p in enumerate(parts):
            inside = np.isin(idx[:rounds, k], p)
            if not np.all(inside):
                t, j = (int(i) for i in np.argwhere(~inside)[0])
                shifted = all(np.all(np.isin(idx[:rounds, c] - 1, q)) for c, q in enumerate(parts))
                hint = (" (every id minus 1 lies in its client's partition: 1-based ids, as MATLAB writes them? "
                        "give --index-base 1 to read them as such)") if shifted else ""
                raise ValueError(f"batch schedule: round {t + 1}, client {k}, position {j} holds sample "
                                 f"{int(idx[t, k, j])}, which is not in client {k}'s partition "
                                 f"({len(p)} samples, ids {int(p.min())}..{int(p.max())}){hint}")

    def validate_feature_based(self, n_samples, rounds, batch, kind="feature-based", shape_text=None):
        """(T, batch) ids in 0..n_samples−1, distinct per row; ``kind`` and ``shape_text`` name the
        schedule in errors (the pooled sample-based schedule is (T, K·B))."""
        idx = self.indices
        if idx.ndim != 2 or idx.shape[1] != batch:
            raise ValueError(f"{kind} batch schedule must have shape {shape_text or f'(T, {batch})'}, got {idx.shape}")
        if idx.shape[0] < rounds:
            raise ValueError(f"batch schedule holds {idx.shape[0]} rounds, the run needs {rounds}")
        bad = (idx[:rounds] < 0) | (idx[:rounds] >= n_samples)
        if bad.any():
            t, j = (int(i) for i in np.argwhere(bad)[0])
            raise ValueError(f"batch schedule: round {t + 1}, position {j} holds sample {int(idx[t, j])}; "
                             f"indices must lie in 0..{n_samples - 1}")
        _no_repeats(idx[:rounds], "")


def _no_repeats(rows, where):
    """A mini-batch draws distinct samples (the runs draw without replacement): the first sample
    id repeated inside one batch (the last axis) is refused, naming its round (and client)."""
    srt = np.sort(rows, axis=-1)
    dup = srt[..., 1:] == srt[..., :-1]
    if dup.any():
        at = tuple(int(i) for i in np.argwhere(dup)[0])
        t, sample = at[0], int(srt[at[:-1] + (at[-1],)])
        k = at[1] if len(at) == 3 else None
        place = where.format(k=k) if k is not None else where
        raise ValueError(f"batch schedule: round {t + 1}, {place}sample {sample} appears twice in one mini-batch; "
                         "a batch holds distinct samples (drawn without replacement)")


#: the largest batch schedule built in memory (rounds × clients × B sample ids, int64)
MAX_SCHEDULE_BYTES = 4 * 2 ** 30


def _check_schedule_size(shape):
    need = 8 * int(np.prod([int(s) for s in shape], dtype=object))
    if need > MAX_SCHEDULE_BYTES:
        dims = " × ".join(f"{s:,}" for s in shape)
        raise ValueError(f"the batch schedule ({dims} sample ids) would need {need / 2 ** 30:,.1f} GiB of memory, "
                         f"above the {MAX_SCHEDULE_BYTES / 2 ** 30:g} GiB allowed: fewer --rounds, clients or a "
                         f"smaller --batch")


def sample_based_schedule(parts, rounds, per_client, rng: np.random.Generator):
    """Each client draws ``per_client`` distinct samples of its own uniformly, every round."""
    T, B = V.positive_int("rounds", rounds), V.positive_int("batch", per_client)
    for k, p in enumerate(parts):
        if B > len(p):
            raise ValueError(f"batch {B} is larger than client {k}'s {len(p)} samples; "
                             f"allowed: 1..{min(len(q) for q in parts)}")
    _check_schedule_size((T, len(parts), B))
    idx = np.empty((T, len(parts), B), dtype=np.int64)
    for t in range(T):
        for k, p in enumerate(parts):
            idx[t, k] = p[rng.choice(len(p), B, replace=False)] if B < len(p) else p
    return BatchSchedule(idx)


def feature_based_schedule(n_samples, rounds, batch, rng: np.random.Generator):
    """The server draws ``batch`` distinct sample ids uniformly every round."""
    T, B = V.positive_int("rounds", rounds), V.positive_int("batch", batch)
    if B > n_samples:
        raise ValueError(f"batch {B} is larger than the {n_samples} training samples")
    _check_schedule_size((T, B))
    idx = np.empty((T, B), dtype=np.int64)
    for t in range(T):
        idx[t] = rng.choice(n_samples, B, replace=False) if B < n_samples else np.arange(n_samples)
    return BatchSchedule(idx)
