"""Which run is which: the content identity of a run, and the rule that picks a tuned setting.

A multi-run command names each run by a hash of everything that decides its result, so a rerun
reuses a finished run only when nothing that matters has changed (:func:`run_identity`), and
``reproduce --tune`` picks each method's setting from its grid by one stated rule
(:func:`selection_score`, :func:`select`). Both are checked by ``core.task_identity`` and
``core.tune_selection`` in ``refimpl verify``.
"""
from __future__ import annotations

import hashlib
import json
import math


def content_id(doc, n=20):
    """The task name: SHA-256 of the canonical JSON of ``doc`` (sorted keys, so the order in which
    a dictionary was built does not matter), first ``n`` hex digits."""
    canon = json.dumps(doc, sort_keys=True, default=str)
    return hashlib.sha256(canon.encode()).hexdigest()[:n]


def run_identity(family, config, data, kind="reproduce-run"):
    """The document a reproduction run is named by: its kind, the paper family, every field of its
    (resolved) configuration — the seed included — and the data key. Any change in one of them is
    a different run, never a reused one."""
    return {"kind": kind, "family": family, "config": dict(config), "data": data}


def run_finished(status):
    """Whether a run's status says it ran to its end: ``"finished"``, or ``"finished: …"`` when it
    stopped on reaching its target (a cost or an accuracy). A diverged run (its trace holds the
    rounds before the blow-up, so its last values look like an early stop) or a stopped one did
    not; every tool that ranks runs or sets an exit code asks this one rule."""
    return status == "finished" or status.startswith("finished: ")


def selection_score(status, validation_accuracy, train_cost):
    """The tuning score of one grid point (compared as a tuple, larger is better): the final
    validation accuracy, ties broken by the lower final training cost. A run that did not finish
    (diverged, failed) or whose accuracy is not a number scores (−inf, −inf) and is never picked."""
    acc, cost = float(validation_accuracy), float(train_cost)
    if not run_finished(status) or math.isnan(acc):
        return (-math.inf, -math.inf)
    return (acc, -cost if not math.isnan(cost) else -math.inf)


def select(scores):
    """Index of the best score (the first of equal ones), or None when no run can be picked."""
    best = None
    for i, s in enumerate(scores):
        if s[0] == -math.inf:
            continue
        if best is None or s > scores[best]:
            best = i
    return best
