"""``refimpl reproduce NAME``: the papers' figures, averaged over seeds with a spread band.

Each reproduction is a list of labelled runs × seeds. A (run, seed) is a task of the engine
(:mod:`refimpl.tools.engine`), named by the hash of its resolved configuration and data and
published atomically to ``OUT/tasks/<hash>/``, so an interrupted reproduction keeps its finished
runs and ``--resume`` continues from them (a changed setting is a new task, never a reused one).
Outputs: CSV of the curves (mean and standard deviation over seeds), PNG figures,
``reproduction.json`` with the exact configuration, the task ids, the seeds and the package
versions (identical however the runs were executed) and ``execution.json`` (how they were).
"""
from __future__ import annotations

import contextlib
import json
import os
import platform
import sys
import time
from dataclasses import asdict, replace

import numpy as np

from refimpl.core.trace import Trace, write_csv
from refimpl.core.identity import run_finished, run_identity, select, selection_score
from refimpl.tools.engine import content_id, make_out_dir



def names():
    """Every reproduction, paper by paper."""
    from refimpl import papers
    return tuple(n for p in papers.papers() for n in p.reproductions)


def versions():
    """The versions a reproduction records, read from the installed packages' metadata (the same
    strings as their ``__version__``): importing cvxpy only to ask would cost a second and a half."""
    from importlib.metadata import version
    from refimpl import __version__
    return {"python": platform.python_version(), "numpy": np.__version__, "numba": version("numba"),
            "scipy": version("scipy"), "cvxpy": version("cvxpy"), "refimpl": __version__}


# ----------------------------------------------------------------------------- run plans

def plan_for(name, quick=True, rounds=None, paper=False, n_train=4000, preset="paper"):
    """The labelled runs of reproduction ``name`` (asked of the paper that owns it) and its axis
    and metrics."""
    from refimpl import papers
    owner = papers.of_reproduction(name)
    if preset not in owner.reproduction_presets:
        owners = [p for p in papers.papers() if preset in p.reproduction_presets]
        raise ValueError(f"--preset {preset} exists for the {' and '.join(p.short_name for p in owners)} reproductions "
                         f"({', '.join(n for p in owners for n in p.reproductions)}), not for {name}")
    return owner.plan(name, quick=quick, rounds=rounds, paper=paper, n_train=n_train, preset=preset)


def _planned_config(family, cfg):
    """The configuration a run of the plan records (SSCA runs record their resolved settings)."""
    from refimpl import papers
    return papers.get(family).recorded(cfg)


def _preflight(plan, ds):
    """Every run of the plan can start on this data: checked before the first run, not after four."""
    from refimpl import papers
    for label, family, cfg in plan:
        papers.get(family).preflight(label, cfg, ds)


# ----------------------------------------------------------------------------- data in the workers

_DATA_CACHE = {}
VALIDATION_SEED = 20240607           # the permutation that holds out the validation split


def data_key(data_dir=None, split="full"):
    """What a task needs to load its data in a worker: the IDX directory (None = the embedded
    subset) and the split (``full``: train/test; ``validation``: a held-out part of the training
    data as the evaluation set, see :func:`validation_split`)."""
    return {"dir": os.path.abspath(data_dir) if data_dir else None, "split": split}


def load_data(key):
    """The data set of ``key``, loaded once per process."""
    k = json.dumps(key, sort_keys=True)
    if k not in _DATA_CACHE:
        from refimpl.core.data import load_embedded_mnist, load_idx_dir
        ds = load_idx_dir(key["dir"]) if key["dir"] else load_embedded_mnist()
        if key.get("split", "full") == "validation":
            ds = validation_split(ds)
        elif key.get("split", "full") != "full":
            raise ValueError(f"unknown data split {key['split']!r}; allowed: full, validation")
        _DATA_CACHE[k] = ds
    return _DATA_CACHE[k]


def validation_split(ds, fraction=1 / 6):
    """Hold out ``fraction`` of the training samples (a fixed seeded permutation) as the evaluation
    set: tuning never sees the test set. 60,000 → 50,000 train + 10,000 validation."""
    from refimpl.core.data import Dataset
    perm = np.random.default_rng(VALIDATION_SEED).permutation(ds.n_train)
    n_val = int(round(ds.n_train * fraction))
    tr, va = np.sort(perm[n_val:]), np.sort(perm[:n_val])
    return Dataset(ds.X_train[tr], ds.y_train[tr], ds.X_train[va], ds.y_train[va], ds.n_classes,
                   ds.name + "-validation")


# ----------------------------------------------------------------------------- engine tasks

def run_task(task, tmp):
    """The engine's work function of one (run, seed): the trace saved into ``tmp``."""
    from refimpl import papers
    paper = papers.get(task["family"])
    cfg = paper.config_class()(**task["config"])
    tr = paper.run(cfg, load_data(task["data"]) if paper.needs_data(cfg) else None)
    tr.save(tmp)
    return tr.status, None


def _cost(family, cfg):
    """A rough relative cost (for scheduling the longest runs first), not a prediction."""
    from refimpl import papers
    return papers.get(family).cost(cfg)


def make_task(root, label, family, cfg, seed, data):
    """One (run, seed) as an engine task, named by the hash of its family, resolved configuration
    and data: a changed setting is a different task, never a reused one."""
    c = replace(cfg, seed=seed)
    ident = run_identity(family, _planned_config(family, c), data)
    return {"id": content_id(ident), "root": root, "fn": "refimpl.tools.reproduce:run_task", "label": label,
            "seed": seed, "family": family, "config": asdict(c), "data": data, "cost": _cost(family, c)}


class Reproduction:
    """A prepared reproduction: its plan, tasks and the record's fixed fields."""

    def __init__(self, name, out, plan, axis, metrics, seeds, ds, data, tasks, header):
        self.name, self.out, self.plan, self.axis, self.metrics = name, out, plan, axis, metrics
        self.seeds, self.ds, self.data, self.tasks, self.header = seeds, ds, data, tasks, header

    def task_of(self, label, seed):
        return next(t for t in self.tasks if t["label"] == label and t["seed"] == seed)


def _refuse_without_resume(out, resume):
    """An output directory holding finished runs is continued only with ``--resume``."""
    tdir = os.path.join(out, "tasks")
    if not resume and os.path.isdir(tdir) and any(not n.startswith(".") for n in os.listdir(tdir)):
        raise ValueError(f"{out} already holds runs of a reproduction; pass --resume to continue it, "
                         "or choose another --out")


def prepare(name, out, data_dir=None, seeds=3, rounds=None, paper=False, resume=False, quick=False,
            preset="paper"):
    """Check the inputs and build the tasks of a reproduction (nothing runs)."""
    if int(seeds) < 1:
        raise ValueError(f"--seeds must be >= 1, got {seeds}")
    if rounds is not None and int(rounds) < 1:
        raise ValueError(f"--rounds must be >= 1, got {rounds}")
    data = data_key(data_dir)
    ds = load_data(data)
    plan, (axis, metrics) = plan_for(name, quick, rounds, paper, ds.n_train, preset)
    from refimpl import papers
    if paper and ds.n_train < papers.of_reproduction(name).paper_settings_n_train:
        raise ValueError("--paper needs the full 60,000-sample training set: give --data-dir with MNIST-format files")
    _preflight(plan, ds)
    _refuse_without_resume(out, resume)
    tasks = [make_task(out, label, family, cfg, s, data) for label, family, cfg in plan for s in range(seeds)]
    header = {"name": name, "preset": preset, "paper_settings": paper, "quick": quick, "seeds": list(range(seeds)),
              "data": ds.name, "n_train": ds.n_train, "versions": versions(), "axis": axis, "metrics": list(metrics)}
    return Reproduction(name, out, plan, axis, metrics, seeds, ds, data, tasks, header)


def run_tasks(tasks, executor="local", workers=None, scheduler=None, progress=None, what="runs", weight=None,
              position=None):
    """Run the unfinished ``tasks`` on the engine (their roots locked, partial directories of a
    killed run removed first); returns (counts, failures, results by task id). ``weight(task)``:
    how many of ``what`` a task holds (a group of checks in one task); then the progress lines
    count those, and ``progress(msg, n=done)`` is given the position — in units of
    ``position(task)`` when given (e.g. a check's recorded seconds, so that a bar's estimate of the
    time left weighs a long check as long), else of ``weight``."""
    from refimpl.tools.engine import RootLock, clean_partial, execute, finished, report_death, resolve_workers
    roots = sorted({t["root"] for t in tasks})
    workers = resolve_workers(workers, len(tasks), what)
    for r in roots:
        make_out_dir(r, "tasks", "failed")
    with contextlib.ExitStack() as stack:
        for r in roots:
            stack.enter_context(RootLock(r))
            clean_partial(r)
        pending = [t for t in tasks if not finished(t["root"], t["id"])]
        counts = {"total": len(tasks), "reused": len(tasks) - len(pending), "ran": 0, "failed": 0,
                  "workers": workers, "worker_deaths": 0}
        failures, results = [], {}
        total = sum(weight(t) for t in pending) if weight else len(pending)
        done, at = [0], [0.0]

        def on_result(task, status, msg, result):
            counts["ran" if status == "done" else "failed"] += 1
            results[task["id"]] = result
            name = task.get("label", task["id"]) + (f" seed {task['seed']}" if "seed" in task else "")
            if status != "done":
                failures.append(f"{name}: {msg}")
            if progress and weight is None:
                progress(f"{name} {'finished' if status == 'done' else 'FAILED'} "
                         f"({counts['ran'] + counts['failed']}/{len(pending)})")
            elif progress:
                done[0] += weight(task)
                at[0] += position(task) if position else weight(task)
                progress(f"{name} {'finished' if status == 'done' else 'FAILED'} ({done[0]}/{total} {what})",
                         n=at[0])
        if progress and counts["reused"]:
            progress(f"{counts['reused']} of {len(tasks)} {what} already finished")
        if progress and pending:       # at once: a long first run otherwise leaves the terminal silent
            n_w = min(workers, len(pending))
            start = (f"running {total} {what} on {n_w} worker{'s' if n_w != 1 else ''}; "
                     "a line as each finishes")
            progress(start) if weight is None else progress(start, n=0)
        execute(pending, executor, min(workers, max(1, len(pending))), scheduler, on_result,
                on_death=lambda task, n: report_death(task, n, counts))
    return counts, failures, results



def finish(rep, counts=None, seconds=None, executor="local", workers=None):
    """Aggregate the finished runs of a reproduction: curves, figures, ``reproduction.json``
    (identical for identical settings, however the runs were executed; each run's status per seed,
    and the runs that did not finish — a diverged run's curve ends at its blow-up, and the curves
    stop at each label's shortest run) and ``execution.json`` (the command, the executor and what
    was reused)."""
    out = rep.out
    rows = aggregate(rep, rep.plan, rep.seeds, rep.axis, rep.metrics)
    record = dict(rep.header)
    statuses = {label: [tr.status for tr in _load(rep, label, rep.seeds)] for label, _, _ in rep.plan}
    record["runs"] = [{"label": label, "family": family, "config": _planned_config(family, cfg),
                       "tasks": [rep.task_of(label, s)["id"] for s in range(rep.seeds)], "statuses": statuses[label]}
                      for label, family, cfg in rep.plan]
    record["unfinished"] = [f"{label} seed {s}: {st}" for label, sts in statuses.items() for s, st in enumerate(sts)
                            if not run_finished(st)]
    if rep.name == "ssca-tradeoff":
        record["figure3"] = _figure3(rep, rep.plan, rep.seeds)
    if rep.name == "vfl-time":
        record["time_to_target"] = _time_to_target(rep, rep.plan, rep.seeds)
    path = os.path.join(out, "reproduction.json")
    with open(path, "w") as fh:
        json.dump(record, fh, indent=1, default=str)
    held = {n for n in os.listdir(os.path.join(out, "tasks")) if not n.startswith(".")}
    unused = sorted(held - {t["id"] for t in rep.tasks})
    with open(os.path.join(out, "execution.json"), "w") as fh:
        json.dump({"command": " ".join(sys.argv), "executor": executor, "workers": (counts or {}).get("workers", workers),
                   "new_runs": (counts or {}).get("ran"), "resumed_runs": (counts or {}).get("reused"),
                   "seconds": seconds, "unused_tasks": unused}, fh, indent=1)
    _plot(out, rep.name, rows, rep.axis, rep.metrics, rep.header, rep.plan)
    return path


# ----------------------------------------------------------------------------- driver

def reproduce(name, out, data_dir=None, seeds=3, rounds=None, paper=False, resume=False, quick=False,
              progress=None, preset="paper", executor="local", workers=None, scheduler=None):
    """Run (or continue) a reproduction on the task engine; returns the path of its JSON record."""
    t0 = time.perf_counter()
    rep = prepare(name, out, data_dir, seeds, rounds, paper, resume, quick, preset)
    counts, failures, _ = run_tasks(rep.tasks, executor, workers, scheduler, progress)
    if failures:
        raise RuntimeError(f"{len(failures)} runs of {name} failed (finished runs are kept; rerun with --resume "
                           f"to retry): " + "; ".join(failures[:3]))
    return finish(rep, counts, round(time.perf_counter() - t0, 1), executor, workers)


def _load(rep, label, seeds):
    return [Trace.load(os.path.join(rep.out, "tasks", rep.task_of(label, s)["id"])) for s in range(seeds)]


def aggregate(rep, plan, seeds, axis, metrics):
    """curves.csv: per run label and point of the axis, mean and std of each metric over seeds
    (time-axis runs are interpolated onto a common grid)."""
    out = rep.out
    rows = []
    for label, _, _ in plan:
        trs = _load(rep, label, seeds)
        if axis == "time":
            end = min(tr.series("time")[-1] for tr in trs)
            grid = np.linspace(0.0, end, 60)
            vals = {m: np.array([np.interp(grid, tr.series("time"), tr.series(m)) for tr in trs]) for m in metrics}
            xs = grid
        else:
            n = min(len(tr.series(axis)) for tr in trs)
            xs = trs[0].series(axis)[:n]
            vals = {m: np.array([tr.series(m)[:n] for tr in trs]) for m in metrics if all(m in tr.metrics for tr in trs)}
        for i, x in enumerate(xs):
            row = {"run": label, axis: float(x)}
            for m, v in vals.items():
                row[f"{m}_mean"] = float(np.nanmean(v[:, i]))
                row[f"{m}_std"] = float(np.nanstd(v[:, i]))
            rows.append(row)
    write_csv(os.path.join(out, "curves.csv"), rows)
    return rows


def _figure3(rep, plan, seeds, target=None):
    """Communication (floats) and computation (sample-gradient evaluations) to reach a training
    cost, per batch size ([SSCA] Fig. 3). Default target: the largest final training cost among
    the batch sizes (mean over seeds), i.e. a cost every batch size reaches within T."""
    out = rep.out
    if target is None:
        target = max(float(np.mean([tr.series("train_cost")[-1] for tr in _load(rep, label, seeds)]))
                     for label, _, _ in plan if label.startswith("SSCA B="))
    rows = []
    for label, _, cfg in plan:
        if not label.startswith("SSCA B="):
            continue
        hits = []
        for tr in _load(rep, label, seeds):
            c = tr.series("train_cost")
            h = np.flatnonzero(c <= target)
            hits.append(None if not h.size else (tr.series("comm_floats")[h[0]], tr.series("grad_evals")[h[0]],
                                                 tr.series("round")[h[0]]))
        ok = [h for h in hits if h is not None]
        rows.append({"batch": cfg.batch, "target_train_cost": target, "seeds_reaching": len(ok),
                     "comm_floats": float(np.mean([h[0] for h in ok])) if ok else None,
                     "grad_evals": float(np.mean([h[1] for h in ok])) if ok else None,
                     "rounds": float(np.mean([h[2] for h in ok])) if ok else None})
    write_csv(os.path.join(out, "figure3_comm_vs_computation.csv"), rows)
    from refimpl.core.plots import _pyplot
    plt = _pyplot()
    if plt is not None:
        fig, ax = plt.subplots(figsize=(5, 4))
        pts = [r for r in rows if r["comm_floats"] and r["grad_evals"]]       # reached, after round 0
        if pts:
            ax.loglog([r["grad_evals"] for r in pts], [r["comm_floats"] for r in pts], "o-")
        else:
            ax.text(0.5, 0.5, "no batch size reached the target after round 0", ha="center",
                    transform=ax.transAxes)
        for r in pts:
            ax.annotate(f"B={r['batch']}", (r["grad_evals"], r["comm_floats"]), fontsize=8)
        ax.set_xlabel("computation: sample gradients")
        ax.set_ylabel("communication: floats")
        ax.set_title(f"to reach training cost {target:.3g}\n{figure_title(rep.name, rep.header, plan, 60)}", fontsize=8)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "figure3_comm_vs_computation.png"), dpi=110)
        plt.close(fig)
    # Fig. 4: ||ω||² against training cost, constrained (U) and regularised (λ), last round
    f4 = []
    for label, _, cfg in plan:
        if label.startswith(("constrained", "regularised")):
            trs = _load(rep, label, seeds)
            lam = getattr(cfg, "lam", 0.0) if label.startswith("regularised") else 0.0
            sq = [tr.series("sq_norm")[-1] for tr in trs]
            loss = [tr.series("train_cost")[-1] - lam * q for tr, q in zip(trs, sq)]
            f4.append({"run": label, "sq_norm_mean": float(np.mean(sq)), "sq_norm_std": float(np.std(sq)),
                       "data_loss_mean": float(np.mean(loss)), "data_loss_std": float(np.std(loss))})
    write_csv(os.path.join(out, "figure4_norm_vs_cost.csv"), f4)
    if plt is not None and f4:
        fig, ax = plt.subplots(figsize=(5, 4))
        for kind, mark, what in (("constrained", "o-", "constrained (40), varying U"),
                                 ("regularised", "s--", "regularised (32), varying λ")):
            pts = [r for r in f4 if r["run"].startswith(kind)]
            ax.errorbar([r["data_loss_mean"] for r in pts], [r["sq_norm_mean"] for r in pts],
                        xerr=[r["data_loss_std"] for r in pts], yerr=[r["sq_norm_std"] for r in pts], fmt=mark,
                        label=what)
            for r in pts:           # "constrained U=0.1" → "U=0.1", "regularised lam=0.001" → "λ=0.001"
                ax.annotate(r["run"].split(" ", 1)[1].replace("lam=", "λ="),
                            (r["data_loss_mean"], r["sq_norm_mean"]), fontsize=7, xytext=(3, 3),
                            textcoords="offset points")
        ax.set_xlabel("training data loss (1/N) Σ ℓ")
        ax.set_ylabel("||ω||²")
        ax.set_title(figure_title(rep.name, rep.header, plan, 60), fontsize=8)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "figure4_norm_vs_cost.png"), dpi=110)
        plt.close(fig)
    return {"figure3": rows, "figure4": f4}


def _time_to_target(rep, plan, seeds, targets=(0.8, 0.85)):
    out = rep.out
    from refimpl.vfl.flexvfl import time_to_target
    rows = []
    for label, _, _ in plan:
        trs = _load(rep, label, seeds)
        row = {"method": label}
        for t in targets:
            ts = [time_to_target(tr, t) for tr in trs]
            ok = [x for x in ts if x is not None]
            row[f"time_to_{t:g}_mean"] = float(np.mean(ok)) if ok else None
            row[f"seeds_reaching_{t:g}"] = len(ok)
        rows.append(row)
    write_csv(os.path.join(out, "time_to_target.csv"), rows)
    return rows


def settings_source(header):
    """Where a reproduction's settings come from, for its figures' titles: tuned per method, the
    authors' preset, the paper's settings, or the paper's step sizes at a reduced size (and quick)."""
    if header.get("tuned"):
        src = "tuned per method on a validation split"
    elif header.get("preset") == "authors":
        src = "authors' preset"
    elif header.get("paper_settings"):
        src = "paper settings"
    else:
        src = "paper step sizes, reduced size"
    return src + (", --quick" if header.get("quick") else "")


def horizon(plan):
    """The runs' length for a title: rounds (SSCA), the time budget and round cap (VFL), steps (MFCGD)."""
    from refimpl import papers
    return papers.get(plan[0][1]).horizon([c for _, _, c in plan])


def figure_title(name, header, plan, width=None):
    """``NAME — data, settings source, seeds, length``: what was run, never what was not (wrapped
    at ``width`` characters for a narrow figure)."""
    n = len(header.get("seeds", [])) or 1
    text = (f"{name} — {header.get('data', '?')}, {settings_source(header)}, {n} seed{'s' if n != 1 else ''}, "
            f"{horizon(plan)}")
    if width:
        import textwrap
        text = textwrap.fill(text, width)
    return text


def _plot(out, name, rows, axis, metrics, header=None, plan=None):
    from refimpl.core.plots import _finish, _pyplot, bands, integer_ticks
    plt = _pyplot()
    if plt is None:
        return
    shown = [m for m in metrics if m not in ("comm_floats", "grad_evals", "rounds", "sq_norm")]
    fig, axes = plt.subplots(1, len(shown), figsize=(5.5 * len(shown), 4), squeeze=False)
    labels = list(dict.fromkeys(r["run"] for r in rows))
    for ax, m in zip(axes[0], shown):
        bands(ax, {lab: [r for r in rows if r["run"] == lab and f"{m}_mean" in r] for lab in labels}, axis, m,
              m if len(shown) > 1 else "")
        ax.set_xlabel(axis)
        ax.set_ylabel(m)
        if m in ("test_accuracy", "worst_client_accuracy", "average_accuracy"):
            zoom_accuracy(ax, rows, axis, m)
        if m in ("train_cost", "grad_norm"):
            ax.set_yscale("log")
        if axis == "samples":
            ax.set_xscale("log")
        if axis == "round":
            integer_ticks(ax)
    title = (figure_title(name, header or {}, plan) if plan else name) + "; mean ± std over seeds"
    caption = figure_caption(name, plan)
    if caption:          # under the title: what a reader needs to read the curves
        import textwrap
        title += "\n" + "\n".join(textwrap.wrap(caption, int(14 * 5.5 * len(shown))))
    fig.suptitle(title, fontsize=9 if caption else 10)
    _finish(fig, axes[0], os.path.join(out, f"{name}.png"))


def figure_caption(name, plan):
    """The paper's caption line for reproduction ``name`` (:meth:`Paper.figure_caption`), or None."""
    if not plan:
        return None
    from refimpl import papers
    return papers.get(plan[0][1]).figure_caption(name, plan)


def zoom_accuracy(ax, rows, axis, metric, skip=0.5):
    """An accuracy panel's y axis on where the curves are after the first ``skip`` of the run (so
    that curves between 0.85 and 0.93 do not sit on a 0–1 axis); the axis label says so."""
    import numpy as np
    xs = [r[axis] for r in rows if f"{metric}_mean" in r]
    if not xs:
        return None
    start = min(xs) + skip * (max(xs) - min(xs))
    vals = np.array([r[f"{metric}_mean"] for r in rows if f"{metric}_mean" in r and r[axis] >= start], dtype=float)
    vals = vals[np.isfinite(vals)]
    if vals.size == 0:
        return None
    lo, hi = float(vals.min()), float(vals.max())
    pad = max(0.01, 0.1 * (hi - lo))
    ax.set_ylim(max(0.0, lo - pad), min(1.0, hi + pad))
    ax.set_ylabel(f"{metric} (zoomed on the last {1 - skip:.0%})")
    return lo, hi


# ----------------------------------------------------------------------------- --tune

def _pick(tr):
    """Selection score on the validation split (:func:`refimpl.core.identity.selection_score`):
    final validation accuracy (higher is better), ties broken by the final training cost; a
    diverged run is never picked."""
    return selection_score(tr.status, tr.series("test_accuracy")[-1], tr.series("train_cost")[-1])


def tune_and_reproduce(name, out, data_dir, seeds=3, rounds=None, resume=False, progress=None,
                       executor="local", workers=None, scheduler=None, batch=100):
    """``reproduce ssca-sample|ssca-feature --tune``: every method gets the same number of grid
    points, each run once (seed 0) on the training data minus a held-out validation split and
    judged on that split; each method's best setting then runs over the seeds on the full data
    (test set untouched until then). Both stages are engine tasks (resumable, any executor)."""
    from refimpl import papers
    owner = papers.of_reproduction(name)
    T = rounds or 1000
    every = max(1, T // 50)
    if owner.tune_grids(name, batch, T, every) is None:
        tunable = [n for p in papers.papers() for n in p.reproductions if p.tune_grids(n, batch, T, every) is not None]
        raise ValueError(f"--tune exists for {' and '.join(tunable)}, not {name}")
    if not data_dir:
        raise ValueError("--tune needs --data-dir (a full-size data set in IDX format): the embedded subset has "
                         "no room for a validation split at the paper's batch sizes")
    if int(seeds) < 1:
        raise ValueError(f"--seeds must be >= 1, got {seeds}")
    t0 = time.perf_counter()
    val, full = data_key(data_dir, "validation"), data_key(data_dir)
    vds, ds = load_data(val), load_data(full)
    grids = owner.tune_grids(name, batch, T, every, vds.n_train)
    _preflight([(m, owner.key, c) for m, g in grids.items() for c in g], vds)
    _refuse_without_resume(out, resume)
    stage1 = [make_task(out, f"{m} #{i}", owner.key, c, 0, val) for m, g in grids.items() for i, c in enumerate(g)]
    if progress:
        progress(f"tuning: {len(stage1)} runs ({len(stage1) // len(grids)} per method) on {vds.name} "
                 f"({vds.n_train} train / {vds.X_test.shape[0]} validation)")
    c1, failures, _ = run_tasks(stage1, executor, workers, scheduler, progress)
    if failures:
        raise RuntimeError(f"{len(failures)} tuning runs failed (finished runs are kept; rerun with --resume): "
                           + "; ".join(failures[:3]))
    tuning, plan = {}, []
    for m, g in grids.items():
        rows = []
        for i, c in enumerate(g):
            tr = Trace.load(os.path.join(out, "tasks", next(t["id"] for t in stage1 if t["label"] == f"{m} #{i}")))
            rows.append({"settings": owner.tuned_settings(c), "status": tr.status,
                         "validation_accuracy": float(tr.series("test_accuracy")[-1]),
                         "train_cost": float(tr.series("train_cost")[-1]), "score": _pick(tr)})
        best = select([r["score"] for r in rows])
        if best is None:
            raise RuntimeError(f"--tune: every one of the {len(g)} tuning runs of {m} diverged or failed on the "
                               f"validation split; no setting to pick (statuses: {[r['status'] for r in rows]})")
        for r in rows:
            del r["score"]
        chosen = rows[best]["settings"]
        edge = [k for k in chosen if len({r["settings"][k] for r in rows}) > 1
                and chosen[k] in (min(r["settings"][k] for r in rows), max(r["settings"][k] for r in rows))]
        tuning[m] = {"grid": rows, "chosen": chosen, "chosen_index": best, "chosen_at_grid_edge": edge}
        label = f"{m} (" + ", ".join(f"{k}={v:g}" for k, v in rows[best]["settings"].items()) + ")"
        plan.append((label, owner.key, g[best]))
    rep = Reproduction(name, out, plan, "round", ("train_cost", "test_accuracy"), seeds, ds, full,
                       [make_task(out, label, fam, cfg, s, full) for label, fam, cfg in plan for s in range(seeds)],
                       {"name": name, "preset": "paper", "paper_settings": False, "quick": False, "tuned": True,
                        "seeds": list(range(seeds)), "data": ds.name, "n_train": ds.n_train, "versions": versions(),
                        "axis": "round", "metrics": ["train_cost", "test_accuracy"],
                        "tuning": {"selection": "final validation accuracy (ties: final training cost); diverged "
                                                "runs excluded", "validation_split": {"train": vds.n_train,
                                                "validation": int(vds.X_test.shape[0]), "seed": VALIDATION_SEED},
                                   "points_per_method": len(stage1) // len(grids), "methods": tuning}})
    if progress:
        progress("chosen: " + "; ".join(label for label, _, _ in plan) + f"; {seeds} seeds on the full data")
    c2, failures, _ = run_tasks(rep.tasks, executor, workers, scheduler, progress)
    if failures:
        raise RuntimeError(f"{len(failures)} runs failed (finished runs are kept; rerun with --resume): "
                           + "; ".join(failures[:3]))
    counts = {k: c1[k] + c2[k] for k in ("ran", "reused")}
    counts["workers"] = c2["workers"]
    path = finish(rep, counts, round(time.perf_counter() - t0, 1), executor, workers)
    _tuned_table(rep)
    return path


def _tuned_table(rep):
    """tuned_results.csv: per method the chosen setting, final training cost and test accuracy
    (mean and standard deviation over seeds, full data)."""
    rows = []
    for label, _, _ in rep.plan:
        trs = _load(rep, label, rep.seeds)
        cost = [float(tr.series("train_cost")[-1]) for tr in trs]
        acc = [float(tr.series("test_accuracy")[-1]) for tr in trs]
        rows.append({"method": label, "final_train_cost_mean": float(np.mean(cost)),
                     "final_train_cost_std": float(np.std(cost)), "test_accuracy_mean": float(np.mean(acc)),
                     "test_accuracy_std": float(np.std(acc)), "seeds": len(trs),
                     "statuses": ";".join(sorted({tr.status for tr in trs}))})
    write_csv(os.path.join(rep.out, "tuned_results.csv"), rows)
    return rows
