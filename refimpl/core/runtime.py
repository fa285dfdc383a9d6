"""Process-level tuning applied by the ``refimpl`` command (not by importing the library).

glibc returns freed blocks above 128 KiB to the OS and maps fresh pages for the next allocation,
so every B×J or dim-ω temporary of a round costs page faults. Raising the mmap and trim
thresholds (``mallopt``) keeps those pages in the process; measured with ``refimpl bench ssca``
it makes a batch-10 round about 2× faster. A no-op where glibc is absent.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import ctypes.util

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
_THRESHOLD = 512 * 1024 * 1024


def tune_allocator():
    """Return True when glibc accepted both settings."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        return bool(libc.mallopt(M_TRIM_THRESHOLD, _THRESHOLD)) and bool(libc.mallopt(M_MMAP_THRESHOLD, _THRESHOLD))
    except (OSError, AttributeError):
        return False


@contextlib.contextmanager
def environ(values):
    """Environment variables set for the ``with`` block (a value of None: unset) and put back as
    they were afterwards, set or unset."""
    def put(settings):
        for k, v in settings.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
    saved = {k: os.environ.get(k) for k in values}
    try:
        put(values)
        yield
    finally:
        put(saved)


# ----------------------------------------------------------------------------- pool processes

def _exit_with_parent(parent_pid, every=0.5):
    """In a worker process: a daemon thread ends the process (exit 1) as soon as its parent is
    gone — the parent killed with SIGKILL cannot stop its pool, so the workers stop themselves
    instead of finishing and publishing tasks nobody collects."""
    import threading
    import time as _time

    def watch():
        while True:
            _time.sleep(every)
            if os.getppid() != parent_pid:
                os._exit(1)
    threading.Thread(target=watch, daemon=True, name="refimpl-parent-watch").start()


def check_spawnable():
    """Raise a readable error when processes started with ``spawn`` could not start from this
    program: each one first imports the program's main file, and a program read from standard
    input (``python -``) has none (``__file__`` is ``<stdin>``), so every worker would die at start.
    A program run as a module (``python -m``), a script file and an interactive session are fine."""
    import sys
    main = sys.modules.get("__main__")
    if main is None or getattr(getattr(main, "__spec__", None), "name", None):
        return
    path = getattr(main, "__file__", None)
    if path is None or os.path.exists(path):
        return
    raise RuntimeError(f"refimpl runs tasks in spawned processes, which first import the program that called it, "
                       f"and this program's file {path!r} does not exist (a program read from standard input?): "
                       "save it to a file and run that, with the calls under `if __name__ == \"__main__\":`")


def worker_init(parent_pid):
    """Initializer of every pool process refimpl starts: follow the parent's death, leave Ctrl-C
    to the parent (which stops the pool), tune the allocator."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _exit_with_parent(parent_pid)
    tune_allocator()


def stop_pool(pool):
    """Stop a ProcessPoolExecutor at once: nothing more is dispatched and the running tasks are
    killed (their unpublished ``.tmp-`` directories are cleaned, and the tasks rerun, on resume)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.kill()
    for p in procs:
        p.join(timeout=5)
