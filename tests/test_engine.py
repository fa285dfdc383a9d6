"""The task engine under reproduce, report and verify: byte-identical results whatever the
executor, kill -9 resume, dying workers, bad input."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from refimpl.cli import main
from refimpl.tools import engine
from refimpl.tools.reproduce import reproduce
from refimpl.tools.verify import run_checks


def _files(root):
    """Every file under root (relative path → bytes), execution.json aside (it records how the
    runs were executed)."""
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            if n != "execution.json":
                out[os.path.relpath(p, root)] = open(p, "rb").read()
    return out


def _same_bytes(a, b):
    fa, fb = _files(a), _files(b)
    assert sorted(fa) == sorted(fb)
    differ = [k for k in fa if fa[k] != fb[k]]
    assert not differ, f"files differ: {differ}"
    return len(fa)


def test_reproduction_is_byte_identical_sequential_parallel_and_dask(tmp_path):
    kw = dict(seeds=2, quick=True, rounds=6)
    reproduce("ssca-sample", str(tmp_path / "w1"), workers=1, **kw)
    reproduce("ssca-sample", str(tmp_path / "w2"), workers=2, **kw)
    reproduce("ssca-sample", str(tmp_path / "dask"), executor="dask", workers=2, **kw)
    n = _same_bytes(tmp_path / "w1", tmp_path / "w2")
    _same_bytes(tmp_path / "w1", tmp_path / "dask")
    assert n > 20                                       # traces, task records, curves, figure, record
    ex = json.load(open(tmp_path / "dask" / "execution.json"))
    assert ex["executor"] == "dask" and ex["new_runs"] == 16 and ex["workers"] == 2


def test_mfcgd_reproduction_identical_across_worker_counts(tmp_path):
    kw = dict(seeds=2, quick=True, rounds=300)
    reproduce("mfcgd-rates", str(tmp_path / "a"), workers=1, **kw)
    reproduce("mfcgd-rates", str(tmp_path / "b"), workers=2, **kw)
    _same_bytes(tmp_path / "a", tmp_path / "b")


def _cli(*args):
    return [sys.executable, "-c", "import sys; from refimpl.cli import main; sys.exit(main(sys.argv[1:]))", *args]


def test_killed_reproduction_resumes_losing_and_repeating_nothing(tmp_path):
    args = ["reproduce", "mfcgd-rates", "--quick", "--seeds", "3", "--rounds", "4000", "--quiet"]
    ref = tmp_path / "ref"
    assert main(args + ["--out", str(ref), "--workers", "2"]) == 0
    out = tmp_path / "killed"
    proc = subprocess.Popen(_cli(*args, "--out", str(out), "--workers", "2"), start_new_session=True)
    deadline = time.time() + 180
    finished = []
    while time.time() < deadline and proc.poll() is None:
        if (out / "tasks").exists():
            finished = [n for n in os.listdir(out / "tasks") if not n.startswith(".")]
            if len(finished) >= 3:
                break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = sorted(n for n in os.listdir(out / "tasks") if not n.startswith("."))
    assert 3 <= len(finished) < 12, finished
    stamps = {n: os.stat(out / "tasks" / n / "trace.npz").st_mtime_ns for n in finished}
    assert main(args + ["--out", str(out)]) == 2                      # refuses without --resume
    assert main(args + ["--out", str(out), "--resume", "--workers", "2"]) == 0
    ex = json.load(open(out / "execution.json"))
    assert ex["resumed_runs"] == len(finished) and ex["new_runs"] == 12 - len(finished)   # nothing lost or redone
    assert all(os.stat(out / "tasks" / n / "trace.npz").st_mtime_ns == stamps[n] for n in finished)
    assert not [n for n in os.listdir(out / "tasks") if n.startswith(".")]
    _same_bytes(ref, out)


def test_changed_setting_is_a_new_task_never_a_reused_one(tmp_path):
    out = tmp_path / "r"
    reproduce("mfcgd-rates", str(out), seeds=1, quick=True, rounds=200, workers=1)
    first = set(os.listdir(out / "tasks"))
    reproduce("mfcgd-rates", str(out), seeds=1, quick=True, rounds=300, workers=1, resume=True)
    ex = json.load(open(out / "execution.json"))
    assert ex["resumed_runs"] == 0 and ex["new_runs"] == 4
    assert sorted(ex["unused_tasks"]) == sorted(first)                # kept, reported, not used
    rec = json.load(open(out / "reproduction.json"))
    assert all(r["config"]["steps"] == 300 for r in rec["runs"])


def _probe(root, i, **kw):
    return {"id": f"probe{i}", "root": str(root), "fn": "refimpl.tools.engine:probe_task", "value": i, **kw}


_EXECUTE_PROBES = ("from refimpl.tools import engine\n"
                   "root = {root!r}\n"
                   "engine.make_out_dir(root, 'tasks', 'failed')\n"
                   "tasks = [{{'id': f'probe{{i}}', 'root': root, 'fn': 'refimpl.tools.engine:probe_task', 'value': i}}"
                   " for i in range(2)]\n"
                   "print(engine.execute(tasks, 'local', 2))\n")


def test_workers_that_cannot_start_stop_the_run_with_the_reason(tmp_path):
    """Spawned workers import the calling program first. Read from standard input, it has no file:
    refused before any worker starts. Without ``if __name__ == "__main__":``, each worker's import
    starts the work again and dies: the run stops after STARTUP_DEATHS pools in a row with that
    reason (it used to start new pools for ever). Run as a file with the guard, it finishes."""
    code = _EXECUTE_PROBES.format(root=str(tmp_path / "p"))
    proc = subprocess.run([sys.executable, "-"], input=code, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "'<stdin>' does not exist" in proc.stderr, proc.stderr[-600:]
    assert "spawn_main" not in proc.stderr                # no worker was started
    script = tmp_path / "noguard.py"
    script.write_text(code)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr[-600:]
    assert f"died before running any task, {engine.STARTUP_DEATHS} pools in a row" in proc.stderr, proc.stderr[-600:]
    script.write_text("if __name__ == '__main__':\n" +
                      "".join("    " + ln + "\n" for ln in _EXECUTE_PROBES.format(root=str(tmp_path / "q")).splitlines()))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "'probe1': ('done'" in proc.stdout, proc.stderr[-600:]


def test_worker_dying_mid_task_is_retried_then_reported(tmp_path):
    root = tmp_path / "p"
    engine.make_out_dir(str(root), "tasks", "failed")
    tasks = [_probe(root, 0, die_once=str(tmp_path / "died0")), _probe(root, 1, die_always=True),
             _probe(root, 2, sleep=0.2), _probe(root, 3)]
    deaths = []
    res = engine.execute(tasks, "local", 2, on_death=lambda ts, n: deaths.append(([t["id"] for t in ts], n)))
    assert res["probe0"][0] == "done" and os.path.exists(tmp_path / "died0")     # died once, retried
    # every death is reported: probe1 at each of its attempts (alone), probe0 once -- alone, or
    # with the others that ran when the pool broke, counted against nobody's retries
    assert [n for ids, n in deaths if ids == ["probe1"]] == [1, 2]
    assert [n for ids, n in deaths if "probe0" in ids] in ([1], [None])
    assert all(len(ids) > 1 for ids, n in deaths if n is None)
    assert res["probe2"][0] == "done" and res["probe3"][0] == "done"
    assert res["probe1"][0] == "failed" and "died" in res["probe1"][1]
    assert json.load(open(root / "failed" / "probe1.json"))["error"].startswith("the worker process died")
    assert sorted(os.listdir(root / "tasks")) == ["probe0", "probe2", "probe3"]     # nothing partial kept
    assert json.load(open(root / "tasks" / "probe0" / "value.json")) == 0


def test_failing_task_is_recorded_and_retried_next_time(tmp_path):
    root = tmp_path / "p"
    engine.make_out_dir(str(root), "tasks", "failed")
    res = engine.execute([_probe(root, 0, fail="boom"), _probe(root, 1)], "local", 1)
    assert res["probe0"] == ("failed", "ValueError: boom", None) and res["probe1"][0] == "done"
    assert (root / "failed" / "probe0.json").exists()
    res = engine.execute([_probe(root, 0)], "local", 1)
    assert res["probe0"][0] == "done" and not (root / "failed" / "probe0.json").exists()


CHECKS = ["grad.fd", "ssca.server_step_equations", "vfl.weights_momentum", "mfcgd.lemma2"]


def test_parallel_verify_equals_sequential():
    seq = run_checks(CHECKS, quick=True, executor="local", workers=1)
    par = run_checks(CHECKS, quick=True, executor="local", workers=2)
    dsk = run_checks(CHECKS, quick=True, executor="dask", workers=2)
    assert [r.id for r in par] == [r.id for r in dsk] == CHECKS and all(r.holds for r in seq)
    for a, b in list(zip(seq, par)) + list(zip(seq, dsk)):
        da = {k: v for k, v in a.details.items() if k not in ("seconds", "cpu_seconds", "jit_seconds")}
        db = {k: v for k, v in b.details.items() if k not in ("seconds", "cpu_seconds", "jit_seconds")}
        assert (a.measured, a.bound, a.ratio, a.holds) == (b.measured, b.bound, b.ratio, b.holds), a.id
        assert json.dumps(da, sort_keys=True, default=str) == json.dumps(db, sort_keys=True, default=str), a.id


def test_bad_engine_input(tmp_path, capsys):
    out = str(tmp_path / "o")
    assert main(["reproduce", "mfcgd-rates", "--quick", "--seeds", "1", "--out", out, "--workers", "0", "--quiet"]) == 2
    assert "--workers must be >= 1" in capsys.readouterr().err
    assert main(["reproduce", "mfcgd-rates", "--quick", "--seeds", "1", "--out", out, "--workers", "5", "--quiet"]) == 2
    assert "--workers 5 is more than the 4 runs" in capsys.readouterr().err
    assert main(["verify", "--only", "grad.fd", "--workers", "3", "--quiet"]) == 2
    assert "more than the 1 checks" in capsys.readouterr().err
    t0 = time.time()
    assert main(["reproduce", "mfcgd-rates", "--quick", "--seeds", "1", "--rounds", "100", "--out", out,
                 "--executor", "dask", "--scheduler", "tcp://127.0.0.1:9", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert time.time() - t0 < 30 and "tcp://127.0.0.1:9" in err and "no Dask scheduler answered" in err
    assert "127.0.0.1:9 refused the connection" in err                      # at once, not after the timeout
    assert not [n for n in os.listdir(os.path.join(out, "tasks"))]        # nothing ran, nothing kept


def test_map_parts_spreads_parts_over_processes(monkeypatch):
    from refimpl.verification.registry import PARTS_WORKERS_ENV, map_parts
    monkeypatch.delenv(PARTS_WORKERS_ENV, raising=False)
    seq = map_parts(engine.part_probe, range(6))
    assert [v for v, _ in seq] == [x * x for x in range(6)] and {p for _, p in seq} == {os.getpid()}
    monkeypatch.setenv(PARTS_WORKERS_ENV, "2")
    par = map_parts(engine.part_probe, range(6))
    assert [v for v, _ in par] == [x * x for x in range(6)]
    assert os.getpid() not in {p for _, p in par} and len({p for _, p in par}) >= 1
    assert os.environ[PARTS_WORKERS_ENV] == "2"                      # restored


def test_verify_lets_checks_use_as_many_processes_as_workers(monkeypatch):
    import refimpl.tools.reproduce as R
    seen = {}

    def fake_run_tasks(tasks, executor, workers, scheduler, progress, what, weight=None, position=None):
        seen.update(workers=workers, parts={t["part_workers"] for t in tasks}, n=len(tasks),
                    groups=[t["checks"] for t in tasks if len(t["checks"]) > 1])
        return {}, [], {}
    monkeypatch.setattr(R, "run_tasks", fake_run_tasks)
    recs = run_checks(None, quick=True, executor="local", workers=2)
    assert seen["workers"] == 2 and seen["parts"] == {2}
    assert ["vfl.claim_flex_vs_sync", "vfl.claim_flex_vs_async"] in seen["groups"]
    cvxpy = ["ssca.lemma1_vs_cvxpy", "ssca.multi_constraint_qcqp", "ssca.constrained_round_literal",
             "ssca.constrained_records"]
    assert cvxpy in seen["groups"]                                    # one import of cvxpy for the four
    assert seen["n"] == len(recs) - 1 - 3                             # the regime claims and the cvxpy checks share
    assert all(not r.holds and "error" in r.details for r in recs)    # no result: reported as failed, not lost


def test_a_replaced_worker_is_reported_in_one_line_and_in_the_counts(tmp_path, capsys):
    from refimpl.tools.reproduce import run_tasks
    root = tmp_path / "p"
    tasks = [_probe(root, 0, die_once=str(tmp_path / "died0"), label="probe-zero"), _probe(root, 1)]
    counts, failures, _ = run_tasks(tasks, "local", 1)               # probe-zero dies alone
    assert counts["worker_deaths"] == 1 and counts["ran"] == 2 and not failures
    err = capsys.readouterr().err
    assert err.count("a worker process died while running probe-zero (1 time)") == 1 and "rerun" in err


def test_a_death_among_tasks_running_together_is_blamed_on_none_of_them(tmp_path, capsys, monkeypatch):
    """A pool stops every worker when one dies: a task running beside the dying one must not be
    named as the one whose worker died (nor lose a retry); both are rerun alone and finish. The
    pool's first run is replaced by one that breaks with both tasks running (Python notices a
    death only when it next waits, so a real pool reaches this case only sometimes)."""
    from refimpl.tools.reproduce import run_tasks
    real, calls = engine._pool_run, []

    def breaks_first(batch, width, account):
        calls.append([t["id"] for t in batch])
        if len(calls) > 1:
            return real(batch, width, account)
        for t in batch:                                   # both had started: their .tmp- directories
            os.makedirs(os.path.join(t["root"], "tasks", f".tmp-{t['id']}-1-host"))
        return list(batch)
    monkeypatch.setattr(engine, "_pool_run", breaks_first)
    root = tmp_path / "p"
    counts, failures, _ = run_tasks([_probe(root, 0, label="probe-zero"), _probe(root, 1)], "local", 2)
    assert counts["worker_deaths"] == 1 and counts["ran"] == 2 and not failures
    assert sorted(calls[1:]) == [["probe0"], ["probe1"]]                  # each alone
    err = capsys.readouterr().err
    assert err.count("a worker process died while probe-zero and probe1 ran") == 1
    assert "died while running" not in err and "each is rerun alone" in err
    # a real pool: probe-zero's death is named alone or beside probe1, never as probe1's
    tasks = [_probe(tmp_path / "q", 0, die_once=str(tmp_path / "died0"), label="probe-zero"),
             _probe(tmp_path / "q", 1, sleep=1.0)]
    monkeypatch.setattr(engine, "_pool_run", real)
    counts, failures, _ = run_tasks(tasks, "local", 2)
    err = capsys.readouterr().err
    assert counts["worker_deaths"] == 1 and counts["ran"] == 2 and not failures
    assert "running probe1" not in err and err.count("probe-zero") == 1, err


def test_progress_counts_what_the_tasks_hold_not_tasks(tmp_path):
    """verify's groups: two checks in one task advance the count by two (35 rows, 35 counted)."""
    from refimpl.tools.reproduce import run_tasks
    root = tmp_path / "w"
    tasks = [dict(_probe(root, 0), checks=["a", "b"]), dict(_probe(root, 1), checks=["c"])]
    seen = []
    run_tasks(tasks, "local", 1, progress=lambda msg, n=None: seen.append((msg, n)), what="checks",
              weight=lambda t: len(t["checks"]))
    assert seen[0] == ("running 3 checks on 1 worker; a line as each finishes", 0)       # at once
    assert seen[-1][1] == 3 and seen[-1][0].endswith("(3/3 checks)")
    assert [n for _, n in seen] in ([0, 1, 3], [0, 2, 3])


def _fake_kernel_modules(tmp_path, names):
    for n in names:
        (tmp_path / f"{n}.py").write_text(
            "import os\n"
            "def warm():\n"
            f"    assert {n!r} != 'fakekern_bad', 'this kernel does not compile'\n"
            f"    open(os.path.join({str(tmp_path)!r}, 'marks'), 'a').write(f'{n} {{os.getpid()}}\\n')\n"
            "    return []\n")


def test_kernel_cache_is_warmed_once_over_two_processes(monkeypatch, tmp_path):
    """``warm_kernel_cache``: each kernel module's ``warm()`` runs once, the modules shared over two
    processes; a second call in the same process starts nothing; a failing module is returned and
    the next call tries again."""
    import refimpl.papers
    names = ["fakekern_a", "fakekern_b", "fakekern_c"]
    _fake_kernel_modules(tmp_path, names + ["fakekern_bad"])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setattr(engine, "_WARMED", [])
    monkeypatch.setattr(refimpl.papers, "kernel_modules", lambda keys=None: names + ["fakekern_bad"])
    assert engine.warm_kernel_cache() == [["fakekern_b", "fakekern_bad"]] and engine._WARMED == []
    monkeypatch.setattr(refimpl.papers, "kernel_modules", lambda keys=None: names)
    (tmp_path / "marks").unlink()
    assert engine.warm_kernel_cache() == [] and engine._WARMED == [True]
    marks = dict(line.split() for line in (tmp_path / "marks").read_text().splitlines())
    assert sorted(marks) == names and marks["fakekern_a"] == marks["fakekern_c"] != marks["fakekern_b"]
    assert engine.warm_kernel_cache() == [] and len((tmp_path / "marks").read_text().splitlines()) == 3


def test_the_mutation_runner_warms_a_cold_kernel_cache_before_it_copies_the_package(monkeypatch, tmp_path):
    """A cache with no index for a kernel module, or one older than its source, looks cold (file
    times only; where NUMBA_CACHE_DIR moves the cache it cannot tell and says warm); a copy of
    the package for the mutation runner warms a cold one first, and only a cold one."""
    import refimpl.papers
    from refimpl.tools import mutations as MU
    _fake_kernel_modules(tmp_path, ["fakekern_a"])
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(refimpl.papers, "kernel_modules", lambda keys=None: ["fakekern_a"])
    src = tmp_path / "fakekern_a.py"
    assert engine.kernel_cache_looks_cold()                     # no __pycache__ at all
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "fakekern_a.kernel-3.py311.nbi").write_bytes(b"")
    os.utime(src, (1000, 1000))
    assert not engine.kernel_cache_looks_cold()
    os.utime(src, (time.time() + 60, time.time() + 60))         # the source edited after the index
    assert engine.kernel_cache_looks_cold()
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert not engine.kernel_cache_looks_cold()                 # cannot tell: left to Numba
    warmed = []
    monkeypatch.setattr(engine, "warm_kernel_cache", lambda: warmed.append(True) or [])
    for cold in (True, False):
        warmed.clear()
        monkeypatch.setattr(engine, "kernel_cache_looks_cold", lambda: cold)
        space = MU.Workspace()
        space.close()
        assert warmed == [True] * cold and not os.path.exists(space.dir)
