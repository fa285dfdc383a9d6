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


def _reading_cases():
    """(what, right) for what diagnose reads off the numbers and the dumps: layouts, an epoch
    schedule, another paper's dump, the replay inputs a per-round dump implies, an entry's name."""
    from refimpl import papers
    from refimpl.tools import diagnose as DG
    out = []
    a = np.arange(12.0).reshape(3, 4)
    out.append(("1-based ids, a transpose and column-major order are named; a scaled array is not",
                "1-based" in (DG.layout_hint(a, a + 1) or "") and "transposed" in (DG.layout_hint(a, a.T) or "")
                and "column-major" in (DG.layout_hint(a, a.reshape(-1, order="F").reshape(3, 4)) or "")
                and DG.layout_hint(a, 2 * a) is None))
    rng = np.random.default_rng(5)
    perm = rng.permutation(500)[:20 * 20].reshape(20, 20)
    draws = np.stack([rng.choice(500, 20, replace=False) for _ in range(20)])
    out.append(("an epoch-permutation schedule is named, independent draws and too few rounds are not",
                DG.epoch_order_hint(perm, 500) is not None and DG.epoch_order_hint(draws, 500) is None
                and DG.epoch_order_hint(perm[:2], 500) is None))
    refused = False
    try:
        DG._same_paper("ssca", {"theta0", "grad0", "tau"})
    except ValueError:
        refused = True
    out.append(("a dump of another paper is refused, one of the same paper is not",
                refused and DG._same_paper("ssca", {"omega", "A"}) is None))
    ssca, mfcgd = papers.get("ssca"), papers.get("mfcgd")
    dump = {r: {"batch": np.full((2, 3), r), "omega": np.full(4, float(r))} for r in (1, 2, 3)}
    got = ssca.replay_from_dump(dump)
    out.append(("SSCA's initial point is round 1's ω and its schedule the rounds' batches in order",
                np.array_equal(got.get("omega_0"), np.full(4, 1.0)) and got["batches"][:, 0, 0].tolist() == [1, 2, 3]))
    st = {r: {"x": np.tile(np.arange(3.0), (2, 1)), "h": np.zeros((2, 1)), "u": np.zeros((2, 1, 3)),
              "v": np.zeros((2, 1)), "zeta": np.full((2, 1), float(r)), "xi": np.full((2, 1), -float(r))}
          for r in (1, 2)}
    got = mfcgd.replay_from_dump(st)
    out.append(("MFCGD's x1, estimators and samples (ζ and ξ stacked by step) are read from the dump",
                np.array_equal(got.get("x1"), np.arange(3.0)) and got["zeta"][:, 0, 0].tolist() == [1.0, 2.0]
                and got["xi"][:, 0, 0].tolist() == [-1.0, -2.0] and "u1" in got))

    class Data:
        n_features, n_classes = 4, 3
    out.append(("an entry of the flat ω is named W1/W2[row, column]",
                ssca.entry_words("omega", (2 * 4 + 1,), {"hidden": 2}, Data()) == "W2[0, 1]"
                and ssca.entry_words("omega", (5,), {"hidden": 2}, Data()) == "W1[1, 1]"))
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
       "one side only is named, two-digit rounds are read whole, --map renames THEIR names; layouts, an epoch "
       "schedule, another paper's dump, the replay inputs a per-round dump implies and an entry's name are read "
       "right; crosscheck flags inf and NaN and measures a relative difference as such (wrong answers: 0)",
       "refimpl diagnose / crosscheck; docs/guide.md")
def crosscheck_tools(quick):
    cases = _diagnose_cases() + _reading_cases() + _crosscheck_cases()
    wrong = [what for what, right in cases if not right]
    return {"measured": len(wrong), "bound": 0, "holds": not wrong,
            "note": f"{len(cases)} planted cases ({len(cases) - len(wrong)} answered right)",
            "details": {"cases": [what for what, _ in cases], "wrong": wrong}}
