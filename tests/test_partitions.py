"""Non-IID partitions: Dirichlet label skew, log-normal quantity skew, partition files, statistics."""
import json

import numpy as np
import pytest

from refimpl.cli import main
from refimpl.core.data import load_embedded_mnist
from refimpl.core.partition import partition_stats, sample_partition

DATA = load_embedded_mnist()


def _covers_once(parts, n):
    allp = np.concatenate(parts)
    return allp.size == n and np.array_equal(np.sort(allp), np.arange(n))


@pytest.mark.parametrize("kind", ["dirichlet:0.5", "dirichlet:0.1:20", "quantity:1.0", "quantity:0"])
def test_partitions_cover_every_sample_once_and_reproduce_from_the_seed(kind):
    a = sample_partition(DATA.n_train, 10, kind, np.random.default_rng(3), DATA.y_train)
    b = sample_partition(DATA.n_train, 10, kind, np.random.default_rng(3), DATA.y_train)
    c = sample_partition(DATA.n_train, 10, kind, np.random.default_rng(4), DATA.y_train)
    assert len(a) == 10 and _covers_once(a, DATA.n_train)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(len(x) == len(y) and np.array_equal(x, y) for x, y in zip(a, c))
    if kind.endswith(":20"):
        assert min(len(x) for x in a) >= 20


def _label_distance_to_global(parts):
    """Mean total-variation distance between each client's label proportions and the global ones."""
    counts = partition_stats(parts, DATA.y_train, 10)["label_counts"].astype(float)
    glob = np.bincount(DATA.y_train, minlength=10) / DATA.n_train
    prop = counts / counts.sum(axis=1, keepdims=True)
    return float(np.mean(0.5 * np.abs(prop - glob).sum(axis=1)))


def test_dirichlet_concentration_moves_between_iid_and_one_class_per_client():
    rng = np.random.default_rng(0)
    iid_like = _label_distance_to_global(sample_partition(DATA.n_train, 10, "dirichlet:1000", rng, DATA.y_train))
    skewed = _label_distance_to_global(sample_partition(DATA.n_train, 10, "dirichlet:0.01", rng, DATA.y_train))
    iid = _label_distance_to_global(sample_partition(DATA.n_train, 10, "iid", rng))
    assert iid_like < 0.05 and abs(iid_like - iid) < 0.05
    counts = partition_stats(sample_partition(DATA.n_train, 10, "dirichlet:0.01", rng, DATA.y_train),
                             DATA.y_train, 10)["label_counts"]
    dominant = counts.max(axis=1) / np.maximum(counts.sum(axis=1), 1)
    assert skewed > 0.6 and np.median(dominant) > 0.9         # α → 0: about one class per client


def test_quantity_skew_spreads_sizes_with_sigma():
    rng = np.random.default_rng(0)
    flat = [len(p) for p in sample_partition(DATA.n_train, 10, "quantity:0", rng)]
    wide = [len(p) for p in sample_partition(DATA.n_train, 10, "quantity:1.5", rng)]
    assert max(flat) - min(flat) <= 10 and np.std(wide) > 5 * max(np.std(flat), 1)


@pytest.mark.parametrize("kind, words", [
    ("dirichlet:0", "α must be finite and > 0"),
    ("dirichlet:-1", "α must be finite and > 0"),
    ("dirichlet:nan", "α must be finite and > 0"),
    ("dirichlet:0.5:401", "MIN_SIZE 401 x 10 clients exceeds"),
    ("quantity:-1", "σ must be finite and >= 0"),
    ("quantity:nan", "σ must be finite and >= 0"),
    ("shards", "is not known; allowed"),
])
def test_bad_partition_specs(kind, words, capsys):
    assert main(["run", "ssca", "--partition", kind, "--rounds", "2", "--quiet"]) == 2
    assert words in capsys.readouterr().err


def test_dirichlet_that_cannot_meet_min_size_gives_up_clearly():
    with pytest.raises(ValueError, match="no draw in 5 gave every client at least 390"):
        sample_partition(DATA.n_train, 10, "dirichlet:0.05:390", np.random.default_rng(0), DATA.y_train, max_tries=5)


def test_partition_file_is_validated_and_sets_the_clients(tmp_path, capsys):
    good = [list(range(0, 1000)), list(range(1000, 4000))]
    (tmp_path / "p.json").write_text(json.dumps(good))
    out = tmp_path / "o"
    assert main(["run", "ssca", "--partition-file", str(tmp_path / "p.json"), "--rounds", "2", "--hidden", "8",
                 "--batch", "10", "--quiet", "--out", str(out)]) == 0
    config = json.load(open(out / "trace.json"))["config"]
    assert config["clients"] == 2 and config["partition"] == "file"      # the trace says where the split came from
    # a partition kind beside the file would be ignored: refused, naming both
    assert main(["run", "ssca", "--partition-file", str(tmp_path / "p.json"), "--partition", "dirichlet:0.1",
                 "--rounds", "2", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--partition dirichlet:0.1 would be ignored" in err and "p.json" in err
    assert main(["run", "ssca", "--partition", "file", "--rounds", "2", "--quiet"]) == 2
    assert "needs --partition-file" in capsys.readouterr().err
    for parts, words in (([list(range(0, 1000)), list(range(999, 4000))], "1 repeated (first [999])"),
                         ([list(range(0, 1000)), list(range(1001, 4000))], "1 missing (first [1000])"),
                         ([list(range(0, 1000)), list(range(1000, 4001))], "must lie in 0..3999"),
                         ([[0.5] + list(range(1, 4000))], "entry 0 is 0.5")):
        (tmp_path / "bad.json").write_text(json.dumps(parts))
        assert main(["run", "ssca", "--partition-file", str(tmp_path / "bad.json"), "--rounds", "2", "--quiet"]) == 2
        assert words in capsys.readouterr().err
    assert main(["run", "ssca", "--partition-file", str(tmp_path / "p.json"), "--clients", "10", "--rounds", "2"]) == 2
    assert "--clients 10 contradicts --partition-file" in capsys.readouterr().err


def test_partition_stats_shows_the_runs_split(tmp_path, capsys):
    assert main(["partition-stats", "--partition", "dirichlet:0.3:20", "--seed", "5", "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    sizes = [int(line.split()[1]) for line in lines[1:]]
    from refimpl.ssca.experiment import RunConfig, client_partition
    parts = client_partition(RunConfig(partition="dirichlet:0.3:20", seed=5).resolved(), DATA)
    assert sizes == [len(p) for p in parts] and sum(sizes) == DATA.n_train
    assert (tmp_path / "partition_stats.csv").exists()
    pytest.importorskip("matplotlib")
    assert (tmp_path / "partition.png").stat().st_size > 0


def test_dirichlet_split_matches_flower_datasets_statistics():
    """Our dirichlet:α split and Flower Datasets' DirichletPartitioner on the same labels and α
    (15 seeds each): the mean largest class share per client, the mean number of classes above
    5 % per client and the spread of client sizes agree within 4 standard errors."""
    fds = pytest.importorskip("flwr_datasets", reason="flwr-datasets is part of the flower extra installed in CI")
    from datasets import Dataset as HFDataset
    from flwr_datasets.partitioner import DirichletPartitioner
    from refimpl.core.partition import sample_partition
    from refimpl.verification.registry import embedded
    y = embedded().y_train
    K, L, S = 10, 10, 15
    table = HFDataset.from_dict({"label": y.tolist(), "idx": list(range(len(y)))})

    def stats(parts):
        counts = np.array([np.bincount(y[np.asarray(p, dtype=int)], minlength=L) for p in parts], dtype=float)
        sizes = counts.sum(axis=1)
        prop = counts / sizes[:, None]
        return [prop.max(axis=1).mean(), (prop > 0.05).sum(axis=1).mean(), sizes.std() / sizes.mean()]
    assert fds.__version__
    for alpha in (0.1, 0.5, 5.0):
        ours = np.array([stats(sample_partition(len(y), K, f"dirichlet:{alpha}:0", np.random.default_rng(s), labels=y))
                         for s in range(S)])
        theirs = []
        for s in range(S):
            p = DirichletPartitioner(num_partitions=K, partition_by="label", alpha=alpha, min_partition_size=0, seed=s)
            p.dataset = table
            theirs.append(stats([p.load_partition(k)["idx"] for k in range(K)]))
        theirs = np.array(theirs)
        se = np.sqrt(ours.var(axis=0, ddof=1) / S + theirs.var(axis=0, ddof=1) / S)
        z = np.abs(ours.mean(axis=0) - theirs.mean(axis=0)) / se
        assert np.all(z < 4), (alpha, ours.mean(axis=0), theirs.mean(axis=0), z)


@pytest.mark.parametrize("sigma", ["200", "700", "1e6"])
def test_quantity_partition_with_a_huge_sigma_is_still_a_split(sigma, tmp_path, capsys):
    """exp(σ·z) overflows for σ ≳ 700: the sizes are still a split of every sample into
    non-empty clients (one client holds almost everything)."""
    parts = sample_partition(DATA.n_train, 10, f"quantity:{sigma}", np.random.default_rng(0), DATA.y_train)
    sizes = [len(p) for p in parts]
    assert sum(sizes) == DATA.n_train and min(sizes) >= 1
    assert sorted(np.concatenate(parts).tolist()) == list(range(DATA.n_train))
    assert main(["partition-stats", "--partition", f"quantity:{sigma}", "--out", str(tmp_path)]) == 0
    rows = capsys.readouterr().out.strip().splitlines()[1:]
    assert sum(int(r.split()[1]) for r in rows) == DATA.n_train
