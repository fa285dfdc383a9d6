import gzip
import struct

import numpy as np
import pytest

from refimpl.core.data import Dataset, load_idx_dir, load_npz_dataset, read_idx
from refimpl.core.partition import (BatchSchedule, feature_based_schedule, feature_partition, sample_based_schedule,
                               sample_partition)


def _write_idx(path, arr, gz=False, magic_type=0x08):
    head = bytes([0, 0, magic_type, arr.ndim]) + b"".join(struct.pack(">I", d) for d in arr.shape)
    data = head + arr.astype(np.uint8).tobytes()
    with (gzip.open if gz else open)(path, "wb") as fh:
        fh.write(data)


def _write_mnist_dir(d, n_train=12, n_test=5, gz=False, rng=None):
    rng = rng or np.random.default_rng(0)
    sfx = ".gz" if gz else ""
    imgs = {s: rng.integers(0, 256, (n, 28, 28)) for s, n in (("train", n_train), ("t10k", n_test))}
    labs = {s: rng.integers(0, 10, n) for s, n in (("train", n_train), ("t10k", n_test))}
    for s in ("train", "t10k"):
        _write_idx(d / f"{s}-images-idx3-ubyte{sfx}", imgs[s], gz)
        _write_idx(d / f"{s}-labels-idx1-ubyte{sfx}", labs[s], gz)
    return imgs, labs


@pytest.mark.parametrize("gz", [False, True])
def test_idx_roundtrip(tmp_path, gz):
    imgs, labs = _write_mnist_dir(tmp_path, gz=gz)
    ds = load_idx_dir(tmp_path)
    assert ds.X_train.shape == (12, 784) and ds.X_test.shape == (5, 784)
    np.testing.assert_allclose(ds.X_train, imgs["train"].reshape(12, -1) / 255.0)
    np.testing.assert_array_equal(ds.y_test, labs["t10k"])


def test_idx_bad_magic(tmp_path):
    p = tmp_path / "x"
    p.write_bytes(b"\x01\x02\x08\x01" + struct.pack(">I", 3) + b"abc")
    with pytest.raises(ValueError, match="magic"):
        read_idx(p)


def test_idx_truncated(tmp_path):
    p = tmp_path / "x"
    _write_idx(p, np.zeros((4, 2, 2)))
    p.write_bytes(p.read_bytes()[:-3])
    with pytest.raises(ValueError, match="truncated"):
        read_idx(p)
    g = tmp_path / "y.gz"
    _write_idx(g, np.zeros((40, 20, 20)), gz=True)
    g.write_bytes(g.read_bytes()[:30])
    with pytest.raises(ValueError, match=str(g)):
        read_idx(g)


def test_idx_count_mismatch_and_missing(tmp_path):
    _write_mnist_dir(tmp_path)
    _write_idx(tmp_path / "train-labels-idx1-ubyte", np.zeros(11))
    with pytest.raises(ValueError, match="12 images .* 11 labels"):
        load_idx_dir(tmp_path)
    _write_idx(tmp_path / "train-labels-idx1-ubyte", np.zeros(12))
    (tmp_path / "t10k-images-idx3-ubyte").unlink()
    with pytest.raises(FileNotFoundError, match="t10k-images"):
        load_idx_dir(tmp_path)


def test_embedded_mnist(mnist):
    assert mnist.X_train.shape == (4000, 784) and mnist.X_test.shape == (1000, 784)
    assert 0.0 <= mnist.X_train.min() and mnist.X_train.max() <= 1.0
    # the fixed permutation mixes the label-sorted file: every contiguous client sees every class
    for part in sample_partition(4000, 10):
        assert len(np.unique(mnist.y_train[part])) == 10
    assert np.bincount(mnist.y_test, minlength=10).min() > 50


def test_dataset_validation(rng):
    X, y = rng.random((5, 3)), np.arange(5) % 2
    with pytest.raises(ValueError, match="NaN"):
        Dataset(np.full((5, 3), np.nan), y, X, y)
    with pytest.raises(ValueError, match="4 entries"):
        Dataset(X, y[:4], X, y)
    with pytest.raises(ValueError, match="features"):
        Dataset(X, y, X[:, :2], y)
    with pytest.raises(ValueError, match=r"0\.\.9"):
        Dataset(X, y + 9, X, y)


def test_npz_dataset(tmp_path, rng):
    X, y = rng.random((6, 4)), np.array([0, 1, 2, 0, 1, 2])
    np.savez(tmp_path / "d.npz", X_train=X, y_train=y, X_test=X, y_test=y)
    ds = load_npz_dataset(tmp_path / "d.npz")
    assert ds.n_features == 4 and ds.n_classes == 3
    np.savez(tmp_path / "e.npz", X_train=X)
    with pytest.raises(ValueError, match="missing arrays"):
        load_npz_dataset(tmp_path / "e.npz")


@pytest.mark.parametrize("kind", ["contiguous", "iid", "label_skew"])
def test_sample_partitions_cover_once(kind, rng, mnist):
    parts = sample_partition(4000, 10, kind, rng, mnist.y_train)
    allp = np.sort(np.concatenate(parts))
    np.testing.assert_array_equal(allp, np.arange(4000))
    if kind == "label_skew":
        assert max(len(np.unique(mnist.y_train[p])) for p in parts) <= 4


def test_sample_partition_errors(rng):
    with pytest.raises(ValueError, match="exceeds"):
        sample_partition(3, 5)
    with pytest.raises(ValueError, match="kind"):
        sample_partition(10, 2, "random", rng)
    with pytest.raises(ValueError, match="Generator"):
        sample_partition(10, 2, "iid")


def test_feature_partition():
    blocks = feature_partition(10, 3)
    assert [len(b) for b in blocks] == [4, 3, 3]
    assert len(feature_partition(4, blocks=[[3, 0], [1, 2]])) == 2
    with pytest.raises(ValueError, match="1 missing .* 1 repeated"):
        feature_partition(4, blocks=[[0, 1], [1, 2]])
    with pytest.raises(ValueError, match="0..3"):
        feature_partition(4, blocks=[[0, 1], [2, 3, 4]])


def test_batch_schedules(tmp_path, rng):
    parts = sample_partition(100, 4)
    s = sample_based_schedule(parts, 7, 5, np.random.default_rng(3))
    assert s.indices.shape == (7, 4, 5)
    for k, p in enumerate(parts):
        assert np.all(np.isin(s.indices[:, k], p))
        assert all(len(set(row)) == 5 for row in s.indices[:, k])
    s2 = sample_based_schedule(parts, 7, 5, np.random.default_rng(3))
    np.testing.assert_array_equal(s.indices, s2.indices)
    s.save(tmp_path / "b.npy")
    np.testing.assert_array_equal(BatchSchedule.load(tmp_path / "b.npy").indices, s.indices)
    s.validate_sample_based(parts, 7, 5)
    bad = BatchSchedule(s.indices[:, ::-1].copy())
    with pytest.raises(ValueError, match="round 1, client 0, position 0 holds sample"):
        bad.validate_sample_based(parts, 7, 5)
    with pytest.raises(ValueError, match="holds 7 rounds"):
        s.validate_sample_based(parts, 8, 5)
    with pytest.raises(ValueError, match="larger than client"):
        sample_based_schedule(parts, 2, 26, rng)
    f = feature_based_schedule(100, 3, 10, rng)
    f.validate_feature_based(100, 3, 10)
    with pytest.raises(ValueError, match=r"shape \(T, 9\)"):
        f.validate_feature_based(100, 3, 9)
    np.save(tmp_path / "f.npy", np.zeros((2, 2)))
    with pytest.raises(ValueError, match="integers"):
        BatchSchedule.load(tmp_path / "f.npy")
