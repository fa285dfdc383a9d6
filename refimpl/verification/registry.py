"""Registry of the verification checks, and the data the check modules share.

A check is a function ``fn(quick: bool) -> dict`` registered with :func:`check`. It returns
``measured`` and ``bound`` (numbers or None), optionally ``holds`` (default: measured ≤ bound)
and ``details`` (a JSON-able dict). The runner (:mod:`refimpl.tools.verify`) adds ``ratio`` =
measured / bound and catches exceptions (a crashed check is reported as not holding).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from refimpl.core.data import load_embedded_mnist

REGISTRY: dict = {}
#: checks that share an expensive computation within one process (check id → group name): the
#: runner keeps a group in one task so the computation is done once (a run shared by several
#: checks, or cvxpy's import, 1.4 s, which three SSCA checks need)
GROUPS: dict = {}


@dataclass
class CheckRecord:
    id: str
    claim: str
    source: str
    measured: float | None
    bound: float | None
    ratio: float | None
    holds: bool
    details: dict = field(default_factory=dict)


KINDS = ("theorem", "claim")


def check(id, claim, source, kind="theorem", group=None):
    """Register ``fn(quick) -> {"measured", "bound", ["holds"], ["details"]}`` under ``id``.

    ``kind``: "theorem" for identities, lemmas, theorems and implementation checks (a failure is
    a defect); "claim" for a paper's experimental claim (it may honestly not reproduce here).
    ``group``: checks of one group share a cached computation and run in one task."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")

    def deco(fn):
        if id in REGISTRY:
            raise ValueError(f"check id {id!r} registered twice")
        REGISTRY[id] = (claim, source, fn, kind)
        if group:
            GROUPS[id] = group
        return fn
    return deco


@lru_cache(maxsize=1)
def embedded():
    """The embedded MNIST subset, loaded once per process for every check that uses it."""
    return load_embedded_mnist()


#: set by the engine's check tasks: how many processes a check may use for its independent parts
PARTS_WORKERS_ENV = "REFIMPL_CHECK_WORKERS"


def map_parts(fn, items):
    """``[fn(item) for item in items]``: the independent parts of a check (settings, server times,
    seeds). In a plain run, one after another in this process; inside ``refimpl verify``'s engine
    with ``--workers N > 1``, on N spawned single-threaded processes. Every part is the same
    function of the same arguments with one BLAS thread either way, so the results are identical
    to the bit. ``fn`` must be a module-level function and ``items`` picklable."""
    import os
    items = list(items)
    n = int(os.environ.get(PARTS_WORKERS_ENV, "1") or 1)
    if n <= 1 or len(items) <= 1:
        return [fn(it) for it in items]
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor
    env = {v: os.environ.get(v) for v in (PARTS_WORKERS_ENV,)}
    os.environ[PARTS_WORKERS_ENV] = "1"           # parts do not split further
    try:
        from refimpl.core.runtime import stop_pool, worker_init
        pool = ProcessPoolExecutor(max_workers=min(n, len(items)), mp_context=mp.get_context("spawn"),
                                   initializer=worker_init, initargs=(os.getpid(),))
        try:
            out = list(pool.map(fn, items))
        except BaseException:
            stop_pool(pool)
            raise
        pool.shutdown(wait=True)
        return out
    finally:
        os.environ[PARTS_WORKERS_ENV] = env[PARTS_WORKERS_ENV] or str(n)


#: set (to "1") in the mutation runner's child, where a check's verdict is all that is read: a
#: check whose verdict is "every fact right" may then stop after its first group of facts that
#: holds a wrong one, since no later group can turn the verdict back (:func:`fact_groups`)
FIRST_WRONG_ENV = "REFIMPL_FIRST_WRONG"


def first_wrong():
    """True in the mutation runner's child (:data:`FIRST_WRONG_ENV`), never in a plain run."""
    import os
    return os.environ.get(FIRST_WRONG_ENV) == "1"


def fact_groups(groups):
    """The (what, right) facts of ``groups`` (functions of no argument, each returning a list of
    them), every group run in the order given (a check lists its cheapest groups first). Under the
    mutation runner (:func:`first_wrong`) the groups stop after the first one with a wrong fact:
    what runs there is the first part of what a plain run does, in the same order, so the verdict
    is the plain run's (not holding), only sooner."""
    return _groups(groups, lambda facts: not all(right for _, right in facts))


def wrong_groups(groups):
    """As :func:`fact_groups` for groups that return the list of what they found wrong (empty:
    all right): every group's list in a plain run; under the mutation runner, up to the first
    group that finds something wrong."""
    return _groups(groups, bool)


def error_groups(groups, bound):
    """As :func:`fact_groups` for groups that return {what: error} (a check whose verdict is every
    error ≤ ``bound``): the dicts merged, in the order given; under the mutation runner, up to the
    first group with an error above ``bound`` or NaN."""
    merged = {}
    for found in _groups([lambda g=g: [g()] for g in groups],
                         lambda found: any(not float(v) <= bound for d in found for v in d.values())):
        merged.update(found)
    return merged


def _groups(groups, is_wrong):
    if not first_wrong():
        return [item for group in groups for item in group()]
    out = []
    for group in groups:
        found = group()
        out += found
        if is_wrong(found):
            break
    return out


def max_or_nan(*values):
    """The largest of ``values`` (numbers), or NaN when any is NaN: Python's ``max`` keeps its first
    argument against a NaN, so ``max(worst, nan)`` would let a NaN difference pass as no difference."""
    vals = [float(v) for v in values]
    return float("nan") if any(v != v for v in vals) else max(vals)


def default_of(fn, name):
    """The default value of ``fn``'s parameter ``name`` (a library default a check compares with the
    command's)."""
    import inspect
    return inspect.signature(fn).parameters[name].default


class LineProgress:
    """A command's progress display as a check plants it: line mode (no terminal), each line kept in
    ``lines``; a context manager, as the command line's toolbox hands one out."""

    bar_mode = False

    def __init__(self):
        self.lines = []

    def __call__(self, line="", **kw):
        self.lines.append(line)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def raises(fn, words):
    """True when ``fn()`` raises a ValueError whose message holds ``words`` (a refusal a check
    expects, with the reason it must give)."""
    try:
        fn()
    except ValueError as exc:
        return words in str(exc)
    return False
