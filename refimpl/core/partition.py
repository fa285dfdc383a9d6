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

def sample_partition(n_samples, n_clients, kind="contiguous", rng=None, labels=None,
                     classes_per_client=2):
    """Split sample ids 0..N−1 among K clients.

    ``contiguous``: K consecutive blocks (the authors' split of MNIST); ``iid``: a random
    permutation cut into K blocks; ``label_skew``: samples sorted by label and cut into
    K·classes_per_client shards, each client receiving ``classes_per_client`` random shards.
    """
    N, K = V.positive_int("n_samples", n_samples), V.positive_int("n_clients", n_clients)
    if K > N:
        raise ValueError(f"n_clients = {K} exceeds the {N} samples")
    if kind == "contiguous":
        return [np.asarray(b, dtype=np.int64) for b in np.array_split(np.arange(N), K)]
    if rng is None:
        raise ValueError(f"partition kind {kind!r} needs a numpy.random.Generator")
    if kind == "iid":
        return [np.sort(b) for b in np.array_split(rng.permutation(N), K)]
    if kind == "label_skew":
        if labels is None or len(labels) != N:
            raise ValueError("label_skew partition needs the N training labels")
        if K * classes_per_client > N:
            raise ValueError(f"label_skew with {K} clients needs {K * classes_per_client} shards of the {N} samples; "
                             f"allowed: at most {N // classes_per_client} clients")
        order = np.argsort(np.asarray(labels), kind="stable")
        shards = np.array_split(order, K * classes_per_client)
        pick = rng.permutation(len(shards)).reshape(K, classes_per_client)
        return [np.sort(np.concatenate([shards[s] for s in row])) for row in pick]
    raise ValueError(f"partition kind must be 'contiguous', 'iid' or 'label_skew', got {kind!r}")


# ---------------------------------------------------------------- feature-based (vertical)

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
    allf = np.concatenate(blocks)
    if allf.min() < 0 or allf.max() >= D:
        raise ValueError(f"feature indices must lie in 0..{D - 1}, got {allf.min()}..{allf.max()}")
    counts = np.bincount(allf, minlength=D)
    missing, repeated = np.flatnonzero(counts == 0), np.flatnonzero(counts > 1)
    if missing.size or repeated.size:
        raise ValueError(f"feature blocks must cover every feature exactly once: "
                         f"{missing.size} missing (first {missing[:5].tolist()}), "
                         f"{repeated.size} repeated (first {repeated[:5].tolist()})")
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

    @property
    def rounds(self):
        return self.indices.shape[0]

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
        for k, p in enumerate(parts):
            inside = np.isin(idx[:rounds, k], p)
            if not np.all(inside):
                t, j = (int(i) for i in np.argwhere(~inside)[0])
                raise ValueError(f"batch schedule: round {t + 1}, client {k}, position {j} holds sample "
                                 f"{int(idx[t, k, j])}, which is not in client {k}'s partition "
                                 f"({len(p)} samples, ids {int(p.min())}..{int(p.max())})")

    def validate_feature_based(self, n_samples, rounds, batch):
        idx = self.indices
        if idx.ndim != 2 or idx.shape[1] != batch:
            raise ValueError(f"feature-based batch schedule must have shape (T, {batch}), got {idx.shape}")
        if idx.shape[0] < rounds:
            raise ValueError(f"batch schedule holds {idx.shape[0]} rounds, the run needs {rounds}")
        bad = (idx[:rounds] < 0) | (idx[:rounds] >= n_samples)
        if bad.any():
            t, j = (int(i) for i in np.argwhere(bad)[0])
            raise ValueError(f"batch schedule: round {t + 1}, position {j} holds sample {int(idx[t, j])}; "
                             f"indices must lie in 0..{n_samples - 1}")


def sample_based_schedule(parts, rounds, per_client, rng: np.random.Generator):
    """Each client draws ``per_client`` distinct samples of its own uniformly, every round."""
    T, B = V.positive_int("rounds", rounds), V.positive_int("batch", per_client)
    for k, p in enumerate(parts):
        if B > len(p):
            raise ValueError(f"batch {B} is larger than client {k}'s {len(p)} samples; "
                             f"allowed: 1..{min(len(q) for q in parts)}")
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
    idx = np.empty((T, B), dtype=np.int64)
    for t in range(T):
        idx[t] = rng.choice(n_samples, B, replace=False) if B < n_samples else np.arange(n_samples)
    return BatchSchedule(idx)
