"""``refimpl verify``'s tiers (the theorem-kind checks by default, the papers' claims on request),
the BLAS threads refimpl's own work uses, and the Numba kernels' one signature each."""
import json
import os

import numpy as np
import pytest

from refimpl.cli import main
from refimpl.tools import verify


def _fake_registry(monkeypatch):
    reg = {"t.identity": ("an identity", "s", lambda quick: {"measured": 0.0, "bound": 1.0}, "theorem"),
           "t.sizes": ("records its sizes", "s", lambda quick: {"measured": 0.5 if quick else 0.25, "bound": 1.0},
                       "theorem"),
           "t.claim": ("a paper's claim", "s", lambda quick: {"measured": 0.5, "bound": 1.0, "holds": False,
                                                              "relation": "≤"}, "claim")}
    monkeypatch.setattr(verify, "REGISTRY", reg)
    monkeypatch.setattr(verify, "load_checks", lambda: reg)
    run = verify.run_checks        # the fake checks live in this process: run them here, not in workers
    monkeypatch.setattr(verify, "run_checks", lambda ids, quick=True, progress=None, **kw: run(ids, quick, progress))
    return reg


def test_every_registered_check_is_in_exactly_one_tier():
    reg = verify.load_checks()
    theorems, claims = verify.tier_ids(("theorem",)), verify.tier_ids(("claim",))
    assert not set(theorems) & set(claims) and set(theorems) | set(claims) == set(reg)
    assert "ssca.theorem2_kkt" in theorems and "ssca.claim_faster_than_sgd" in claims


def test_main_job_runs_the_theorem_tier_and_names_the_claims(monkeypatch, capsys, tmp_path):
    _fake_registry(monkeypatch)
    monkeypatch.setenv("REFIMPL_CACHE_DIR", str(tmp_path))
    js = tmp_path / "v.json"
    assert main(["verify", "--quiet", "--json", str(js)]) == 0
    out = capsys.readouterr().out
    assert [r["id"] for r in json.load(open(js))] == ["t.identity", "t.sizes"]
    closing = out.strip().split("one wide row each: --wide")[-1]          # the lines after the table
    assert "t.claim (not run yet)" in closing and "refimpl verify --claims" in closing
    assert max(len(ln) for ln in out.splitlines()) <= 100
    # the claims tier: its verdict recorded, then named by the main job's closing line
    assert main(["verify", "--claims", "--quiet", "--json", str(js)]) == 0      # a claim is not fatal
    assert [r["id"] for r in json.load(open(js))] == ["t.claim"]
    assert json.load(open(tmp_path / "last_claims.json"))["claims"]["t.claim"]["verdict"] == "no (claim)"
    assert main(["verify", "--claims", "--strict", "--quiet"]) == 1
    capsys.readouterr()
    assert main(["verify", "--quiet"]) == 0
    assert "t.claim no (claim)" in capsys.readouterr().out.strip().split("one wide row each: --wide")[-1]


def test_all_and_full_run_both_tiers_at_their_sizes(monkeypatch, tmp_path):
    _fake_registry(monkeypatch)
    monkeypatch.setenv("REFIMPL_CACHE_DIR", str(tmp_path))
    for flags, measured in ((["--all"], 0.5), (["--full"], 0.25), (["--quick", "--all"], 0.5)):
        js = tmp_path / "v.json"
        assert main(["verify", *flags, "--quiet", "--json", str(js)]) == 0
        recs = {r["id"]: r for r in json.load(open(js))}
        assert set(recs) == {"t.identity", "t.sizes", "t.claim"}, flags
        assert recs["t.sizes"]["measured"] == measured, flags


def test_a_damaged_claims_record_only_loses_the_verdicts(monkeypatch, tmp_path):
    _fake_registry(monkeypatch)
    monkeypatch.setenv("REFIMPL_CACHE_DIR", str(tmp_path))
    (tmp_path / "last_claims.json").write_text("{not json")
    assert verify.last_claims() == {}
    assert "t.claim (not run yet)" in verify.claims_line()


def test_blas_choice_follows_the_environment(monkeypatch):
    from refimpl.core import threads
    for v in (*threads.USER_VARS, threads.REFIMPL_VAR):
        monkeypatch.delenv(v, raising=False)
    assert threads.blas_choice()[0] == threads.CHOSEN == 1
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    n, why = threads.blas_choice()
    assert n is None and "OPENBLAS_NUM_THREADS=2" in why
    monkeypatch.setenv(threads.REFIMPL_VAR, "3")
    assert threads.blas_choice()[0] == 3
    monkeypatch.setenv(threads.REFIMPL_VAR, "two")
    with pytest.raises(ValueError, match="REFIMPL_BLAS_THREADS='two'"):
        threads.blas_choice()


def test_blas_threads_apply_during_the_work_and_are_restored(monkeypatch):
    from threadpoolctl import threadpool_limits
    from refimpl.core import threads
    for v in (*threads.USER_VARS, threads.REFIMPL_VAR):
        monkeypatch.delenv(v, raising=False)
    with threadpool_limits(limits=2, user_api="blas"):
        before = threads.current_blas_threads()
        with threads.blas_threads():
            assert set(threads.current_blas_threads().values()) == {1}
        assert threads.current_blas_threads() == before


def test_a_run_is_the_same_to_the_bit_whatever_blas_the_caller_set(monkeypatch):
    """The API pins one thread itself: a run started under a 2-thread BLAS equals one started
    under one thread (the multi-run tools' workers)."""
    from threadpoolctl import threadpool_limits
    from refimpl import ssca
    from refimpl.core import threads
    for v in (*threads.USER_VARS, threads.REFIMPL_VAR):
        monkeypatch.delenv(v, raising=False)
    cfg = ssca.Config(setting="sample", batch=100, rounds=3, hidden=32, eval_every=3, snapshots=[0, 3])
    with threadpool_limits(limits=2, user_api="blas"):
        a = ssca.run(cfg)
    with threadpool_limits(limits=1, user_api="blas"):
        b = ssca.run(cfg)
    assert np.array_equal(a.metrics["train_cost"], b.metrics["train_cost"])
    assert all(np.array_equal(x, y) for x, y in zip(a.iterate(3), b.iterate(3)))


def test_run_checks_from_python_uses_refimpls_blas_choice(monkeypatch):
    """``run_checks`` (the API a tutorial's theorem cell calls) runs its checks with one BLAS thread
    under a caller's two-thread setting, as the command does, and gives the caller's setting back."""
    from threadpoolctl import threadpool_limits
    from refimpl.core import threads
    for v in (*threads.USER_VARS, threads.REFIMPL_VAR):
        monkeypatch.delenv(v, raising=False)
    seen = []

    def probe(quick):
        seen.append(set(threads.current_blas_threads().values()))
        return {"measured": 0.0, "bound": 1.0}
    monkeypatch.setitem(verify.REGISTRY, "test.blas_probe", ("c", "s", probe, "theorem"))
    with threadpool_limits(limits=2, user_api="blas"):
        before = threads.current_blas_threads()
        assert verify.run_checks(["test.blas_probe"])[0].holds
        assert threads.current_blas_threads() == before
    assert seen == [{1}]


def test_bench_threads_reports_the_choice(capsys):
    assert main(["bench", "threads", "--repeats", "1", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "1 thread ms" in out and "BLAS threads for refimpl's work" in out and "SSCA round" in out
    assert "1 other busy" in out and "as it is" in out


def test_a_checks_warning_is_in_its_own_row(monkeypatch):
    import warnings

    def warns(quick):
        warnings.warn("Solution may be inaccurate. Try another solver", UserWarning)
        return {"measured": 0.1, "bound": 1.0, "note": "its own note"}
    monkeypatch.setitem(verify.REGISTRY, "t.warns", ("warns", "s", warns, "theorem"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")                     # nothing escapes the check's record
        rec = verify.run_check("t.warns")
    assert rec.holds and rec.details["warnings"] == ["UserWarning: Solution may be inaccurate. Try another solver"]
    assert rec.details["table_note"].startswith("its own note; 1 warning(s): UserWarning: Solution may be")


def test_tier_flags_do_not_apply_to_mutations_or_coverage(capsys):
    assert main(["verify", "--mutations", "--claims"]) == 2
    assert "--claims do(es) not apply with --mutations" in capsys.readouterr().err
    assert main(["verify", "--coverage", "--claims"]) == 2
    assert "--claims do(es) not apply with --coverage" in capsys.readouterr().err


def test_each_kernel_has_one_signature_and_warm_kernels_compiles_it():
    """``refimpl.papers.warm_kernels`` compiles every cached Numba kernel (the helpers inlined into
    their callers, or compiled only as their callees, a module's ``CALLEES``, aside) at one signature; runs of all three papers, and the MFCGD kernels called
    with integer-valued constants, an integer x1 and given samples, compile nothing more: after the
    test suite's warm-up (tests/conftest.py), neither its workers nor the mutation runner's copies
    of the package compile a kernel again."""
    import importlib

    from numba.core.caching import NullCache
    from numba.core.registry import CPUDispatcher

    import refimpl
    from refimpl import mfcgd, papers, ssca, vfl
    from refimpl.mfcgd.algorithm import AdamType, Identity, draw_scgd_samples
    from refimpl.mfcgd.kernels import run_local_scgd_synthetic_nb, run_mfcgd_synthetic_nb
    from refimpl.mfcgd.problems import SyntheticComposition
    from refimpl.mfcgd.types import MFCGDParams
    warmed = papers.warm_kernels()
    for name in papers.kernel_modules():
        own = [v for v in vars(importlib.import_module(name)).values()
               if isinstance(v, CPUDispatcher) and v.py_func.__module__ == name
               and not isinstance(v._cache, NullCache) and v.targetoptions.get("inline") != "always"
               and v.py_func.__name__ not in getattr(importlib.import_module(name), "CALLEES", ())]
        missed = [d.py_func.__name__ for d in own if not any(d is w for w in warmed)]
        assert own and not missed, (name, missed)
    before = {d.py_func.__qualname__: list(d.signatures) for d in warmed}
    assert all(len(s) == 1 for s in before.values()), before
    ssca.run(ssca.Config(batch=10, rounds=2, hidden=8, eval_every=2), data=refimpl.data.mnist_5k())
    vfl.run(vfl.Config(method="flexvfl", rounds=2, eval_every=1))
    mfcgd.run(mfcgd.Config(method="adamfcgd", steps=20, eval_every=10))
    mfcgd.run(mfcgd.Config(method="local-scgdm", steps=20, eval_every=10))
    rng = np.random.default_rng(0)
    pr = SyntheticComposition.random(M=2, p=2, d=3, rng=rng)
    par = MFCGDParams(k=1, n=8, c1=1, c2=2, c3=1, gamma=1, q=2, C_g=10, C_f=10)
    run_mfcgd_synthetic_nb(pr, np.zeros(3, dtype=int), 4, par, Identity(), rng)
    noise = (rng.standard_normal((2, 2, 2)), rng.standard_normal((2, 2, 2)), rng.standard_normal((4, 2, 2)),
             rng.standard_normal((4, 2, 2)))
    run_mfcgd_synthetic_nb(pr, np.zeros(3), 4, par, AdamType(0.5, 0.9), rng, noise=noise, lemma2=True)
    run_local_scgd_synthetic_nb(pr, np.zeros(3, dtype=int), 4, 2, 1, 1, alpha=1, rng=rng)
    run_local_scgd_synthetic_nb(pr, np.zeros(3), 4, 2, 0.1, 0.5, samples=draw_scgd_samples(pr, 4, rng))
    assert {d.py_func.__qualname__: list(d.signatures) for d in warmed} == before
