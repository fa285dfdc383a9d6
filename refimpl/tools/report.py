"""``refimpl report --out DIR [--quick]``: the verification suite and the reproductions in one
self-contained ``REPORT.md`` (with ``checks.json`` and the figures beside it)."""
from __future__ import annotations

import csv
import datetime
import json
import os
import pathlib

from refimpl.tools.reproduce import names, versions
from refimpl.tools.verify import run_engine_tasks, write_json


def _fmt(x):
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "**no**"
    if isinstance(x, float):
        return f"{x:.3e}" if (x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e4)) else f"{x:.4g}"
    return str(x)


def _csv_table(path, limit=40):
    with open(path) as fh:
        rows = list(csv.reader(fh))
    if not rows:
        return ""
    out = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    for r in rows[1:limit + 1]:
        out.append("| " + " | ".join(_fmt(float(c)) if _is_num(c) else c for c in r) + " |")
    return "\n".join(out)


def _is_num(c):
    try:
        float(c)
        return c.strip() not in ("",)
    except ValueError:
        return False


def smoke_lines(rounds):
    """The report's warning when ``--rounds`` cut the reproductions (none when it did not)."""
    if rounds is None:
        return []
    return [f"**Smoke report: every reproduction was cut to {int(rounds)} rounds (`--rounds`)**; its figures "
            "show that the runs work, not the papers' curves. The checks ran at their own sizes.", ""]


def reproduction_lines(name, d, out):
    """The report's section on reproduction ``name`` written to directory ``d`` (links relative to
    the report's directory ``out``): its seeds, data, settings and runs, its figure, each table it
    wrote (with its figure where drawn), the runs that did not finish, and where its curves and
    configuration are."""
    rel = os.path.relpath(d, out)
    rec = json.loads(pathlib.Path(d, "reproduction.json").read_text())
    curv = sorted({r["config"]["curvature"] for r in rec["runs"] if "curvature" in r["config"]})
    setting = f"settings: {rec.get('preset', 'paper')}" + (f", SSCA curvature: {', '.join(curv)}" if curv else "")
    lines = [f"### {name}", "", f"Seeds: {len(rec['seeds'])}; data: {rec['data']}; {setting}; "
             f"runs: {', '.join(r['label'] for r in rec['runs'])}.", "", f"![{name}]({rel}/{name}.png)", ""]
    for extra in ("figure3_comm_vs_computation", "figure4_norm_vs_cost", "time_to_target"):
        p = os.path.join(d, extra + ".csv")
        if os.path.exists(p):
            if os.path.exists(os.path.join(d, extra + ".png")):
                lines += [f"![{extra}]({rel}/{extra}.png)", ""]
            lines += [_csv_table(p), ""]
    if rec.get("unfinished"):
        lines += [f"**Runs that did not finish** (each label's curves stop at its shortest run): "
                  f"{'; '.join(rec['unfinished'])}.", ""]
    return lines + [f"Curves (mean and standard deviation over seeds): `{rel}/curves.csv`; configuration, seeds and "
                    f"versions: `{rel}/reproduction.json`.", ""]


def check_section(records):
    """The report's lines on the checks: how many hold, then one table row per record (its
    measured value, relation, bound, ratio and verdict as `refimpl verify` names them)."""
    from refimpl.tools.verify import verdict
    held = sum(r.holds for r in records)
    lines = [f"**{held} of {len(records)} checks hold.** A paper's experimental claim that does not reproduce "
             "here is listed with its figures (holds = no (claim)); every other check is an identity, lemma, "
             "theorem or implementation check. Each record's details are in `checks.json`.", "",
             "## Checks", "", "ratio is ≤ 1 exactly when a one-sided relation (≤, <, ≥, >) holds; for ≈ it is "
             "measured/bound.", "",
             "| id | claim | measured | rel | bound | ratio | holds | note | source |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        claim = r.claim.replace("|", "\\|")
        note = str(r.details.get("table_note", "")).replace("|", "\\|")
        lines.append(f"| `{r.id}` | {claim} | {_fmt(r.measured)} | {r.details.get('relation', '≤')} | {_fmt(r.bound)} | "
                     f"{_fmt(r.ratio)} | {verdict(r)} | {note} | {r.source} |")
    return lines


def execution_record(executor, counts, seconds, records):
    """execution.json of a report: the executor, its workers and task counts, the seconds of the
    whole report and each check's own."""
    return {"executor": executor, "workers": counts["workers"], "tasks": counts, "seconds": seconds,
            "check_seconds": {r.id: r.details.get("seconds") for r in records}}


def header_lines(quick, when, versions_):
    """REPORT.md's title and the line saying when, with which versions and at which settings."""
    return ["# refimpl verification report", "",
            f"Generated {when} with " + ", ".join(f"{k} {v}" for k, v in versions_.items())
            + f"; {'quick' if quick else 'full'} settings; embedded MNIST subset unless stated.", ""]


def build_report(out, quick=False, seeds=2, progress=None, executor="local", workers=None, scheduler=None,
                 rounds=None, parts=None):
    """Every check and every run of the five reproductions as tasks of one engine execution (so
    the workers stay busy across them); the reproductions resume from their finished runs, the
    checks always run afresh. ``rounds``: every reproduction's runs cut to that many rounds
    (steps for mfcgd-rates), as ``refimpl reproduce --rounds`` does — a smoke report whose figures
    say nothing about the papers, and REPORT.md says so; the checks keep their sizes. Returns
    (path of REPORT.md, check records). ``parts``: stand-ins by name for reproduce's ``prepare``,
    ``run_tasks`` and ``finish``, verify's ``load_checks`` and this module's ``run_engine_tasks``
    and ``write_report_files`` (tools.reproduction_tables' planted report)."""
    import time

    from refimpl.tools.engine import resolve_workers
    from refimpl.tools.reproduce import finish, prepare, run_tasks
    from refimpl.tools.verify import load_checks
    p = {"prepare": prepare, "run_tasks": run_tasks, "finish": finish, "load_checks": load_checks,
         "run_engine_tasks": run_engine_tasks, "write_report_files": write_report_files, **(parts or {})}
    t0 = time.perf_counter()
    os.makedirs(out, exist_ok=True)
    reps = prepared_reproductions(out, names(), p["prepare"], seeds, quick, rounds)
    counts, records = p["run_engine_tasks"](list(p["load_checks"]()), quick, os.path.join(out, "checks"), reps,
                                            lambda n: resolve_workers(workers, n, "tasks"),
                                            lambda tasks, w: p["run_tasks"](tasks, executor, w, scheduler, progress,
                                                                            what="tasks"))
    repro = finished_reproductions(reps, p["finish"], executor, workers)
    lines = report_lines(header_lines(quick, datetime.datetime.now().isoformat(timespec="seconds"), versions()),
                         rounds, records, repro, out)
    return p["write_report_files"](out, records, execution_record(executor, counts, round(time.perf_counter() - t0, 1),
                                                                  records), lines), records


def write_report_files(out, records, execution, lines):
    """A report's files in ``out``: checks.json (the check records), execution.json (``execution``)
    and REPORT.md (``lines``); returns REPORT.md's path."""
    write_json(records, os.path.join(out, "checks.json"))
    with open(os.path.join(out, "execution.json"), "w") as fh:
        json.dump(execution, fh, indent=1)
    path = os.path.join(out, "REPORT.md")
    with open(path, "w") as fh:
        fh.write("\n".join(lines))
    return path


def prepared_reproductions(out, names_, prepare, seeds, quick, rounds):
    """Each reproduction of ``names_`` prepared by ``prepare`` in out/reproductions/NAME with the
    report's seeds, sizes and rounds, resuming its finished runs: {name: prepared}, in order."""
    return {name: prepare(name, os.path.join(out, "reproductions", name), seeds=seeds, quick=quick, resume=True,
                          rounds=rounds) for name in names_}


def finished_reproductions(reps, finish, executor, workers):
    """Each prepared reproduction of ``reps`` finished by ``finish`` (its figures and tables written
    from its runs), in order: {name: its directory}."""
    repro = {}
    for name, rep in reps.items():
        finish(rep, None, None, executor, workers)
        repro[name] = rep.out
    return repro


def report_lines(head, rounds, records, repro, out):
    """REPORT.md's lines: its ``head``, the smoke warning of ``rounds``, the checks' section, then
    a section per reproduction ({name: its directory}, in that order; links relative to ``out``)."""
    lines = head + smoke_lines(rounds) + check_section(records) + ["", "## Reproductions", ""]
    for name, d in repro.items():
        lines += reproduction_lines(name, d, out)
    return lines
