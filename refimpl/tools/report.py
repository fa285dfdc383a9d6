"""``refimpl report --out DIR [--quick]``: the verification suite and the reproductions in one
self-contained ``REPORT.md`` (with ``checks.json`` and the figures beside it)."""
from __future__ import annotations

import csv
import datetime
import json
import os

from refimpl.tools.reproduce import NAMES, reproduce, versions
from refimpl.tools.verify import run_checks, write_json


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


def build_report(out, quick=True, seeds=2, progress=None):
    os.makedirs(out, exist_ok=True)
    records = run_checks(quick=quick, progress=progress)
    write_json(records, os.path.join(out, "checks.json"))
    repro = {}
    for name in NAMES:
        d = os.path.join(out, "reproductions", name)
        reproduce(name, d, seeds=seeds, quick=quick, resume=True, progress=progress)
        repro[name] = d
    held = sum(r.holds for r in records)
    lines = [f"# refimpl verification report", "",
             f"Generated {datetime.datetime.now().isoformat(timespec='seconds')} with "
             + ", ".join(f"{k} {v}" for k, v in versions().items())
             + f"; {'quick' if quick else 'full'} settings; embedded MNIST subset unless stated.", "",
             f"**{held} of {len(records)} checks hold.** A paper's experimental claim that does not reproduce "
             "here is listed with its figures (holds = no (claim)); every other check is an identity, lemma, "
             "theorem or implementation check. Each record's details are in `checks.json`.", "",
             "## Checks", "", "| id | claim | measured | bound | ratio | holds | source |", "|---|---|---|---|---|---|---|"]
    for r in records:
        claim = r.claim.replace("|", "\\|")
        verdict = _fmt(r.holds) + (" (claim)" if not r.holds and r.details.get("kind") == "claim" else "")
        lines.append(f"| `{r.id}` | {claim} | {_fmt(r.measured)} | {_fmt(r.bound)} | {_fmt(r.ratio)} | "
                     f"{verdict} | {r.source} |")
    lines += ["", "## Reproductions", ""]
    for name, d in repro.items():
        rel = os.path.relpath(d, out)
        rec = json.load(open(os.path.join(d, "reproduction.json")))
        curv = sorted({r["config"]["curvature"] for r in rec["runs"] if "curvature" in r["config"]})
        setting = f"settings: {rec.get('preset', 'paper')}" + (f", SSCA curvature: {', '.join(curv)}" if curv else "")
        lines += [f"### {name}", "", f"Seeds: {len(rec['seeds'])}; data: {rec['data']}; {setting}; "
                  f"runs: {', '.join(r['label'] for r in rec['runs'])}.", "", f"![{name}]({rel}/{name}.png)", ""]
        for extra in ("figure3_comm_vs_computation", "figure4_norm_vs_cost", "time_to_target"):
            p = os.path.join(d, extra + ".csv")
            if os.path.exists(p):
                if os.path.exists(os.path.join(d, extra + ".png")):
                    lines += [f"![{extra}]({rel}/{extra}.png)", ""]
                lines += [_csv_table(p), ""]
        lines += [f"Curves (mean and standard deviation over seeds): `{rel}/curves.csv`; configuration, seeds and "
                  f"versions: `{rel}/reproduction.json`.", ""]
    path = os.path.join(out, "REPORT.md")
    with open(path, "w") as fh:
        fh.write("\n".join(lines))
    return path, records
