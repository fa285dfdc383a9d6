"""The task engine behind every multi-run command: ``refimpl sweep``, ``reproduce``, ``report`` and
``verify``.

A task is a JSON-able dict with an ``id`` (a hash of everything that determines its result), a
``root`` directory and ``fn`` = ``"module:function"``; ``function(task, tmp_dir)`` does the work,
writes its files into ``tmp_dir`` and returns ``(status, result)`` (``result`` JSON-able).

Durability (the same for every command):

* a task writes into ``ROOT/tasks/.tmp-<id>-<pid>-<host>`` and renames it to ``ROOT/tasks/<id>``
  when complete (rename is atomic), so ``ROOT/tasks/<id>`` is always a finished task; a rerun
  skips those and redoes the rest, and a kill at any moment loses at most the tasks in flight;
* ``.tmp-*`` directories left by a killed run are removed before the next run (never published);
* a task that raises is written to ``ROOT/failed/<id>.json`` (error and traceback) and retried on
  the next run; a worker process that dies mid-task (killed, out of memory, segfault) is
  replaced and its tasks are retried ``retries`` times, then reported failed with that reason;
* one writer per root (:class:`RootLock`).

Determinism: every worker runs with one BLAS/OpenMP/Numba thread (environment inherited by the
worker processes), so a task's arithmetic does not depend on the executor or the number of
workers: sequential (``workers=1``), a local pool and a Dask cluster give the same bytes.

Executors: ``local`` (a pool of spawned processes) or ``dask`` (a ``LocalCluster`` of
single-threaded worker processes, or the scheduler at ``scheduler``).
"""
from __future__ import annotations

import contextlib
import importlib
import json
import os
import shutil
import socket
import sys
import time
import traceback

from refimpl.core.identity import content_id  # noqa: F401  (the engine's task names)

EXECUTORS = ("local", "dask")
SCHEDULER_TIMEOUT = 5.0          # seconds to reach a --scheduler before giving up
STARTUP_DEATHS = 3               # pools in a row whose workers died before any task started: give up


def default_workers():
    """The number of cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:          # not Linux
        return os.cpu_count() or 1


def resolve_workers(workers, n_tasks, what="tasks"):
    """``--workers``: ``None`` = the number of cores (capped at the tasks); an explicit count must
    be between 1 and the number of tasks."""
    if workers is None:
        return max(1, min(default_workers(), n_tasks))
    try:
        w = int(workers)
    except (TypeError, ValueError):
        raise ValueError(f"--workers must be a whole number, got {workers!r}")
    if w < 1:
        raise ValueError(f"--workers must be >= 1, got {w}")
    if n_tasks and w > n_tasks:
        raise ValueError(f"--workers {w} is more than the {n_tasks} {what} to run; allowed: 1..{n_tasks}")
    return w


# ----------------------------------------------------------------------------- output directories

def make_out_dir(out_dir, *subdirs, flag="--out"):
    """Create ``out_dir`` (and subdirectories) or fail with a message naming it."""
    if os.path.islink(out_dir) and not os.path.exists(out_dir):
        raise ValueError(f"{flag} {out_dir} is a symbolic link to nothing ({os.readlink(out_dir)} does not exist, "
                         f"or the links form a loop)")
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise ValueError(f"{flag} {out_dir}: exists and is not a directory")
    try:
        for sub in subdirs or ("",):
            os.makedirs(os.path.join(out_dir, sub), exist_ok=True)
        probe = os.path.join(out_dir, ".refimpl-write-test")
        open(probe, "w").close()
        os.remove(probe)
    except OSError as exc:
        raise ValueError(f"{flag} {out_dir}: cannot write there ({exc.strerror or exc})")


def clean_partial(root):
    """Remove the ``.tmp-*`` task directories a killed run left under ``root/tasks``."""
    tdir = os.path.join(root, "tasks")
    if os.path.isdir(tdir):
        for name in os.listdir(tdir):
            if name.startswith(".tmp-"):
                shutil.rmtree(os.path.join(tdir, name), ignore_errors=True)


def finished(root, tid):
    return os.path.isdir(os.path.join(root, "tasks", tid))


class RootLock:
    """``ROOT/.sweep.lock`` created exclusively; a lock whose process is gone (same host) is stale
    and taken over; a live one refuses the second writer with a clear message."""

    def __init__(self, root):
        self.path = os.path.join(root, ".sweep.lock")

    def __enter__(self):
        me = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                with os.fdopen(fd, "w") as fh:
                    json.dump(me, fh)
                return self
            except FileExistsError:
                try:
                    with open(self.path) as fh:
                        other = json.load(fh)
                except (OSError, ValueError):
                    other = {}
                if other.get("host") == me["host"] and not _alive(other.get("pid", -1)):
                    os.remove(self.path)           # stale: its process is gone
                    continue
                raise RuntimeError(f"another refimpl process (pid {other.get('pid')} on {other.get('host')}) is writing "
                                   f"to {os.path.dirname(self.path)}; wait for it or remove {self.path} if it is dead")
        raise RuntimeError(f"could not take the lock {self.path}")

    def __exit__(self, *exc):
        with contextlib.suppress(OSError):
            os.remove(self.path)


def _alive(pid):
    try:
        os.kill(int(pid), 0)
        return True
    except (OSError, ValueError):
        return False


# ----------------------------------------------------------------------------- one task

def _resolve(fn):
    mod, _, name = fn.partition(":")
    return getattr(importlib.import_module(mod), name)


_WORKER_READY = False


from refimpl.core.runtime import stop_pool, worker_init  # noqa: E402  (pool processes)


def _worker_setup():
    """Once per worker process: the allocator tuning the ``refimpl`` command applies to itself
    (refimpl.core.runtime; allocation speed only, never a result)."""
    global _WORKER_READY
    if not _WORKER_READY:
        from refimpl.core.runtime import tune_allocator
        tune_allocator()
        _WORKER_READY = True


def run_task(task):
    """Run one task and publish it atomically; returns ``(id, "done" | "failed", message, result)``.
    Runs in the worker process."""
    _worker_setup()
    root, tid = task["root"], task["id"]
    final = os.path.join(root, "tasks", tid)
    if os.path.isdir(final):
        return tid, "done", "already finished", _read_result(final)
    tmp = os.path.join(root, "tasks", f".tmp-{tid}-{os.getpid()}-{socket.gethostname()}")
    try:
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        status, result = _resolve(task["fn"])(task, tmp)
        record = {k: v for k, v in task.items() if k != "root"}
        record["status"] = status
        with open(os.path.join(tmp, "task.json"), "w") as fh:
            json.dump(record, fh, indent=1, default=str)
        if result is not None:
            with open(os.path.join(tmp, "result.json"), "w") as fh:
                json.dump(result, fh, indent=1, default=str)
        try:
            os.rename(tmp, final)                  # atomic publish
        except OSError:
            if not os.path.isdir(final):           # another worker published it first otherwise
                raise
            shutil.rmtree(tmp, ignore_errors=True)
        failed = os.path.join(root, "failed", tid + ".json")
        if os.path.exists(failed):
            os.remove(failed)
        return tid, "done", status, result
    except Exception as exc:                       # reported, the other tasks go on
        shutil.rmtree(tmp, ignore_errors=True)
        return tid, "failed", record_failure(task, f"{type(exc).__name__}: {exc}",
                                             traceback.format_exc(limit=6)), None


def record_failure(task, error, tb=""):
    """Write ``ROOT/failed/<id>.json``; returns the error text."""
    fdir = os.path.join(task["root"], "failed")
    os.makedirs(fdir, exist_ok=True)
    rec = {**{k: v for k, v in task.items() if k != "root"}, "error": error, "traceback": tb}
    path = os.path.join(fdir, task["id"] + ".json")
    with open(path + ".tmp", "w") as fh:
        json.dump(rec, fh, indent=1, default=str)
    os.replace(path + ".tmp", path)
    return error


def _read_result(final):
    p = os.path.join(final, "result.json")
    if os.path.exists(p):
        with open(p) as fh:
            return json.load(fh)
    return None


# ----------------------------------------------------------------------------- executors

THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


@contextlib.contextmanager
def single_threaded_env():
    """One BLAS thread per task (inherited by the worker processes started inside): tasks run in
    parallel, and a task's arithmetic (hence its files) does not depend on how many threads the
    executor's worker has. The caller's environment is restored afterwards."""
    from refimpl.core.runtime import environ
    with environ({v: "1" for v in THREAD_VARS}):
        yield


def execute(tasks, executor="local", workers=1, scheduler=None, on_result=None, retries=1, on_death=None):
    """Run ``tasks`` (skipping finished ones is the caller's choice: a finished task returns at
    once); ``on_result(task, status, message, result)`` is called in the parent as each ends.
    Returns ``{id: (status, message, result)}``.

    Largest ``cost`` first (a task's optional estimate), so long tasks do not start last.
    ``on_death(tasks, n)``: called when a worker process died while running ``tasks``: one task,
    its n-th death; or several that ran together when it died (``n`` None: the pool stops them
    all, so which one died is not known) and are each rerun alone (local executor)."""
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
    order = sorted(tasks, key=lambda t: -float(t.get("cost", 0.0)))
    out = {}

    def account(task, res):
        tid, status, msg, result = res
        out[tid] = (status, msg, result)
        if on_result:
            on_result(task, status, msg, result)

    if not order:
        return out
    with single_threaded_env():
        if executor == "local":
            _execute_local(order, int(workers), retries, account, on_death)
        else:
            _execute_dask(order, int(workers), scheduler, retries, account)
    return out


_WARMED = []


def warm_kernel_cache(processes=2):
    """Every kernel in Numba's on-disk cache (:func:`refimpl.papers.warm_kernels`), the kernel
    modules shared over ``processes`` interpreters, once per process (about a second when the cache
    is warm: the kernels load). For what copies the package or starts many interpreters: from a
    cold cache (a fresh checkout or install, an edited kernel file) each copy the mutation runner
    made compiled the kernels again in every child, and each of the test suite's processes compiled
    what it met first. A pool of workers does not call it: its workers compile different kernels
    side by side while they run checks (measured: ``refimpl verify`` from a cold cache took as long
    with the warm-up first). Returns the module lists whose warm-up failed (their kernels then
    compile where they run)."""
    if _WARMED:
        return []
    import subprocess

    from refimpl.papers import kernel_modules
    mods = kernel_modules()
    n = max(1, int(processes))
    code = "import sys\nfrom refimpl.papers import warm_kernels\nwarm_kernels(sys.argv[1:])"
    procs = [subprocess.Popen([sys.executable, "-c", code, *mods[i::n]]) for i in range(n) if mods[i::n]]
    failed = [p.args[3:] for p in procs if p.wait() != 0]
    if not failed:
        _WARMED.append(True)
    return failed


def kernel_cache_looks_cold():
    """Whether some kernel module has no Numba index in its ``__pycache__``, or one older than its
    source (a fresh checkout or install, an edited kernel file): read from file times, nothing
    imported or compiled. False where ``NUMBA_CACHE_DIR`` moves the cache (it cannot tell)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return False
    import importlib.util
    from pathlib import Path

    from refimpl.papers import kernel_modules
    for name in kernel_modules():
        src = Path(importlib.util.find_spec(name).origin)
        index = [q.stat().st_mtime for q in (src.parent / "__pycache__").glob(f"{src.stem}.*.nbi")]
        if not index or min(index) < src.stat().st_mtime:
            return True
    return False


def ensure_kernel_cache():
    """:func:`warm_kernel_cache` when the cache looks cold (:func:`kernel_cache_looks_cold`), else
    nothing: what the mutation runner's copy of the package and the test suite's start call.
    Returns the module lists whose warm-up failed."""
    return warm_kernel_cache() if kernel_cache_looks_cold() else []


def _execute_local(order, workers, retries, account, on_death=None):
    """A pool of spawned processes. When a worker dies, every task of the pool ends with
    BrokenProcessPool; those that were running (their ``.tmp-`` directory exists) are rerun one at
    a time, so a death is attributed to a task only when it ran alone, and the rest are resubmitted."""
    from refimpl.core.runtime import check_spawnable
    check_spawnable()
    deaths = {t["id"]: 0 for t in order}
    queue, alone, idle = list(order), [], 0
    while queue or alone:
        if alone:
            batch, width = [alone.pop(0)], 1
        else:
            batch, width, queue = queue, workers, []
        running, broken = [], _pool_run(batch, width, account)
        for t in broken:
            if _was_running(t):
                clean_partial_task(t)
                running.append(t)
            else:
                queue.append(t)          # never started: resubmit as it was
        idle = idle + 1 if len(broken) == len(batch) and not running else 0
        if idle >= STARTUP_DEATHS:
            raise RuntimeError(
                f"the worker processes died before running any task, {idle} pools in a row (their error is "
                "printed above); refimpl runs tasks in spawned processes, which import the program that "
                "called it: the usual causes are a program read from standard input, or one that starts "
                "refimpl's work at import time (put it under `if __name__ == \"__main__\":`)")
        if len(running) > 1:             # not one task's death: none counts against its retries
            if on_death:
                on_death(running, None)
            alone.extend(running)
            continue
        for t in running:
            deaths[t["id"]] += 1
            if on_death:
                on_death([t], deaths[t["id"]])
            if deaths[t["id"]] <= retries:
                alone.append(t)
            else:
                msg = record_failure(t, f"the worker process died while running it ({deaths[t['id']]} times)")
                account(t, (t["id"], "failed", msg, None))


def _pool_run(batch, width, account):
    """Run ``batch`` on a fresh pool of ``width`` processes; returns the tasks a dead worker broke."""
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool
    import multiprocessing as mp
    broken, pool = [], None
    try:
        pool = ProcessPoolExecutor(max_workers=min(width, len(batch)), mp_context=mp.get_context("spawn"),
                                   initializer=worker_init, initargs=(os.getpid(),))
        futs = {pool.submit(run_task, t): t for t in batch}
        pending = set(futs)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                try:
                    res = f.result()
                except BrokenProcessPool:
                    broken.append(futs[f])
                    continue
                account(futs[f], res)
        pool.shutdown(wait=True)
    except BaseException:          # Ctrl-C / SIGTERM (also while the pool starts or shuts down): kill the tasks now
        if pool is not None:
            stop_pool(pool)
        raise
    return broken


def _tmp_dirs(task):
    tdir = os.path.join(task["root"], "tasks")
    prefix = f".tmp-{task['id']}-"
    return [os.path.join(tdir, n) for n in os.listdir(tdir) if n.startswith(prefix)] if os.path.isdir(tdir) else []


def _was_running(task):
    return bool(_tmp_dirs(task))


def clean_partial_task(task):
    for d in _tmp_dirs(task):
        shutil.rmtree(d, ignore_errors=True)


def connect_dask(scheduler, workers):
    """A Dask client and (without ``scheduler``) its LocalCluster; an unreachable scheduler fails
    within SCHEDULER_TIMEOUT seconds, naming the address."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise RuntimeError("--executor dask needs Dask: pip install 'refimpl[dask]'")
    if scheduler:
        _probe_scheduler(scheduler)
        try:
            return Client(scheduler, timeout=SCHEDULER_TIMEOUT), None
        except (OSError, TimeoutError, ValueError) as exc:
            raise RuntimeError(f"--scheduler {scheduler}: no Dask scheduler answered within {SCHEDULER_TIMEOUT:g} s "
                               f"({type(exc).__name__}: {exc})")
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
    return Client(cluster), cluster


def _probe_scheduler(scheduler):
    """A ``tcp://host:port`` scheduler that refuses the connection fails at once (Dask's client
    would retry until its timeout); an address that does not answer fails after SCHEDULER_TIMEOUT
    seconds. Other addresses are left to Dask."""
    from urllib.parse import urlsplit
    try:
        u = urlsplit(scheduler)
        host, port = u.hostname, u.port
    except ValueError:
        return
    if u.scheme != "tcp" or not host or port is None:
        return
    try:
        socket.create_connection((host, port), timeout=SCHEDULER_TIMEOUT).close()
    except OSError as exc:
        what = "refused the connection" if isinstance(exc, ConnectionRefusedError) else \
            f"did not answer within {SCHEDULER_TIMEOUT:g} s" if isinstance(exc, TimeoutError) else f"failed ({exc})"
        raise RuntimeError(f"--scheduler {scheduler}: no Dask scheduler answered: {host}:{port} {what}")


def _execute_dask(order, workers, scheduler, retries, account):
    from distributed import as_completed
    client, cluster = connect_dask(scheduler, workers)
    try:
        futs = {client.submit(run_task, t, key=f"refimpl-{t['id']}", pure=False, retries=retries): t for t in order}
        for f in as_completed(list(futs)):
            t = futs[f]
            try:
                res = f.result()
            except Exception as exc:     # KilledWorker and the like: the worker died with the task
                res = (t["id"], "failed", record_failure(t, f"the Dask worker failed while running it "
                                                            f"({type(exc).__name__}: {exc})"), None)
            account(t, res)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


# ----------------------------------------------------------------------------- a probe task (tests, diagnostics)

def probe_task(task, tmp):
    """A task that writes ``task["value"]`` to ``value.json``; ``task["die_once"]`` (a path) makes
    the worker process exit abruptly the first time (when the file does not exist yet), as a
    killed or crashed worker would; ``task["fail"]`` raises."""
    marker = task.get("die_once")
    if marker and not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(9)
    if task.get("die_always"):
        os._exit(9)
    if task.get("fail"):
        raise ValueError(task["fail"])
    time.sleep(float(task.get("sleep", 0.0)))
    with open(os.path.join(tmp, "value.json"), "w") as fh:
        json.dump(task.get("value"), fh)
    return "finished", {"value": task.get("value")}


def part_probe(x):
    """``(x², pid)``: a part function for testing :func:`refimpl.verification.registry.map_parts`."""
    return x * x, os.getpid()


def report_death(tasks, n, counts):
    """A worker died while running ``tasks`` (see :func:`execute`'s ``on_death``): one line on
    stderr, counted once in the run's JSON."""
    counts["worker_deaths"] = counts.get("worker_deaths", 0) + 1
    names = sorted(t.get("label", t["id"]) + (f" seed {t['seed']}" if "seed" in t else "") for t in tasks)
    if n is None:
        print(f"refimpl: a worker process died while {', '.join(names[:-1])} and {names[-1]} ran; the pool stops "
              "them all, so which one is not known: each is rerun alone", file=sys.stderr, flush=True)
        return
    print(f"refimpl: a worker process died while running {names[0]} ({n} time{'s' if n > 1 else ''}); it was "
          f"replaced and the task is rerun", file=sys.stderr, flush=True)
