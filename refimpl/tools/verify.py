"""Runner of the verification checks registered in :mod:`refimpl.verification` (``refimpl verify``).

The runner adds ``ratio`` = measured / bound to each check's record and catches exceptions (a
crashed check is reported as not holding, with the error in details).
"""
from __future__ import annotations

import importlib
import json
import os
import math
import time
import traceback
from dataclasses import asdict

from refimpl.tools.engine import content_id
from refimpl.verification.registry import REGISTRY, CheckRecord

def check_modules():
    """The cross-paper checks, each registered paper's check module, then the checks of the
    cross-check tools and of the command line's own lines."""
    from refimpl import papers
    return (("refimpl.verification.core",) + tuple(p.checks_module for p in papers.papers() if p.checks_module)
            + ("refimpl.tools.tool_checks", "refimpl.tools.runner_checks", "refimpl.cli.checks"))


def load_checks():
    for mod in check_modules():
        importlib.import_module(mod)
    return REGISTRY


def _num(x):
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else (None if math.isnan(x) else x)


def cpu_seconds():
    """CPU seconds (user + system) of this process and of its finished children."""
    import resource
    return sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for f in ("ru_utime", "ru_stime"))


def peak_rss_mb():
    """Peak resident memory in MB of this process and of its largest finished child."""
    import resource
    return max(resource.getrusage(w).ru_maxrss for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024


class _JitClock:
    """Seconds this process spends holding Numba's compiler lock (compiling a kernel, or loading
    it from the on-disk cache) while a check runs."""

    def __enter__(self):
        from numba.core import event
        self.seconds = 0.0
        self._cm = event.install_timer("numba:compiler_lock", self._add)
        self._cm.__enter__()
        return self

    def _add(self, dur):
        self.seconds += dur

    def __exit__(self, *exc):
        self._cm.__exit__(*exc)
        return False


#: how a check's measured value must relate to its bound: "≤" (the default), "<", ">" or "≥"
#: (a lower bound, e.g. a speed-up above 1), "≈" (two-sided: equal within the check's tolerance)
RELATIONS = ("≤", "<", "≥", ">", "≈")
#: a check that returns no ``holds`` of its own holds when measured stands in this relation to bound
HOLDS = {"≤": lambda m, b: m <= b, "<": lambda m, b: m < b, "≥": lambda m, b: m >= b, ">": lambda m, b: m > b}


def uniform_ratio(measured, bound, relation="≤"):
    """The table's ratio, in one direction for every check: for one-sided relations it is ≤ 1
    exactly when measured stands on the holding side of bound (measured/bound for an upper bound,
    bound/measured for a lower one, the reverse when both are negative, e.g. slopes); for "≈" it
    is measured/bound (1 = agreement). None when the two have different signs or bound is 0."""
    if measured is None or bound in (None, 0.0):
        return None
    if relation == "≈":
        return measured / bound
    if measured == 0.0:
        return 0.0 if (relation in ("≤", "<")) == (bound > 0) else None
    if (measured > 0) != (bound > 0):
        return None
    upper = relation in ("≤", "<")
    r = measured / bound if upper else bound / measured
    return r if bound > 0 else 1.0 / r


#: the tiers of ``refimpl verify``: the main job runs every theorem-kind check (identities, lemmas,
#: theorems, implementation and machinery checks); the papers' experimental claims are
#: reproductions of experiments and run on request (``--claims``) or in the full run (``--full``)
TIERS = ("theorem", "claim")


def tier_ids(kinds=TIERS):
    """The registered check ids whose kind is in ``kinds``, in registry order."""
    load_checks()
    return [cid for cid, entry in REGISTRY.items() if entry[3] in kinds]


def claims_record_path():
    """Where ``refimpl verify --claims`` records the claims' last verdicts: ``$REFIMPL_CACHE_DIR``
    or ``~/.cache/refimpl``, file ``last_claims.json``."""
    root = os.environ.get("REFIMPL_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "refimpl")
    return os.path.join(root, "last_claims.json")


def record_claims(records, quick):
    """Keep the claims' verdicts and figures of this run for the main job's closing line (best
    effort: an unwritable cache directory only loses the line's verdicts)."""
    claims = {r.id: {"holds": bool(r.holds), "measured": r.measured, "bound": r.bound,
                     "relation": r.details.get("relation", "≤"), "verdict": verdict(r)}
              for r in records if r.details.get("kind") == "claim"}
    if not claims:
        return None
    path = claims_record_path()
    try:
        old = last_claims()
        old.update(claims)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".tmp", "w") as fh:
            json.dump({"sizes": "quick" if quick else "full", "when": time.strftime("%Y-%m-%d %H:%M"),
                       "claims": old}, fh, indent=1, default=str)
        os.replace(path + ".tmp", path)
    except OSError:
        return None
    return path


def last_claims():
    """{claim id: its last recorded verdict} (empty when nothing was recorded or the file is damaged)."""
    try:
        with open(claims_record_path()) as fh:
            data = json.load(fh)
        return dict(data.get("claims", {})) if isinstance(data, dict) else {}
    except (OSError, ValueError, TypeError):
        return {}


def claims_line():
    """The main job's closing line: the claims it did not run, their last recorded verdicts, and
    the command that runs them."""
    ids = tier_ids(("claim",))
    last = last_claims()
    parts = [f"{cid} {last[cid]['verdict']}" if cid in last and "verdict" in last[cid] else f"{cid} (not run yet)"
             for cid in ids]
    return (f"the papers' {len(ids)} experimental claims are not part of this run; `refimpl verify --claims` runs "
            "them (every tier: --all, full sizes: --full); last verdicts: " + ", ".join(parts))


def run_check(cid, quick=True) -> CheckRecord:
    """One check's record; its details carry ``seconds`` (wall), ``cpu_seconds`` (this process
    and the part processes it started) and ``jit_seconds`` (Numba compiling or cache loading)."""
    import warnings
    claim, source, fn, kind = REGISTRY[cid]
    t0, c0 = time.perf_counter(), cpu_seconds()
    try:
        # a warning a check raises (cvxpy's "Solution may be inaccurate", …) goes into its own
        # record and note, never loose in the middle of the table
        with _JitClock() as jit, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = fn(quick)
    except Exception as exc:    # a crashed check is a failed check, reported with its error
        return CheckRecord(cid, claim, source, None, None, None, False,
                           {"kind": kind, "error": f"{type(exc).__name__}: {exc}",
                            "traceback": traceback.format_exc(limit=5)})
    measured, bound = _num(out.get("measured")), _num(out.get("bound"))
    relation = out.get("relation", "≤")
    if relation not in RELATIONS:          # a defect of the check: reported as a failed check
        return CheckRecord(cid, claim, source, None, None, None, False,
                           {"kind": kind, "error": f"check {cid}: relation must be one of {RELATIONS}, "
                                                   f"got {relation!r}"})
    ratio = uniform_ratio(measured, bound, relation)
    holds = out.get("holds")
    if holds is None and relation == "≈":  # agreement within what tolerance: only the check can say
        return CheckRecord(cid, claim, source, measured, bound, ratio, False,
                           {"kind": kind, "error": f"check {cid}: relation ≈ needs the check's own holds "
                                                   "(the tolerance it states)"})
    if holds is None:                      # the relation's own comparison; a missing or NaN value fails
        holds = measured is not None and bound is not None and HOLDS[relation](measured, bound)
    details = dict(out.get("details", {}))
    details["kind"] = kind
    details["relation"] = relation
    if out.get("note"):
        details["table_note"] = str(out["note"])
    if caught:
        texts = sorted({f"{w.category.__name__}: {str(w.message).splitlines()[0]}" for w in caught})
        details["warnings"] = texts
        details["table_note"] = "; ".join(filter(None, [details.get("table_note"),
                                                        f"{len(caught)} warning(s): {short(texts[0], 70)}"]))
    if out.get("vacuous"):
        details["vacuous"] = True
    details["seconds"] = round(time.perf_counter() - t0, 3)
    details["cpu_seconds"] = round(cpu_seconds() - c0, 3)
    details["jit_seconds"] = round(jit.seconds, 3)
    return CheckRecord(cid, claim, source, measured, bound, ratio, bool(holds), details)


def check_costs(quick):
    """Seconds each check took in a recorded run (``refimpl/verification/check_seconds.json``, package
    data, refreshed with ``refimpl verify --json``): used only to start the longest checks first;
    results never depend on it."""
    from importlib import resources
    try:
        with resources.files("refimpl.verification").joinpath("check_seconds.json").open() as fh:
            return json.load(fh).get("quick" if quick else "full", {})
    except (OSError, ValueError):
        return {}


def check_task(task, tmp):
    """The engine's work function of one check, or of a group of checks sharing a computation:
    their records, as dicts. ``part_workers``: processes a check may use for its parts."""
    from refimpl.verification.registry import PARTS_WORKERS_ENV
    os.environ[PARTS_WORKERS_ENV] = str(task.get("part_workers", 1))
    load_checks()
    recs = [run_check(cid, task["quick"]) for cid in task["checks"]]
    status = "holds" if all(r.holds for r in recs) else "does not hold"
    return status, [json.loads(json.dumps(asdict(r), default=_plain)) for r in recs]


def _plain(o):
    if getattr(o, "ndim", 0):        # a NumPy array: its values as lists
        return o.tolist()
    try:
        return o.item()              # NumPy scalars
    except AttributeError:
        return str(o)


def check_tasks(ids, quick, root, part_workers=1):
    """The engine tasks of the checks ``ids``: one per check, or one per group of checks sharing
    a computation (:data:`refimpl.verification.registry.GROUPS`), longest first by the recorded
    seconds."""
    from refimpl.verification.registry import GROUPS
    cost = check_costs(quick)
    units = {}
    for cid in ids:
        units.setdefault(GROUPS.get(cid, cid), []).append(cid)
    return [{"id": content_id({"checks": members, "quick": bool(quick)}), "root": root, "label": name,
             "fn": "refimpl.tools.verify:check_task", "checks": members, "quick": bool(quick),
             "part_workers": int(part_workers), "cost": sum(cost.get(c, 1.0) for c in members)}
            for name, members in units.items()]


def records_of(ids, tasks, results, failures):
    """The records of ``ids`` in that order from the tasks' results; a check whose task died is a
    failed check with the reason."""
    got = {}
    for t in tasks:
        for d in results.get(t["id"]) or []:
            got[d["id"]] = CheckRecord(**d)
    out = []
    for cid in ids:
        if cid in got:
            out.append(got[cid])
            continue
        claim, source, _, kind = REGISTRY[cid]
        why = next((f for t in tasks if cid in t["checks"] for f in failures if f.startswith(t["label"] + ":")),
                   "no result")
        out.append(CheckRecord(cid, claim, source, None, None, None, False, {"kind": kind, "error": why}))
    return out


def run_checks(only=None, quick=True, progress=None, executor=None, workers=None, scheduler=None):
    """Run the checks (all, or the ids in ``only``) and return their records in registry order.

    ``executor=None`` runs them one after another in this process; ``"local"`` or ``"dask"``
    runs them as tasks of the engine (:mod:`refimpl.tools.engine`) on ``workers`` single-threaded
    processes, longest first, and lets a check with independent parts spread them over as many
    processes; ``progress(msg)`` is called as each starts (in-process) or ends (engine). In this
    process the checks use :func:`~refimpl.core.threads.blas_choice`'s BLAS threads (one unless the
    environment says otherwise), as ``refimpl verify`` does."""
    load_checks()
    ids = list(REGISTRY) if not only else list(only)
    unknown = [i for i in ids if i not in REGISTRY]
    if unknown:
        raise ValueError(f"unknown check ids {unknown}; registered: {sorted(REGISTRY)}")
    if executor is None:
        from refimpl.core.threads import blas_threads
        records = []
        with blas_threads():               # the API's checks, as the command's: one BLAS thread unless told
            for cid in ids:
                if progress:
                    progress(f"running {cid} ...")
                records.append(run_check(cid, quick))
        return records
    import tempfile
    from refimpl.tools.engine import resolve_workers
    from refimpl.tools.reproduce import run_tasks
    with tempfile.TemporaryDirectory(prefix="refimpl-checks-") as tmp:
        return run_engine_tasks(ids, quick, os.path.join(tmp, "checks"), {},
                                lambda n: resolve_workers(workers, n, "checks"),
                                checks_on_engine(run_tasks, executor, scheduler, progress))[1]


def checks_on_engine(run_tasks, executor, scheduler, progress):
    """How ``refimpl verify`` hands its check tasks to the engine's ``run_tasks``: counted as checks;
    with ``progress``, a task weighs as many checks as it holds and its position advances by its
    recorded seconds (so that a bar's estimate weighs a long check as long)."""
    return lambda tasks, w: run_tasks(tasks, executor, w, scheduler, progress, what="checks",
                                      weight=(lambda t: len(t["checks"])) if progress else None,
                                      position=(lambda t: t["cost"]) if progress else None)


def reproduction_failures(failures, check_tasks):
    """The failures (``label: reason``) that are reproduction runs': a check's failure is its
    record's (a crash in the table), not a failed run."""
    return [f for f in failures if not any(f.startswith(t["label"] + ":") for t in check_tasks)]


def run_engine_tasks(ids, quick, checks_root, reps, workers_for, run):
    """One engine execution of ``refimpl verify``'s checks (``reps`` empty) or of a report: a task
    per check (or group) of ``ids`` and every task of the prepared reproductions ``reps``, on
    ``workers_for(number of tasks)`` workers (a check with parts may spread over as many), run by
    ``run(tasks, workers)`` → (counts, failures, results).
    Returns (counts, the checks' records in the order of ``ids``); a reproduction run that failed
    is raised (RuntimeError, naming the first three), a check that failed is a failed record. The
    checks' directory ``checks_root`` is removed before (checks are never reused) and after."""
    import shutil

    n_tasks = len(check_tasks(ids, quick, checks_root)) + sum(len(rep.tasks) for rep in reps.values())
    w = workers_for(n_tasks)
    ctasks = check_tasks(ids, quick, checks_root, part_workers=w)
    shutil.rmtree(checks_root, ignore_errors=True)          # none, or a stale one: checks are never reused
    try:
        counts, failures, results = run(ctasks + [t for rep in reps.values() for t in rep.tasks], w)
    finally:
        shutil.rmtree(checks_root, ignore_errors=True)
    run_failures = reproduction_failures(failures, ctasks)
    if run_failures:
        raise RuntimeError(f"{len(run_failures)} reproduction runs failed (finished runs are kept; rerun to "
                           "retry): " + "; ".join(run_failures[:3]))
    return counts, records_of(ids, ctasks, results, failures)


def recorded_cost(ids, quick):
    """The recorded seconds of the checks ``ids`` summed (1 s for a check never recorded): a
    progress bar's total, so that its estimate of the time left weighs each check by its length."""
    cost = check_costs(quick)
    return max(round(sum(cost.get(c, 1.0) for c in ids), 2), 0.01)


def _fmt(x):
    if x is None:
        return "-"
    if isinstance(x, float) and (abs(x) >= 1e4 or (abs(x) < 1e-3 and x != 0)):
        return f"{x:.3e}"
    return f"{x:.4g}"


def selection(only=None, full=False, both=False, claims=False):
    """(check ids, quick sizes?, command name) of a verify command: the theorem-kind tier by
    default; ``claims`` (--claims) the papers' experimental claims; ``both`` (--all) both tiers;
    ``full`` (--full) both tiers at full sizes; ``only`` (--only) the ids given (at full sizes with
    ``full``)."""
    quick = not full
    if only is not None:
        return only, quick, "verify"
    if full:
        return tier_ids(), False, "verify --full"
    if both:
        return tier_ids(), True, "verify --all"
    if claims:
        return tier_ids(("claim",)), True, "verify --claims"
    return tier_ids(("theorem",)), True, "verify"


def unreproduced(records):
    """Ids of the paper's claims among ``records`` that did not reproduce (reported, never fatal
    unless --strict); a failing theorem-kind check is not one of them."""
    return [r.id for r in records if not r.holds and r.details.get("kind") == "claim"]


def failing(records, strict=False):
    """Ids that make ``refimpl verify`` exit 1: every failing check with ``strict``, otherwise the
    failing theorem-kind checks (a paper's claim that does not reproduce is reported, not fatal)."""
    return [r.id for r in records if not r.holds and (strict or r.details.get("kind") != "claim")]


def short(text, width=60):
    """``text`` cut at a word boundary to at most ``width`` characters, "…" marking a cut."""
    text = " ".join(str(text).split())
    if len(text) <= width:
        return text
    cut = text[:width - 1].rsplit(" ", 1)[0].rstrip(",;:(")
    return cut + "…"


def verdict(r):
    """``yes``, ``yes (vacuous)`` (a bound no run could violate), ``no (claim)`` or ``NO``."""
    if r.holds:
        return "yes (vacuous)" if r.details.get("vacuous") else "yes"
    return "no (claim)" if r.details.get("kind") == "claim" else "NO"


def format_table(records, wide=False, width=100):
    """The verify table. ``rel`` is how measured must relate to bound; ``ratio`` is ≤ 1 exactly
    when a one-sided relation holds (for ≈ it is measured/bound); ``note`` says what else the
    check knows (a vacuous bound, a tight constant, a crash). By default the table fits ``width``
    columns: the claim is left to ``verify --list`` and a note goes on the lines under its row;
    ``wide``: one row per check with the claim and the note in columns."""
    import textwrap
    notes = {r.id: r.details.get("table_note") or (short(r.details["error"], 50 if wide else 200)
                                                   if r.details.get("error") else "") for r in records}
    rows = [("id",) + (("claim",) if wide else ()) + ("measured", "rel", "bound", "ratio", "holds")
            + (("note",) if wide else ())]
    for r in records:
        rows.append((r.id,) + ((short(r.claim),) if wide else ())
                    + (_fmt(r.measured), r.details.get("relation", "≤"), _fmt(r.bound), _fmt(r.ratio), verdict(r))
                    + ((notes[r.id],) if wide else ()))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(rows[0], widths)).rstrip(" |"),
             "-+-".join("-" * w for w in widths)]
    for r, row in zip(records, rows[1:]):
        lines.append(" | ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip(" |"))
        if not wide and notes[r.id]:
            lines += textwrap.wrap(notes[r.id], width, initial_indent="    note: ", subsequent_indent="          ")
    lines.append("ratio: ≤ 1 when a ≤/</≥/> relation holds (measured/bound, or bound/measured for a lower bound);"
                 + (" " if wide else "\n") + "for ≈, measured/bound"
                 + ("" if wide else ". A check's claim: refimpl verify --list; one wide row each: --wide"))
    return "\n".join(lines)


def write_json(records, path):
    with open(path, "w") as fh:
        json.dump([asdict(r) for r in records], fh, indent=1, default=str)


#: the main job's time targets on a 2-core machine (the README's Speed table): never a test
TARGETS = {"verify": 20.0, "verify (cold)": 60.0, "verify --claims": 120.0, "verify --full": 360.0, "verify --mutations": 120.0,
           "pytest": 480.0}


def format_profile(records, wall=None, cpu=None, rss=None, target=None):
    """``refimpl verify --profile``: per check wall, CPU and Numba seconds, longest first, then
    the command's totals against ``target`` (seconds)."""
    rows = [("id", "wall s", "cpu s", "numba s", "holds")]
    for r in sorted(records, key=lambda r: -(r.details.get("seconds") or 0.0)):
        d = r.details
        rows.append((r.id, *(f"{d[k]:.2f}" if isinstance(d.get(k), (int, float)) else "-"
                             for k in ("seconds", "cpu_seconds", "jit_seconds")), "yes" if r.holds else "no"))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = [" | ".join(c.rjust(w) if i in (1, 2, 3) else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
             for row in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    summed = sum(r.details.get("seconds") or 0.0 for r in records)
    lines.append(f"checks' wall seconds summed: {summed:.1f}")
    if wall is not None:
        lines.append(f"command: {wall:.1f} s wall" + (f", {cpu:.1f} s CPU (all processes)" if cpu is not None else "")
                     + (f", peak memory {rss:.0f} MB (largest process)" if rss is not None else "")
                     + (f"; target ≤ {target:g} s: {'met' if wall <= target else 'MISSED'}" if target else ""))
    return "\n".join(lines)


# ----------------------------------------------------------------------------- --coverage

def coverage_row(module, statements, missing, import_time, compiled):
    """One module's --coverage row: its statements, those executed (a line run while the module was
    imported counts as executed, ``import_time``), those of Numba-compiled functions not traced
    (``compiled``: run as machine code), and the lines not executed, in order."""
    statements, missing = set(statements), set(missing) - set(import_time)
    jit = missing & set(compiled)
    return {"module": module, "statements": len(statements), "executed": len(statements - missing),
            "compiled": len(jit), "not_executed": len(missing - jit), "missing": sorted(missing - jit)}


def _compiled_lines():
    """{file: set of line numbers} of the Numba-compiled functions of the package: their bodies run
    as machine code, which a line tracer never sees (the checks compare them with their NumPy twins)."""
    import inspect
    import sys
    out = {}
    for name, mod in list(sys.modules.items()):
        if not name.startswith("refimpl") or mod is None:
            continue
        for obj in list(vars(mod).values()):
            fn = getattr(obj, "py_func", None)
            if fn is None or not hasattr(obj, "signatures"):
                continue
            try:
                src, start = inspect.getsourcelines(fn)
                path = os.path.realpath(inspect.getsourcefile(fn))
            except (OSError, TypeError):
                continue
            out.setdefault(path, set()).update(range(start, start + len(src)))
    return out


def imported_paths(modules):
    """The real paths of the refimpl modules among ``modules`` ({name: module}, sys.modules)."""
    return {os.path.realpath(getattr(m, "__file__", "") or "") for n, m in list(modules.items())
            if n.startswith("refimpl") and m is not None}


def import_time_lines(path, imported):
    """The lines --coverage counts as run at import: a module's (:func:`_import_time_lines`) when it
    is among the ``imported`` (real paths of the modules in sys.modules), none otherwise."""
    return _import_time_lines(path) if os.path.realpath(path) in imported else ()


def _import_time_lines(path):
    """Lines a module runs when it is imported (its top-level and class-level statements, the def
    and decorator lines): the tracer starts after the checks' modules are imported, so these count
    as executed for every imported module."""
    import ast
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    lines = set()

    def visit(body):
        for node in body:
            lines.add(node.lineno)
            for dec in getattr(node, "decorator_list", ()):
                lines.update(range(dec.lineno, getattr(dec, "end_lineno", dec.lineno) + 1))
            if isinstance(node, ast.ClassDef):
                visit(node.body)
            elif isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for h in getattr(node, "handlers", []):
                    visit(h.body)
                visit(getattr(node, "finalbody", []))
    visit(tree.body)
    return lines


def run_coverage(quick=True, progress=None, only=None):
    """``refimpl verify --coverage``: the theorem-kind checks (or ``only``) in this process under
    coverage.py's line tracer; per module of the package its statements, those executed, those in
    Numba-compiled functions (run, but not traceable) and those no check executes. Returns
    (records, rows); a row's ``missing`` lists the lines no check executes."""
    try:
        import coverage
    except ImportError:
        raise ValueError("verify --coverage needs coverage.py: pip install -e '.[coverage]' (or pip install coverage)")
    import refimpl
    root = os.path.realpath(os.path.dirname(refimpl.__file__))
    load_checks()
    ids = list(only) if only else tier_ids(("theorem",))        # the main job's checks
    cov = coverage.Coverage(source=[root], data_file=None, config_file=False, branch=False)
    cov.start()
    try:
        records = run_checks(ids, quick=quick, progress=progress)
    finally:
        cov.stop()
    import sys

    def analysis(path):
        _, statements, _, missing, _ = cov.analysis2(path)
        return statements, missing
    return records, coverage_rows(root, analysis, imported_paths(sys.modules), _compiled_lines())


def coverage_rows(root, analysis, imported, compiled):
    """A --coverage row (:func:`coverage_row`) per Python file under the package directory ``root``,
    named from the package's name down, in name order: ``analysis(path)`` gives its (statements,
    lines not executed), ``imported`` the real paths of the modules imported (their import-time
    lines executed), ``compiled`` {path: lines of Numba-compiled functions}."""
    rows = []
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            path = os.path.join(dirpath, f)
            statements, missing = analysis(path)
            rows.append(coverage_row(os.path.relpath(path, os.path.dirname(root)), statements, missing,
                                     import_time_lines(path, imported), compiled.get(path, ())))
    return sorted(rows, key=lambda r: r["module"])


def format_coverage(rows):
    """The --coverage table: per module, and totals for the papers' code and for the tools."""
    head = ("module", "statements", "executed", "Numba", "not executed", "executed %")
    out = [head]

    def line(name, rs):
        st = sum(r["statements"] for r in rs)
        ex, jit = sum(r["executed"] for r in rs), sum(r["compiled"] for r in rs)
        out.append((name, str(st), str(ex), str(jit), str(sum(r["not_executed"] for r in rs)),
                    f"{100.0 * (ex + jit) / st:.0f}" if st else "-"))
    for r in rows:
        if r["statements"]:
            line(r["module"], [r])
    methods = [r for r in rows if not r["module"].startswith(("refimpl/tools/", "refimpl/cli", "refimpl/papers",
                                                              "refimpl/conformance/", "refimpl/verification/"))]
    line("total: core + the three papers", methods)
    line("total: package", rows)
    w = [max(len(r[i]) for r in out) for i in range(len(head))]
    lines = [" | ".join(c.ljust(n) if i == 0 else c.rjust(n) for i, (c, n) in enumerate(zip(r, w))) for r in out]
    lines.insert(1, "-+-".join("-" * n for n in w))
    lines.append("executed %: (executed + Numba) / statements; Numba: lines of compiled kernels, run as machine code "
                 "(the checks compare each with its NumPy twin); --json lists the lines no check executes")
    return "\n".join(lines)
