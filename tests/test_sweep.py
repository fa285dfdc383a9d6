import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from refimpl.cli import main
from refimpl.tools.sweep import SweepLock, load_spec, run_sweep, summarize

SPEC = """
runner = "ssca"
seeds = 2
[fixed]
rounds = {rounds}
hidden = 8
eval_every = 5
batch = 10
[grid]
tau = [0.05, 0.2]
rho_alpha = {{ start = 0.1, stop = 0.6, num = 2 }}
"""


def _spec(tmp_path, rounds=10, text=None, name="spec.toml"):
    p = tmp_path / name
    p.write_text(text if text is not None else SPEC.format(rounds=rounds))
    return str(p)


def _contents(out):
    tdir = os.path.join(out, "tasks")
    res = {}
    for t in sorted(os.listdir(tdir)):
        with np.load(os.path.join(tdir, t, "trace.npz")) as z:
            res[t] = {k: z[k].copy() for k in z.files}
    return res


def _same(a, b):
    assert sorted(a) == sorted(b)
    for t in a:
        assert sorted(a[t]) == sorted(b[t])
        for k in a[t]:
            np.testing.assert_array_equal(a[t][k], b[t][k])


def test_local_and_dask_give_identical_results(tmp_path):
    spec = _spec(tmp_path)
    c1 = run_sweep(spec, str(tmp_path / "local"), "local", 2)
    c2 = run_sweep(spec, str(tmp_path / "dask"), "dask", 2)          # a LocalCluster with 2 workers
    assert c1["done"] == c2["done"] == 8 and c1["failed"] == 0
    _same(_contents(tmp_path / "local"), _contents(tmp_path / "dask"))
    again = run_sweep(spec, str(tmp_path / "local"), "local", 2)       # resumable: nothing to do
    assert again == {"total": 8, "skipped": 8, "done": 0, "failed": 0, "worker_deaths": 0}
    with pytest.raises(ValueError, match="executor"):
        run_sweep(spec, str(tmp_path / "x"), "ray", 2)


def test_sweep_restores_the_thread_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    run_sweep(_spec(tmp_path, rounds=5), str(tmp_path / "e"), "local", 1)
    assert os.environ["OMP_NUM_THREADS"] == "7" and "MKL_NUM_THREADS" not in os.environ


def test_killed_sweep_resumes_without_loss_or_duplication(tmp_path):
    spec = _spec(tmp_path, rounds=150)
    ref = tmp_path / "ref"
    run_sweep(spec, str(ref), "local", 1)
    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "refimpl", "sweep", spec, "--out", str(out), "--workers", "1",
                             "--quiet"], start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        done = [n for n in os.listdir(out / "tasks")] if (out / "tasks").exists() else []
        if len([n for n in done if not n.startswith(".")]) >= 2:
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = [n for n in os.listdir(out / "tasks") if not n.startswith(".")]
    assert 2 <= len(finished) < 8
    counts = run_sweep(spec, str(out), "local", 2)                   # stale lock taken over, rest redone
    assert counts["skipped"] == len(finished) and counts["done"] == 8 - len(finished)
    _same(_contents(ref), _contents(out))
    assert not [n for n in os.listdir(out / "tasks") if n.startswith(".tmp")]


def test_failing_task_is_reported_and_the_rest_finish(tmp_path, capsys):
    text = SPEC.format(rounds=5).replace("batch = 10\n", "").replace("[grid]", "[grid]\nbatch = [10, 5000]")
    spec = _spec(tmp_path, text=text)
    code = main(["sweep", spec, "--out", str(tmp_path / "o"), "--quiet"])
    counts = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert code == 1 and counts == {"total": 16, "skipped": 0, "done": 8, "failed": 8, "worker_deaths": 0}
    rows, failures = summarize(str(tmp_path / "o"))
    assert len(rows) == 4 and len(failures) == 8
    assert all("larger than client" in f["error"] for f in failures)
    assert (tmp_path / "o" / "failures.csv").exists()
    assert main(["sweep-summary", str(tmp_path / "o")]) == 0
    assert "8 failed tasks" in capsys.readouterr().out


def test_summary_picks_best_cell_and_writes_files(tmp_path):
    spec = _spec(tmp_path)
    run_sweep(spec, str(tmp_path / "s"), "local", 2)
    rows, failures = summarize(str(tmp_path / "s"), "-final:test_accuracy", top=2)
    assert not failures and rows[0]["mean"] <= rows[-1]["mean"] and rows[0]["seeds"] == 2
    for f in ("summary.csv", "curves.csv", "best.png"):
        assert (tmp_path / "s" / f).exists()
    header = (tmp_path / "s" / "curves.csv").read_text().splitlines()[0]
    assert "train_cost_mean" in header and "train_cost_std" in header
    rows, _ = summarize(str(tmp_path / "s"), "first:train_cost<=1.5")
    assert rows[0]["mean"] <= rows[-1]["mean"]
    with pytest.raises(ValueError, match="criterion"):
        summarize(str(tmp_path / "s"), "best")


def test_lock_refuses_a_second_sweep(tmp_path):
    out = tmp_path / "l"
    out.mkdir()
    with SweepLock(str(out)):
        with pytest.raises(RuntimeError, match="another refimpl process"):
            run_sweep(_spec(tmp_path), str(out), "local", 1)
    (out / ".sweep.lock").write_text(json.dumps({"pid": 999999999, "host": os.uname().nodename}))
    assert run_sweep(_spec(tmp_path, rounds=5), str(out), "local", 1)["done"] == 8     # stale lock taken over


@pytest.mark.parametrize("text, msg", [
    ('runner = "ssca"\nfoo = 1', "unknown spec keys"),
    ('runner = "nope"', "unknown runner"),
    ('runner = "ssca"\n[grid]\ntau = []', "empty list"),
    ('runner = "ssca"\n[grid]\nwarp = [1]', "unknown grid settings"),
    ('runner = "ssca"\n[grid]\ntau = [-1.0]', "tau must be finite and > 0"),
    ('runner = "ssca"\nseeds = 0', "seeds must be"),
    ('runner = "ssca"\n[fixed]\ntau = 0.1\n[grid]\ntau = [0.2]', "both fixed and in the grid"),
    ('runner = "ssca"\n[grid]\ntau = { start = 1 }', "needs start, stop, num"),
])
def test_spec_validation(tmp_path, text, msg):
    with pytest.raises(ValueError, match=msg):
        load_spec(_spec(tmp_path, text=text))


def test_json_spec_and_other_runners(tmp_path):
    spec = {"runner": "mfcgd", "seeds": [3], "fixed": {"steps": 50, "eval_every": 10}, "grid": {"gamma": [0.25, 0.5]}}
    p = tmp_path / "s.json"
    p.write_text(json.dumps(spec))
    assert run_sweep(str(p), str(tmp_path / "m"), "local", 2)["done"] == 2
    rows, _ = summarize(str(tmp_path / "m"), "final:grad_norm")
    assert len(rows) == 2


def test_spec_identity_is_by_value(tmp_path):
    """lam = 0 and lam = 0.0 are one setting: a rerun with the equivalent spec reuses every task
    and the summary counts each seed once; a float where a whole number is required is refused."""
    text = 'runner = "ssca"\nseeds = 2\n[fixed]\nrounds = 3\nhidden = 8\nbatch = 10\neval_every = 3\nlam = {lam}\n'
    out = str(tmp_path / "s")
    first = run_sweep(_spec(tmp_path, text=text.format(lam="0")), out)
    assert first["done"] == 2
    again = run_sweep(_spec(tmp_path, text=text.format(lam="0.0"), name="b.toml"), out)
    assert again["skipped"] == 2 and again["done"] == 0
    assert len(os.listdir(os.path.join(out, "tasks"))) == 2
    with pytest.raises(ValueError, match=r"rounds must be a whole number"):
        run_sweep(_spec(tmp_path, text=text.format(lam="0").replace("rounds = 3", "rounds = 3.0"), name="c.toml"),
                  out)
    with pytest.raises(ValueError, match="repeats a value"):
        load_spec(_spec(tmp_path, text='runner = "ssca"\n[grid]\nlam = [0, 0.0]\n', name="d.toml"))


def _children(pid):
    """PIDs of a process's children (Linux /proc)."""
    out = set()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            out |= {int(x) for x in open(f"/proc/{pid}/task/{tid}/children").read().split()}
        except OSError:
            pass
    return out


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _start_sweep(tmp_path, name, command="sweep"):
    out = tmp_path / name
    if command == "sweep":
        spec = _spec(tmp_path, text=SPEC.format(rounds=400).replace("seeds = 2", "seeds = 8"), name=f"{name}.toml")
        argv = ["sweep", spec]
    else:                                          # 24 runs of about 4 s
        argv = ["reproduce", "ssca-sample", "--quick"]
    # started as a terminal starts a foreground command: Ctrl-C's SIGINT at its default disposition
    # (a process inherits an ignored SIGINT, and Python then never raises KeyboardInterrupt; the
    # test process may have it ignored, depending on what ran in it before)
    proc = subprocess.Popen([sys.executable, "-m", "refimpl", *argv, "--out", str(out), "--workers", "2",
                             "--quiet"], start_new_session=True, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 120
    while time.time() < deadline:
        done = [n for n in os.listdir(out / "tasks") if not n.startswith(".")] if (out / "tasks").exists() else []
        if done:
            break
        time.sleep(0.05)
    time.sleep(0.3)
    return proc, out


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads worker PIDs from Linux /proc")
@pytest.mark.parametrize("command, how", [("sweep", "SIGINT to the process group"), ("sweep", "SIGTERM to the PID"),
                                          ("reproduce", "SIGINT to the process group")])
def test_interrupt_stops_the_engine_at_once(tmp_path, command, how):
    """Ctrl-C (SIGINT to the whole group, as a terminal sends it) or SIGTERM: nothing more is
    dispatched, the running tasks are stopped, exit 130 within seconds with the resume hint;
    the workers are gone."""
    proc, out = _start_sweep(tmp_path, "int", command)
    workers = _children(proc.pid)
    t0 = time.time()
    if how.startswith("SIGINT"):
        os.killpg(proc.pid, signal.SIGINT)
    else:
        os.kill(proc.pid, signal.SIGTERM)
    err = proc.communicate(timeout=30)[1]
    assert time.time() - t0 < 10 and proc.returncode == 130
    assert "interrupted" in err and "Traceback" not in err
    finished = [n for n in os.listdir(out / "tasks") if not n.startswith(".")]
    assert 1 <= len(finished) < (32 if command == "sweep" else 24)
    assert ("--resume" if command == "reproduce" else "rerun the same command") in err
    deadline = time.time() + 10
    while any(_alive(p) for p in workers) and time.time() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in workers)


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads worker PIDs from Linux /proc")
def test_workers_exit_when_the_parent_is_killed(tmp_path):
    """kill -9 of the parent: its pool processes notice and exit within seconds instead of
    running on and blocking on a pipe."""
    proc, out = _start_sweep(tmp_path, "kill")
    workers = _children(proc.pid)
    assert workers
    proc.kill()
    proc.wait()
    deadline = time.time() + 15
    while any(_alive(p) for p in workers) and time.time() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in workers), "a worker outlived its killed parent"


def test_a_spec_that_adds_seeds_or_grid_values_reuses_every_finished_task(tmp_path, capsys):
    """Growing a sweep in place: the tasks the old spec finished are the new spec's tasks with the
    same identity, so they are skipped, not rerun; progress names each task's cell; a spec that
    drops a value is refused without --overwrite, and --overwrite keeps the tasks both hold."""
    base = """
runner = "ssca"
seeds = {seeds}
[fixed]
rounds = 2
hidden = 8
batch = 10
[grid]
tau = {tau}
"""
    out = str(tmp_path / "s")
    small = _spec(tmp_path, text=base.format(seeds="[0]", tau="[0.1]"), name="a.toml")
    assert main(["sweep", small, "--out", out, "--workers", "1", "--quiet"]) == 0
    first = sorted(os.listdir(os.path.join(out, "tasks")))
    mtimes = {t: os.path.getmtime(os.path.join(out, "tasks", t)) for t in first}
    grown = _spec(tmp_path, text=base.format(seeds="[0, 1]", tau="[0.1, 0.2]"), name="b.toml")
    capsys.readouterr()
    assert main(["sweep", grown, "--out", out, "--workers", "1"]) == 0
    text = capsys.readouterr()
    text = text.out + text.err
    assert "the spec grows: " in text and "4 tasks, 1 already finished, 3 to run" in text
    assert "cell tau=0.2, seed 1 done" in text
    after = sorted(os.listdir(os.path.join(out, "tasks")))
    assert len(after) == 4 and set(first) <= set(after)
    assert all(os.path.getmtime(os.path.join(out, "tasks", t)) == m for t, m in mtimes.items())
    shrunk = _spec(tmp_path, text=base.format(seeds="[0]", tau="[0.2]"), name="c.toml")
    assert main(["sweep", shrunk, "--out", out, "--workers", "1", "--quiet"]) == 2
    assert "grid.tau" in capsys.readouterr().err
    assert main(["sweep", shrunk, "--out", out, "--workers", "1", "--quiet", "--overwrite"]) == 0
    kept = sorted(os.listdir(os.path.join(out, "tasks")))
    assert len(kept) == 1 and kept[0] in after                       # the (tau=0.2, seed 0) task, not rerun
    capsys.readouterr()
    assert main(["sweep-summary", out, "--top", "1"]) == 0
    assert "the best 1 of 1 cells by final:train_cost (every cell)" in capsys.readouterr().out


def test_a_diverged_cell_is_never_the_best(tmp_path, capsys):
    """lr = 30 blows ||ω||² past 40 at round 2; its trace ends at round 1, whose cost (2.291) is below
    lr = 0.05's after 10 rounds (2.297) and whose accuracy is higher: ranked by its last values it
    came out best under both criteria. It ranks after every cell whose runs finished."""
    spec = _spec(tmp_path, text=SPEC_DIVERGING)
    run_sweep(spec, str(tmp_path / "d"), "local", 1)
    for criterion in ("final:train_cost", "-final:test_accuracy"):
        rows, _ = summarize(str(tmp_path / "d"), criterion)
        assert [(r["lr"], r["unfinished"]) for r in rows] == [(0.05, 0), (30.0, 1)]
        assert rows[1]["mean"] < rows[0]["mean"]        # by its last values alone it would come first
    assert main(["sweep-summary", str(tmp_path / "d")]) == 0
    assert "1 of 2 cells have a seed that did not finish" in capsys.readouterr().out


SPEC_DIVERGING = """
runner = "sgd"
seeds = 1
[fixed]
rounds = 10
hidden = 8
eval_every = 5
batch = 10
diverge_sq_norm = 40
[grid]
lr = [0.05, 30.0]
"""


def test_one_rule_says_whether_a_run_finished():
    """A run that stopped on reaching its target finished; a diverged or stopped one did not — for the
    tuner, sweep-summary and `refimpl run`'s exit code alike."""
    from refimpl.core.identity import run_finished, selection_score
    assert run_finished("finished") and run_finished("finished: reached test accuracy 0.8")
    assert not run_finished("diverged: round 3: x") and not run_finished("stopped: time budget")
    assert selection_score("finished: reached training cost 0.5 at round 9", 0.9, 0.5) == (0.9, -0.5)
