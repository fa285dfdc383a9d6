"""A fourth paper costs one folder: the toy paper of tests/toypaper (FedAvg on least squares,
two conventions, one check, one conformance family, one mutation), registered through
``REFIMPL_PAPERS``, gets ``refimpl run``, ``sweep``, ``diagnose`` (its convention search
included), ``verify --only``, ``verify --mutations`` and ``vectors export`` with no edit outside
its folder. THEIR side of the diagnosis is the test's own transcription of FedAvg, not the toy
package's code."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
ENV = {**os.environ, "REFIMPL_PAPERS": "toypaper.paper",
       "PYTHONPATH": os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH", "")) if p)}


def refimpl(*args, cwd, timeout=600):
    r = subprocess.run([sys.executable, "-m", "refimpl", *map(str, args)], cwd=cwd, env=ENV, capture_output=True,
                       text=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr


def _their_fedavg(z0, rounds, dump, weighted):
    """An independent transcription: K = 4 clients with n_k = 6 + 3k rows from the seed-0 draws,
    E = 2 local gradient steps of lr 0.05 on ||A z − b||²/(2n), the server's average plain or
    weighted by n_k; returns THEIR per-round dump."""
    rng = np.random.default_rng(0)
    A = [rng.standard_normal((6 + 3 * k, 5)) for k in range(4)]
    b = [rng.standard_normal(6 + 3 * k) for k in range(4)]
    n = np.array([6 + 3 * k for k in range(4)], float)
    w = n / n.sum() if weighted else np.full(4, 0.25)
    z, out = z0.copy(), {"z0": z0.copy()}
    for t in range(1, rounds + 1):
        locals_, grads = [], []
        for Ak, bk in zip(A, b):
            x = z.copy()
            grads.append(Ak.T @ (Ak @ x - bk) / len(bk))
            for _ in range(2):
                x = x - 0.05 * (Ak.T @ (Ak @ x - bk) / len(bk))
            locals_.append(x)
        new = sum(wk * x for wk, x in zip(w, locals_))
        if t in dump:
            out.update({f"r{t}_z": z.copy(), f"r{t}_lr": np.array(0.05), f"r{t}_g": np.array(grads),
                        f"r{t}_z_next": new.copy()})
        z = new
    return out


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("toy")
    code, out, err = refimpl("run", "toy-fedavg", "--rounds", "6", "--dump-rounds", "1,2,6", "--out", "ours",
                             "--quiet", cwd=cwd)
    assert code == 0, err
    return cwd


def test_run_writes_a_trace_and_help_lists_the_toy_options(toy_run):
    doc = json.loads((toy_run / "ours" / "trace.json").read_text())
    assert doc["config"]["method"] == "toy-fedavg" and doc["status"] == "finished"
    loss = doc["metrics"]["loss"]
    assert len(loss) == 7 and loss[-1] < loss[0]
    code, out, _ = refimpl("run", "toy-fedavg", "--help", cwd=toy_run)
    assert code == 0 and "--aggregation {mean,weighted}" in out and "(default: 0.05)" in out
    code, _, err = refimpl("run", "toy-fedavg", "--eta", "0.1", cwd=toy_run)
    assert code == 2 and "--eta does not apply to toy-fedavg" in err


def test_sweep_runs_the_toy_grid(tmp_path):
    (tmp_path / "spec.toml").write_text('runner = "toy-fedavg"\nseeds = [0, 1]\n[fixed]\nrounds = 3\n'
                                        '[grid]\naggregation = ["mean", "weighted"]\n')
    code, out, err = refimpl("sweep", "spec.toml", "--out", "sw", "--quiet", cwd=tmp_path)
    assert code == 0, err
    assert json.loads(out.strip().splitlines()[-1])["failed"] == 0
    traces = list((tmp_path / "sw").rglob("trace.json"))
    assert len(traces) == 4


def test_diagnose_names_the_toy_convention_against_an_independent_transcription(toy_run, tmp_path):
    z0 = np.load(toy_run / "ours" / "trace.npz")["array_z0"]
    np.savez(tmp_path / "same.npz", **_their_fedavg(z0, 6, {1, 2, 6}, weighted=False))
    np.savez(tmp_path / "theirs.npz", **_their_fedavg(z0, 6, {1, 2, 6}, weighted=True))
    code, out, err = refimpl("diagnose", toy_run / "ours", tmp_path / "same.npz", cwd=tmp_path)
    assert code == 0, out + err
    code, out, err = refimpl("diagnose", toy_run / "ours", tmp_path / "theirs.npz", cwd=tmp_path)
    assert code == 3, out + err
    assert "round 1" in out and "z_next" in out and "--aggregation weighted" in out, out
    # THEIR initial point differs and nothing else: the baseline rerun from it agrees
    z1 = z0 + 0.1
    np.savez(tmp_path / "moved.npz", **_their_fedavg(z1, 6, {1, 2, 6}, weighted=False))
    code, out, err = refimpl("diagnose", toy_run / "ours", tmp_path / "moved.npz", cwd=tmp_path)
    assert code == 4 and "initial point" in out, out + err


def test_verify_only_and_the_mutation_catalogue(tmp_path):
    code, out, err = refimpl("verify", "--only", "toy.gradient_fd", "--json", "v.json", "--quiet", cwd=tmp_path)
    assert code == 0, out + err
    rec = json.loads((tmp_path / "v.json").read_text())
    rows = rec["checks"] if isinstance(rec, dict) and "checks" in rec else rec
    assert [r["id"] for r in rows] == ["toy.gradient_fd"] and rows[0]["holds"]
    code, out, err = refimpl("verify", "--mutations", "--catalogue", HERE / "toypaper" / "mutations.toml",
                             "--workers", "1", cwd=tmp_path)
    assert code == 0, out + err
    assert "toy-gradient-sign" in out and "toy.gradient_fd" in out


def test_vectors_export_and_the_harness_for_the_toy_family(tmp_path):
    code, out, err = refimpl("vectors", "export", "v", "--paper", "toy", cwd=tmp_path)
    assert code == 0, err
    manifest = json.loads((tmp_path / "v" / "manifest.json").read_text())
    assert set(manifest["files"]) == {"toy_local_step.json", "toy_local_step.schema.json"}
    doc = json.loads((tmp_path / "v" / "toy_local_step.json").read_text())
    assert doc["paper"] == "toy" and len(doc["cases"]) == 2
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs",
                        "refimpl.conformance", "-k", "toy_local_step"], cwd=tmp_path,
                       env={**ENV, "REFIMPL_VECTORS": str(tmp_path / "v")}, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "2 passed" in r.stdout, r.stdout + r.stderr
    # its flag is shown by its witness: refimpl verify's tools.vector_flags holds with the toy registered
    code, out, err = refimpl("verify", "--only", "tools.vector_flags", "--quiet", cwd=tmp_path)
    assert code == 0 and "tools.vector_flags" in out, out + err


def test_the_toy_folder_is_all_it_took():
    """Nothing in refimpl names the toy paper."""
    root = HERE.parent / "refimpl"
    hits = [str(p) for p in root.rglob("*.py") if "toypaper" in p.read_text() or "toy-fedavg" in p.read_text()]
    assert hits == []
