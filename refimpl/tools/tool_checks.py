"""Checks of the checkers: refimpl's cross-check tools (``diagnose``, ``crosscheck``) against
planted cases whose right answer is known — a theorem-kind check like the others, so that
``refimpl verify`` (and the mutation catalogue) catches a tool that would tell a user "agree"
wrongly. It sits with the tools it checks (the verification layer is below them)."""
from __future__ import annotations

import numpy as np

from refimpl.verification.registry import check


def _planted_dumps():
    """Two SSCA-named dumps over 12 rounds (two-digit round numbers included) that agree."""
    rng = np.random.default_rng(3)
    ours = {r: {"omega": rng.standard_normal(6), "rho": np.array(1.0 / r), "omega_next": rng.standard_normal(6)}
            for r in range(1, 13)}
    return ours, {r: {k: v.copy() for k, v in q.items()} for r, q in ours.items()}


def _diagnose_cases():
    """(what, the tools' answer is right) for planted cases of refimpl diagnose's comparison."""
    import os
    import tempfile

    from refimpl.core.replay import read_dump
    from refimpl.tools import diagnose as DG
    out = []
    ours, theirs = _planted_dumps()
    c = DG.compare_dumps(ours, theirs, 1e-12)
    out.append(("identical dumps agree, every (round, quantity) counted",
                c.divergence is None and c.compared == 36 and not c.uncompared()))
    theirs[10]["omega_next"] = theirs[10]["omega_next"] * (1 + 1e-6)
    c = DG.compare_dumps(ours, theirs, 1e-8)
    out.append(("a relative difference of 1e-6 beyond a tolerance of 1e-8 is found at its round and quantity",
                c.divergence is not None and (c.divergence.round, c.divergence.quantity) == (10, "omega_next")
                and abs(c.divergence.rel - 1e-6) < 1e-9))
    out.append(("the same difference within a tolerance of 1e-4 agrees",
                DG.compare_dumps(ours, theirs, 1e-4).divergence is None))
    ours, theirs = _planted_dumps()
    ours[4]["rho"], theirs[4]["rho"] = np.array(np.nan), np.array(np.nan)
    c = DG.compare_dumps(ours, theirs, 1e-12)
    out.append(("NaN on both sides never agrees", c.divergence is not None and c.nonfinite.get("rho") == [4]))
    ours, theirs = _planted_dumps()
    del theirs[12]
    c = DG.compare_dumps(ours, theirs, 1e-12)
    out.append(("a round dumped on one side only is named, not passed",
                c.divergence is None and c.uncompared() == ["rounds 12 (only in ours)"]
                and not DG.verdict_code(c) == DG.EXIT["agree"]))
    ours, theirs = _planted_dumps()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "theirs.npz")
        np.savez(path, **{f"r{r}_{'w' if k == 'omega' else k}": v for r, q in theirs.items() for k, v in q.items()})
        mapped = DG.load_side(path, DG.parse_map("omega=w"))
        out.append(("two-digit round numbers are read whole (r10_…, r12_…)", sorted(read_dump(path)) == list(range(1, 13))))
        c = DG.compare_dumps(ours, mapped, 1e-12)
        out.append(("--map OURS=THEIRS renames THEIR name to ours", c.divergence is None and not c.missing))
    return out


def _crosscheck_cases():
    """(what, right) for planted cases of refimpl crosscheck's comparison."""
    from refimpl.core.trace import Trace, crosscheck
    out = []
    for bad, what in ((np.inf, "an infinite training cost"), (np.nan, "a NaN at the last round on one side")):
        a = Trace(config={}, metrics={"round": [0, 1, 2], "train_cost": [2.0, 1.5, 1.0]})
        b = Trace(config={}, metrics={"round": [0, 1, 2], "train_cost": [2.0, 1.5, bad]})
        rows = [r for r in crosscheck(a, b) if r["what"] == "train_cost"]
        out.append((f"{what} is not 'ok'", bool(rows) and (not rows[0]["rel"] <= 1e-8 or bool(rows[0].get("one_sided")))))
    a = Trace(config={}, metrics={"round": [0, 1], "train_cost": [2.0, 1.0]})
    b = Trace(config={}, metrics={"round": [0, 1], "train_cost": [2.0, 1.0 + 1e-6]})
    rows = [r for r in crosscheck(a, b) if r["what"] == "train_cost"]
    out.append(("a difference of 1e-6 in a series whose largest value is 2 is measured as 5e-7 (relative to the "
                "first trace's scale)", bool(rows) and abs(rows[0]["rel"] - 5e-7) < 1e-12))
    return out


@check("tools.crosscheck", "refimpl's cross-check tools give the right answer on planted cases: diagnose finds a "
       "difference beyond the tolerance at its round and quantity and none within it, NaN never agrees, a round on "
       "one side only is named, two-digit rounds are read whole, --map renames THEIR names; crosscheck flags inf and "
       "NaN and measures a relative difference as such (wrong answers: 0)",
       "refimpl diagnose / crosscheck; docs/guide.md")
def crosscheck_tools(quick):
    cases = _diagnose_cases() + _crosscheck_cases()
    wrong = [what for what, right in cases if not right]
    return {"measured": len(wrong), "bound": 0, "holds": not wrong,
            "note": f"{len(cases)} planted cases ({len(cases) - len(wrong)} answered right)",
            "details": {"cases": [what for what, _ in cases], "wrong": wrong}}
