"""Runner of the verification checks registered in :mod:`refimpl.verification` (``refimpl verify``).

The runner adds ``ratio`` = measured / bound to each check's record and catches exceptions (a
crashed check is reported as not holding, with the error in details).
"""
from __future__ import annotations

import importlib
import json
import math
import time
import traceback
from dataclasses import asdict

from refimpl.verification.registry import REGISTRY, CheckRecord

CHECK_MODULES = ("refimpl.verification.core", "refimpl.verification.ssca", "refimpl.verification.vfl",
                 "refimpl.verification.mfcgd")


def load_checks():
    for mod in CHECK_MODULES:
        importlib.import_module(mod)
    return REGISTRY


def _num(x):
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else (None if math.isnan(x) else x)


def run_check(cid, quick=True) -> CheckRecord:
    claim, source, fn, kind = REGISTRY[cid]
    t0 = time.perf_counter()
    try:
        out = fn(quick)
    except Exception as exc:    # a crashed check is a failed check, reported with its error
        return CheckRecord(cid, claim, source, None, None, None, False,
                           {"kind": kind, "error": f"{type(exc).__name__}: {exc}",
                            "traceback": traceback.format_exc(limit=5)})
    measured, bound = _num(out.get("measured")), _num(out.get("bound"))
    ratio = None
    if measured is not None and bound not in (None, 0.0):
        ratio = measured / bound
    holds = out.get("holds")
    if holds is None:
        holds = measured is not None and bound is not None and measured <= bound
    details = dict(out.get("details", {}))
    details["kind"] = kind
    details["seconds"] = round(time.perf_counter() - t0, 3)
    return CheckRecord(cid, claim, source, measured, bound, ratio, bool(holds), details)


def run_checks(only=None, quick=True, progress=None):
    load_checks()
    ids = list(REGISTRY) if not only else list(only)
    unknown = [i for i in ids if i not in REGISTRY]
    if unknown:
        raise ValueError(f"unknown check ids {unknown}; registered: {sorted(REGISTRY)}")
    records = []
    for cid in ids:
        if progress:
            progress(f"running {cid} ...")
        records.append(run_check(cid, quick))
    return records


def _fmt(x):
    if x is None:
        return "-"
    if isinstance(x, float) and (abs(x) >= 1e4 or (abs(x) < 1e-3 and x != 0)):
        return f"{x:.3e}"
    return f"{x:.4g}"


def failing(records, strict=False):
    """Ids that make ``refimpl verify`` exit 1: every failing check with ``strict``, otherwise the
    failing theorem-kind checks (a paper's claim that does not reproduce is reported, not fatal)."""
    return [r.id for r in records if not r.holds and (strict or r.details.get("kind") != "claim")]


def format_table(records):
    rows = [("id", "claim", "measured", "bound", "ratio", "holds")]
    for r in records:
        verdict = "yes" if r.holds else ("no (claim)" if r.details.get("kind") == "claim" else "NO")
        rows.append((r.id, r.claim[:60], _fmt(r.measured), _fmt(r.bound), _fmt(r.ratio), verdict))
    widths = [max(len(row[i]) for row in rows) for i in range(6)]
    lines = [" | ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def write_json(records, path):
    with open(path, "w") as fh:
        json.dump([asdict(r) for r in records], fh, indent=1, default=str)
