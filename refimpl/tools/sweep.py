"""Hyper-parameter sweeps and seed averaging: ``refimpl sweep SPEC --out DIR`` and
``refimpl sweep-summary DIR``.

A spec (TOML or JSON; data only, nothing evaluated) names the runner, fixed settings, a grid and
the seeds:

    runner = "ssca"                     # any `refimpl run` algorithm
    seeds = [0, 1, 2]                   # or a count: seeds = 3
    [fixed]
    setting = "sample"
    rounds = 200
    [grid]
    tau = [0.05, 0.1]
    rho_alpha = { start = 0.1, stop = 0.5, num = 3 }      # linear range (log = true: geometric)

Every (cell, seed) is one task, named by the SHA-256 of its canonical configuration. A task writes
into a temporary directory and renames it to ``tasks/<hash>`` when complete (rename is atomic), so
a directory ``tasks/<hash>`` is always a finished task: a rerun skips those and redoes the rest,
and a kill at any moment loses at most the tasks in flight. Failures are written to
``failed/<hash>.json`` and retried on the next run. One sweep at a time per directory (lock file).
"""
from __future__ import annotations

import itertools
import json
import os
import pathlib
import shutil
from dataclasses import asdict, fields

import numpy as np

from refimpl.core.identity import run_finished
from refimpl.tools.engine import (EXECUTORS, RootLock, clean_partial, content_id, execute, finished, make_out_dir,
                                  report_death, resolve_workers)

SPEC_KEYS = {"runner", "seeds", "fixed", "grid", "description"}


# ----------------------------------------------------------------------------- spec

def _paper(runner):
    """The paper that owns a runner (any `refimpl run` algorithm)."""
    from refimpl import papers
    try:
        return papers.of_algorithm(runner)
    except ValueError:
        raise ValueError(f"unknown runner {runner!r}; allowed: {sorted(papers.algorithms())}") from None


def _expand(name, v):
    if isinstance(v, list):
        if not v:
            raise ValueError(f"grid entry {name!r} is an empty list")
        return v
    if isinstance(v, dict):
        unknown = set(v) - {"start", "stop", "num", "log"}
        if unknown or not {"start", "stop", "num"} <= set(v):
            raise ValueError(f"grid range {name!r} needs start, stop, num (and optionally log), got {sorted(v)}")
        num = v["num"]
        if isinstance(num, bool) or not isinstance(num, int):
            raise ValueError(f"grid range {name!r}: num must be a whole number of values, got {num!r}")
        if num < 1:
            raise ValueError(f"grid range {name!r}: num must be >= 1, got {num}")
        try:
            start, stop = float(v["start"]), float(v["stop"])
        except (TypeError, ValueError):
            raise ValueError(f"grid range {name!r}: start and stop must be numbers, got {v['start']!r}, {v['stop']!r}")
        if v.get("log") and not (start > 0 and stop > 0):
            raise ValueError(f"grid range {name!r}: a log range needs start and stop > 0, got {start:g} to {stop:g}")
        vals = (np.geomspace if v.get("log") else np.linspace)(start, stop, num)
        return [float(x) for x in vals]
    raise ValueError(f"grid entry {name!r} must be a list or a {{start, stop, num}} range, got {type(v).__name__}")


def read_document(path):
    """A TOML (``.toml``) or JSON file as a Python object, with an error naming the file when it
    does not parse (sweep specs and ``refimpl run --config`` files)."""
    with open(path, "rb") as fh:
        raw = fh.read()
    if str(path).endswith(".toml"):
        try:
            import tomllib
        except ImportError:                     # Python 3.10
            raise ValueError(f"{path}: TOML needs Python >= 3.11; use JSON")
        try:
            return tomllib.loads(raw.decode())
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{path}: not valid TOML ({exc})")
    try:
        return json.loads(raw.decode())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})")


#: a grid with more cells than this is refused unless ``--max-cells`` raises the limit (each cell
#: is validated, and every cell × seed is a task: a typo in a range should not start 10^7 of them)
MAX_CELLS = 10_000


def load_spec(path, max_cells=MAX_CELLS):
    """Read and validate a sweep spec; returns (runner, fixed, grid (name → values), seeds)."""
    doc = read_document(path)
    return validate_spec(doc, max_cells)


def validate_spec(doc, max_cells=MAX_CELLS):
    if not isinstance(doc, dict):
        raise ValueError("a sweep spec is a table/object at the top level")
    unknown = set(doc) - SPEC_KEYS
    if unknown:
        raise ValueError(f"unknown spec keys {sorted(unknown)}; allowed: {sorted(SPEC_KEYS)}")
    if "runner" not in doc:
        raise ValueError("the spec must name a runner, e.g. runner = \"ssca\"")
    runner = doc["runner"]
    paper = _paper(runner)
    cls = paper.config_class()
    allowed = {f.name for f in fields(cls)} - {paper.method_field, "seed"}
    for part in ("fixed", "grid"):
        if not isinstance(doc.get(part, {}), dict):
            raise ValueError(f"[{part}] must be a table of settings (name = value), got {doc[part]!r}")
    fixed = dict(doc.get("fixed", {}))
    grid_raw = dict(doc.get("grid", {}))
    for part, keys in (("fixed", fixed), ("grid", grid_raw)):
        bad = set(keys) - allowed
        if bad:
            raise ValueError(f"unknown {part} settings {sorted(bad)} for runner {runner!r}; allowed: {sorted(allowed)}")
    both = set(fixed) & set(grid_raw)
    if both:
        raise ValueError(f"settings {sorted(both)} are both fixed and in the grid")
    sizes = {k: len(v) if isinstance(v, list) else v.get("num") if isinstance(v, dict) else 1
             for k, v in grid_raw.items()}
    n_cells = 1
    for n in sizes.values():
        n_cells *= n if isinstance(n, int) and not isinstance(n, bool) else 1
    if n_cells > max_cells:
        shape = " × ".join(f"{k}: {n}" for k, n in sizes.items())
        raise ValueError(f"the grid has {n_cells:,} cells ({shape}), above the limit of {max_cells:,}; "
                         f"pass --max-cells {n_cells} to run them all")
    grid = {k: [typed_value(cls, k, x) for x in _expand(k, v)] for k, v in grid_raw.items()}
    fixed = {k: typed_value(cls, k, v) for k, v in fixed.items()}
    for k, vals in grid.items():
        if len(set(map(json.dumps, vals))) != len(vals):
            raise ValueError(f"grid entry {k!r} repeats a value: {vals} (equal numbers count as one value)")
    seeds = doc.get("seeds", [0])
    if isinstance(seeds, bool) or (isinstance(seeds, list) and any(isinstance(s, bool) for s in seeds)):
        raise ValueError(f"seeds must be a positive count or a list of integers, got {seeds!r}")
    if isinstance(seeds, int):
        if seeds < 1:
            raise ValueError(f"seeds must be a positive count or a list, got {seeds}")
        seeds = list(range(seeds))
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) for s in seeds):
        raise ValueError(f"seeds must be a non-empty list of integers or a count, got {seeds!r}")
    if any(s < 0 for s in seeds):
        raise ValueError(f"seeds must be whole numbers >= 0, got {seeds}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds repeat: {seeds}")
    # every cell must build a valid configuration before anything runs
    for cell in cells(grid):
        make_config(runner, {**fixed, **cell}, seeds[0])
    return runner, fixed, grid, seeds


def typed_value(cls, name, v):
    """A spec value in the type of its configuration field, so that a spec's identity (its
    tasks' hashes, the check against the spec a directory holds) is by value: ``lam = 0`` and
    ``lam = 0.0`` are one setting; a float where a whole number is required is refused."""
    t = {f.name: f.type for f in fields(cls)}[name]
    t = t if isinstance(t, str) else getattr(t, "__name__", str(t))
    kinds = {p.strip() for p in t.split("|")}
    if v is None and "None" in kinds:
        return None
    kinds.discard("None")
    if kinds == {"int"}:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"{name} must be a whole number (an int, not {v!r})")
        return v
    if kinds == {"float"}:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"{name} must be a number, got {v!r}")
        return float(v)
    if kinds == {"bool"}:
        if not isinstance(v, bool):
            raise ValueError(f"{name} must be true or false, got {v!r}")
        return v
    if kinds == {"str"} and isinstance(v, (int, float)) and not isinstance(v, bool):
        return repr(float(v)) if isinstance(v, float) else str(v)     # text fields hold numbers as text
    return v


def cells(grid):
    names = sorted(grid)
    for combo in itertools.product(*(grid[n] for n in names)):
        yield dict(zip(names, combo))


def make_config(runner, settings, seed):
    paper = _paper(runner)
    try:
        cfg = paper.config_class()(**{paper.method_field: runner, **settings, "seed": int(seed)})
    except TypeError as exc:
        raise ValueError(f"invalid settings for {runner}: {exc}")
    paper.validated(cfg)
    return cfg


def task_id(runner, cfg):
    return content_id({"runner": runner, "config": asdict(cfg)})


def tasks(runner, fixed, grid, seeds):
    out = []
    for cell in cells(grid):
        for s in seeds:
            cfg = make_config(runner, {**fixed, **cell}, s)
            out.append({"id": task_id(runner, cfg), "runner": runner, "cell": cell, "seed": s,
                        "settings": {**fixed, **cell}})
    return out


# ----------------------------------------------------------------------------- one task

def sweep_task(task, tmp):
    """The engine's work function of a sweep task: one run, its trace saved into ``tmp``."""
    cfg = make_config(task["runner"], task["settings"], task["seed"])
    paper = _paper(task["runner"])
    data = None
    if paper.needs_data(cfg):
        from refimpl.core.data import load_embedded_mnist
        data = load_embedded_mnist()
    tr = paper.run(paper.validated(cfg), data)
    tr.save(tmp)
    return tr.status, None


SweepLock = RootLock


def spec_difference(old, new):
    """Readable differences between two spec documents (runner, fixed, grid, seeds)."""
    out = []
    for part in ("runner", "seeds", "fixed", "grid"):
        a, b = old.get(part), new.get(part)
        if isinstance(a, dict) and isinstance(b, dict):
            for k in sorted(set(a) | set(b)):
                if a.get(k, "<unset>") != b.get(k, "<unset>"):
                    out.append(f"{part}.{k}: {a.get(k, '<unset>')!r} -> {b.get(k, '<unset>')!r}")
        elif a != b:
            out.append(f"{part}: {a!r} -> {b!r}")
    return out


def spec_grows(old, new):
    """Whether ``new`` only adds to ``old``: the same runner, fixed settings and grid names, every
    old grid value and seed still there. Then every old task is a task of the new spec (a task's
    identity is its runner and configuration), so its finished runs are reused as they are."""
    def values(v):
        return {json.dumps(x, sort_keys=True) for x in (v if isinstance(v, list) else [v])}
    if old.get("runner") != new.get("runner") or old.get("fixed") != new.get("fixed"):
        return False
    og, ng = old.get("grid") or {}, new.get("grid") or {}
    if set(og) != set(ng) or not all(values(og[k]) <= values(ng[k]) for k in og):
        return False
    return set(old.get("seeds") or []) <= set(new.get("seeds") or [])


def _discard_tasks_outside(out_dir, keep):
    """``--overwrite`` with a changed spec: remove the finished and failed tasks the new spec does
    not hold; the ones it holds (same identity) stay finished."""
    for sub in ("tasks", "failed"):
        d = os.path.join(out_dir, sub)
        for name in os.listdir(d):
            tid = name[:-len(".json")] if name.endswith(".json") else name
            if tid not in keep:
                path = os.path.join(d, name)
                shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)


def run_sweep(spec_path, out_dir, executor="local", workers=None, scheduler=None, progress=None, overwrite=False,
              max_cells=MAX_CELLS):
    """Run every unfinished task of the spec; returns the counts {done, failed, skipped}.

    A directory holding a sweep of another spec is refused (the difference is shown) unless
    ``overwrite``, which removes its tasks first: tasks of two specs never mix."""
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be 'local' or 'dask', got {executor!r}")
    runner, fixed, grid, seeds = load_spec(spec_path, max_cells)
    todo = tasks(runner, fixed, grid, seeds)
    workers = resolve_workers(workers, len(todo))
    make_out_dir(out_dir, "tasks", "failed")
    with SweepLock(out_dir):
        spec_copy = os.path.join(out_dir, "spec.json")
        doc = json.loads(json.dumps({"runner": runner, "fixed": fixed, "grid": grid, "seeds": seeds}))
        if os.path.exists(spec_copy):
            with open(spec_copy) as fh:
                old = json.load(fh)
            diff = spec_difference(old, doc)
            grows = bool(diff) and spec_grows(old, doc)
            if diff and not grows and not overwrite:
                raise ValueError(f"{out_dir} holds a sweep of another spec ({'; '.join(diff)}); its tasks would mix "
                                 "with this one's. A spec that only adds seeds or grid values grows the sweep in place; "
                                 "otherwise use another --out, or --overwrite to discard the tasks this spec does not "
                                 "hold (its own finished tasks are kept)")
            if diff and progress:
                progress(f"the spec {'grows' if grows else 'changes'}: {'; '.join(diff)}")
            if diff and not grows:
                _discard_tasks_outside(out_dir, {t["id"] for t in todo})
        with open(spec_copy + ".tmp", "w") as fh:
            json.dump(doc, fh, indent=1)
        os.replace(spec_copy + ".tmp", spec_copy)
        clean_partial(out_dir)                     # left by a killed run: never published
        pending = [t for t in todo if not finished(out_dir, t["id"])]
        counts = {"total": len(todo), "skipped": len(todo) - len(pending), "done": 0, "failed": 0}
        if progress:
            progress(f"{len(todo)} tasks, {counts['skipped']} already finished, {len(pending)} to run "
                     f"({executor}, {workers} workers)")
        for t in pending:
            t.update(root=out_dir, fn="refimpl.tools.sweep:sweep_task")

        def on_result(task, status, msg, result):
            _account((task["id"], status, msg), task, counts, len(pending), progress)
        counts["worker_deaths"] = 0
        execute(pending, executor, workers, scheduler, on_result,
                on_death=lambda task, n: report_death(task, n, counts))
    return counts


def _account(result, task, counts, n, progress):
    tid, status, msg = result
    counts["done" if status == "done" else "failed"] += 1
    if progress:
        finished = counts["done"] + counts["failed"]
        line = f"[{finished}/{n}] done {counts['done']}, failed {counts['failed']}, remaining {n - finished}"
        where = f"cell {cell_label(task['cell']) or '(no grid)'}, seed {task['seed']}"
        line += f" — {where} failed (task {tid}): {msg}" if status != "done" else f" — {where} done"
        progress(line)


# ----------------------------------------------------------------------------- summary

def _criterion(name):
    """'final:METRIC' (minimised; prefix '-' to maximise, e.g. '-final:test_accuracy') or
    'first:METRIC<=VALUE' / 'first:METRIC>=VALUE' (round or time of first reach, minimised)."""
    sign = 1.0
    if name.startswith("-"):
        sign, name = -1.0, name[1:]
    kind, _, rest = name.partition(":")
    if kind == "final" and rest:
        return lambda m: float(m[rest][-1]) * sign
    if kind == "first":
        for op in ("<=", ">="):
            if op in rest:
                metric, val = rest.split(op)
                try:
                    val = float(val)
                except ValueError:
                    raise ValueError(f"criterion {name!r}: {val!r} after {op} is not a number")

                def f(m, metric=metric, op=op, val=val):
                    x = np.asarray(m[metric])
                    hit = np.flatnonzero(x <= val if op == "<=" else x >= val)
                    axis = m.get("round") or m.get("step") or m.get("time")
                    return float(axis[hit[0]]) * sign if hit.size else np.inf
                return f
    raise ValueError(f"criterion must be 'final:METRIC', '-final:METRIC' or 'first:METRIC<=V' / '>=V', got {name!r}")


#: the columns of a summary row besides the cell's settings
SUMMARY_COLUMNS = ("seeds", "unfinished", "criterion", "mean", "std")


def rank(row):
    """A summary row's place, best first: the cells whose every seed finished
    (:func:`~refimpl.core.identity.run_finished`) by the criterion's mean, then the cells with a
    diverged or stopped seed (a diverged trace ends before its blow-up, so its last values would
    rank it among the best; ``reproduce --tune`` never picks such a run either), a mean that is
    not a number last in each group."""
    nan = bool(np.isnan(row["mean"]))
    return (row["unfinished"] > 0, nan, 0.0 if nan else row["mean"])


def summarize(out_dir, criterion="final:train_cost", metric=None, top=3, plot=True):
    """Per cell: mean and spread over seeds of every per-round metric, and how many seeds did not
    finish; the cells in :func:`rank`'s order; CSV files and (``plot``) a PNG of the best cells'
    curves. Returns (cells table, failures)."""
    from refimpl.core.trace import Trace, write_csv
    crit = _criterion(criterion)
    groups = {}
    tdir = os.path.join(out_dir, "tasks")
    for name in sorted(os.listdir(tdir)) if os.path.isdir(tdir) else []:
        if name.startswith("."):
            continue
        from refimpl.core.trace import _read_json
        task = _read_json(os.path.join(tdir, name, "task.json"))
        tr = Trace.load(os.path.join(tdir, name))
        key = json.dumps(task["cell"], sort_keys=True)
        groups.setdefault(key, []).append((task, tr))
    failures = []
    fdir = os.path.join(out_dir, "failed")
    for name in sorted(os.listdir(fdir)) if os.path.isdir(fdir) else []:
        if name.endswith(".json"):
            rec = json.loads(pathlib.Path(fdir, name).read_text())
            failures.append({"task": rec["id"], "cell": json.dumps(rec["cell"], sort_keys=True), "seed": rec["seed"],
                             "error": rec["error"]})
    if not groups:
        raise ValueError(f"{out_dir}: no finished tasks")
    recorded = sorted({k for ms in groups.values() for _, tr in ms for k in tr.metrics})
    wanted = criterion.lstrip("-").partition(":")[2].split("<=")[0].split(">=")[0]
    if wanted not in recorded:
        raise ValueError(f"--criterion {criterion}: {wanted!r} is not a metric of these runs; recorded: "
                         f"{', '.join(recorded)}")
    rows, curves = [], []
    for key, members in groups.items():
        vals = [crit(tr.metrics) for _, tr in members]
        cell = json.loads(key)
        finite = np.all(np.isfinite(vals))          # a cell that never reached a target: mean = inf
        rows.append({**cell, "seeds": len(members), "unfinished": sum(not run_finished(tr.status) for _, tr in members),
                     "criterion": criterion, "mean": float(np.mean(vals)),
                     "std": float(np.std(vals, ddof=1)) if len(vals) > 1 and finite else 0.0})
        lengths = {k: min(len(tr.metrics[k]) for _, tr in members) for k in members[0][1].metrics
                   if all(k in tr.metrics for _, tr in members) and len(members[0][1].metrics[k])}
        axis = "round" if "round" in lengths else "step" if "step" in lengths else "time"
        n = min(lengths.values())
        for i in range(n):
            row = {"cell": key, axis: members[0][1].metrics[axis][i]}
            for k in lengths:
                if k == axis:
                    continue
                col = np.array([tr.metrics[k][i] for _, tr in members], dtype=float)
                row[f"{k}_mean"] = float(np.mean(col))
                row[f"{k}_std"] = float(np.std(col, ddof=1)) if len(col) > 1 else 0.0
            curves.append(row)
    rows.sort(key=rank)
    write_csv(os.path.join(out_dir, "summary.csv"), rows)
    write_csv(os.path.join(out_dir, "curves.csv"), curves)
    write_csv(os.path.join(out_dir, "failures.csv"), failures, ("task", "cell", "seed", "error"))
    metric = metric or criterion.lstrip("-").partition(":")[2].split("<")[0].split(">")[0]
    if metric not in recorded:
        raise ValueError(f"--metric {metric}: not a metric of these runs; recorded: {', '.join(recorded)}")
    if plot:
        _plot_best(out_dir, rows[:top], curves, metric)
    return rows, failures


def _plot_best(out_dir, best, curves, metric):
    from refimpl.core.plots import _finish, _pyplot, bands, integer_ticks
    plt = _pyplot()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    axis = "round"
    groups = {}
    for r in best:
        cell = {k: v for k, v in r.items() if k not in SUMMARY_COLUMNS}
        pts = [c for c in curves if c["cell"] == json.dumps(cell, sort_keys=True) and f"{metric}_mean" in c]
        if not pts:
            continue
        axis = next(k for k in ("round", "step", "time") if k in pts[0])
        groups[cell_label(cell, r.get("seeds"))] = pts
    bands(ax, groups, axis, metric)
    ax.set_xlabel(axis)
    ax.set_ylabel(metric)
    ax.set_title("best cells: mean ± std over seeds", fontsize=9)
    if axis in ("round", "step"):
        integer_ticks(ax)
    _finish(fig, [ax], os.path.join(out_dir, "best.png"))


def cell_label(cell, seeds=None):
    """A grid cell as a legend entry: ``tau=0.1, lam=0 (3 seeds)``."""
    text = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in sorted(cell.items()))
    return (text or "(no grid)") + (f" ({seeds} seed{'s' if seeds != 1 else ''})" if seeds else "")


