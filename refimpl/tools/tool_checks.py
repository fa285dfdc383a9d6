"""Checks of the checkers: refimpl's cross-check tools (``diagnose``, ``crosscheck``) against
planted cases whose right answer is known — a theorem-kind check like the others, so that
``refimpl verify`` (and the mutation catalogue) catches a tool that would tell a user "agree"
wrongly. It sits with the tools it checks (the verification layer is below them)."""
from __future__ import annotations

import pathlib

import numpy as np

from refimpl.verification.registry import check, raises as _raises


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
    out.append(("the divergence lists every quantity of its round that agrees before it (ω and ρ)",
                c.divergence is not None and sorted(n for n, _ in c.divergence.agreeing) == ["omega", "rho"]))
    inputs_line = " ".join(DG.describe(c, 1e-8, verdict={"kind": "inputs", "row": {"worst": 0.0}}, inputs=None))
    out.append(("a difference in THEIR inputs that the readers cannot name is 'the inputs'",
                "the difference is in the inputs (the inputs), not in a convention" in inputs_line))
    said = " ".join(DG.describe(c, 1e-8))
    moved = {r: dict(q, omega=q["omega"] * 2.0) if r == 10 else q for r, q in theirs.items()}
    first = " ".join(DG.describe(DG.compare_dumps(ours, moved, 1e-8), 1e-8))
    out.append(("the report lists them ('agreeing before it: omega 0, rho 0'), and 'none before it' when the first "
                "quantity differs", "agreeing before it: omega 0, rho 0" in said and "round 10, omega at entry" in first
                and "agreeing before it: none before it" in first))
    out.append(("the same difference within a tolerance of 1e-4 agrees",
                DG.compare_dumps(ours, theirs, 1e-4).divergence is None))
    # THEIRS three times OURS: a relative difference of 2 measured against OURS (2/3 against THEIRS)
    tripled = {r: dict(q, rho=q["rho"] * 3.0) if r == 10 else q for r, q in _planted_dumps()[1].items()}
    c = DG.compare_dumps(_planted_dumps()[0], tripled, 1.0)
    out.append(("a relative difference is measured against OURS: THEIRS three times OURS differs by 2, beyond a "
                "tolerance of 1", c.divergence is not None and (c.divergence.round, c.divergence.quantity) == (10, "rho")
                and abs(c.divergence.rel - 2.0) < 1e-12))
    out += _nonfinite_round_cases(DG)
    # one NaN entry among entries that differ: the entry named is the NaN's, not the largest finite difference
    ours, theirs = _planted_dumps()
    w = np.array(theirs[10]["omega_next"], dtype=float)
    w.flat[0] *= 1.5
    w.flat[-1] = np.nan
    theirs[10]["omega_next"] = w
    said = " ".join(DG.describe(DG.compare_dumps(ours, theirs, 1e-8), 1e-8))
    last = tuple(int(j) for j in np.unravel_index(w.size - 1, w.shape))
    out.append(("a NaN entry among differing ones is the entry named (at entry (last), vs nan)",
                f"round 10, omega_next at entry {last}" in said and " vs nan" in said))
    # a difference that overflows (1e308 against −1e308) comes before a NaN later on: it is the entry named
    ours, theirs = _planted_dumps()
    a = np.array(ours[10]["omega_next"], dtype=float).ravel()
    b = a.copy()
    a[1], b[1], b[-1] = 1e308, -1e308, np.nan
    ours[10]["omega_next"], theirs[10]["omega_next"] = a, b
    said = " ".join(DG.describe(DG.compare_dumps(ours, theirs, 1e-8), 1e-8))
    out.append(("an entry whose difference overflows is not finite either: the first such entry is named (entry 1)",
                "round 10, omega_next at entry (1,)" in said))
    out.append(_inf_both_sides_case(DG))
    out += _scalar_against_vector_cases()
    out += _local_step_cases()
    out += _differing_inputs_cases()
    out += _one_side_cases(DG)
    out += _set_order_cases()
    ours, theirs = _planted_dumps()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "theirs.npz")
        np.savez(path, **{f"r{r}_{'w' if k == 'omega' else k}": v for r, q in theirs.items() for k, v in q.items()})
        mapped = DG.load_side(path, DG.parse_map("omega=w"))
        out.append(("two-digit round numbers are read whole (r10_…, r12_…)", sorted(read_dump(path)) == list(range(1, 13))))
        c = DG.compare_dumps(ours, mapped, 1e-12)
        out.append(("--map OURS=THEIRS renames THEIR name to ours in every round (all 12 compared)",
                    c.divergence is None and not c.uncompared() and c.rounds == list(range(1, 13))))
    out.append(("a --map pair missing a side or its '=' is refused (omega=, =w, omega), not read as an empty name",
                all(_raises(lambda t=t: DG.parse_map(t), "expected OURS=THEIRS pairs") for t in ("omega=", "=w", "omega"))
                and DG.parse_map(" omega = w ,") == {"w": "omega"}))
    return out


def _nonfinite_round_cases(DG):
    """(what, right): NaN on both sides, and the rounds the report lists as not finite."""
    out = []
    ours, theirs = _planted_dumps()
    ours[4]["rho"], theirs[4]["rho"] = np.array(np.nan), np.array(np.nan)
    c = DG.compare_dumps(ours, theirs, 1e-12)
    out.append(("NaN on both sides never agrees, and the worst difference is infinite",
                c.divergence is not None and c.nonfinite.get("rho") == [4] and c.worst == np.inf))
    ours[11]["rho"] = np.array(np.inf)
    said = DG.describe(DG.compare_dumps(ours, theirs, 1e-12), 1e-12)
    out.append(("the report lists every round where a quantity is not finite (rounds 4, 11)",
                "rho is not finite (NaN or inf) in rounds 4, 11: never counted as agreeing" in said))
    return out


def _one_side_cases(DG):
    """(what, right): rounds and quantities dumped on one side only, named with their side."""
    out = []
    ours, theirs = _planted_dumps()
    del theirs[12]
    c = DG.compare_dumps(ours, theirs, 1e-12)
    out.append(("a round dumped on one side only is named, not passed, and the report says it was not compared",
                c.divergence is None and c.uncompared() == ["rounds 12 (only in ours)"]
                and not DG.verdict_code(c) == DG.EXIT["agree"]
                and any(ln.startswith("not compared: rounds 12 (only in ours) (exit 1") for ln in DG.describe(c, 1e-12))))
    ours, theirs = _planted_dumps()
    for r in range(7, 13):
        del ours[r]
        ours[r - 6]["gamma"] = np.array(0.5)                       # a quantity OURS alone dumps
        theirs[r - 6]["nu"] = np.array(2.0)                        # and one THEIRS alone dumps
    six = DG.compare_dumps(ours, theirs, 1e-12).uncompared()
    del ours[6]
    seven = DG.compare_dumps(ours, theirs, 1e-12).uncompared()
    out.append(("a quantity on one side is named with the side that holds it; six rounds are listed, seven spanned",
                six == ["gamma (only in ours)", "nu (only in theirs)", "rounds 7, 8, 9, 10, 11, 12 (only in theirs)"]
                and seven[-1] == "rounds 6..12 (7) (only in theirs)"))
    ours, theirs = _planted_dumps()
    theirs[13] = dict(theirs[12], nu=np.array(2.0))               # a round, and a quantity in it, THEIRS alone dumps
    out.append(("a quantity held only in a round THEIRS alone dumps is not named: the round is (allowed with "
                "'rounds', exit 0)",
                DG.compare_dumps(ours, theirs, 1e-12).uncompared() == ["rounds 13 (only in theirs)"]
                and DG.verdict_code(DG.compare_dumps(ours, theirs, 1e-12), None, ("rounds",)) == DG.EXIT["agree"]))
    ours, theirs = _planted_dumps()
    del ours[12], theirs[1]
    out.append(("rounds dumped on one side only, on both sides: each side's rounds named, those only THEIRS holds "
                "first (the sides in name order)", DG.compare_dumps(ours, theirs, 1e-12).uncompared()
                == ["rounds 12 (only in theirs)", "rounds 1 (only in ours)"]))
    return out


def _scalar_against_vector_cases():
    """(what, right): a scalar on one side and three entries on the other, either way round: the
    divergence line names the two shapes (OURS's first)."""
    from refimpl.tools import diagnose as DG
    out = []
    for side in (0, 1):
        pair = _planted_dumps()
        pair[side][5]["rho"] = np.full(3, float(pair[1 - side][5]["rho"]))
        said = " ".join(DG.describe(DG.compare_dumps(*pair, 1e-8), 1e-8))
        out.append((f"a scalar against three entries ({('OURS', 'THEIRS')[side]} the three) is named by its shapes",
                    f"round 5, rho: shapes {((3,), ())[side]} vs {((), (3,))[side]}" in said))
        # a per-step quantity (one row per local step: Flex-VFL's grad1) held as a scalar on one side is
        # not walked step by step (a scalar has no steps): the round's shapes are named, nothing crashes
        steps = {2: {"tau": np.array([4, 4]), "grad1": np.arange(4.0), "theta1": np.ones((4, 3))}}
        other = {2: dict(steps[2], grad1=np.array(1.0))}
        pair = (steps, other) if side == 0 else (other, steps)
        said = " ".join(DG.describe(DG.compare_dumps(*pair, 1e-9), 1e-9))     # a crash fails the check
        out.append((f"a per-step quantity as a scalar on {('THEIRS', 'OURS')[side]} side is named by its shapes, "
                    "not walked by step", f"round 2, grad1: shapes {((4,), ())[side]} vs {((), (4,))[side]}" in said))
    return out


def _set_order_cases():
    """(what, right): what diagnose walks and lists comes in order, not in the order a set holds it
    (rounds 3 and 10 iterate as 10, 3; six one-sided names in their string hashes' order)."""
    from refimpl.tools import diagnose as DG
    ours, theirs = _planted_dumps()
    ours, theirs = {r: ours[r] for r in (3, 10)}, {r: theirs[r] for r in (3, 10)}
    for r in (3, 10):
        theirs[r]["omega"] = theirs[r]["omega"] + 1.0
    d = DG.compare_dumps(ours, theirs, 1e-12).divergence
    out = [("rounds are walked in order whatever order a set holds them in: rounds 3 and 10 differ, 3 is named",
            d is not None and d.round == 3)]
    ours, theirs = _planted_dumps()
    extra = ("q_f", "q_a", "q_e", "q_b", "q_d", "q_c")
    for r in ours:
        ours[r].update({n: np.array(1.0) for n in extra})
    out.append(("quantities one side alone dumps are listed by name, whatever order a set holds them in",
                DG.compare_dumps(ours, theirs, 1e-12).uncompared() == [f"{n} (only in ours)" for n in sorted(extra)]))
    return out


def _differing_inputs_cases():
    """(what, right): the replay inputs two Flex-VFL runs hold and that differ are listed in name
    order (three: in a set's order, sorted 1 time in 6); a span of rounds reads in order."""
    import os
    import tempfile

    from refimpl.tools import diagnose as DG
    ours = {"init_theta0": np.ones(3), "init_theta1": np.ones(2), "batches": np.arange(6).reshape(2, 3),
            "tau": np.ones((2, 3), dtype=int)}
    theirs = {"init_theta0": np.zeros(3), "init_theta1": np.ones(2), "batches": np.arange(6).reshape(2, 3)[::-1],
              "tau": 2 * np.ones((2, 3), dtype=int)}
    with tempfile.TemporaryDirectory() as tmp:
        np.savez(os.path.join(tmp, "trace.npz"), **ours)
        got = DG.differing_inputs(tmp, theirs, "vfl")
        same_tau = DG.differing_inputs(tmp, {**theirs, "tau": ours["tau"].copy()}, "vfl")
        one_side = DG.differing_inputs(tmp, {"init_theta0": np.zeros(3), "tau": ours["tau"].copy()}, "vfl")
    return [("a replay input one side holds only (the batch schedule; θ_1 of an initial point that differs in θ_0 "
             "is not): recorded on one side, apart from the differing ones", one_side == (["initial point"],
                                                                                         ["batch schedule"])),
            ("replay inputs that differ are listed in name order (batch schedule, initial point, τ table)",
             got == (["batch schedule", "initial point", "τ table"], [])),
            ("a replay input both sides hold equal (the τ table) is not listed", same_tau == (
                ["batch schedule", "initial point"], [])),
            ("a span of rounds given out of order reads from the least to the greatest (1..30 (7); 2, 5)",
             DG._span([30, 2, 1, 9, 7, 3, 12]) == "1..30 (7)" and DG._span({5, 2}) == "2, 5"),
            ("THEIR file without any replay input: the reruns use OURS's, and a difference in them cannot be told "
             "apart from a convention", DG.sources_line([], ["initial point", "batch schedule"]) ==
             "THEIR file holds none of the replay inputs (initial point, batch schedule): the reruns use OURS's, so a "
             "difference in them is not told apart from a convention")]


def _local_step_cases():
    """(what, right): inside a round, the per-step rows (Flex-VFL's θ, gradient and momentum of each
    local step) are walked step by step — the first differing (step, quantity) is named, and a
    step held on one side only differs."""
    from refimpl.tools import diagnose as DG
    rng = np.random.default_rng(8)
    steps = {f"{q}1": rng.standard_normal((4, 3)) for q in ("theta", "grad", "momentum")}     # 4 local steps
    ours = {2: {"tau": np.array([4, 4]), **steps}}

    def theirs_with(**changes):
        q = {k: v.copy() for k, v in ours[2].items()}
        q.update(changes)
        return {2: q}
    m, g = ours[2]["momentum1"].copy(), ours[2]["grad1"].copy()
    m[1, 0] += 1e-3                         # step 1's momentum, and later rows, differ
    m[3, 2] += 1e-3
    g[2, 1] += 1e-3                         # the gradient of step 2 (the first quantity in data-flow order)
    d = DG.compare_dumps(ours, theirs_with(momentum1=m, grad1=g), 1e-9).divergence
    first = d is not None and (d.quantity, d.step) == ("momentum1", 1)
    longer = np.vstack([ours[2]["momentum1"], rng.standard_normal((1, 3))])      # THEIRS one local step more
    d = DG.compare_dumps(ours, theirs_with(momentum1=longer), 1e-9).divergence
    extra = d is not None and (d.quantity, d.step) == ("momentum1", 4)
    shorter = {2: {k: (v[:3] if k == "grad1" else v.copy()) for k, v in ours[2].items()}}      # THEIRS one step less
    d = DG.compare_dumps(ours, shorter, 1e-9).divergence
    fewer = d is not None and (d.quantity, d.step) == ("grad1", 3) and d.theirs.size == 0
    return [("the first differing local step is named (momentum at step 1, before the gradient of step 2 and the "
             "momentum of step 3)", first),
            ("a local step THEIRS holds and OURS does not is named as the difference (step 4)", extra),
            ("a local step OURS holds and THEIRS does not is named (the gradient of step 3, THEIRS empty)", fewer)]


def _mat_columns_case():
    """A dump saved by MATLAB (scipy.io.savemat writes as MATLAB does): a vector comes back from
    its n×1 column as a vector, a 1×1 matrix as a scalar, a matrix as it is."""
    import os
    import tempfile

    from scipy.io import savemat

    from refimpl.core.replay import read_dump
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "theirs.mat")
        savemat(path, {"r1_omega": np.arange(5.0)[:, None], "r1_rho": np.array([[0.5]]),
                       "r1_batch": np.arange(6.0).reshape(2, 3)})
        got = read_dump(path)[1]
    return ("a MATLAB column is read as a vector, a 1×1 as a scalar, a matrix as it is",
            got["omega"].shape == (5,) and got["rho"].shape == () and got["batch"].shape == (2, 3))


def _replay_reader_cases():
    """(what, right): the replay readers' small rules — booleans, text and complex numbers are not real
    numbers; a run's directory stands for its trace.npz; what a file that is no array looks like, and
    no pickle loaded; the 1-based hint only
    when no id is 0 and one is n; ``--dump-rounds`` sorted, each once, within 1..T."""
    import os
    import tempfile

    from refimpl.core.replay import index_table, numeric, one_based_hint, parse_dump_rounds, read_arrays, read_one
    with tempfile.TemporaryDirectory() as tmp:
        run_dir, empty = os.path.join(tmp, "run"), os.path.join(tmp, "empty")
        os.makedirs(run_dir)
        os.makedirs(empty)
        np.savez(os.path.join(run_dir, "trace.npz"), array_batches=np.arange(6).reshape(2, 3), W1_0=np.ones(2))
        got = read_arrays(run_dir, "--batches")
        for name, content in (("notes.npy", b"ids 1 2 3\n"), ("del.npy", b"\x7fnotes 1 2")):
            with open(os.path.join(tmp, name), "wb") as fh:
                fh.write(content)
        np.save(os.path.join(tmp, "objects.npy"), np.array([{"a": 1}], dtype=object), allow_pickle=True)
        np.savez(os.path.join(tmp, "objects.npz"), batches=np.array([{"a": 1}], dtype=object))
        notes = os.path.join(tmp, "notes.npy")
        formats = (_raises(lambda: read_arrays(notes, "--batches"), f"--batches {notes}: not a .npy/.npz/.mat file (it "
                           "starts like text, not NumPy's header or a zip archive); write arrays with numpy.save / "
                           "numpy.savez or scipy.io.savemat")
                   and _raises(lambda: read_arrays(os.path.join(tmp, "del.npy"), "--batches"),
                               "starts like another format")
                   and _raises(lambda: read_arrays(os.path.join(tmp, "objects.npy"), "--batches"),
                               "holds pickled Python objects")
                   and _raises(lambda: read_arrays(os.path.join(tmp, "objects.npz"), "--batches"),
                               "holds pickled Python objects"))
        directory = (sorted(got) == ["W1_0", "batches"] and got["batches"].shape == (2, 3)
                     and _raises(lambda: read_arrays(empty, "--batches"), f"--batches {empty}: a directory without a "
                                 "trace.npz; give a refimpl run's --out directory, its trace.npz, or a .npy/.npz/.mat "
                                 "file"))
        missing = _raises(lambda: read_arrays(os.path.join(tmp, "nowhere.npy"), "--batches"),
                          f"--batches {os.path.join(tmp, 'nowhere.npy')}: no such file")
        named = _raises(lambda: read_one(run_dir, ("schedule",), "--batches"), "(found ['W1_0', 'batches'])")
    ranged = _raises(lambda: index_table(np.array([[0, 5], [1, 2]]), "--batches", "", 2, 5),
                     "is out of range: sample ids are 0..4")
    return [("a boolean array is refused as a replay input (not read as 0 and 1); so are text and complex arrays; "
             "integers are read as floats",
             _raises(lambda: numeric(np.array([True, False]), "x", "a"), "has dtype bool")
             and _raises(lambda: numeric(np.array(["1", "2"]), "x", "a"), "has dtype <U1")
             and _raises(lambda: numeric(np.array([1j]), "x", "a"), "has dtype complex128")
             and numeric(np.arange(3), "x", "a").dtype == np.float64),
            ("a run's --out directory is read as its trace.npz (array_ names unprefixed); a directory without one "
             "is refused", directory),
            ("a path that does not exist is refused naming it (no such file), not left to open()", missing),
            ("an array the file does not hold is refused naming the ones it does", named),
            ("a sample id out of range is refused with the range of ids (0..n−1)", ranged),
            ("a text file and one starting with the DEL byte (0x7f) given as .npy are named as text and another "
             "format; an object .npy is refused unread (no pickle is ever loaded)", formats),
            ("the 1-based hint is given for ids 1..5 of n = 5, not when an id is 0",
             one_based_hint(np.array([1, 3, 5]), 5) == " (no id is 0 and one is 5: 1-based ids, as MATLAB writes them? "
             "give --index-base 1 to read them as such)" and one_based_hint(np.array([0, 3, 5]), 5) == ""),
            ("--dump-rounds 3,1,3 of 5 rounds is rounds 1 and 3; round 0 is refused",
             parse_dump_rounds("3,1,3", 5) == [1, 3] and parse_dump_rounds("all", 3) == [1, 2, 3]
             and _raises(lambda: parse_dump_rounds("0,2", 5), "round 0 is outside the run (rounds 1..5)"))]


def _reading_cases():
    """(what, right) for what diagnose reads off the numbers and the dumps: layouts, an epoch
    schedule, another paper's dump, the replay inputs a per-round dump implies, an entry's name."""
    from refimpl import papers
    from refimpl.tools import diagnose as DG
    out = _replay_reader_cases()
    out += [("a relative difference is measured against OURS's largest entry (|2 − 1| / 2 = 0.5)",
            DG._rel(np.array([2.0, 0.5]), np.array([1.0, 0.5])) == 0.5),
           ("party-indexed quantities come in party order, 10 after 2",
            DG.ordered("vfl", ["theta10", "grad2", "theta2", "theta1", "batch"])
            == ["batch", "theta1", "theta2", "theta10", "grad2"])]
    out.append(_mat_columns_case())
    out += _layout_hint_cases(DG)
    rng = np.random.default_rng(5)
    perm = rng.permutation(500)[:20 * 20].reshape(20, 20)
    draws = np.stack([rng.choice(500, 20, replace=False) for _ in range(20)])
    out.append(("an epoch-permutation schedule is named, independent draws and too few rounds are not",
                DG.epoch_order_hint(perm, 500) is not None and DG.epoch_order_hint(draws, 500) is None
                and DG.epoch_order_hint(perm[:2], 500) is None))
    out.append(("the epoch hint is offered only for a paper with a batch-order switch: Flex-VFL's, not SSCA's",
                DG.their_schedule_hint({"batches": perm}, DG._paper("vfl"), {}, 500) is not None
                and DG.their_schedule_hint({"batches": perm}, DG._paper("ssca"), {}, 500) is None))
    refused, said = False, ""
    try:
        DG._same_paper("ssca", {"theta0", "grad0", "tau"})
    except ValueError:
        refused = True
    try:
        DG._same_paper("vfl", {"omega", "omega_next", "rho", "A"})
    except ValueError as exc:
        said = str(exc)
    out.append(("a dump of another paper is refused, one of the same paper is not; the refusal names the names "
                "that mark it (SSCA's omega, omega_next, not rho or A) and both papers by their short names",
                refused and DG._same_paper("ssca", {"omega", "A"}) is None and "THEIRS is a dump of SSCA (it holds "
                "omega, omega_next), OURS one of Flex-VFL:" in said))
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
    out += _replay_file_cases(ssca, mfcgd) + _replay_guard_cases(papers)
    held, missing = DG.replay_sources({"tau_mean": np.ones(3), "batches": np.zeros((2, 4), int)}, papers.get("vfl"))
    out.append(("a replay input is held only under its own name (tau_mean is no τ table)",
                held == ["batch schedule"] and "τ table" in missing))
    out += _stored_round_cases()

    class Data:
        n_features, n_classes = 4, 3
    out.append(("an entry of the flat ω is named W1/W2[row, column]",
                ssca.entry_words("omega", (2 * 4 + 1,), {"hidden": 2}, Data()) == "W2[0, 1]"
                and ssca.entry_words("omega", (5,), {"hidden": 2}, Data()) == "W1[1, 1]"))
    mf = papers.get("mfcgd")
    # ω of 2·4 + 3·2 = 14 entries: entry 14 is no entry of it; MFCGD's x of client 1, coordinate 2, but an
    # index without its client, or a quantity that is no client's, is named by its index alone
    out.append(("an index beyond ω, a client's quantity without its coordinate, and a quantity of no client get no "
                "words of the paper (their index alone)",
                ssca.entry_words("omega", (14,), {"hidden": 2}, Data()) is None
                and mf.entry_words("x", (1, 2), {}) == "client 1, coordinate 2"
                and mf.entry_words("x", (1,), {}) is None and mf.entry_words("gamma", (1, 2), {}) is None))
    out.append(("an entry of ω without the data (diagnose run without it), or a whole array (no index), is named by "
                "its index alone", ssca.entry_words("omega", (5,), {"hidden": 2}, None) is None
                and ssca.entry_words("omega", (), {"hidden": 2}, Data()) is None))
    return out + _entry_name_cases(papers.get("vfl"))


def _entry_name_cases(vfl):
    """(what, right): Flex-VFL's names of a dumped entry, written out for 7 features in contiguous
    blocks of 4 and 3 (party 1, party 2), O = 2, linear encoders: party 2's W is 2 × (3 + 1); SSCA's
    name of a client's gradient entry; the changes diagnose's rerun makes under Flex-VFL's protocols."""
    from refimpl.core.data import Dataset
    X = np.arange(28.0).reshape(4, 7) / 28.0
    ds = Dataset(X, np.array([0, 1, 2, 0]), X[:2], np.array([1, 2]), n_classes=3)
    cfg = {"parties": 2, "embed_dim": 2, "encoder": "linear", "hidden": 3}
    from refimpl import papers
    ssca = papers.get("ssca")
    rerun = [vfl.rerun_changes(c) for c in ({"protocol": "authors"}, {"protocol": "tuned"}, {"momentum": "torch"})]
    out = [("SSCA: client 2's gradient entry 9 is W1[1, 2] (7 features, J = 2), named with its client",
            ssca.entry_words("client_grad", (2, 9), {"hidden": 2}, ds) == "client 2, W1[1, 2]"),
           ("SSCA with --bias (7 features + the bias column, J = 2): ω's entries 11 and 16 are W1[1, 3] and W2[0, 0] "
            "(bias)", [ssca.entry_words("omega", (i,), {"hidden": 2, "bias": True}, ds) for i in (11, 16)]
            == ["W1[1, 3]", "W2[0, 0] (bias)"]),
           ("diagnose's rerun under Flex-VFL's authors' protocol changes its step counts only: THEIR batches, "
            "initial point and server time unit stay (independent batches, Glorot, step); other switches as given",
            rerun == [{"protocol": "authors", "batch_order": "independent", "init_scheme": "glorot",
                       "server_time_unit": "step"}, {"protocol": "tuned"}, {"momentum": "torch"}])]
    return out + [("Flex-VFL: party 2's entry 5 is W[1, 1] of its 2 × (3 + 1) encoder (its own 3 features), entry 8 "
             "is beyond it; party 1's entry 5 is W[1, 0] (the bias) of 2 × (4 + 1); the head's entry 5 is head[1, 0]",
             [vfl.entry_words(q, (3, 5), cfg, ds) for q in ("theta2", "grad1", "momentum0")]
             == ["party 2, local step 3, W[1, 1]", "party 1, local step 3, W[1, 0] (bias)",
                 "party 0, local step 3, head[1, 0] (bias)"] and vfl.entry_words("theta2", (0, 8), cfg, ds) is None),
                  ("Flex-VFL with swish encoders (J = 3): party 2's W1 is 3 × (3 + 1), then W2 2 × (3 + 1); entries "
                   "11, 12, 13, 19 are W1[2, 3], W2[0, 0] (bias), W2[0, 1], W2[1, 3]; 20 is beyond",
                   [vfl.entry_words("theta2", (0, i), dict(cfg, encoder="swish"), ds) for i in (11, 12, 13, 19, 20)]
                   == ["party 2, local step 0, W1[2, 3]", "party 2, local step 0, W2[0, 0] (bias)",
                       "party 2, local step 0, W2[0, 1]", "party 2, local step 0, W2[1, 3]", None]),
                  ("MFCGD: u's entry (1, 2, 3) is client 1's Jacobian estimate at row 2, column 3; x's (1, 2) client "
                   "1's coordinate 2", [papers.get("mfcgd").entry_words(q, i, {}) for q, i in (("u", (1, 2, 3)),
                                                                                            ("x", (1, 2)))]
                   == ["client 1, row, column 2, 3", "client 1, coordinate 2"])]



def _layout_hint_cases(DG):
    """(what, right): diagnose's layout hints (:func:`refimpl.tools.diagnose.layout_hint`) named
    where the numbers show them, and only there."""
    out = []
    a = np.arange(12.0).reshape(3, 4)
    out.append(("1-based ids, a transpose and column-major order are named; a scaled array and ids one lower are not",
                "1-based" in (DG.layout_hint(a, a + 1) or "") and "1-based" not in (DG.layout_hint(a, a - 1) or "")
                and "transposed" in (DG.layout_hint(a, a.T) or "")
                and "column-major" in (DG.layout_hint(a, a.reshape(-1, order="F").reshape(3, 4)) or "")
                and DG.layout_hint(a, 2 * a) is None))
    out.append(("one entry one apart is no evidence of 1-based ids: no layout is named for a single value; two are",
                DG.layout_hint(np.array([3.0]), np.array([4.0])) is None and DG.layout_hint(3, 4) is None
                and "1-based" in (DG.layout_hint(np.array([3, 7]), np.array([4, 8])) or "")))

    def hint_of(a, b):
        try:
            return DG.layout_hint(a, b)
        except Exception as exc:                     # a hint that fails is no hint either
            return f"failed: {exc!r}"
    out.append(("text on either side is no layout: no hint, for numbers against text or text against numbers",
                hint_of(np.arange(3), np.array(["a", "b", "c"])) is None
                and hint_of(np.array(["a", "b", "c"]), np.arange(3)) is None))
    return out


def _replay_file_cases(ssca, mfcgd):
    """(what, right): the replay inputs SSCA and MFCGD take from a file of arrays (--init, --samples,
    a trace.npz), by the names it holds."""
    def mf_in(arrays):
        found = mfcgd.replay_from(arrays, "f")[0]
        return found["init"], found["samples"]
    ssca_in = [ssca.replay_from(a, "f")[1]["init"] for a in ({"W1_0": 1, "W2_0": 2, "omega_0": 3}, {"W2_0": 2,
                                                                                                   "omega_0": 3})]
    return [("SSCA's initial point from a file: W1_0 and W2_0 when both are there, else omega_0",
             ssca_in == [(1, 2), 3]),
            ("MFCGD's replay inputs from a file: the initial point from x1 or init_x1, the samples from zeta or "
             "samples_*, each only when there", [mf_in(arrays) for arrays in (
                 {"x1": 0, "zeta": 0}, {"init_x1": 0}, {"samples_0": 0}, {"u1": 0, "xi": 0})]
             == [("f", "f"), ("f", None), (None, "f"), (None, None)])]


def _replay_guard_cases(papers):
    """(what, right): what a per-round dump does not imply — a schedule from rounds with a gap, an
    MFCGD initial point from clients that start apart, samples from steps with a gap or a step
    without ξ — and a Flex-VFL schedule with a shorter batch, read padded with −1 at its end."""
    ssca, vfl, mfcgd = papers.get("ssca"), papers.get("vfl"), papers.get("mfcgd")
    gap = {r: {"batch": np.full((2, 3), r), "omega": np.full(4, float(r))} for r in (1, 2, 4)}
    got = ssca.replay_from_dump(gap)
    out = [("rounds 1, 2, 4 give SSCA's initial point but no schedule", "batches" not in got and "omega_0" in got)]
    ragged = {1: {"batch": np.array([5, 1, 7, 2]), "tau": np.array([1, 4, 2])},
              2: {"batch": np.array([3, 0, 6]), "tau": np.array([1, 3, 5])}}
    got = vfl.replay_from_dump(ragged)
    batches, tau = got.get("batches"), got.get("tau")
    out.append(("a Flex-VFL schedule whose last batch is shorter is read with −1 padding at its end, the τ table "
                "round by round", batches is not None and batches.tolist() == [[5, 1, 7, 2], [3, 0, 6, -1]]
                and tau is not None and tau.tolist() == [[1, 4, 2], [1, 3, 5]]))
    st = {r: {"x": np.array([[0.0, 1.0], [0.0, 1.5]]), "h": np.zeros((2, 1)), "u": np.zeros((2, 1, 2)),
              "v": np.zeros((2, 1)), "zeta": np.full((2, 1), float(r)), "xi": np.full((2, 1), -float(r))}
          for r in (1, 3)}
    got = mfcgd.replay_from_dump(st)
    out.append(("MFCGD clients that start apart give no x1, and steps 1, 3 no samples",
                "x1" not in got and "zeta" not in got and "xi" not in got and "h1" in got))
    # steps 1, 2 where step 2 dumped no ξ: no samples implied (and no crash)
    st = {r: {"x": np.zeros((2, 2)), "h": np.zeros((2, 1)), "u": np.zeros((2, 1, 2)), "v": np.zeros((2, 1)),
              "zeta": np.full((2, 1), float(r)), **({"xi": np.full((2, 1), -1.0)} if r == 1 else {})} for r in (1, 2)}
    try:
        got = mfcgd.replay_from_dump(st)
        right = "zeta" not in got and "xi" not in got and "x1" in got
    except Exception:
        right = False
    out.append(("MFCGD steps 1, 2 whose step 2 holds no ξ imply no samples", right))
    # a dump read in another order (r2 before r1): the samples stacked by step all the same
    st = {r: {"x": np.zeros((2, 2)), "h": np.zeros((2, 1)), "u": np.zeros((2, 1, 2)), "v": np.zeros((2, 1)),
              "zeta": np.full((2, 1), float(r)), "xi": np.full((2, 1), -float(r))} for r in (2, 1)}
    got = mfcgd.replay_from_dump(st).get("zeta")
    out.append(("MFCGD steps read as 2, 1 give the samples of steps 1, 2 in step order",
                got is not None and got[:, 0, 0].tolist() == [1.0, 2.0]))
    partial = mfcgd.replay_from_dump({1: {"x": np.zeros((2, 2)), "h": np.zeros((2, 1))}})
    out.append(("MFCGD's initial estimators come only as a whole: a step 1 holding h without u and v gives none",
                not any(k in partial for k in ("h1", "u1", "v1"))))
    return out


def _stored_round_cases():
    """(what, right): a schedule's ids are checked against the data's size (whole numbers in
    0..n − 1); a run's streamed round files and its dump.mat give every round back under its own
    number; a trace.npz's ``array_<name>`` is read as ``<name>``."""
    import os
    import shutil
    import tempfile

    from refimpl.core.dumps import read_rounds, save_rounds
    from refimpl.core.replay import index_table, read_arrays, read_dump
    ids = np.array([[0, 4], [3, 1]])
    in_range = index_table(ids, "THEIRS batches", "", 2, 5).tolist() == ids.tolist()
    out = [("sample ids run from 0 to n − 1: n itself is refused, naming the entry",
            in_range and _raises(lambda: index_table(ids + 1, "THEIRS batches", "", 2, 5), "entry (0, 1) = 5")),
           ("sample ids written as floats are read when whole, refused when not (2.5)",
            index_table(ids.astype(float), "THEIRS batches", "", 2, 5).tolist() == ids.tolist()
            and _raises(lambda: index_table(ids + np.array([[0, 0], [0, 0.5]]), "THEIRS batches", "", 2, 5),
                        "entry (1, 1) = 1.5 is not a whole number"))]
    with tempfile.TemporaryDirectory() as tmp:
        save_rounds(tmp, {f"r{t}_omega": np.full(3, float(t)) for t in (2, 9, 10, 12)})
        back, mat = read_rounds(tmp), read_dump(os.path.join(tmp, "dump.mat"))
        shutil.copy(os.path.join(tmp, "dump.mat"), os.path.join(tmp, "DUMP.MAT"))       # the suffix in capitals
        upper = read_dump(os.path.join(tmp, "DUMP.MAT"))
        np.savez(os.path.join(tmp, "trace.npz"), array_tau=np.ones((2, 3)), batches=np.zeros((2, 4)))
        names = sorted(read_arrays(os.path.join(tmp, "trace.npz"), "THEIRS"))
        from refimpl.core.trace import Trace
        Trace(config={"eta": np.float64(0.5), "taus": np.arange(2), "q": np.int64(3)}).save(os.path.join(tmp, "t"))
        config = Trace.load(os.path.join(tmp, "t")).config
    out.append(("a trace.npz's array_<name> is read as <name>", names == ["batches", "tau"]))
    out.append(("a trace's configuration with NumPy values is saved as plain JSON and read back",
                config == {"eta": 0.5, "taus": [0, 1], "q": 3}))
    out.append(("a run's round files and its dump.mat (also named DUMP.MAT) give rounds 2, 9, 10 and 12 back under "
                "their own numbers, a vector as a vector",
                all(sorted(d) == [2, 9, 10, 12] and all(float(np.ravel(q["omega"])[0]) == t and q["omega"].shape == (3,)
                                                        for t, q in d.items()) for d in (back, mat, upper))))
    return out + _replay_value_cases() + _replay_layout_cases()


def _replay_layout_cases():
    """(what, right): where a replay value goes — a Flex-VFL --init matrix (out, in + 1) read
    row-major; --map's W1 and W2 each from its own .mat variable; MFCGD's initial estimators u1
    and v1 from r1_u and r1_v; an entry of SSCA's ω named W2[row, column] past the bias column."""
    import os
    import tempfile
    from types import SimpleNamespace

    from scipy.io import savemat

    from refimpl import papers
    from refimpl.core.matfiles import mat_initial_point, mat_snapshots
    from refimpl.tools.crosscheck import load_side
    from refimpl.vfl.experiment import load_init
    from refimpl.vfl.models import LinearEncoder, LinearFusion, VerticalModel
    model = VerticalModel((LinearEncoder(3, 2), LinearEncoder(2, 2)), LinearFusion(4, 3))
    flat = [np.arange(n, dtype=float) + 10 * k for k, (n, _) in enumerate(model.param_shapes())]
    W1, W2 = np.arange(6.0).reshape(2, 3), -np.arange(4.0).reshape(2, 2)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "init.npz")
        np.savez(path, **{f"theta{k}": v.reshape(mat) for k, (v, (_, mat)) in enumerate(zip(flat,
                                                                                          model.param_shapes()))})
        back = load_init(path, model)
        np.savez(os.path.join(tmp, "columns.npz"), **{f"theta{k}": v.reshape(-1, 1) for k, v in enumerate(flat)})
        columns = load_init(os.path.join(tmp, "columns.npz"), model)
        np.savez(os.path.join(tmp, "longer.npz"), **{f"theta{k}": (np.r_[v, 0.0] if k == 1 else v).reshape(-1, 1)
                                                    for k, v in enumerate(flat)})
        longer = _raises(lambda: load_init(os.path.join(tmp, "longer.npz"), model), "array 'theta1' has shape")
        savemat(os.path.join(tmp, "iterates.mat"), {"Theta1a_3": W1, "Theta2a_3": W2, "Theta1a_30": 2 * W1,
                                                    "Theta2a_30": 2 * W2})
        snaps = mat_snapshots(os.path.join(tmp, "iterates.mat"), {"W1": "Theta1a", "W2": "Theta2a"})
        side = load_side(os.path.join(tmp, "iterates.mat"))              # refimpl crosscheck's side, default map
        savemat(os.path.join(tmp, "single.mat"), {"Theta1a_3": W1.astype(np.float32), "Theta2a_3": W2.astype(np.int8)})
        single = mat_snapshots(os.path.join(tmp, "single.mat"), {"W1": "Theta1a", "W2": "Theta2a"})[3]
        savemat(os.path.join(tmp, "plain.mat"), {"Theta1a": W1, "Theta2a": W2})
        at7 = mat_snapshots(os.path.join(tmp, "plain.mat"), {"W1": "Theta1a", "W2": "Theta2a"}, round_=7)
        at0 = mat_snapshots(os.path.join(tmp, "plain.mat"), {"W1": "Theta1a", "W2": "Theta2a"}, round_=0)
        savemat(os.path.join(tmp, "initial_Theta1.mat"), {"Theta1": W1})
        savemat(os.path.join(tmp, "initial_Theta2.mat"), {"Theta2": W2})
        init = mat_initial_point(os.path.join(tmp, "initial_Theta1.mat"))
        mat_words = _mat_refusal_cases(tmp, W1, W2)
    out = [("--round 1.5 and True are refused, --map naming W3 is refused as such, and the authors' Theta1 hint "
            "comes only for the default map over Theta1_<r> variables", mat_words),
           ("--round 7 places plain (unnumbered) .mat variables at round 7, and --round 0 at the initial point",
            list(at7) == [7] and np.array_equal(at7[7][0], W1) and np.array_equal(at7[7][1], W2) and list(at0) == [0]),
           ("--init initial_Theta1.mat reads W1 from it and W2 from its sibling initial_Theta2.mat",
            np.array_equal(init[0], W1) and np.array_equal(init[1], W2)),
           ("a Flex-VFL --init matrix (out, in + 1) is read row-major, as the flat θ_k it stands for; a column of "
            "the right size too, one entry longer refused",
            all(np.array_equal(a, b) for a, b in zip(back, flat)) and longer
            and all(np.array_equal(a, b) for a, b in zip(columns, flat))),
           ("--map W1=Theta1a,W2=Theta2a reads W1 and W2 each from its own variable (MATLAB single and int8 "
            "in double); a .mat side of refimpl crosscheck holds them as its snapshots of rounds 3 and 30",
            sorted(snaps) == [3, 30] and np.array_equal(snaps[3][0], W1) and np.array_equal(snaps[3][1], W2)
            and np.array_equal(snaps[30][0], 2 * W1) and sorted(side.snapshots) == [3, 30]
            and all(np.array_equal(a, b) for a, b in zip(side.snapshots[3], (W1, W2)))
            and side.config.get("source", "").endswith("iterates.mat")
            and [a.dtype for a in single] == [np.float64, np.float64])]
    M, p, d = 2, 2, 3
    st = {1: {"x": np.ones((M, d)), "h": np.full((M, p), 1.0), "u": np.full((M, p, d), 2.0), "v": np.full((M, p), 3.0)}}
    got = papers.get("mfcgd").replay_from_dump(st)
    out.append(("MFCGD's initial estimators h1, u1, v1 come from r1_h, r1_u, r1_v",
                all(n in got and np.array_equal(got[n], st[1][n[0]]) for n in ("h1", "u1", "v1"))))
    data = SimpleNamespace(n_features=4, n_classes=2)          # J = 3 with bias: W1 is 3 × 5, W2 2 × 4
    words = papers.get("ssca").entry_words("omega", (15 + 4 + 2,), {"hidden": 3, "bias": True}, data)
    out.append(("entry 21 of SSCA's ω (J = 3, D = 4, bias) is W2[1, 2], past W2's bias column", words == "W2[1, 2]"))
    return out


def _mat_refusal_cases(tmp, W1, W2):
    """True when the .mat readers refuse --round 1.5 and --round True, name which variables are numeric
    in a file meant to hold one matrix, refuse a --map naming a third
    key (W3) with the expected form and one naming W1 alone, name a v7.3 (HDF5) file as such, read a
    one-entry variable and refuse an empty one, a cell array, a file of no variables and iterates
    without a round (each refusal in full), and add
    the hint about the authors' Theta1 (ω̄) to a missing
    variable only for the default map Theta1a over files holding Theta1_<r>."""
    import os

    from scipy.io import savemat

    from refimpl.core.matfiles import load_mat, mat_snapshots, numeric_matrix, parse_map
    plain, numbered = os.path.join(tmp, "plain.mat"), os.path.join(tmp, "omega-bar.mat")
    v73 = os.path.join(tmp, "v73.mat")          # a MATLAB v7.3 header (version 0x0200) before an HDF5 body
    with open(v73, "wb") as fh:
        fh.write(b"MATLAB 7.3 MAT-file, HDF5 schema 1.00 .".ljust(116) + bytes(8) + b"\x00\x02IM"
                 + b"\x89HDF\r\n\x1a\n" + bytes(64))
    savemat(numbered, {"Theta1_3": W1, "Theta2_3": W2})
    empty, unnumbered = os.path.join(tmp, "empty.mat"), os.path.join(tmp, "unnumbered.mat")
    savemat(empty, {})
    savemat(unnumbered, {"Theta1a": W1, "Theta2a": W2})
    unsorted = os.path.join(tmp, "unsorted.mat")
    savemat(unsorted, {"Zeta": W1, "Alpha": W2, "Mid": W1})
    trailing = os.path.join(tmp, "trailing.mat")
    savemat(trailing, {"Theta1a": W1, "W__": W2})       # MATLAB's own entries are __header__, __version__, …
    half = os.path.join(tmp, "half.mat")                 # round 4 holds W1 only
    savemat(half, {"Theta1a_3": W1, "Theta2a_3": W2, "Theta1a_4": W1})
    default, other = {"W1": "Theta1a", "W2": "Theta2a"}, {"W1": "Foo", "W2": "Bar"}
    no_hint = True
    try:
        mat_snapshots(numbered, other)
    except ValueError as exc:
        no_hint = "surrogate minimiser" not in str(exc)
    return (_raises(lambda: mat_snapshots(plain, default, round_=1.5), "a round is an integer ≥ 0")
            and _raises(lambda: mat_snapshots(half, default), "rounds [4] hold only one of W1 and W2")
            and _raises(lambda: mat_snapshots(plain, default, round_=True), "a round is an integer ≥ 0")
            and _raises(lambda: parse_map("W1=a,W2=b,W3=c"), "expected W1=NAME,W2=NAME")
            and _raises(lambda: parse_map("W1=a"), "name both W1 and W2")
            and parse_map(" W1 = Theta1a , W2=Theta2a ") == default
            and sorted(load_mat(trailing)) == ["Theta1a", "W__"]
            and _raises(lambda: load_mat(v73), "a MATLAB v7.3 (HDF5) file, which scipy.io cannot read")
            and not _raises(lambda: load_mat(v73), "not a readable .mat file")
            and _raises(lambda: mat_snapshots(numbered, default), " (in the authors' scripts Theta1/Theta2 hold the "
                        "surrogate minimiser ω̄ and Theta1a/Theta2a the iterate ω; to compare ω̄ anyway, give --map "
                        "W1=Theta1,W2=Theta2)") and no_hint
            and np.array_equal(numeric_matrix("x.mat", "s", np.array([[0.1]])), [[0.1]])
            and _raises(lambda: numeric_matrix("x.mat", "e", np.zeros((0, 3))), "variable 'e' is empty")
            and _raises(lambda: numeric_matrix("x.mat", "c", np.array([np.ones(2), "a"], dtype=object)),
                        "x.mat: variable 'c' holds a cell array or struct; expected a real numeric matrix")
            and _raises(lambda: list(mat_snapshots(empty, default)), "the .mat file holds no variables; expected the "
                        "iterates 'Theta1a', 'Theta2a' (or <name>_<round>)")
            and _raises(lambda: list(mat_snapshots(unnumbered, default)), "variable 'Theta1a' has no round in its "
                        "name; give --round R (or name the variables Theta1a_<round>)")
            and _raises(lambda: list(mat_snapshots(unsorted, other)), "no variable 'Foo', 'Bar' or <name>_<round> "
                        "among ['Alpha', 'Mid', 'Zeta']; map them with --map W1=NAME,W2=NAME")
            and _two_variables_named(tmp))


def _two_variables_named(tmp):
    """A .mat meant to hold one matrix but holding two number matrices and a text is refused naming
    which is which."""
    import os

    from scipy.io import savemat

    from refimpl.core.matfiles import _single_array
    two = os.path.join(tmp, "two.mat")
    savemat(two, {"a": np.ones((2, 2)), "b": np.ones(3), "c": "text"})
    return _raises(lambda: _single_array(two), "found a (numeric), b (numeric), c (not numeric)")


def _replay_value_cases():
    """(what, right): a replay array's values — inf refused as NaN is, naming the entry; a batch
    repeating an id anywhere in its row refused (padded too), the same ids in two rounds accepted; a
    schedule one round short refused; a
    τ table's 0 refused — and the dump's size estimate: one round's bytes times the rounds dumped,
    refused beyond the limit."""
    import tempfile

    from refimpl.core.dumps import DumpWriter
    from refimpl.core.replay import index_table, numeric
    out = [("an initial point holding inf (or NaN) is refused, naming the entry",
            _raises(lambda: numeric(np.array([[1.0, 2.0], [np.inf, 0.0]]), "--init", "W1"), "holds inf at (1, 0)")
            and _raises(lambda: numeric(np.array([0.0, np.nan]), "--init", "W1"), "holds nan at (1,)"))]
    from refimpl.core.replay import from_index_base, sample_ids
    out.append(("of two repeated ids in a batch table, the first batch's is named",
                _raises(lambda: index_table(np.array([[0, 2, 2], [1, 1, 3]]), "--batches", "", 2, 5, distinct_axis=1),
                        "repeats a sample id (at (0,))")))
    out.append(("of two bad sample ids the first is named: a fraction and a NaN read as ids, an id below 1 in a "
                "1-based table",
                _raises(lambda: sample_ids(np.array([[1.0, 2.5], [np.nan, 3.0]]), "--batches"),
                        "entry (0, 1) = 2.5 is not a whole number")
                and _raises(lambda: from_index_base(np.array([[2, 0], [1, -1]]), 1, "--batches"),
                            "entry (0, 1) = 0 is below 1")
                # an id of exactly 1 (the first sample) before it is no bad id
                and _raises(lambda: from_index_base(np.array([[1, 2], [0, 3]]), 1, "--batches"),
                            "entry (1, 0) = 0 is below 1")))
    apart = np.array([[3, 1, 3], [0, 1, 2]])             # the repeated 3s are not neighbours
    same = np.array([[0, 1, 2], [0, 1, 2]])              # the same batch in two rounds is allowed
    out.append(("a batch repeating an id (not side by side) is refused; the same batch in two rounds is read",
                _raises(lambda: index_table(apart, "--batches", "", 2, 5, distinct_axis=1), "repeats a sample id")
                and index_table(same, "--batches", "", 2, 5, distinct_axis=1).tolist() == same.tolist()))
    out.append(("a schedule one round short of the run is refused, naming both counts; one round longer is read",
                _raises(lambda: index_table(same, "--batches", "", 3, 5), "holds 2 rounds, the run needs 3")
                and index_table(same, "--batches", "", 1, 5).shape == (2, 3)))
    from refimpl.vfl.policies import validate_batches, validate_taus
    ragged = np.array([[0, 3, 0, -1], [1, 2, -1, -1]])  # round 1 repeats id 0 before its padding
    out.append(("a replayed τ table with a 0 is refused (int or float), naming the entry; whole numbers ≥ 1 are read",
                _raises(lambda: validate_taus(np.array([[1, 0, 2]]), 1, 3), "τ[0, 1] = 0")
                and _raises(lambda: validate_taus(np.array([[1.0, 0.0, 2.0]]), 1, 3), "τ[0, 1] = 0.0")
                and validate_taus(np.array([[1, 4, 2]]), 1, 3).tolist() == [[1, 4, 2]]))
    out.append(("a padded batch repeating id 0 is refused, naming its row (0-based); the same ids once each are "
                "read", _raises(lambda: validate_batches(ragged, 2, 5), "repeats a sample id (at (0,))")
                and _raises(lambda: validate_batches(ragged[::-1], 2, 5), "repeats a sample id (at (1,))")
                and validate_batches(np.array([[0, 3, 4, -1], [1, 2, -1, -1]]), 2, 5).shape == (2, 4)))
    said = []
    with tempfile.TemporaryDirectory() as tmp:
        writer = DumpWriter(tmp, rounds=10, max_bytes=500, say=said.append)   # 48 + 32 bytes a round, 800 in all
        refused = _raises(lambda: writer.put(1, {"x": np.zeros(6), "y": np.zeros(4)}),
                          "about 800 bytes (10 rounds × 80 bytes)")
    out.append(("a dump of 10 rounds of two arrays, 48 and 32 bytes, is estimated at 800 bytes and refused beyond "
                "a limit of 500",
                refused and bool(said) and "10 round(s) × 80 bytes" in said[0] and "≈ 800 bytes" in said[0]))
    # sizes from many rounds of a small array: a mutant that lets the dump through writes one small round
    with tempfile.TemporaryDirectory() as tmp:           # 1000 rounds of 12.4 MB
        big = DumpWriter(tmp, rounds=1000, max_bytes=5e9, say=None)
        out.append(("a dump of about 12.4 GB beyond a limit of 5 GB names the limit that admits it, rounded up "
                    "(--max-dump-gb 13)", _raises(lambda: big.put(1, {"x": np.zeros(1_550_000)}),
                                                  "beyond the limit of 5.0 GB; dump fewer rounds or raise the limit "
                                                  "with --max-dump-gb 13")))
        roomless = DumpWriter(tmp, rounds=10 ** 8, max_bytes=float("inf"), say=None)     # 10^8 × 8 MB: no disk
        out.append(("a dump larger than the free disk is refused, saying what to do",
                    _raises(lambda: roomless.put(1, {"x": np.zeros(10 ** 6)}),
                            "free; dump fewer rounds or choose another --out")))
        out += _free_space_cases(tmp, DumpWriter)
    out.append(_dump_record_case())
    out += _dump_writer_cases()
    from types import SimpleNamespace

    from refimpl.core.dumps import put
    streamed, kept = [], SimpleNamespace(arrays={})
    put(kept, 3, {"omega": [1.0, 2.0]})
    put(SimpleNamespace(arrays={}), 4, {"omega": np.ones(2)}, SimpleNamespace(put=lambda *a: streamed.append(a)))
    out.append(("a round's dump goes to the run's writer (round, arrays), or without one into the trace as r<t>_<name>",
                [(t, sorted(a)) for t, a in streamed] == [(4, ["omega"])] and list(kept.arrays) == ["r3_omega"]
                and kept.arrays["r3_omega"].tolist() == [1.0, 2.0]))
    return out


def _dump_record_case():
    """(what, right): a streamed dump's record — the rounds written and their bytes on disk summed
    over the round files — and, after a failed write, which rounds the dump holds (a span, or listed)."""
    import os
    import tempfile

    from refimpl.core import dumps as D
    from refimpl.core.dumps import DumpWriter
    from refimpl.core.trace import Trace

    class FailsAt(DumpWriter):
        def write_round(self, t, arrays):
            if t == self.fail_at:                # the disk fills halfway through the round's file
                with open(D.round_path(self.out_dir, t) + ".tmp", "wb") as fh:
                    fh.write(b"PK\x03\x04 half")
                raise OSError("disk full (planted)")
            super().write_round(t, arrays)
    right = True
    for rounds, fail_at, words in (([1, 2, 3, 4], 4, "rounds 1–3 are in"), ([1, 3, 5], 5, "rounds 1, 3 are in"),
                                   ([2, 7], 7, "rounds 2 are in")):
        with tempfile.TemporaryDirectory() as tmp:
            w = FailsAt(tmp, rounds=len(rounds))
            w.fail_at = fail_at
            for t in rounds:
                w.put(t, {"x": np.full(50, float(t))})
            tr = Trace({}, {})
            w.record(tr)
            on_disk = sum(os.path.getsize(os.path.join(tmp, "dump", f"r{t}.npz")) for t in rounds if t != fail_at)
            right &= (tr.config["dump_files"] == {"rounds": len(rounds) - 1, "bytes": on_disk}
                      and f"{words} {os.path.join(tmp, 'dump')} and dump.mat" in tr.config.get("dump_stopped", "")
                      and not [n for n in os.listdir(os.path.join(tmp, "dump")) if n.endswith(".tmp")])
    return ("a dump's record sums its round files' bytes; after a failed write it names the rounds it holds and "
            "leaves no half-written round file", right)


def _streamed_dump_cases():
    """(what, right): SSCA's and Flex-VFL's runs given a dump writer (as ``refimpl run … --dump-rounds``
    gives one) stream their dumped rounds to disk — the quantities a run without one keeps in its
    trace — and keep none of them in the trace (MFCGD's: mfcgd.problem_evaluations)."""
    import tempfile

    from refimpl import ssca, vfl
    from refimpl.core.dumps import DumpWriter, read_rounds
    from refimpl.verification.registry import embedded
    runs = [(ssca, dict(rounds=2, batch=4, clients=2, hidden=4, eval_every=2), embedded()),
            (vfl, dict(parties=2, rounds=2, batch=4, embed_dim=2, speeds="constant:1"), embedded())]
    out = []
    for package, small, data in runs:
        cfg = package.Config(dump_rounds="1,2", **small)
        kept = package.run(cfg, data).arrays
        with tempfile.TemporaryDirectory() as tmp:
            tr = package.run(cfg, data, dump_writer=DumpWriter(tmp, rounds=2))
            streamed = read_rounds(tmp)
        same = sorted(streamed) == [1, 2] and all(f"r{t}_{k}" in kept and np.array_equal(v, kept[f"r{t}_{k}"])
                                                  for t, q in streamed.items() for k, v in q.items())
        out.append((f"{package.__name__}.run given a dump writer streams rounds 1 and 2 as a run without one keeps "
                    "them, and keeps none", same and not any(k.startswith(("r1_", "r2_")) for k in tr.arrays)))
    return out


def _dump_writer_cases():
    """(what, right): the dump writer's limits and its own clean-up — an estimate exactly at
    --max-dump-gb is allowed and one byte over is refused; a second run into a directory that holds
    an earlier dump (--overwrite) replaces it; a round whose dump.mat append fails leaves neither
    its .npz nor a temporary file."""
    import json
    import os
    import tempfile

    from refimpl.core import dumps as D
    from refimpl.core.dumps import DumpWriter
    x = {"x": np.zeros(50)}                                # 400 bytes a round: 2 rounds ≈ 800 bytes
    with tempfile.TemporaryDirectory() as tmp:
        at = DumpWriter(os.path.join(tmp, "at"), rounds=2, max_bytes=800)
        at.put(1, x)
        over = DumpWriter(os.path.join(tmp, "over"), rounds=2, max_bytes=799)
        out = [("a dump estimated at exactly the limit is written; one byte over is refused; 1000 bytes are 1.0 kB",
                at.written == [1] and _raises(lambda: over.put(1, x), "beyond the limit of 799 bytes")
                and D._human(1000) == "1.0 kB" and D._human(999) == "999 bytes")]
        with open(os.path.join(tmp, "at", "dump", "r2.npz.tmp"), "wb") as fh:   # an interrupted run's half round
            fh.write(b"PK")
        again = DumpWriter(os.path.join(tmp, "at"), rounds=1)
        again.put(5, x)
        left = sorted(os.listdir(os.path.join(tmp, "at", "dump")))
        out.append(("a second run into a directory with an earlier dump replaces it (round 1's file and an "
                    "interrupted round's r2.npz.tmp removed)", again.written == [5] and left == ["r5.npz"]))
        shuffled = DumpWriter(os.path.join(tmp, "order"), rounds=6)
        for t in (100, 2, 30, 7, 12, 1):
            shuffled.put(t, {"x": np.full(2, float(t))})
        back = D.read_rounds(os.path.join(tmp, "order"))
        out.append(("round files read back in round order, whatever order the directory lists them in",
                    list(back) == [1, 2, 7, 12, 30, 100] and all(float(q["x"][0]) == t for t, q in back.items())))
        from refimpl.core.trace import Trace
        held = Trace(config={}, metrics={"round": [0, 1]}, arrays={"r1_x": np.ones(3), "r2_x": np.zeros(3)})
        saved = os.path.join(tmp, "saved")
        held.save(saved)
        held.save(saved)                                       # saved again over itself (--overwrite)
        out.append(("a trace holding its dumps in memory is saved again over itself: the same round files",
                    sorted(os.listdir(os.path.join(saved, "dump"))) == ["r1.npz", "r2.npz"]))
        snap = Trace(config={}, metrics={}, snapshots={300: (x, x), 0: (x, x), 10: (x, x)})   # a file's own order
        snap.save(os.path.join(tmp, "snap"))
        with open(os.path.join(tmp, "snap", "trace.json")) as fh:
            out.append(("trace.json lists the snapshot rounds in increasing order, whatever order they came in",
                        json.load(fh)["snapshot_rounds"] == [0, 10, 300]))
        np.savez(os.path.join(tmp, "at", "dump", "r6.npz"), x=np.array([{"a": 1}], dtype=object))
        out.append(("a round file holding Python objects is refused as damaged, never unpickled",
                    _raises(lambda: D.read_rounds(os.path.join(tmp, "at")), "r6.npz: a damaged dump round file")))
        evil = dict(np.load(os.path.join(saved, "trace.npz")))
        evil["array_evil"] = np.array([{"a": 1}], dtype=object)
        np.savez(os.path.join(saved, "trace.npz"), **evil)
        out.append(("a trace.npz holding Python objects is refused, never unpickled",
                    _raises(lambda: Trace.load(saved), "Object arrays cannot be loaded when allow_pickle=False")))
        bad = os.path.join(tmp, "bad")
        w = DumpWriter(bad, rounds=1)

        def full(path, variables):
            raise OSError("no space left (planted)")
        kept, D.append_mat = D.append_mat, full                 # dump.mat's append fails
        try:
            w.put(1, x)
        finally:
            D.append_mat = kept
        left = sorted(os.listdir(os.path.join(bad, "dump")))
        out.append(("a round whose dump.mat append fails leaves no file of it (not even the temporary one)",
                    w.written == [] and left == [] and "round 1" in (w.stopped or "")))
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
        if bad == np.inf:
            out.append(("one infinite round is named in the singular: 'infinite at round 2'",
                        bool(rows) and rows[0].get("note") == "infinite at round 2"))
    out.append(("a round NaN on one side is named one-sided and not counted as compared (rounds 0 and 1 are)",
                bool(rows) and rows[0].get("one_sided") == [2] and rows[0].get("rounds") == 2))
    w1, w2 = np.array([[2.0, -1.0, 0.5], [0.25, 1.0, -0.5]]), np.ones((2, 2))
    a = Trace(config={}, metrics={"round": [0]}, snapshots={0: (w1, w2)})
    near = w1.copy()
    near[1, 2] += 1e-6
    rows = {r["what"]: r for r in crosscheck(a, Trace(config={}, metrics={"round": [0]}, snapshots={0: (near, w2)}))}
    out.append(("a snapshot's difference of 1e-6 where max|W1| is 2 is measured as 5e-7, each snapshot one round "
                "compared", abs(rows.get("W1@0", {}).get("rel", 0.0) - 5e-7) < 1e-12
                and rows.get("W2@0", {}).get("rel") == 0.0 and [rows.get(w, {}).get("rounds") for w in ("W1@0", "W2@0")]
                == [1, 1]))
    rows = {r["what"]: r for r in crosscheck(a, Trace(config={}, metrics={"round": [0]},
                                                        snapshots={0: (w1.reshape(3, 2), w2)}))}
    out.append(("a snapshot of another shape (the same entries, 3×2 for 2×3) differs, and counts as no round "
                "compared", rows.get("W1@0", {}).get("rel") == np.inf and rows.get("W1@0", {}).get("rounds") == 0))
    a = Trace(config={}, metrics={"round": [0, 1], "train_cost": [2.0, 1.0]})
    b = Trace(config={}, metrics={"round": [0, 1], "train_cost": [2.0, 1.0 + 1e-6]})
    rows = [r for r in crosscheck(a, b) if r["what"] == "train_cost"]
    out.append(("a difference of 1e-6 in a series whose largest value is 2 is measured as 5e-7 (its largest "
                "|Δ| 1e-6, where round 0 has none)",
                bool(rows) and abs(rows[0]["rel"] - 5e-7) < 1e-12 and abs(rows[0]["abs"] - 1e-6) < 1e-15))
    rows = [r for r in crosscheck(Trace(config={}, metrics={"round": [0], "x": [100.0]}),
                                  Trace(config={}, metrics={"round": [0], "x": [99.0]})) if r["what"] == "x"]
    out.append(("100 against 99 is a relative difference of 1/100 (the first trace's scale), not 1/99",
                bool(rows) and rows[0]["rel"] == 0.01))
    rows = {r["what"]: r for r in crosscheck(Trace(config={}, metrics={"round": [0, 1], "z": [1.0, 2.0]}),
                                             Trace(config={}, metrics={"round": [0, 1], "z": [np.nan, np.nan]}))}
    out.append(("a metric NaN in every round on one side is skipped, naming why (no round where both are finite), "
                "its differences NaN", rows.get("z", {}).get("skipped") is True
                and np.isnan(rows["z"].get("rel", 0.0)) and np.isnan(rows["z"].get("abs", 0.0))
                and rows.get("z", {}).get("note") == "not compared: no round where both traces have a finite value"))
    rows = {r["what"]: r for r in crosscheck(Trace(config={}, metrics={"round": [0, 1], "x": [], "y": [1.0, 2.0]}),
                                             Trace(config={}, metrics={"round": [0, 1], "y": [1.0]}))}
    out.append(("a metric with no values is not recorded (no row), and a series shorter than its rounds is named "
                "and not compared", "x" not in rows and rows.get("y", {}).get("skipped") is True
                and "the second trace has 1 values for 2 rounds" in rows.get("y", {}).get("note", "")))
    extra = ("m_f", "m_a", "m_e", "m_b", "m_d", "m_c")          # six names: in a set's order, sorted 1 time in 720
    rows = crosscheck(Trace(config={}, metrics={"round": [0], **{n: [1.0] for n in extra}}),
                      Trace(config={}, metrics={"round": [0]}))
    out.append(("metrics one trace alone records are listed by name, whatever order a set holds them in, each "
                "'not compared: only the first trace records it'",
                [r["what"] for r in rows if r.get("only")] == sorted(extra)
                and all(r.get("note") == "not compared: only the first trace records it" for r in rows)))
    both = {"round": [0], **{n: [1.0] for n in extra}}
    rows = crosscheck(Trace(config={}, metrics=both), Trace(config={}, metrics=dict(both)))
    out.append(("metrics both traces record are compared in name order", [r["what"] for r in rows] == sorted(extra)))
    rows = crosscheck(Trace(config={}, metrics={"round": list(range(8)), "x": [np.inf] * 7 + [1.0]}),
                      Trace(config={}, metrics={"round": list(range(8)), "x": [1.0] * 8}))
    out.append(("seven infinite rounds are named in the plural, the first five of them",
                [r.get("note") for r in rows] == ["infinite at rounds 0, 1, 2, 3, 4"]))
    rows = crosscheck(Trace(config={}, metrics={"round": [8, 1], "x": [np.inf, np.inf]}),
                      Trace(config={}, metrics={"round": [8, 1], "x": [1.0, 1.0]}))
    out.append(("infinite rounds are named in round order (1, 8), whatever order a set or the trace holds them in",
                [r.get("note") for r in rows] == ["infinite at rounds 1, 8"]))
    rows = crosscheck(Trace(config={}, metrics={"round": [0, 1, 2], "y": [1.0]}),
                      Trace(config={}, metrics={"round": [0, 1, 2], "y": [1.0, 2.0]}))
    out.append(("a series short on both sides is named by the first trace's count",
                [r.get("note") for r in rows] == ["not compared: the first trace has 1 values for 3 rounds (write one "
                                                  "value per metric_round entry, NaN where it was not evaluated)"]))
    out += _metric_round_cases()
    snaps = {r: (w1 * r, w2) for r in (130, 3, 64, 7)}          # a set of these iterates 64, 130, 3, 7
    rows = crosscheck(Trace(config={}, metrics={"round": [0]}, snapshots=snaps),
                      Trace(config={}, metrics={"round": [0]}, snapshots=dict(snaps)))
    out.append(("snapshots both traces hold are compared in round order (W1, W2 at each)",
                [r["what"] for r in rows if "@" in r["what"]] == [f"{w}@{r}" for r in sorted(snaps) for w in ("W1", "W2")]))
    return out + _snapshot_edge_cases(w1, w2) + _saved_trace_cases(w1, w2)


def _metric_round_cases():
    """(what, right): a metric one trace evaluates every round and the other every second round is
    compared on the rounds both evaluate, each series paired with its own trace's rounds."""
    from refimpl.core.trace import Trace, crosscheck
    out, every, second = [], [0, 1, 2, 3, 4], [0, 2, 4]
    for ra, rb, side in ((every, second, "second"), (second, every, "first")):
        va, vb = ([1.0 + r + (0.5 if r == 4 and ro is second else 0.0) for r in ro] for ro in (ra, rb))
        rows = crosscheck(Trace(config={}, metrics={"round": ra, "x": va}),
                          Trace(config={}, metrics={"round": rb, "x": vb}))
        out.append((f"a metric the {side} trace evaluates every second round is compared on its own rounds (0, 2 "
                    "and 4; 5.5 against 5 at round 4)", [(r["what"], r["rounds"], r["abs"]) for r in rows]
                    == [("x", 3, 0.5)] and rows[0].get("one_sided") == []))
    return out


def _snapshot_edge_cases(w1, w2):
    """(what, right): one NaN entry among finite ones in either trace's snapshot; the one-round
    shift found within the tolerance relative to the snapshot's size (1000 here, and with a zero
    entry); a kept round read
    back and one not kept refused; the atomic writer's failures — no room (ENOSPC) is named with
    the bytes needed, another OSError passes through unchanged, and neither leaves a temporary file."""
    from refimpl.core.trace import Trace, crosscheck, shifted_agreement
    one = w1.copy()
    one[0, 1] = np.nan
    row = {r["what"]: r for r in crosscheck(Trace(config={}, metrics={"round": [0]}, snapshots={0: (one, w2)}),
                                            Trace(config={}, metrics={"round": [0]}, snapshots={0: (w1, w2)}))}
    note = row.get("W1@0", {}).get("note", "")
    out = [("one NaN entry in the first trace's W1 is flagged there (not finite in the first), a round compared",
            row.get("W1@0", {}).get("rel") == np.inf and note.endswith("in the first")
            and row.get("W1@0", {}).get("rounds") == 1)]
    row = {r["what"]: r for r in crosscheck(Trace(config={}, metrics={"round": [0]}, snapshots={0: (w1, w2)}),
                                            Trace(config={}, metrics={"round": [0]}, snapshots={0: (one, w2)}))}
    note = row.get("W1@0", {}).get("note", "")
    out.append(("… and in the second trace's, there", row.get("W1@0", {}).get("rel") == np.inf
                and note == "not finite (NaN or inf) in the second"))
    row = {r["what"]: r for r in crosscheck(Trace(config={}, metrics={"round": [0]}, snapshots={0: (w1, w2)}),
                                            Trace(config={}, metrics={"round": [0]}, snapshots={0: (w1.T, w2)}))}
    out.append(("a transposed W1 differs by its shape, no value compared",
                row.get("W1@0") == {"what": "W1@0", "abs": np.inf, "rel": np.inf, "rounds": 0,
                                    "note": f"shape {w1.shape} vs {w1.T.shape}"}))
    zero = {r: (np.array([[0.0, 1000.0 + r]]), np.array([[1.0]])) for r in range(3)}
    zero_near = {r + 1: (zero[r][0] * (1 + 1e-10), zero[r][1]) for r in range(2)}
    agree1 = {r + 1: (np.array([[zero[r][0][0, 0], 5.0]]), zero[r][1]) for r in range(2)}   # one entry equal only
    out.append(("a shift is found only when every entry agrees, not one (W1's 0 entry alone)",
                shifted_agreement(Trace(config={}, metrics={}, snapshots=zero),
                                  Trace(config={}, metrics={}, snapshots=agree1), 1, 1e-9) is None))
    neg = {r["what"]: r for r in crosscheck(Trace(config={}, metrics={"round": [0, 1], "ll": [-1000.0, -2000.0]}),
                                            Trace(config={}, metrics={"round": [0, 1], "ll": [-1000.0, -2000.002]}))}
    out.append(("a negative metric's relative difference is against max|value| (0.002 / 2000 = 1e-6)",
                abs(neg["ll"]["rel"] - 1e-6) < 1e-12))
    out.append(("a shift's tolerance is relative to max|W|, not to its smallest entry (0 here): found within 1e-9",
                shifted_agreement(Trace(config={}, metrics={}, snapshots=zero),
                                  Trace(config={}, metrics={}, snapshots=zero_near), 1, 1e-9) == 1))
    big = {r: (w1 * 1000 + r, w2 + r) for r in range(3)}
    near = {r + 1: (big[r][0] * (1 + 1e-10), big[r][1]) for r in range(2)}       # their W_{r+1} = our W_r
    a, b = Trace(config={}, metrics={}, snapshots=big), Trace(config={}, metrics={}, snapshots=near)
    out.append(("a shift is found within 1e-9 relative to max|W| ≈ 2000 (differences ≈ 2e-7), not within 1e-11",
                shifted_agreement(a, b, 1, 1e-9) == 1 and shifted_agreement(a, b, 1, 1e-11) is None))
    try:
        a.iterate(7)
        refused = ""
    except KeyError as exc:
        refused = str(exc)
    out.append(("a kept round's iterate is read back; a round not kept is refused naming the kept ones",
                a.iterate(2)[1] is big[2][1] and refused == "'round 7 was not kept; snapshots at rounds [0, 1, 2] "
                "(choose them with Config.snapshots / --snapshots)'"))
    return out + _atomic_writer_case()


def _atomic_writer_case():
    """(what, right): the atomic writer's failures — no room (ENOSPC) is named with the bytes needed
    and the directory's free space, another OSError passes through unchanged, neither leaves a file."""
    import errno
    import os
    import shutil
    import tempfile

    from refimpl.core import trace as TR
    out = []
    import builtins
    kinds = []
    with tempfile.TemporaryDirectory() as tmp:
        # (the files written, the one that cannot be, the error): two files, the second failing with no room or
        # with another error; one file with no room for it
        for names, failing, code in ((("first", "second"), "second", errno.ENOSPC),
                                     (("first", "second"), "second", errno.EACCES), (("only",), "only", errno.ENOSPC)):
            def planted_open(path, *args, failing=failing, code=code, **kw):
                if path.endswith(f"{failing}.json.tmp"):
                    raise OSError(code, os.strerror(code), path)
                return builtins.open(path, *args, **kw)
            TR.open = planted_open
            try:
                TR._atomic_all([(os.path.join(tmp, f"{n}.json"), lambda buf: buf.write(b" " * 250_000))
                                for n in names])
                kinds.append(None)
            except (OSError, RuntimeError) as exc:
                need = f"{0.25 * len(names):.2f}"      # 250,000 bytes a file, in MB
                # the free space it names is the directory's (within 10 %: other writers may run meanwhile)
                free = str(exc).rpartition(" MB are free")[0].rpartition(" MB, ")[2]
                free_now = shutil.disk_usage(tmp).free / 1e6
                kinds.append((type(exc).__name__, str(exc).startswith(
                    f"no space left on the device to write {', '.join(os.path.join(tmp, n + '.json') for n in names)}: "
                    f"they need {need} MB, ") and str(exc).endswith(
                    " MB are free; nothing was replaced (free space, or choose another --out)")
                    and _float_or_nan(free) > 0.9 * free_now and _float_or_nan(free) < 1.1 * free_now))
            finally:
                del TR.open
        left = sorted(os.listdir(tmp))
    out.append(("a full disk is named with the bytes the files need (for one file too); another OSError passes "
                "through unchanged; neither leaves a file",
                kinds == [("DiskFull", True), ("PermissionError", False), ("DiskFull", True)] and left == []))
    import csv
    with tempfile.TemporaryDirectory() as tmp:
        TR.write_csv(os.path.join(tmp, "rows.csv"), [{"a": 1, "b": 2.5}, {"a": 3, "b": "x"}])
        with open(os.path.join(tmp, "rows.csv")) as fh:
            back = list(csv.DictReader(fh))
    out.append(("a CSV of two rows reads back as its header and both rows",
                back == [{"a": "1", "b": "2.5"}, {"a": "3", "b": "x"}]))
    return out


def _free_space_cases(tmp, DumpWriter):
    """(what, right): a dump estimated at exactly the free space is written, one byte more refused
    (a planted file system with 800 bytes free; two rounds of 400 bytes)."""
    import os

    class Free800(DumpWriter):
        def free_bytes(self, there):
            return 800
    fits, short = Free800(os.path.join(tmp, "fits"), 2, float("inf")), Free800(os.path.join(tmp, "short"), 1, 1e9)
    fits.put(1, {"x": np.zeros(50)})
    return [("a dump of exactly the free space (800 bytes) is written; one byte more is refused, naming both sizes",
             fits.written == [1] and _raises(lambda: short.put(1, {"x": np.zeros(100), "y": np.zeros(1, np.uint8)}),
                                             "would hold about 801 bytes but " + os.path.join(tmp, "short")
                                             + " has 800 bytes free"))]


def _printed(fn, *args, **kwargs):
    """(``fn(*args, **kwargs)``, what it printed to stdout and stderr)."""
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        got = fn(*args, **kwargs)
    return got, buf.getvalue()


def _configured_pair(cost):
    """Two planted traces of metrics only whose runs were configured differently: seed 1 vs 2 (both
    record it), the same batch, a hidden size the second alone records."""
    from refimpl.core.trace import Trace
    return (Trace(config={"seed": 1, "batch": 10}, metrics={"round": [0, 1], "train_cost": cost[:2]}),
            Trace(config={"seed": 2, "batch": 10, "hidden": 8}, metrics={"round": [0, 1], "train_cost": cost[:2]}))


def _crosscheck_cli_more():
    """(what, right): ``refimpl crosscheck``'s words on two more planted pairs — settings one run
    records and the other does not are no difference (either way round); rounds that agree under
    shifts of different signs name no shift."""
    from refimpl.core.trace import Trace
    from refimpl.tools.crosscheck import compare_runs
    traces, cost = _crosscheck_cli_traces()
    a, b = _configured_pair(cost)
    w = traces["a"][0]
    first = Trace(config={}, metrics={"round": [0, 1, 2, 3]}, snapshots=w)
    mixed = Trace(config={}, metrics={"round": [0, 1, 2, 3]}, snapshots={0: w[0], 1: w[2], 2: w[1], 3: w[3]})
    tripled = Trace(config={}, metrics={"round": [0, 1, 2, 3]}, snapshots={r: tuple(3.0 * u for u in w[r]) for r in w})
    said = [_printed(compare_runs, x, y, metrics_only=True) for x, y in ((b, a), (first, mixed), (first, tripled))]
    return [("refimpl crosscheck: a setting the second run does not record (hidden) is no difference either",
             "configured differently (seed: 2 vs 1); differences" in said[0][1]),
            ("refimpl crosscheck: round 1 equal to THEIR round 2 and round 2 to THEIR round 1 (shifts +1 and −1) "
             "names no shift of the whole trace", said[1][0] == 1 and "agree under a shift" not in said[1][1]
             and "(equals the second trace's round 2)" in said[1][1]),
            ("refimpl crosscheck: a snapshot difference is relative to the first trace (the second three times it: "
             "relative 2)", said[2][0] == 1 and "relative 2.000e+00  DIFFERS" in said[2][1])]


def _short_run_cases(tmp, full):
    """(what, right): ``refimpl crosscheck`` of a run that diverged after round 1 (its trace holds rounds
    0 and 1, equal to the full run's) against the full run (rounds 0..3), both ways: the full run's
    costs at rounds 2 and 3 have nothing to be compared with (exit 1, the rounds and the side named),
    the diverged run is named first; --allow-missing train_cost accepts them (exit 0); a finished
    run is not named."""
    import os

    from refimpl.core.trace import Trace
    from refimpl.tools.crosscheck import compare_runs, load_side
    snaps, metrics = full
    Trace(config={}, metrics={"round": [0, 1], "train_cost": metrics["train_cost"][:2]},
          snapshots={r: snaps[r] for r in (0, 1)}, status="diverged: round 2: planted").save(os.path.join(tmp, "short"))
    Trace(config={}, metrics={"round": [0, 1, 2, 3], **metrics}, snapshots=snaps,
          status="finished").save(os.path.join(tmp, "full"))
    short, whole = (load_side(os.path.join(tmp, n)) for n in ("short", "full"))
    (code, said), (back, said_back) = _printed(compare_runs, short, whole), _printed(compare_runs, whole, short)
    allowed = _printed(compare_runs, short, whole, allow_missing="train_cost")
    three = Trace(config={}, metrics={"round": [0, 1, 2], "train_cost": metrics["train_cost"][:3]},
                  snapshots={r: snaps[r] for r in (0, 1, 2)})
    one = _printed(compare_runs, three, whole)[1]
    three.status = "solver failed: round 3: planted"
    failed = _printed(compare_runs, three, whole)[1]
    return [("refimpl crosscheck: a run that diverged after round 1 against the full run: the full run's costs at "
             "rounds 2, 3 not compared (exit 1), its run named as not finished",
             code == 1 and "not compared: train_cost at rounds 2, 3 of the second trace only (the other trace holds "
             "no such round)" in said and "note: the first trace's run did not finish (diverged: round 2: planted)"
             in said and "compared 4 snapshot arrays and 1 metrics (2 metric values)" in said),
            ("… the other way round: the first trace's rounds, the second run named", back == 1
             and "train_cost at rounds 2, 3 of the first trace only" in said_back
             and "note: the second trace's run did not finish" in said_back
             and "the first trace's run" not in said_back),
            ("… and exit 0 with --allow-missing train_cost", allowed[0] == 0 and "not compared" not in allowed[1]),
            ("… a run one round short: 'train_cost at round 3 of the second trace only'; a run of unknown status "
             "not named", "train_cost at round 3 of the second trace only" in one and "did not finish" not in one),
            ("… and one whose solver failed at round 3 is named (SSCA's 'solver failed: …')",
             "note: the first trace's run did not finish (solver failed: round 3: planted)" in failed)]


def _crosscheck_cli_traces():
    """The planted traces of :func:`_crosscheck_cli_cases`, {name: (snapshots, metrics)}, and their
    training cost."""
    w = {r: (np.array([[2.0, -1.0], [0.5, 1.0]]) * (r + 1), np.array([[1.0, 0.0, -3.0]]) - r) for r in range(4)}
    other = (np.full((2, 2), 7.0), np.full((1, 3), 7.0))
    cost = [2.0, 1.5, 1.0, 0.5]
    traces = {"a": (w, {"train_cost": cost}), "same": (w, {"train_cost": cost}),
              "no-iterates": ({}, {"train_cost": cost}),
              "extra": (w, {"train_cost": cost, "test_accuracy": [0.1, 0.2, 0.3, 0.4]}),
              "nan": (w, {"train_cost": [2.0, 1.5, np.nan, 0.5]}),
              # their W_r = our W_{r-1}, then our W_{r+1}
              "late": ({0: other, **{r: w[r - 1] for r in (1, 2, 3)}}, {"train_cost": cost}),
              "early": ({**{r: w[r + 1] for r in (0, 1, 2)}, 3: other}, {"train_cost": cost}),
              "rounds-only": ({}, {}),
              "still": ({r: w[0] for r in range(4)}, {"train_cost": cost}),     # iterates that never move
              "iterates-only": (w, {}),                                         # a .mat of snapshots, as read
              # at 1e6 scale a difference of 1e-4 is 1e-10 relative: within --tol 1e-8, though 1e-4 absolute
              "large": ({r: tuple(x * 1e6 for x in w[r]) for r in w}, {"train_cost": [c * 1e6 for c in cost]}),
              "large-off": ({r: tuple(x * 1e6 + 1e-4 for x in w[r]) for r in w},
                            {"train_cost": [c * 1e6 + 1e-4 for c in cost]}),
              # at 1e-12 scale a difference of 1e-12 is 50 % relative: beyond --tol 1e-8, though tiny absolute
              "small": ({r: tuple(x * 1e-12 for x in w[r]) for r in w}, {"train_cost": [c * 1e-12 for c in cost]}),
              "small-off": ({r: tuple(x * 1e-12 + 1e-12 for x in w[r]) for r in w},
                            {"train_cost": [c * 1e-12 for c in cost]})}
    return traces, cost


def _crosscheck_cli_cases():
    """(what, right): ``refimpl crosscheck A B``'s verdict on saved planted traces — its exit code (0:
    every quantity compared and within --tol; 1: a difference, or something left uncompared) and the
    words it prints, written out here."""
    import os
    import tempfile

    from refimpl.core.trace import Trace
    from refimpl.tools.crosscheck import compare_runs, load_side
    traces, cost = _crosscheck_cli_traces()
    cases = [  # (what, first, second, flags, exit code, words its output holds)
        ("identical traces agree at --tol 0", "a", "same", dict(tol=0.0), 0,
         "compared 8 snapshot arrays and 1 metrics"),
        ("no common snapshot is exit 1", "no-iterates", "a", {}, 1, "no iterates were compared"),
        ("no snapshot and no metric on one side is exit 2 (nothing compared), even with --metrics-only and the "
         "other's metric allowed", "rounds-only", "no-iterates", dict(metrics_only=True, allow_missing="train_cost"),
         2, "share no snapshot round and no metric"),
        ("… and a metric of one side is not excused as 'the other holds iterates only' when it holds none",
         "no-iterates", "rounds-only", dict(metrics_only=True), 2, "only the first trace records it\n"),
        ("… and exit 0 with --metrics-only", "no-iterates", "a", dict(metrics_only=True), 0, "only metrics"),
        ("a metric of one trace only is not compared: exit 1", "extra", "a", {}, 1, "not compared: test_accuracy"),
        ("… and exit 0 when --allow-missing names it (spaces around a name dropped)", "extra", "a",
         dict(allow_missing="train_cost, test_accuracy ,"), 0, "ok"),
        ("NaN on the second side is not compared: exit 1", "a", "nan", {}, 1,
         "train_cost at 1 round (NaN on one side: not evaluated there)"),
        ("NaN on the first side as well", "nan", "a", {}, 1, "train_cost at 1 round (NaN on one side"),
        ("… and exit 0 when --allow-missing names the metric with the NaN", "a", "nan",
         dict(allow_missing="train_cost"), 0, "ok"),
        ("their snapshots one round late are named as a shift", "a", "late", {}, 1,
         "first trace's W_r = second's W_{r+1}"),
        ("their snapshots one round early too", "a", "early", {}, 1, "first trace's W_r = second's W_{r-1}"),
        ("… and each shifted row names the second trace's round it equals (W1@2: their round 3)", "a", "late", {}, 1,
         "(equals the second trace's round 3)"),
        ("a trace of iterates only (a .mat's snapshots) against one with metrics: its missing metric is named, not "
         "counted, and the iterates agree: exit 0", "a", "iterates-only", {}, 0,
         "only the first trace records it (the other holds iterates only)"),
        ("--tol is relative: a difference of 1e-4 at scale 1e6 agrees at --tol 1e-8", "large", "large-off",
         dict(tol=1e-8), 0, "compared 8 snapshot arrays and 1 metrics"),
        ("… and a difference of 1e-12 at scale 1e-12 differs", "small", "small-off", dict(tol=1e-8), 1,
         "max|Δ| 1.000e-12  relative 5.000e-01  DIFFERS"),
    ]
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (snaps, metrics) in traces.items():
            Trace(config={}, metrics={"round": [0, 1, 2, 3], **metrics}, snapshots=snaps).save(os.path.join(tmp, name))
        for what, first, second, flags, code, words in cases:
            got, said = _printed(compare_runs, load_side(os.path.join(tmp, first)),
                                 load_side(os.path.join(tmp, second)), **flags)
            # iterates on both sides are compared: never the words for none compared
            none_said = bool(traces[first][0] and traces[second][0]) and "no iterates were compared" in said
            out.append((f"refimpl crosscheck: {what}", got == code and words in said and not none_said))
        out += _short_run_cases(tmp, traces["a"])
        got, said = _printed(compare_runs, load_side(os.path.join(tmp, "still")), load_side(os.path.join(tmp, "still")))
        out.append(("refimpl crosscheck: snapshots that agree round by round are not said to agree under a shift, "
                    "even when the iterates never move (W_r = W_{r+1})",
                    got == 0 and "shift" not in said and "equals the second trace" not in said))
    a, b = _configured_pair(cost)
    said = _printed(compare_runs, a, b, metrics_only=True)[1]
    out.append(("refimpl crosscheck refuses --tol -1e-9 and --tol inf (a relative difference is finite, ≥ 0)",
                all(_raises(lambda t=t: compare_runs(a, a, tol=t), "--tol must be a finite number >= 0")
                    for t in (-1e-9, np.inf))))
    out.append(("refimpl crosscheck notes the settings both runs record and set apart (seed 1 vs 2), not one only "
                "(hidden) nor equal ones (batch)",
                "configured differently (seed: 1 vs 2); differences" in said))
    return out


def _float_or_nan(text):
    try:
        return float(text)
    except ValueError:
        return float("nan")


def _saved_trace_cases(w1, w2):
    """(what, right): traces written and read back — their snapshots come back as saved (W1 and W2
    apart), so crosscheck of two saved runs that differ in W2 only finds it there."""
    import os
    import tempfile

    from refimpl.core.trace import Trace, crosscheck
    other = w2.copy()
    other[0, 1] = 3.0
    with tempfile.TemporaryDirectory() as tmp:
        for name, pair in (("a", (w1, w2)), ("b", (w1, other))):
            Trace(config={}, metrics={"round": [0]}, snapshots={0: pair}).save(os.path.join(tmp, name))
        a, b = (Trace.load(os.path.join(tmp, name)) for name in ("a", "b"))
        lone = os.path.join(tmp, "lone.npz")
        np.savez(lone, W1_3=w1)
        try:
            Trace.load(lone)
            unpaired = ""
        except ValueError as exc:
            unpaired = str(exc)
    rows = {r["what"]: r for r in crosscheck(a, b)}
    return [("a W1 snapshot without its W2 is refused, naming the missing one and how snapshots are named",
             unpaired.endswith("lone.npz: W1_3 has no W2_3 (iterate snapshots come in pairs W1_<round>, W2_<round>)")),
            ("two saved runs differing in one entry of W2 load back as saved, and crosscheck finds the difference in "
             "W2 (2 of max 1) and none in W1",
             np.array_equal(a.snapshots[0][0], w1) and np.array_equal(a.snapshots[0][1], w2)
             and rows.get("W1@0", {}).get("abs") == 0.0 and rows.get("W2@0", {}).get("abs") == 2.0)]


def _planted_adapter(own, family, output, corrupt):
    """refimpl's own adapter with ``family``'s output ``output`` (its position) passed through
    ``corrupt`` (None: the family's function is missing)."""
    import types
    fns = {name: getattr(own, name) for name in dir(own) if not name.startswith("_") and callable(getattr(own, name))}
    if corrupt is None:
        fns.pop(family)
    else:
        orig = fns[family]

        def planted(*args):
            out = list(orig(*args))
            out[output] = corrupt(np.array(out[output], dtype=np.float64))
            return tuple(out)
        fns[family] = planted
    return types.SimpleNamespace(**fns)


def _two_ulps_second(a):
    a = np.array(a, dtype=float)
    a.flat[1] = np.nextafter(np.nextafter(a.flat[1], np.inf), np.inf)
    return a


def _nan_at(i):
    """An output corruption: entry i (row-major) set to NaN."""
    def corrupt(a):
        a.flat[i] = np.nan
        return a
    return corrupt


def _returning(own, family, shape):
    """refimpl's own adapter whose ``family`` returns its outputs re-packed by ``shape(outputs,
    names)`` (a dict, a bare value, too few values …)."""
    import types

    from refimpl.conformance.vectors import families
    fns = {name: getattr(own, name) for name in dir(own) if not name.startswith("_") and callable(getattr(own, name))}
    orig, names = fns[family], families()[family].outputs

    def planted(*args):
        got = orig(*args)
        return shape(list(got) if isinstance(got, (tuple, list)) else [got], names)
    fns[family] = planted
    return types.SimpleNamespace(**fns)


def _return_and_compare_cases(own, docs):
    """(what, right): how an adapter may return its outputs (a tuple, a dict by name, a bare value
    for one output) and what is refused (a name missing, the wrong count, a value that is not a
    number); the comparison of text, empty, one-element and whole-number values."""
    from refimpl.conformance.harness import compare, run_case
    grad, move = docs["loss_grad"]["cases"][0], docs["move"]["cases"][0]
    shapes = [("outputs returned as a dict by name pass", "loss_grad", grad, lambda g, n: dict(zip(n, g)), "pass", ""),
              ("a dict's outputs are read by name, not by order", "loss_grad", grad,
               lambda g, n: dict(reversed(list(zip(n, g)))), "pass", ""),
              ("a dict without one output fails, naming it", "loss_grad", grad,
               lambda g, n: dict(zip(n[:-1], g[:-1])), "fail", "returned no ['grad_W2']"),
              ("a bare value for a one-output family passes", "move", move, lambda g, n: g[0], "pass", ""),
              ("too few values fail, naming the count", "loss_grad", grad, lambda g, n: tuple(g[:2]), "fail",
               "returned 2 values, expected 3 (loss, grad_W1, grad_W2)"),
              ("too many values fail, naming the count", "loss_grad", grad, lambda g, n: (*g, g[0]), "fail",
               "returned 4 values, expected 3"),
              ("a value that is not a number fails", "move", move, lambda g, n: "abc", "fail",
               "omega_next: not numeric")]
    out = []
    for what, fam, case, shape, outcome, words in shapes:
        got, msg = run_case(_returning(own, fam, shape), fam, case)
        out.append((what, got == outcome and words in msg))
    out.append(("text values compare exactly (an object that only prints as the text is not it); empty arrays "
                "agree; one element agrees with a scalar",
                compare("rule", "paper", "paper", {"rel": 0}) is None
                and "expected 'paper', got 'authors'" in (compare("rule", "paper", "authors", {"rel": 0}) or "")
                and compare("rule", "paper", "Paper", {"rel": 0}) is not None
                and compare("rule", "paper", pathlib.PurePosixPath("paper"), {"rel": 0}) is not None
                and compare("w", np.zeros((0, 3)), np.zeros((0, 3)), {"rel": 0}) is None
                and compare("x", 2.0, np.array([2.0]), {"rel": 0}) is None))
    from refimpl.conformance.vectors import encode
    out.append(("whole-number scalars are written as integers, reals as floats (an adapter gets a count as an int)",
                type(encode(np.int64(3))) is int and type(encode(np.float64(3.0))) is float
                and encode(np.arange(2))["data"] == [0, 1] and type(encode(np.arange(2))["data"][0]) is int))
    from refimpl.conformance.harness import ulp_distance
    tiny = np.nextafter(0.0, 1.0)
    pairs = [(-0.0, 0.0, 0), (0.0, -0.0, 0), (tiny, -tiny, 2), (-tiny, tiny, 2), (0.0, tiny, 1), (tiny, 0.0, 1),
             (0.0, -tiny, 1), (-1.0, np.nextafter(-1.0, -2.0), 1)]
    out.append(("ulps are counted through zero, either side first: ±0 are 0 apart, ±(the least subnormal) 2, +0 "
                "from either 1, −1 from its neighbour 1", all(ulp_distance(a, b) == n for a, b, n in pairs)))
    big = np.array([1000.0, 1.0, 1.0, 1.0])                # max|expected| 1000, mean 250.75
    out.append(("the relative tolerance scales with max|expected|: an error of 5e-10 in a small entry passes at "
                "rel 1e-12 (limit 1e-9), 2e-9 fails; the same for negative outputs",
                compare("v", big, big + [0, 5e-10, 0, 0], {"rel": 1e-12}) is None
                and compare("v", big, big + [0, 2e-9, 0, 0], {"rel": 1e-12}) is not None
                # … by its size: negative outputs (max|expected| 1000) the same
                and compare("v", -big, -big - [0, 5e-10, 0, 0], {"rel": 1e-12}) is None
                and compare("v", -big, -big - [0, 2e-9, 0, 0], {"rel": 1e-12}) is not None))
    out.append(("whole numbers under a relative tolerance are compared with it (3.5 for 3 at rel 0.01 fails on the "
                "tolerance; 3.02 passes)",
                "rel tolerance 0.01" in (compare("n", np.int64(3), 3.5, {"rel": 0.01}) or "")
                and compare("n", np.int64(3), 3.02, {"rel": 0.01}) is None))
    out.append(("a NaN against a whole number is shown as nan, and 2.5 as 2.5, not as a whole number",
                "got nan, expected 3" in (compare("index", np.int64(3), np.nan, {"rel": 0}) or "")
                and "got 2.5, expected 3" in (compare("index", np.int64(3), 2.5, {"rel": 0}) or "")))
    return out


def _npz_export_case(docs):
    """(what, right): the NPZ export (for other languages) holds each case's inputs and expected
    outputs as they were generated, also for a family whose input and output share a name (the
    surrogate recursion's A, B, C)."""
    import json
    import os
    import tempfile

    from refimpl.conformance import vectors as V
    from refimpl.conformance import harness as H
    from refimpl.core.runtime import environ
    fam = "surrogate_update"
    with tempfile.TemporaryDirectory() as tmp:
        V.export(tmp, fmt="npz")
        meta = json.loads(pathlib.Path(tmp, f"{fam}.meta.json").read_text())
        with np.load(os.path.join(tmp, f"{fam}.npz")) as z:
            arrays = {k: z[k] for k in z.files}
    with tempfile.TemporaryDirectory() as tmp:
        V.export(tmp, papers=(V.families()[fam].paper,), fmt="json")   # one paper's families: not generate()'s
        with environ({H.VECTORS_ENV: tmp}):          # the harness tests the vectors of REFIMPL_VECTORS
            chosen = H.documents()
    with tempfile.TemporaryDirectory() as tmp:                  # the MATLAB export holds the same arrays
        V.export(tmp, papers=(V.families()[fam].paper,), fmt="mat")
        from scipy.io import loadmat
        mat = loadmat(os.path.join(tmp, f"{fam}.mat"))
    right = all(np.array_equal(np.ravel(mat[k]), np.ravel(v)) for k, v in arrays.items())
    for case, m in zip(docs[fam]["cases"], meta["cases"]):
        for where, key in m["arrays"].items():
            part, name = where.split(".", 1)
            right &= np.array_equal(arrays[key], np.asarray(V.decode(case[part][name])))
    own = sorted(f for f, r in V.families().items() if r.paper == V.families()[fam].paper)
    same = len(own) < len(docs) and sorted(chosen) == own and all(
        np.array_equal(np.asarray(V.decode(a["expected"][k])), np.asarray(V.decode(b["expected"][k])))
        for f in own for a, b in zip(chosen[f]["cases"], docs[f]["cases"]) for k in b["expected"])
    return ("the NPZ export (and the .mat one) holds every case's inputs and expected outputs apart, also where they "
            "share a name; "
            "REFIMPL_VECTORS makes the harness test the exported directory (one paper's families, as exported)",
            bool(right) and len(meta["cases"]) == len(docs[fam]["cases"]) and bool(same))


def _decode_case(V):
    """(what, right): an array another writer exported with whole numbers among floats (JSON's 1 for
    1.0) is read as floats; whole numbers only, as integers; no entries, as floats."""
    decoded = [V.decode({"shape": sh, "data": d}) for sh, d in (([2], [1, 2.5]), ([1, 2], [1, 2]), ([0], []))]
    return ("an array's values read as floats when any is a float (none: floats), as integers when all are whole",
            [(a.dtype.kind, a.shape, a.tolist()) for a in decoded]
            == [("f", (2,), [1.0, 2.5]), ("i", (1, 2), [[1, 2]]), ("f", (0,), [])])


def _loader_refusals(tmp):
    """(what, right): the vectors' loader refuses a directory without a manifest, a manifest
    without its files table, another export format, and a listed file that is missing."""
    import json
    import os

    from refimpl.conformance import vectors as V
    out = []
    for what, manifest, words in (("no manifest", None, "no manifest.json"),
                                  ("a manifest without a files table", {"format": "json"}, "a 'files' table"),
                                  ("another export format", {"format": "npz", "files": {}}, "holds npz"),
                                  ("a listed file that is missing", {"files": {"gone.json": "0" * 64}},
                                   "listed in the manifest but missing")):
        d = os.path.join(tmp, what.replace(" ", "-"))
        os.makedirs(d)
        if manifest is not None:
            with open(os.path.join(d, "manifest.json"), "w") as fh:
                json.dump(manifest, fh)
        out.append((f"the loader refuses {what}", _raises(lambda: V.load(d), words)))
    return out


def _adapter_choice_case():
    """(what, right): which adapter the harness tests — refimpl's own when REFIMPL_IMPL is unset, the
    named module when it is set, a one-line refusal when it is set but blank or names a module that
    does not import."""
    from refimpl.conformance import harness as H
    from refimpl.core.runtime import environ
    with environ({H.IMPL_ENV: None}):
        own = H.adapter_module().__name__
    with environ({H.IMPL_ENV: " refimpl.conformance.numpy_adapter "}):
        named = H.adapter_module().__name__

    def refusal(value):
        with environ({H.IMPL_ENV: value}):
            try:
                H.adapter_module()
                return ""
            except RuntimeError as exc:
                return str(exc)
    blank, absent = refusal("  "), refusal("planted_no_such_adapter")
    from refimpl.conformance import vectors as V
    try:
        getattr(V, "NO_SUCH_NAME")
        unknown = False
    except AttributeError:
        unknown = True
    return ("REFIMPL_IMPL unset tests refimpl's adapter, set tests the module it names, blank or a module that does "
            "not import is refused, naming it; the vectors' FAMILIES and PAPERS are the registry's, another name is no "
            "attribute",
            own == "refimpl.conformance.adapter" and named == "refimpl.conformance.numpy_adapter"
            and "is set but empty" in blank and absent.startswith(
                "REFIMPL_IMPL=planted_no_such_adapter: cannot import the adapter module (")
            and V.FAMILIES == V.families() and V.PAPERS == V.paper_names()
            and unknown)


def _family_twice_case(V):
    return ("a conformance family defined twice (a module read twice) is refused, naming it",
            _raises(lambda: V.families((V.CORE_FAMILIES, V.CORE_FAMILIES)),
                    "families.core: conformance family 'loss_grad' is defined twice"))


def _relu_at_zero_case(V, numpy_adapter):
    """(what, right): a ReLU pre-activation exactly 0 with its input row non-zero (x = (1, −1), w = (1, 1)):
    the subgradient 0 there, in refimpl's family and in the plain-NumPy transcription alike (no
    published vector has such an entry)."""
    ins = dict(W1=np.array([[1.0, 1.0], [0.3, -0.2]]), W2=np.array([[0.5, -1.0], [0.2, 0.7]]),
               X=np.array([[1.0, -1.0], [0.5, 2.0]]), y=np.array([0, 1]), activation="relu", bias=False)
    ours = V.families()["loss_grad"].evaluate(ins)
    theirs = numpy_adapter.loss_grad(*(ins[k] for k in ("W1", "W2", "X", "y", "activation", "bias")))
    # by hand: sample 0 passes no gradient through unit 0 (z = 0), so grad_W1[0] is sample 1's alone
    right = all(np.allclose(np.asarray(ours[k]), np.asarray(v), rtol=1e-13, atol=1e-15)
                for k, v in zip(("loss", "grad_W1", "grad_W2"), theirs))
    return ("a ReLU pre-activation exactly 0 (input (1, −1), weights (1, 1)) takes the subgradient 0 in refimpl's "
            "loss_grad and in the plain-NumPy transcription alike", right)


def _harness_cases():
    """(what, right) for the conformance harness's comparison and the vectors' export and load.
    Each planted adapter is refimpl's own with one output of one family changed; the answer the
    harness must give (outcome and the words of its message) is written out here."""
    import json
    import os
    import tempfile

    from refimpl.conformance import adapter as own
    from refimpl.conformance import vectors as V
    from refimpl.conformance.harness import run_case
    out = [_adapter_choice_case(), _family_twice_case(V)]
    docs = V.generate()
    n = sum(len(d["cases"]) for d in docs.values())
    results = [run_case(own, f, c)[0] for f, d in docs.items() for c in d["cases"]]
    out.append((f"refimpl's own adapter passes all {n} vectors", results == ["pass"] * n))
    from refimpl.conformance import numpy_adapter
    results = [run_case(numpy_adapter, f, c)[0] for f, d in docs.items() for c in d["cases"]]
    out.append((f"an independent plain-NumPy transcription (refimpl/conformance/numpy_adapter.py, no refimpl import) "
                f"passes all {n} vectors: their expected values are the equations'", results == ["pass"] * n))
    out.append(_relu_at_zero_case(V, numpy_adapter))
    grad = docs["loss_grad"]["cases"][0]                    # outputs loss, grad_W1 (5, 7), grad_W2 (4, 5)
    planted = [  # (what, family, case, output position, corruption, outcome, words the message holds)
        ("a NaN in one entry fails, naming the entry", "loss_grad", grad, 1, _nan_at(0), "fail", "grad_W1[0, 0]: got nan"),
        ("… at row 0, column 1 of a 5 × 7 output: that entry, not its transpose's", "loss_grad", grad, 1,
         _nan_at(1), "fail", "grad_W1[0, 1]: got nan"),
        ("2 ulps in the second entry fail, naming it", "exp_nonpos", docs["exp_nonpos"]["cases"][0], 0,
         _two_ulps_second, "fail", "[1]: got"),
        ("an output one entry short fails on its shape", "loss_grad", grad, 1, lambda a: a.ravel()[:-1], "fail",
         "grad_W1: shape (34,), expected (5, 7)"),
        ("a transposed output fails on its shape", "loss_grad", grad, 1, lambda a: a.T, "fail", "shape (7, 5)"),
        ("a flattened output fails on its shape", "loss_grad", grad, 2, lambda a: a.ravel(), "fail", "shape (20,)"),
        ("a relative error of 1e-9 fails a 1e-12 tolerance", "loss_grad", grad, 1,
         lambda a: a * (1 + 1e-9), "fail", " > rel tolerance 1e-12 × max|expected| "),
        ("a relative error of 1e-14 passes a 1e-12 tolerance", "loss_grad", grad, 1,
         lambda a: a * (1 + 1e-14), "pass", ""),
        ("2 ulps fail a 1-ulp tolerance", "exp_nonpos", docs["exp_nonpos"]["cases"][0], 0,
         lambda a: np.nextafter(np.nextafter(a, np.inf), np.inf), "fail", "2 ulps; tolerance 1 ulps"),
        ("a whole number off by 0.5 fails, shown as it is", "partition", docs["partition"]["cases"][0], 0,
         lambda a: a + 0.5, "fail", "whole numbers, compared exactly"),
        ("an infinite entry fails", "loss_grad", grad, 2, lambda a: a + np.inf, "fail", "got inf"),
        ("a missing function is skipped and said so", "loss_grad", grad, 0, None, "skip", "no function 'loss_grad'"),
    ]
    for what, fam, case, k, corrupt, outcome, words in planted:
        got, msg = run_case(_planted_adapter(own, fam, k, corrupt), fam, case)
        out.append((what, got == outcome and words in msg))
    out += _return_and_compare_cases(own, docs)
    with tempfile.TemporaryDirectory() as tmp:
        out += _loader_refusals(tmp)
    out.append(_decode_case(V))
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "stale_family.json"), "w") as fh:       # an earlier export's file
            fh.write("{}")
        V.export(tmp, overwrite=True)
        out.append(("an earlier export's file that the new manifest does not list is removed",
                    not os.path.exists(os.path.join(tmp, "stale_family.json"))))
        back = V.load(tmp)
        out.append(("exported vectors load back as generated (every family, every case)",
                    sorted(back) == sorted(docs) and all(json.dumps(back[f], sort_keys=True) ==
                                                         json.dumps(docs[f], sort_keys=True, default=str) for f in docs)))
        out.append(_npz_export_case(docs))
        damages = [("an edited vector file", "loss_grad.json", lambda t: t.replace('"tol"', '"tol" ', 1), "SHA-256"),
                   ("a file the manifest does not list", "extra.json", None, "extra.json not listed in manifest.json "
                    "(vectors of another export, or added by hand); export again into an empty directory or with "
                    "--overwrite"),
                   ("an NPZ file the manifest does not list", "extra.npz", None, "not listed in manifest.json"),
                   ("a damaged manifest", "manifest.json", lambda t: t[:-20], "damaged manifest")]
        for what, name, edit, words in damages:
            path = os.path.join(tmp, name)
            before = pathlib.Path(path).read_text() if os.path.exists(path) else None
            with open(path, "w") as fh:
                fh.write("{}" if edit is None else edit(before))
            out.append((f"{what} is refused on load", _raises(lambda: V.load(tmp), words)))
            if before is None:
                os.remove(path)
            else:
                with open(path, "w") as fh:
                    fh.write(before)
    return out + _stale_file_cases(V)


def _stale_file_cases(V):
    """(what, right): the files an export removes as stale, on a directory of planted names."""
    import os
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        names = [f"{c}{i}.{ext}" for i, c in enumerate("zyxwvutsrqpo") for ext in ("json", "npz", "mat", "txt")]
        for n in names + ["manifest.json"]:
            open(os.path.join(tmp, n), "w").close()
        os.mkdir(os.path.join(tmp, "sub.json"))
        want = sorted(n for n in names if not n.endswith(".txt") and not n.startswith("z"))
        return [("the files an export would remove: its kinds (.json, .npz, .mat) not listed, in name order; "
                 "never the manifest, another kind or a directory",
                 V.stale_files(tmp, [n for n in names if n.startswith("z")]) == want)]


def _cases_result(cases, planted=""):
    """A check's record from its (what, right) cases: the count of wrong answers, bound 0."""
    wrong = [what for what, right in cases if not right]
    return {"measured": len(wrong), "bound": 0, "holds": not wrong,
            "note": f"{len(cases)} {planted}cases ({len(cases) - len(wrong)} answered right)",
            "details": {"cases": [what for what, _ in cases], "wrong": wrong}}


@check("tools.conformance", "every vector's expected values agree with an independent plain-NumPy transcription of "
       "the equations; the conformance harness fails an adapter whose output differs from a vector and passes "
       "one that matches: NaN and inf, an output one entry short, transposed or flattened, an error beyond the "
       "relative (× max|expected|) or ulp tolerance (ulps counted through zero) and a whole number off by 0.5 fail "
       "naming the entry, an "
       "error within the tolerance passes, a missing function is skipped; outputs by name or bare pass, a missing "
       "name, the wrong count, a non-number or text in another case fail; exported vectors load back as generated "
       "(JSON and NPZ), and an edited, unlisted or missing file, a damaged manifest or another format is refused; "
       "an export removes as stale only its own kinds of file its manifest does not list; "
       "REFIMPL_IMPL chooses the adapter (unset: refimpl's; blank: refused) (wrong answers: 0)",
       "refimpl vectors / python -m pytest --pyargs refimpl.conformance; docs/conformance.md")
def conformance_harness(quick):
    return _cases_result(_harness_cases(), "planted ")


@check("tools.command_decisions", "what refimpl's commands decide, through the functions they call: the cross-check "
       "tools (diagnose, crosscheck) refuse a --tol below 0, NaN or a boolean before reading a file, naming the option, "
       "and take --tol 0 (exact agreement) to the files; vectors export refuses a directory that is not empty unless "
       "told to overwrite, and counts as its vector files the ones it wrote (here: the .npz files, not their schemas "
       "and metadata); run and compare mfcgd evaluate every T/100 steps (at least 1; T = 2000 unless given) unless "
       "told, and compare mfcgd gives AdaMFCGD γρ for γ; run mfcgd refuses --data for a problem that reads none and "
       "reads it for drfl; a run whose cap c η_t² ≥ 1 acted says in which steps, per weight; run ssca and run vfl "
       "print a progress line at round 0 and every max(1, R // 20) rounds (SSCA also at round R), and on a terminal "
       "move the bar to each round; run ssca says a finished run's solver note; compare vfl --server-time refuses "
       "--seeds below 1 or fractional, and asks the regime table for the middle one of --targets, its protocol "
       "(tuned unless given) and seeds, a budget of 1000 unless given, one progress step per run, and prints each "
       "S's times, each baseline's ratios to Flex-VFL and their crossover; refimpl sweep reads a spec's values in "
       "their fields' types and names a spec's changes; reproduce --preset reaches every run (wrong answers: 0)",
       "refimpl diagnose / crosscheck / vectors export / run / compare vfl; docs/guide.md")
def command_decisions(quick):
    return _cases_result(_command_decision_cases())


def _command_decision_cases():
    import os
    import tempfile
    from types import SimpleNamespace

    from refimpl.conformance import vectors as V
    from refimpl.core.trace import Trace
    from refimpl.mfcgd.command import check_data_options, compared_configs, mfcgd_config, run_notes
    from refimpl.mfcgd.experiment import MFCGDConfig, run_mfcgd_config
    from refimpl.tools import diagnose as DG
    from refimpl.tools.crosscheck import compare_runs
    out = []
    some = Trace(config={}, metrics={"round": [0], "train_cost": [1.0]})
    for tol in (-1.0, np.nan, True):
        words = f"--tol must be a finite number >= 0 (a relative difference), got {tol}"
        out.append((f"diagnose and crosscheck refuse --tol {tol}, naming it",
                    _raises(lambda t=tol: DG.diagnose("no-ours", "no-theirs", tol=t), words)
                    and _raises(lambda t=tol: compare_runs(some, some, tol=t), words)))
    out.append(("diagnose --tol 0 reads the dumps (here: none there)",
                _raises(lambda: DG.diagnose("no-ours", "no-theirs", tol=0.0), "no-ours: no such file or directory")))
    with tempfile.TemporaryDirectory() as tmp:
        full = os.path.join(tmp, "full")
        os.makedirs(full)
        open(os.path.join(full, "kept.txt"), "w").close()
        out.append(("vectors export into a directory that is not empty: refused unless told to overwrite",
                    _raises(lambda: V.export(full, ("core",)), f"{full} is not empty; give --overwrite to replace its "
                                                            "vectors") and os.listdir(full) == ["kept.txt"]))
        empty = os.path.join(tmp, "empty")
        manifest = V.export(empty, ("core",), "npz")
        npz = sorted(f for f in os.listdir(empty) if f.endswith(".npz"))
        out.append((f"vectors export --format npz counts as vector files the {len(npz)} .npz files it wrote",
                    len(npz) > 0 and sorted(V.vector_files(manifest)) == npz))
    tr = run_mfcgd_config(MFCGDConfig(method="mfcgd", problem="synthetic", clients=2, dim=4, steps=4, c=1000.0))
    out.append(("a 4-step MFCGD run with c = 1000: the cap acted in steps 1..4 of each weight",
                run_notes(tr) == ["note: α_t, β_t, ϱ_t = c η_t² are capped at 1; the cap was active in steps 1..4 "
                                  "(alpha), 1..4 (beta), 1..4 (rho) (outside the theorems' n >= (c k)^3)"]))
    out.append(("… and none with c = 10 over 4 steps (c η_t² < 1)", run_notes(run_mfcgd_config(
        MFCGDConfig(method="mfcgd", problem="synthetic", clients=2, dim=4, steps=4))) == []))
    base = MFCGDConfig(gamma=0.5, rho=0.2)
    got = [(m, c.method, c.gamma) for m, c in compared_configs(base)]
    out.append(("compare mfcgd runs MFCGD, AdaMFCGD (γ scaled by ρ: 0.5 × 0.2), ComFedL and Local-SCGDM on one "
                "configuration", got == [("mfcgd", "mfcgd", 0.5), ("adamfcgd", "adamfcgd", 0.5 * 0.2),
                                         ("comfedl", "comfedl", 0.5), ("local-scgdm", "local-scgdm", 0.5)]))
    out.append(("run mfcgd refuses --data and --data-dir for a problem that reads none, and takes them for drfl",
                _raises(lambda: check_data_options("d.npz", "dir", "synthetic"), "--data and --data-dir change(s) "
                        "nothing for --problem synthetic: only --problem drfl (the distributionally robust classifier) "
                        "reads data; the other problems are drawn from --seed")
                and not _raises(lambda: check_data_options(None, None, "synthetic"), "")
                and not _raises(lambda: check_data_options("d.npz", None, "drfl"), "")))
    ui = SimpleNamespace(config=lambda args, key, method, **given: given)      # what the command hands on
    for steps, every, want in ((None, None, 20), (300, None, 3), (50, None, 1), (50, 7, 7)):
        got = mfcgd_config(SimpleNamespace(steps=steps, eval_every=every), ui, "mfcgd")
        out.append((f"mfcgd's options --steps {steps} --eval-every {every}: evaluated every {want}",
                    got == {"eval_every": want}))
    def reads(*options):
        try:
            return check_data_options(*options)
        except ValueError as exc:
            return f"refused: {exc}"
    out.append(("run mfcgd --problem drfl reads the data named by --data or --data-dir, and its default data without "
                "them", [reads("d.npz", None, "drfl"), reads(None, "d", "drfl"), reads(None, None, "drfl"),
                         reads(None, None, "synthetic")] == [True, True, False, False]))
    return out + _progress_line_cases() + _run_ending_cases() + _sweep_value_cases() + _sweep_spec_cases()


def _sweep_spec_cases():
    """(what, right): refimpl sweep names what changed between the spec a directory holds and a new
    one (a refused change, or a grown grid); reproduce --preset reaches every run of the plan."""
    from refimpl.tools.reproduce import plan_for
    from refimpl.tools.sweep import spec_difference, validate_spec
    old = {"runner": "ssca", "seeds": [0], "fixed": {"rounds": 5}, "grid": {"lam": [0.0, 0.1]}}
    new = {"runner": "ssca", "seeds": [0, 1], "fixed": {"rounds": 5}, "grid": {"lam": [0.0]}}
    presets = {cfg.preset for _, _, cfg in plan_for("ssca-sample", rounds=3, preset="authors")[0]}
    return [("refimpl sweep names a spec's changes, old -> new: the seeds and one grid list",
             spec_difference(old, new) == ["seeds: [0] -> [0, 1]", "grid.lam: [0.0, 0.1] -> [0.0]"]
             and spec_difference(old, old) == []),
            ("reproduce ssca-sample --preset authors runs every run under the authors' preset", presets == {"authors"}),
            ("a sweep spec without seeds runs seed 0; seeds = 2 runs seeds 0 and 1",
             [validate_spec({"runner": "ssca", "grid": {"lam": [0.0]}, **more})[3] for more in ({}, {"seeds": 2})]
             == [[0], [0, 1]])]


def _sweep_value_cases():
    """(what, right): a sweep spec's values in the types of their configuration fields (a spec's
    identity is by value): lam = 0 read as 0.0, a whole number kept whole; text or a boolean for a
    number and a float for a whole number refused, naming the field."""
    from refimpl.ssca.experiment import RunConfig
    from refimpl.tools.sweep import typed_value
    read = [typed_value(RunConfig, "lam", 0), typed_value(RunConfig, "rounds", 3)]
    return [("refimpl sweep reads lam = 0 as 0.0 and rounds = 3 as 3, and refuses lam = 'x' or true and rounds = 2.0",
             [(type(v).__name__, v) for v in read] == [("float", 0.0), ("int", 3)]
             and _raises(lambda: typed_value(RunConfig, "lam", "x"), "lam must be a number, got 'x'")
             and _raises(lambda: typed_value(RunConfig, "lam", True), "lam must be a number, got True")
             and _raises(lambda: typed_value(RunConfig, "rounds", 2.0), "rounds must be a whole number"))]


class _KeptLines:
    """A progress display written here: line mode keeps each line, bar mode each (postfix, position)."""

    def __init__(self, bar_mode):
        self.bar_mode, self.kept = bar_mode, []

    def __call__(self, msg="", n=None):
        self.kept.append((msg, n) if self.bar_mode else msg)


def _progress_line_cases():
    """(what, right): the progress of `refimpl run` for SSCA and Flex-VFL, rule and lines written out:
    without a terminal one line at round 0 and every max(1, R // 20) rounds (R = 45: every 2nd), SSCA's
    also at round R; on a terminal every report moves the bar to its round."""
    from types import SimpleNamespace

    from refimpl.ssca.command import round_reporter as ssca_reporter
    from refimpl.ssca.experiment import RunConfig
    from refimpl.vfl.command import round_reporter as vfl_reporter
    from refimpl.vfl.experiment import VFLConfig
    out = []
    m = {"train_cost": 0.5, "test_accuracy": 0.75}
    lines = _KeptLines(False)
    report = ssca_reporter(RunConfig("ssca", rounds=45), lines)
    for t in range(46):
        report(t, m)
    out.append(("run ssca, 45 rounds, no terminal: lines at rounds 0, 2, …, 44 and 45",
                [int(x.split("round")[1].split("/")[0]) for x in lines.kept] == list(range(0, 45, 2)) + [45]
                and lines.kept[5] == "[ssca/sample] round    10/45  cost 0.5000  test acc 0.7500"))
    lines = _KeptLines(False)
    ssca_reporter(RunConfig("ssca-constrained", rounds=45, U=0.2), lines)(
        45, dict(m, constraint_value=0.1, slack=0.01, multiplier=1.5))
    out.append(("a constrained round's line adds its constraint, U, slack and ν",
                lines.kept == ["[ssca-constrained/sample] round    45/45  cost 0.5000  test acc 0.7500  "
                               "constraint 0.1000 (U 0.2)  slack 0.01  ν 1.5"]))
    bar = _KeptLines(True)
    for t in (0, 1, 7):
        ssca_reporter(RunConfig("ssca", rounds=45), bar)(t, m)
    out.append(("on a terminal every SSCA report moves the bar to its round", bar.kept == [
        ("cost 0.5000 acc 0.7500", 0), ("cost 0.5000 acc 0.7500", 1), ("cost 0.5000 acc 0.7500", 7)]))
    for method, unit in (("flexvfl", "round"), ("async-vfl", "event")):
        lines, bar = _KeptLines(False), _KeptLines(True)
        tr = SimpleNamespace(metrics={"time": [0.0, 12.5], "test_accuracy": [0.1, 0.625]})
        for r in range(46):
            vfl_reporter(VFLConfig(method=method, rounds=45), lines)(r, tr)
        vfl_reporter(VFLConfig(method=method, rounds=45), bar)(3, tr)
        out.append((f"run {method}, 45 {unit}s, no terminal: lines at {unit}s 0, 2, …, 44 (a time budget may end it "
                    "first); on a terminal the bar moves to the report's", [int(x.split()[2]) for x in lines.kept]
                    == list(range(0, 45, 2)) and lines.kept[1] == f"[{method}] {unit}     2  time     12.50  test acc "
                    "0.6250" and bar.kept == [("time 12.5 acc 0.6250", 3)]))
    return out


def _run_ending_cases():
    """(what, right): what a run says when it ends, and the regime table's --seeds."""
    from refimpl.core.trace import Trace
    from refimpl.ssca.command import status_notes
    from types import SimpleNamespace

    from refimpl.vfl.regime import check_seeds, regime_table
    noted = Trace(config={}, metrics={}, status="finished: 5 rounds; solver note: inaccurate (2 rounds)")
    plain = Trace(config={}, metrics={}, status="finished: 5 rounds")
    return [("run ssca says a finished run's solver note, and not after an exit 3 or without one",
             status_notes(0, noted) == ["note: finished: 5 rounds; solver note: inaccurate (2 rounds)"]
             and status_notes(3, noted) == [] and status_notes(0, plain) == []),
            ("compare vfl --server-time takes --seeds 1 and 3, and refuses 0 and 2.5 naming --seeds (the regime "
             "table before anything else)",
             check_seeds(1) == 1 and check_seeds(3) == 3
             and _raises(lambda: check_seeds(0), "--seeds must be a positive integer, got 0")
             and _raises(lambda: check_seeds(2.5), "--seeds must be a positive integer, got 2.5")
             and _raises(lambda: regime_table(SimpleNamespace(time_budget=None), None, [0.0], "authors", seeds=0),
                         "--seeds must be a positive integer, got 0"))] + _regime_request_cases()


def _regime_request_cases():
    """(what, right): compare vfl --server-time's request to the regime table, written out: the
    middle target, the protocol, the seeds, the budget and one progress step per run."""
    from types import SimpleNamespace

    from refimpl.vfl.command import regime_request, regime_summary
    from refimpl.vfl.experiment import VFLConfig
    ui = SimpleNamespace(floats=lambda name, text: [float(v) for v in text.split(",")],
                         config=lambda args, key, method: VFLConfig(method=method, time_budget=args.time_budget))
    out = []
    for budget, protocol, want in ((None, None, ("tuned", 1000.0)), (50.0, "authors", ("authors", 50.0))):
        args = SimpleNamespace(server_time="0,2,8", protocol=protocol, seeds=3, targets="0.6,0.7,0.8,0.9",
                               time_budget=budget)
        cfg, table, total = regime_request(args, ui)
        out.append((f"compare vfl --server-time 0,2,8 --targets 0.6,…,0.9 --seeds 3 (--protocol {protocol}, "
                    f"--time-budget {budget}): target 0.8, protocol {want[0]}, budget {want[1]:g}, 3 × 4 runs",
                    table == {"server_times": [0.0, 2.0, 8.0], "protocol": want[0], "target": 0.8, "seeds": 3}
                    and cfg.method == "flexvfl" and cfg.time_budget == want[1] and total == 12))
    # planted times to 0.8: S = 0 sync 20 / Flex 40 (0.5), S = 2 sync 90 / Flex 60 (1.5); async never, P-BCD 30, 120
    times = {0.0: {"flexvfl": 40.0, "sync-vfl": 20.0, "async-vfl": None, "pbcd": 30.0},
             2.0: {"flexvfl": 60.0, "sync-vfl": 90.0, "async-vfl": None, "pbcd": 120.0}}
    rows = [{"server_time": S, "method": m, "time_to_target": t} for S, by in times.items() for m, t in by.items()]
    summary, lines = regime_summary(rows, {"server_times": [0.0, 2.0], "protocol": "tuned", "target": 0.8})
    out.append(("compare vfl --server-time's summary, planted times: each S's line its own methods' times, each "
                "baseline's ratios to Flex-VFL and the S pair where the faster one changes", lines == [
                    "time to 0.8 (protocol tuned; S in units of the fastest party's mean step)",
                    "  S = 0: flexvfl=40.0  sync-vfl=20.0  async-vfl=-  pbcd=30.0",
                    "  S = 2: flexvfl=60.0  sync-vfl=90.0  async-vfl=-  pbcd=120.0",
                    "  sync-vfl/flexvfl: S=0.0: 0.5, S=2.0: 1.5; crossover between S = 0 and 2",
                    "  async-vfl/flexvfl: S=0.0: inf, S=2.0: inf",
                    "  pbcd/flexvfl: S=0.0: 0.75, S=2.0: 2; crossover between S = 0 and 2"]
                and summary["crossover"] == {"sync-vfl": (0.0, 2.0), "async-vfl": None, "pbcd": (0.0, 2.0)}))
    return out


def _flag_cases():
    """(what, right) for the vectors' flags: the real vectors show exactly the flags they carry and
    publish the pinned cases, and planted families get the sentence they must."""
    from dataclasses import replace

    from refimpl.conformance import vectors as V
    records = V.families()
    docs = V.generate()
    problems = V.flag_problems(docs)                    # the families by default
    flags = sum(len(c["flags"]) for d in docs.values() for c in d["cases"])
    out = [(f"every one of the {flags} flags on the {sum(len(d['cases']) for d in docs.values())} cases is shown by "
            f"its witness, and no witness holds on a case without its flag"
            + (f" ({'; '.join(problems[:3])})" if problems else ""), not problems)]

    digests = V.digest_problems(docs)
    out.append((f"every family of refimpl's papers publishes the pinned words and cases (ids, comments, flags, "
                f"tolerances, inputs)"
                + (f" ({'; '.join(digests[:3])})" if digests else ""), not digests))
    moved = V.document(replace(records["partition"], cases=lambda rng, _c=records["partition"].cases: [
        {**c, "inputs": {**c["inputs"], "labels": c["inputs"]["labels"] + (c["id"] == "partition-6")}}
        for c in _c(rng)]))
    got = V.digest_problems({**docs, "partition": moved})
    out.append(("a generator that draws other labels for one case (partition-6's, shifted by one): its family's "
                "digest differs, and only its family's",
                len(got) == 1 and got[0].startswith("partition: what it publishes")))
    # one sign in a description: adaptive_matrix's "A = sqrt(a) + ρ" published as "A = sqrt(a) − ρ"
    rec = records["adaptive_matrix"]
    worded = V.document(replace(rec, description=rec.description.replace("sqrt(a) + ρ", "sqrt(a) − ρ", 1)))
    got = V.digest_problems({**docs, "adaptive_matrix": worded})
    out.append(("a description with one sign changed (adaptive_matrix's A = sqrt(a) − ρ): its family's digest differs",
                worded["description"] != docs["adaptive_matrix"]["description"] and len(got) == 1
                and got[0].startswith("adaptive_matrix: what it publishes")))
    return out + _planted_flag_cases(records) + [_schema_tolerance_case(docs), _witness_edge_case(records),
                                                 _digest_set_case(V, docs)]


def _digest_set_case(V, docs):
    import json
    pinned = {**{f: d for f, d in json.loads(V.DIGESTS_FILE.read_text()).items() if f != "partition"}, "gone": "0" * 64}
    return ("a family without a pinned digest (partition) and a pinned digest of no family (gone): each named",
            V.digest_problems(docs, pinned) == ["partition: no pinned digest", "gone: pinned, but no such family"])


#: a divergence rule's inputs whose costs fall from a negative start (limits are factor × |cost_0|)
_FALLING = {"costs": np.array([-1.0, -1.5, -2.0]), "sq_norms": np.zeros(3), "max_sq_norm": 4.0, "cost_factor": 10.0}

#: line 1 of an MFCGD run where h_m = c_m (φ = 0): v_m is the mean of client m's own ξ0 samples
#: a two-client aggregate (sizes 1, 3; losses 1, 2; batches 1): the N_k/N witness's planted cases start from it
_AGGREGATE = {"sizes": np.array([1, 3]), "loss_sums": np.array([1.0, 2.0]), "batch": np.array([1, 1])}
_V_START = dict(x1=np.zeros(1), A=np.zeros((1, 1)), b=np.zeros((2, 1)), c=np.zeros((2, 1)), zeta0=np.zeros((2, 2, 1)),
                xi0=np.array([[[1.0], [1.0]], [[-1.0], [-1.0]]]))


def _witness_edges():
    """(family, flag, planted case, whether the witness must hold) at each witness's edge, for
    :func:`_witness_edge_case` (and :func:`_witness_edges_more`)."""
    tiny = 2.2250738585072014e-308
    aggregate = _AGGREGATE
    # q(ω̄) = ||ω̄||² = 1 = U: on the constraint, with ν in (0, c) or not
    active, on_u = {"A": 1.0, "B": np.zeros(2), "C": 0.0, "U": 1.0, "c": 1.0}, {"slack": 0.0, "omega_bar": np.array([1.0, 0.0])}
    # two classes of two samples, two clients: Dirichlet shares 0.9/0.1 leave client 2 with none (MIN 3)
    split = {"labels": np.array([0, 0, 1, 1]), "n_clients": 2, "dirichlet": np.array([0.9, 0.1, 0.9, 0.1])}
    falling = _FALLING
    return [("exp_nonpos", "subnormal-results", {"expected": {"y": np.array([1.0, tiny])}}, False),
             ("exp_nonpos", "subnormal-results", {"expected": {"y": np.array([1.0, np.nextafter(tiny, 0.0)])}}, True),
             ("vfl_async_events", "server-free", {"inputs": {"server_free": True, "speeds": [[0.0, 1.0, 1.0]]}}, False),
             ("vfl_async_events", "server-free", {"inputs": {"server_free": True, "speeds": [[0.5, 1.0, 1.0]]}}, True),
             # a server bound from its second gap on (0.5 then 2, 2 with s_0 = 2), and one as fast as a party
             ("vfl_async_events", "server-bound", {
                 "inputs": {"server_free": False, "speeds": np.array([[2.0, 1.0, 1.0]]), "server_time": 0.0},
                 "expected": {"time": np.array([0.0, 1.0, 1.5, 3.5, 5.5])}}, False),
             ("vfl_async_events", "server-bound", {
                 "inputs": {"server_free": False, "speeds": np.array([[1.0, 1.0, 0.5]]), "server_time": 0.0},
                 "expected": {"time": np.array([0.0, 1.0, 2.0, 3.0])}}, False),
             # the gaps of a server-bound queue (2 each), but the server's step free: not server-bound
             ("vfl_async_events", "server-bound", {
                 "inputs": {"server_free": True, "speeds": np.array([[2.0, 1.0, 1.0]]), "server_time": 0.0},
                 "expected": {"time": np.array([0.0, 1.0, 3.0, 5.0])}}, False),
             # two equal shards per client, but from an iid split: not the label-skew rule
             ("partition", "shards-by-label", {
                 "inputs": {"labels": np.array([0, 0, 1, 1]), "n_clients": 1, "kind": "iid"},
                 "expected": {"owner": np.zeros(4, dtype=int)}}, False),
             # a negative run stopped at a cost exactly at the limit (−1000 · |−2|): not beyond it
             ("divergence_stop", "negative-costs", {"inputs": dict(falling, costs=np.array([-2.0, -2000.0]),
                                                                   cost_factor=1e3), "expected": {"index": 1}}, False),
             # every q = 2 steps (q ≤ T) is periodic averaging
             ("mfcgd_run", "average-every-q", {"inputs": {"matrix": "identity", "q": 2, "T": 4}}, True),
             # line 1's v_m averages client m's own ξ0 samples (client 0's at +1, client 1's at −1: |v_m| = 1,
             # where an average over the clients would give 0); u_m = A, |A| = 5, outside C_g = 4.9 only
             ("mfcgd_run", "projection-v-binds", {"inputs": dict(_V_START, C_f=0.5)}, True),
             ("mfcgd_run", "projection-v-binds", {"inputs": dict(_V_START, C_f=1.0)}, False),
             ("mfcgd_run", "projection-u-binds", {"inputs": {"A": np.array([[3.0, 4.0]]), "C_g": 4.9}}, True),
             ("mfcgd_run", "projection-u-binds", {"inputs": {"A": np.array([[3.0, 4.0]]), "C_g": 5.0}}, False),
             # the closed form's first branch holds at C = U too
             ("closed_form_step", "C<=U", {"inputs": {"C": 1.0, "U": 1.0}}, True),
             # one argument below the underflow threshold and one far above it (with a 0 written for it)
             ("exp_nonpos", "underflow", {"inputs": {"x": np.array([-800.0, -10.0])},
                                          "expected": {"y": np.array([0.0, 0.0])}}, False),
             ("client_aggregate", "weights-N_k/N", {"inputs": aggregate, "expected": {"loss_hat": 1.75}}, True),
             ("client_aggregate", "weights-N_k/N", {"inputs": aggregate, "expected": {"loss_hat": 1.5}}, False),
             # batches in proportion to the partitions (1, 3): B_k/Σ B weights give the N_k/N value, so not shown
             ("client_aggregate", "weights-N_k/N", {
                 "inputs": dict(aggregate, loss_sums=np.array([1.0, 6.0]), batch=np.array([1, 3])),
                 "expected": {"loss_hat": 1.75}}, False),
             # losses near 1000 whose wrong weightings fall 1e-5 from the right value: within 1e-6 of it
             # (relative), so the weights are not shown
             ("client_aggregate", "weights-N_k/N", {
                 "inputs": dict(aggregate, loss_sums=np.array([1000.0, 1000.00004]), batch=np.array([1, 1])),
                 "expected": {"loss_hat": 0.25 * 1000.0 + 0.75 * 1000.00004}}, False),
             # the slack at c with none left (s = 0) is not the slack's branch
             ("constrained_run", "slack-active", {"inputs": {"c": 1.0}, "expected": {"nu": np.array([1.0]),
                                                                                  "slack": np.array([0.0])}}, False),
             # each part of a witness is needed: one part true, another false
             ("adaptive_matrix", "scalar-state", {"inputs": {"kind": "adam"}, "expected": {"a": np.ones(3)}}, False),
             ("adaptive_matrix", "scalar-state", {"inputs": {"kind": "norm"}, "expected": {"a": np.arange(3.0)}}, False),
             ("closed_form_step", "constraint-active", {"inputs": active, "expected": dict(on_u, nu=0.0)}, False),
             ("closed_form_step", "constraint-active", {"inputs": active, "expected": dict(on_u, nu=0.5)}, True),
             ("partition", "min-size-redraw", {"inputs": dict(split, kind="iid"), "expected": {"draws": 4}}, False),
             ("partition", "min-size-redraw", {"inputs": dict(split, kind="dirichlet:1:3"), "expected": {"draws": 4}},
              True),
             # shares 0.1/0.9 of two samples a class: client 1 gets none (MIN 1)
             ("partition", "min-size-redraw", {"inputs": dict(split, kind="dirichlet:1:1", dirichlet=np.array(
                 [0.1, 0.9, 0.1, 0.9])), "expected": {"draws": 4}}, True),
    ]


def _witness_edges_more():
    """The rest of :func:`_witness_edges`: the divergence rule's, the vectors of Flex-VFL's steps and
    rounds, the constrained runs', the network's and the MFCGD runs' witnesses at their edges."""
    falling = _FALLING

    def unit(w2):           # one input, one swish unit, one logit w2 · swish(1)
        return dict(X=np.ones((1, 1)), W1=np.ones((1, 1)), W2=np.full((1, 1), w2), activation="swish", bias=False)
    return [
             # a negative initial cost: the limits are factor × |cost_0|
             ("divergence_stop", "iterate-norm", {"inputs": dict(falling, sq_norms=np.array([0.0, 0.0, 5.0])),
                                                  "expected": {"index": 2}}, True),
             ("divergence_stop", "at-the-limit-kept", {"inputs": dict(falling, costs=np.array([-1.0, -10.0, -50.0])),
                                                       "expected": {"index": 2}}, True),
             # a run that never stops but whose cost rises once is not converging
             ("divergence_stop", "converging", {"inputs": dict(falling, costs=np.array([2.3, 2.5, 1.0])),
                                                "expected": {"index": -1}}, False),
             # heavy-ball momentum with g = 0: the dampened form gives the same state, so it is not shown
             ("local_update", "heavy-ball-not-dampened", {
                 "inputs": {"optimizer": "momentum", "param": 0.9, "state": np.array([2.0, -1.0]), "g": np.zeros(2)},
                 "expected": {"state": np.array([1.8, -0.9])}}, False),
             # a multiplier of 0.5 < c = 1 on the constraint: active
             ("constrained_run", "constraint-active", {"inputs": {"c": 1.0}, "expected": {"nu": np.array([0.5])}},
              True),
             # a slow blow-up judged on the costs up to its stop only: a last cost 1000 × below the initial one
             # after it changes nothing
             ("divergence_stop", "reference-is-initial", {"inputs": dict(falling, costs=np.array(
                 [2.0, 1000.0, 2500.0, 1e-3]), cost_factor=1e3), "expected": {"index": 2}}, True),
             # the step-size exponent is told from t = 100 on
             ("storm_weights", "eta-exponent", {"inputs": dict(t=100, k=1.0, n=8.0), "expected": {
                 "eta": 1.0 / 108.0 ** (1 / 3)}}, True),
             # … to round-off: one ulp off is the same η
             ("storm_weights", "eta-exponent", {"inputs": dict(t=100, k=1.0, n=8.0), "expected": {
                 "eta": np.nextafter(1.0 / 108.0 ** (1 / 3), 1.0)}}, True),
             # α = β = ϱ = 1 but h half a unit off g(x_new; ζ): not the forgetting update
             ("storm_update", "cap-active", {"inputs": dict(alpha=1.0, beta=1.0, varrho=1.0, A=np.eye(2), x_new=np.ones(
                 2), b=np.zeros(2), zeta=np.zeros(2)), "expected": {"h": np.array([1.5, 1.0])}}, False),
             # Flex-VFL's time-varying step: its first step (t = 1) already shows the index
             ("local_update", "step-index-t", {"inputs": {"optimizer": "time-varying-lr", "t": 1, "param": 0.5}}, True),
             # the cap c η_1² with η_1 = k/(n + 1)^{1/3}: k = n = 1 gives η_1² = 2^{−2/3} ≈ 0.63, so c = 1.5
             # leaves it below 1 (with n for n + 1 it would be 1.5) and c = 1.7 puts it above
             ("mfcgd_run", "cap-active", {"inputs": dict(c1=1.5, c2=0.1, c3=0.1, k=1.0, n=1.0)}, False),
             ("mfcgd_run", "cap-active", {"inputs": dict(c1=0.1, c2=0.1, c3=1.7, k=1.0, n=1.0)}, True),
             # a round whose longest compute equals the timeout: the timeout adds nothing, so not shown
             ("vfl_round_time", "at-least-the-timeout", {"inputs": dict(timeout=2.0, server_free=False, tau=np.array(
                 [1, 2]), step_times=np.array([2.0, 1.0]))}, False),
             ("vfl_round_time", "at-least-the-timeout", {"inputs": dict(timeout=2.0, server_free=False, tau=np.array(
                 [1, 1]), step_times=np.array([1.5, 1.0]))}, True),
             # one swish unit: Z = 1 gives A = 1/(1 + e^−1) ≈ 0.731, so W2 = 40 gives a logit of ≈ 29.2 (not
             # large) and W2 = 45 one of ≈ 32.9 (large); a full cost over exactly one chunk (8,192 rows) is not
             # over more rows than a chunk
             ("loss_grad", "large-logits", {"inputs": unit(40.0), "expected": {"loss": 0.0}}, False),
             ("loss_grad", "large-logits", {"inputs": unit(45.0), "expected": {"loss": 0.0}}, True),
             # a logit of ≈ −712.8 overflows e^|logit| as ≈ +712.8 does; ≈ −705.5 does not (the loss finite)
             ("loss_grad", "large-logits", {"inputs": unit(-45.0), "expected": {"loss": 0.0}}, True),
             ("loss_grad", "overflowing-logits", {"inputs": unit(-975.0), "expected": {"loss": 0.0}}, True),
             ("loss_grad", "overflowing-logits", {"inputs": unit(975.0), "expected": {"loss": 0.0}}, True),
             ("loss_grad", "overflowing-logits", {"inputs": unit(-965.0), "expected": {"loss": 0.0}}, False),
             ("full_cost", "more-rows-than-a-chunk", {"inputs": {"X": np.zeros((8192, 1))}}, False),
             # A^t = τ after a step under the recursive curvature (which would give 0.75) is not the fixed convention
             ("surrogate_update", "curvature-fixed", {"inputs": {"curvature": "recursive", "A": 0.5, "rho": 0.5,
                                                                 "tau": 1.0}, "expected": {"A": 1.0}}, False),
             # A^t = τ in every round under the recursive curvature is not the fixed convention
             ("constrained_run", "curvature-fixed", {"inputs": {"curvature": "recursive", "tau": 0.5, "rho_a": 0.5},
                                                     "expected": {"A": np.array([0.5, 0.5])}}, False),
    ] + _witness_edges_last()

def _witness_edges_last():
    """The witness edges of the latest probe rounds: the divergence rule's negative costs, the
    shards, the surrogate's A⁰ = 0, the projections on the ball, the server's fixed steps, a stale
    gradient and relu at zero."""
    falling = _FALLING
    return [
             # a positive initial cost below 1 is no negative cost; equal shards are not unequal; A = C = 0 with
             # one entry of B nonzero is no A^0 = 0 start
             ("divergence_stop", "negative-costs", {"inputs": dict(falling, costs=np.array([0.5, -2000.0])),
                                                    "expected": {"index": 1}}, False),
             ("client_aggregate", "unequal-partitions", {"inputs": {"sizes": [5, 5, 5]}}, False),
             ("surrogate_update", "A0=0", {"inputs": {"A": 0.0, "C": 0.0, "B": np.array([0.0, 1.0])}}, False),
             # u on the ball C_g = 5 to round-off (|u| = 5(1 + 2e-16)) binds; 1e-10 outside it is no projection's
             ("storm_update", "projection-u-binds", {"inputs": {"C_g": 5.0}, "expected": {"u": np.array(
                 [3.0, np.nextafter(4.0, 5.0)])}}, True),
             ("storm_update", "projection-u-binds", {"inputs": {"C_g": 5.0}, "expected": {"u": np.array(
                 [3.0, 4.0]) * (1 + 1e-10)}}, False),
             # the server's τ fixed at 3, party 1's own count (6 / 2), not the server's own (6 / 1): fixed
             ("vfl_taus", "server-steps-fixed", {"inputs": {"rule": "timeout", "timeout": 6.0, "server_steps": 3,
                                                           "step_times": np.array([1.0, 2.0]), "Q": 1},
                                                "expected": {"tau": np.array([3, 3])}}, True),
             # labels at the server, party 2 stepping 3 times on its stale ∂l/∂h (party 1 once): stale
             ("vfl_round", "stale-gradient", {"inputs": {"labels": "server", "tau": np.array([2, 1, 3])}}, True),
             # relu with one hidden pre-activation exactly 0 (x_1 = 0, no bias) while the logit is 3
             ("loss_grad", "relu-at-zero", {"inputs": dict(X=np.array([[0.0, 1.0]]), W1=np.eye(2),
                                                           W2=np.array([[2.0, 3.0]]), activation="relu", bias=False)},
              True),
             # a run under the fixed convention whose A leaves τ in one round is not 'curvature-fixed'
             ("constrained_run", "curvature-fixed", {"inputs": {"curvature": "fixed", "tau": 0.5, "rho_a": 0.5},
                                                     "expected": {"A": np.array([0.5, 0.25])}}, False),
             # … and 1e-4 from it (losses 1000 and 1000.4): beyond 1e-6, so shown
             ("client_aggregate", "weights-N_k/N", {
                 "inputs": dict(_AGGREGATE, loss_sums=np.array([1000.0, 1000.4])),
                 "expected": {"loss_hat": 0.25 * 1000.0 + 0.75 * 1000.4}}, True),
             # the proximal weights (1 − ημ)^{τ−1−t} at ημ = 1e-4: the printed exponent's fall 2e-4 (relative)
             # from them, beyond 1e-6, so the typo is shown
             ("local_weights", "paper-exponent-typo", {"inputs": {"optimizer": "proximal", "eta": 1e-4, "param": 1.0,
                                                                  "tau": 3},
                                                       "expected": {"w": (1 - 1e-4) ** (2 - np.arange(3))}}, True),
             # the cap at step 0 (η_0 = 1, every c_i η² = 2 > 1) is not 'cap-active', which counts from step 1
             ("storm_weights", "cap-active", {"inputs": {"t": 0, "k": 1.0, "n": 1.0, "c1": 2.0, "c2": 2.0, "c3": 2.0},
                                              "expected": {"alpha": 1.0, "beta": 1.0, "varrho": 1.0}}, False),
             # a proximal round where one party steps twice already shows the anchor at the round's start
             ("vfl_round", "proximal-anchor-round-start", {"inputs": {"optimizer": "proximal", "param": 0.1,
                                                                      "tau": np.array([1, 2, 1])}}, True),
             # ρ = 0 under the recursive curvature (the step keeps the old surrogate) is not 'rho<1'
             ("surrogate_update", "rho<1", {"inputs": {"curvature": "recursive", "rho": 0.0}}, False),
             # costs that stay level for a round (2, 1, 1) are not 'converging', which falls every round
             ("divergence_stop", "converging", {"inputs": dict(_FALLING, costs=np.array([2.0, 1.0, 1.0])),
                                                "expected": {"index": -1}}, False),
             # a server bound in the first row of step times (2 > 1) whose last row is fast (0.5): still bound
             ("vfl_async_events", "server-bound", {
                 "inputs": {"server_free": False, "speeds": np.array([[2.0, 1.0, 1.0], [0.5, 1.0, 1.0]]),
                            "server_time": 0.0}, "expected": {"time": np.array([0.0, 1.0, 3.0, 5.0])}}, True),
             # two equal quantity shares (normals 0, 0) with the remainder sent to the second client: not the first
             ("partition", "largest-first-of-equal", {
                 "inputs": {"kind": "quantity:1", "labels": np.zeros(5, dtype=int), "n_clients": 2,
                            "normals": np.zeros(2)}, "expected": {"owner": np.array([0, 0, 1, 1, 1])}}, False),
             # a choice of the finished run whose accuracy is NaN does not show NaN accuracies never chosen
             ("tune_select", "nan-accuracy", {"inputs": {"finished": np.array([1.0, 1.0]), "accuracy": np.array(
                 [np.nan, 0.1]), "cost": np.array([1.0, 2.0])}, "expected": {"index": 0}}, False),
             # ρ = 1 with clients that differ (δ_f > 0) is not the homogeneous case
             ("theorem_rhs", "homogeneous", {"inputs": {"delta_f": 0.5, "delta_g": 0.0, "rho": 1.0}}, False),
             # shares 1/2 of two samples a class: one of each class per client, none short of MIN 1
             ("partition", "min-size-redraw", {"inputs": {"labels": np.array([0, 0, 1, 1]), "n_clients": 2, "dirichlet":
                                                          np.full(4, 0.5), "kind": "dirichlet:1:1"},
                                               "expected": {"draws": 4}}, False)]


def _witness_edge_case(records):
    """(what, right): witnesses at their edges, on cases written out here: the smallest normal double
    is no subnormal result and the double below it is; a free server with no step time of its own
    is not 'server-free' (freeness changes nothing) and one with 0.5 is; N_k/N weights shown when
    the two wrong weightings both give less than the right one (sizes 1, 3; losses 1, 2; batches 1);
    a round whose longest compute equals the timeout does not show the timeout's floor; the logit
    and row-count witnesses at their edges."""
    edges = _witness_edges() + _witness_edges_more()
    wrong = [f"{fam} '{flag}' {not want} on {case}" for fam, flag, case, want in edges
             if bool(records[fam].witnesses[flag](case)) != want]
    what = ("witnesses at their edges: the smallest normal double no subnormal result, a free server without a step "
            "time not 'server-free', a server bound only from the first gap on and only slower than every party, "
            "'underflow' only where every argument is below the threshold, 'C<=U' at C = U, label shards only from "
            "the label-skew rule, a negative cost exactly at the limit not beyond it, averaging every q = 2 steps, a "
            "forgetting STORM step only where h = g(x_new; ζ), a time-varying step's index from t = 1, N_k/N weights "
            "shown when both wrong weightings fall below and not with batches in proportion to the partitions nor "
            "within 1e-6 (relative) of the right value; ν = c with no slack not 'slack-active'; η_t's exponent told "
            "from t = 100; the cap at η_1 = k/(n + 1)^{1/3}; each part of a witness needed ('scalar-state' of an adam"
            " state, a slow blow-up's costs after its stop not read, heavy-ball momentum at g = 0 not told from the "
            "dampened form, a run's multiplier 0.5 < c active, a cost rising once not 'converging', "
            "'constraint-active' with ν = 0 on the constraint, 'min-size-redraw' of an IID split, 'curvature-fixed' "
            "of a recursive step or run or of a run whose A leaves τ once); a Dirichlet split whose first client "
            "gets none; the divergence limits of a "
            "negative initial cost; a compute equal to the timeout not 'at-least-the-timeout'; one swish unit's logit"
            " of 29.2 not 'large-logits', 32.9 one; 8,192 rows not 'more-rows-than-a-chunk'")
    return (f"{what} (not: {'; '.join(wrong[:2])})" if wrong else what, not wrong)


def _schema_tolerance_case(docs):
    """(what, right): each exported JSON Schema admits in a case's ``tol`` exactly the two kinds
    the harness reads (``rel`` ≥ 0, a whole ``ulps`` ≥ 0), at least one, and no other key, and in an array value
    exactly ``shape`` and ``data``, so that a file the schema accepts is one the harness can judge."""
    from refimpl.conformance import vectors as V
    wrong = []
    for fam, doc in docs.items():
        cases = V.schema(doc)["properties"]["cases"]
        case = cases["items"]["properties"]
        tol = case["tol"]
        arrays = [v for part in ("inputs", "expected") for v in case[part]["additionalProperties"]["anyOf"]
                  if v.get("type") == "object"]
        if (tol.get("additionalProperties"), tol.get("minProperties"), sorted(tol.get("properties", {})),
                tol["properties"]["rel"], tol["properties"]["ulps"]) != (False, 1, ["rel", "ulps"],
                                                                         {"type": "number", "minimum": 0},
                                                                         {"type": "integer", "minimum": 0}) \
                or len(arrays) != 2 or any((a.get("additionalProperties"), a.get("required")) != (False, ["shape", "data"])
                                           for a in arrays) or cases.get("minItems") != 1 \
                or any(a["properties"]["shape"]["items"] != {"type": "integer", "minimum": 0} for a in arrays) \
                or (case["inputs"]["required"], case["expected"]["required"]) != (doc["inputs"], doc["outputs"]):
            wrong.append(fam)
    what = ("every family's schema admits exactly rel and ulps in a tolerance (one at least), exactly shape and "
            "data in an array (an empty array's 0 among a shape's whole numbers), and a file of one case at least; "
            "a case needs the family's inputs and outputs by name")
    return (f"{what} (not: {wrong[:3]})" if wrong else what, not wrong)


def _planted_flag_cases(records):
    """(what, right) for planted families — one of refimpl's with one case edited, or its witnesses
    replaced — each with the sentences :func:`refimpl.conformance.vectors.flag_problems` must give."""
    from dataclasses import replace

    from refimpl.conformance import vectors as V
    out = []

    def planted(family, edit, flags=None, witnesses=None):
        rec = records[family]

        def cases(rng, _cases=rec.cases):
            got = _cases(rng)
            edit(got)
            return got
        rec = replace(rec, cases=cases, witnesses=rec.witnesses if witnesses is None else witnesses)
        return V.flag_problems({family: V.document(rec)}, {family: rec})

    def at(i, key, value):
        def edit(cases):
            cases[i]["inputs"][key] = value
        return edit

    def add_flag(i, flag):
        def edit(cases):
            cases[i]["flags"] = cases[i]["flags"] + [flag]
        return edit

    fin = np.array([0.0, 0.0, 1.0])      # tune_select-1 with its first run diverged too: no tie is left
    got = planted("tune_select", at(1, "finished", fin))
    out.append(("a tie that is no longer a tie (tune_select-1's first run diverged): 'tie-lower-cost' not shown",
                got == ["tune_select-1: flag 'tie-lower-cost' is not shown (False)"]))
    got = planted("exp_nonpos", at(1, "x", np.array([746.0, -800.0, -1e4])))
    out.append(("an argument above the underflow threshold in the underflow case: 'underflow' not shown, and its "
                "e^746 = inf reported", "exp_nonpos-1: flag 'underflow' is not shown (False)" in got
                and any("exp_nonpos-1: NaN or inf" in g for g in got)))
    got = planted("closed_form_step", at(1, "C", 0.4))
    out.append(("closed_form_step-1 with C ≤ U (ν = 0): 'constraint-active' and 'rounding-slack' not shown, and it "
                "now shows 'C<=U' and 'multiplier-zero' without carrying them",
                sorted(got) == sorted(["closed_form_step-1: flag 'constraint-active' is not shown (False)",
                                       "closed_form_step-1: flag 'rounding-slack' is not shown (False)",
                                       "closed_form_step-1: the witness of 'C<=U' holds, but the case does not carry "
                                       "the flag", "closed_form_step-1: the witness of 'multiplier-zero' holds, but "
                                       "the case does not carry the flag"])))
    got = planted("storm_update", at(0, "u", np.full((3, 4), 5.0)))
    out.append(("storm_update-0 with u far outside the ball C_g: it is projected, so 'no-projection' is not shown",
                got == ["storm_update-0: flag 'no-projection' is not shown (False)",
                        "storm_update-0: the witness of 'projection-u-binds' holds, but the case does not carry the "
                        "flag"]))
    got = planted("local_update", at(0, "state", np.full(6, np.inf)))
    out.append(("an inf momentum state in the SGD case, which no flag allows, is reported",
                got == ["local_update-0: NaN or inf, and none of its flags [] allows it"]))
    got = planted("move", add_flag(0, "gamma-small"))
    out.append(("a flag without a witness is reported", got == ["move: flag 'gamma-small' has no witness"]))
    got = planted("move", lambda cases: None, witnesses={"gamma=1": lambda c: True})
    out.append(("a witness that holds on a case without its flag (γ = 1 claimed of any step): reported",
                got == ["move-0: the witness of 'gamma=1' holds, but the case does not carry the flag"]))
    loose = dict(records["partition"].witnesses)
    loose["shards-by-label"] = lambda c: c["inputs"]["kind"] != "iid"      # a witness made looser
    got = planted("partition", lambda cases: None, witnesses=loose)
    out.append(("a witness made looser ('shards-by-label' holding on any non-IID split): each case it now holds on "
                "without the flag reported (the six cases neither iid nor label_skew)", len(got) == 6 and all(g.endswith("the case does not carry the flag")
                                                                   for g in got)))
    got = planted("move", lambda cases: None,
                  witnesses={**records["move"].witnesses, **{f: (lambda c: True) for f in "edcba"}})
    told = [g.split("'")[1] for g in got]
    out.append(("five witnesses that hold on both cases without their flags: reported flag by flag in sorted order "
                "(a set's order would put them otherwise in 119 processes of 120)",
                told == sorted(told) and set(told) == set("abcde") and len(got) == 10))
    got = planted("move", lambda cases: None, witnesses={"gamma=1": lambda c: c["inputs"]["no such input"]})
    out.append(("a witness that raises shows nothing: reported with its error",
                got == ["move-1: flag 'gamma=1' is not shown (KeyError: 'no such input')"]))
    return out


@check("tools.vector_flags", "every flag a conformance case carries is shown by its family's witness (plain NumPy "
       "from the flag's meaning) on the case's inputs and expected values, a case carries every flag whose witness "
       "holds on it, and only cases flagged not-finite or nan-accuracy hold NaN or inf; every family publishes the "
       "pinned words and cases (a SHA-256 of its description, equation and names, and of each case's id, comment, "
       "flags, tolerance and inputs to 12 digits; a family with one word of its description changed fails); planted "
       "families — a tie that is no longer one, an argument above the underflow threshold, C ≤ U in the active "
       "case, a projection that binds, an inf state, a case drawn differently, a flag without a witness, a witness "
       "true everywhere, made looser or raising — get the sentence they must, flag by flag in sorted order; "
       "witnesses at their edges and with each part needed, on cases written out; each family's JSON Schema admits "
       "exactly the tolerance kinds the harness reads (wrong answers: 0)",
       "refimpl vectors; docs/conformance.md")
def vector_flags(quick):
    return _cases_result(_flag_cases(), "")


def _diagnosis(ours, theirs, **kw):
    """``refimpl diagnose OURS THEIRS`` in this process: (exit code, its report's text with each
    rerun's progress line, the diagnosis)."""
    from refimpl.tools import diagnose as DG
    said = []
    dg = DG.diagnose(ours, theirs, progress=said.append, **kw)
    return dg.code, "\n".join(said + dg.lines), dg


def _run(paper_key, algorithm, out, init=None, batches=None, **values):
    """One run as ``refimpl run`` makes it (the command line's defaults), saved into ``out``."""
    from refimpl import papers
    paper = papers.get(paper_key)
    cfg = paper.make_config(algorithm, **{**paper.command_line_defaults(), **values})
    replay = {"init": init, "batches": batches} if init is not None else {}
    from refimpl.core.data import mnist_5k
    paper.run(cfg, mnist_5k() if paper.needs_data(cfg) else None, replay).save(out)
    return out


#: what THEIR SSCA transcription does not dump
_OURS_ONLY = ("C", "batch", "client_grad", "client_loss", "gamma", "loss_hat", "rho")


def _diagnose_reason_cases(tmp):
    """(what, right) for ``refimpl diagnose`` end to end — reruns, the switch search, the verdict,
    the report — against THEIR side from an independent transcription of SSCA
    (:mod:`refimpl.tools.transcriptions`), with the answer each case must get written out here."""
    import os

    from refimpl.core.data import mnist_5k
    from refimpl.tools import diagnose as DG
    from refimpl.tools.transcriptions import their_ssca
    ds, (J, K, B, T, tau) = mnist_5k(), (8, 10, 10, 4, 0.1)
    theirs = {}
    for name, kw in (("fixed", {}), ("recursive", {"curvature": "recursive"}),
                     ("gamma-bug", {"curvature": "recursive", "gamma_alpha": 0.66})):
        arrays, W1, W2, batches = their_ssca(ds, np.random.default_rng(3), J, K, B, T, tau, **kw)
        theirs[name] = os.path.join(tmp, f"{name}.npz")
        np.savez(theirs[name], **arrays)
    # both sides' step sizes: ρ_t = 0.8 t^-0.6, γ_t = 0.5 t^-0.65
    run = dict(rounds=T, batch=B, hidden=J, tau=tau, rho_a=0.8, rho_alpha=0.6, gamma_a=0.5, gamma_alpha=0.65,
               dump_rounds="all", eval_every=T)       # the dumps are compared; the metrics at rounds 0 and T suffice
    same = _run("ssca", "ssca", os.path.join(tmp, "ours-from-their-inputs"), init=(W1, W2), batches=batches, **run)
    own = _run("ssca", "ssca", os.path.join(tmp, "ours"), **run)
    out = []
    code, text, dg = _diagnosis(same, theirs["fixed"], tol=1e-9)
    out.append(("THEIR A^t = τ: first difference round 1, A (0.08 vs 0.1); --curvature fixed named (exit 3)",
                code == 3 and "round 1, A: 0.08 vs 0.1" in text and "with --curvature fixed all rounds agree" in text))
    # THEIR dump of rounds 2 and 4 only (their inputs whole): the reruns run 4 rounds, dumping 2 and 4
    sub = os.path.join(tmp, "rounds-2-4.npz")
    with np.load(theirs["fixed"]) as z:
        np.savez(sub, **{k: z[k] for k in z.files if not k.startswith(("r1_", "r3_"))})
    code, text, _ = _diagnosis(same, sub, tol=1e-9)
    out.append(("THEIR dump of rounds 2 and 4 only: the reruns run to round 4 and --curvature fixed is named (exit 3); "
                "rounds 1 and 3 are named as OURS's only",
                code == 3 and "with --curvature fixed all rounds agree" in text
                and "rounds 1, 3 (only in ours)" in text and "could not rerun" not in text))
    report = os.path.join(tmp, "report")
    DG.write_report(report, dg.comparison, dg.lines, dg.rows)
    with open(os.path.join(report, "diagnose.md")) as fh:
        md = fh.read()
    out.append(("the report's table has the switch's row, agreeing",
                md.count("| --curvature fixed | True | True | True |") == 1))
    rows = [dict(switch="--a 1", ran=True, agrees=False, changes=True, worst=0.000123, first="round 2, A"),
            dict(switch="--b 2", ran=False, agrees=False, changes=None, worst=None, first=None)]
    DG.write_report(report, dg.comparison, dg.lines, rows)          # a report directory that exists: rewritten
    with open(os.path.join(report, "diagnose.md")) as fh:
        md = fh.read()
    out.append(("the report's rows, rewritten in the same directory: a worst difference to 2 digits, '-' for a "
                "rerun that did not run",
                "| --a 1 | True | False | True | 0.00012 | round 2, A |" in md and "| --b 2 | False | False | - | - | - |"
                in md))
    code, text, _ = _diagnosis(own, theirs["recursive"], tol=1e-9)
    out.append(("THEIR own initial point and batches: the inputs are named, no switch (exit 4)",
                code == 4 and "the difference is in the inputs (batch schedule, initial point)" in text
                and "with --" not in text))
    code, text, _ = _diagnosis(same, theirs["recursive"], tol=1e-9)
    out.append(("the same method from the same inputs agrees, but quantities THEIRS lacks keep the exit non-zero",
                code == 1 and "every compared value agrees" in text and "C (only in ours)" in text))
    code, text, _ = _diagnosis(same, theirs["recursive"], tol=1e-9, allowed=_OURS_ONLY)
    out.append(("…and exit 0 once they are allowed, counting what was compared",
                code == 0 and "compared 6 quantities × 4 rounds (24 pairs)" in text))
    code, text, _ = _diagnosis(own, theirs["gamma-bug"], tol=1e-9)
    out.append(("THEIR γ_t exponent 0.66: unexplained at round 2, omega_next, by the baseline, every switch and pair "
                "(exit 1)", code == 1 and "no switch (baseline): differs at round 2, omega_next" in text
                and "no convention switch of refimpl (nor a pair) makes every round agree" in text
                and "all rounds agree" not in text and "could not run" not in text))
    # THEIR per-round dump only, its ids 1-based (MATLAB): read with index_base 1, the reruns start
    # from THEIR r1_omega and r<t>_batch minus 1, and A^t = τ is named again
    arrays, *_ = their_ssca(ds, np.random.default_rng(3), J, K, B, T, tau, inputs=False)
    one_based = os.path.join(tmp, "one-based.npz")
    np.savez(one_based, **{k: (v + 1 if k.endswith("_batch") else v) for k, v in arrays.items()})
    code, text, _ = _diagnosis(own, one_based, tol=1e-9, index_base=1)
    out.append(("THEIR 1-based ids in a per-round dump, read with --index-base 1: --curvature fixed named (exit 3)",
                code == 3 and "with --curvature fixed all rounds agree" in text))
    return out


def _diagnose_step_cases(tmp):
    """(what, right): Flex-VFL's per-step dumps walked step by step — THEIR dump is OURS with party
    1's momentum changed at local step 0 of round 2 only, so that is the first difference named;
    THEIR replay inputs read from a run's directory, as from its trace.npz."""
    import os

    from refimpl.core.replay import read_dump
    ours = _run("vfl", "flexvfl", os.path.join(tmp, "vfl"), rounds=2, batch=16, optimizer="momentum:0.9",
                dump_rounds="all", eval_every=2)
    from refimpl import papers
    from refimpl.tools.diagnose import their_replay
    whole, file_ = (their_replay(p, papers.get("vfl")) for p in (ours, os.path.join(ours, "trace.npz")))
    out = [("THEIR replay inputs read from a run's directory are its trace.npz's",
            sorted(whole) == sorted(file_) and all(np.array_equal(whole[k], file_[k]) for k in whole))]
    dump = {f"r{t}_{k}": v for t, q in read_dump(ours).items() for k, v in q.items()}
    dump["r2_momentum1"] = dump["r2_momentum1"].copy()
    dump["r2_momentum1"][0, 0] += 1e-3
    path = os.path.join(tmp, "vfl-planted.npz")
    np.savez(path, **dump)
    code, text, _ = _diagnosis(ours, path, rerun_switches=False)
    out.append(("a change in one local step's momentum is named at its round, party and step (exit 1)",
                code == 1 and "round 2, momentum1 at local step 0" in text))
    np.savez(path, **dump, r2_momentum9=dump["r2_momentum1"])     # a per-step quantity THEIR dump alone holds
    code, text, _ = _diagnosis(ours, path, rerun_switches=False)
    out.append(("… the same, beside a per-step quantity THEIR dump alone holds (momentum9: no party 9 here)",
                code == 1 and "round 2, momentum1 at local step 0" in text))
    dump["r2_momentum1"] = read_dump(ours)[2]["momentum1"].copy()
    dump["r2_momentum1"][2, 3] += 1e-3                        # step 2's entry 3 only
    np.savez(path, **dump)
    code, text, _ = _diagnosis(ours, path, rerun_switches=False)
    out.append(("the entry that differs is named by its index and in the paper's words, with its step "
                "(entry (3,) = party 1, local step 2, W[0, 3])",
                code == 1 and "momentum1 at local step 2 at entry (3,) = party 1, local step 2, W[0, 3]:" in text))
    fresh = read_dump(ours)[2]
    dump["r2_momentum1"] = fresh["momentum1"]
    for name in ("grad1", "theta1"):                # step 1's iterate and the gradient taken at it
        dump[f"r2_{name}"] = fresh[name].copy()
        dump[f"r2_{name}"][1, 0] += 1e-3
    np.savez(path, **dump)
    code, text, _ = _diagnosis(ours, path, rerun_switches=False)
    out.append(("an iterate and the gradient taken at it, both changed at one local step: the iterate is named "
                "(a step computes θ, then its gradient, then the momentum)",
                code == 1 and "round 2, theta1 at local step 1" in text))
    return out


def _vfl_edge_run(tmp):
    """A short Flex-VFL run with every round dumped, its dump flat, and THEIR copy with a planted bug
    (party 2's gradient in round 2): (OURS's directory, the flat dump, THEIR file)."""
    import os

    from refimpl.core.replay import read_dump
    ours = _run("vfl", "flexvfl", os.path.join(tmp, "vfl-edge"), rounds=2, batch=16, optimizer="momentum:0.9",
                dump_rounds="all", eval_every=2)
    dump = {f"r{t}_{k}": v for t, q in read_dump(ours).items() for k, v in q.items()}
    bug = os.path.join(tmp, "vfl-bug.npz")
    np.savez(bug, **dict(dump, r2_grad2=dump["r2_grad2"] * (1 + 1e-3)))
    return ours, dump, bug


def _diagnose_edge_cases(tmp):
    """(what, right): the verdicts diagnose owes around its reruns — a switch that changes nothing
    is shown as such and never credited, a baseline that cannot rerun is exit 5 with its reason (a
    shape change named as one), a switch that cannot rerun beside none that explains."""
    import os

    from refimpl.core.replay import read_dump
    ours, dump, bug = _vfl_edge_run(tmp)
    code, text, _ = _diagnosis(ours, bug)
    out = [("a bug no switch explains: exit 1; a switch that changes nothing is shown as the baseline's twin and "
            "never credited", code == 1 and "--server-time-unit timeout-over-Q: differs at round 2, grad2 (the same "
                                            "as the baseline: this switch changes nothing here)" in text
            and "with --server-time-unit" not in text)]
    short = dict(dump, r1_theta0=dump["r1_theta0"][:, :-1])             # THEIR head one parameter short
    np.savez(os.path.join(tmp, "vfl-short.npz"), **short)
    code, text, dg = _diagnosis(ours, os.path.join(tmp, "vfl-short.npz"))
    report = "\n".join(dg.lines)           # the report itself, not the reruns' progress lines
    out.append(("THEIR initial point of the wrong size: the shape change is named and the baseline cannot rerun "
                "(exit 5, with the reason, in the report; a rerun that did not run agrees with nothing)",
                code == 5 and "shapes (" in report and "no switch (baseline): could not rerun" in report
                and any(not r["ran"] for r in dg.rows) and not any(r["agrees"] for r in dg.rows if not r["ran"])))
    adaptive = _run("vfl", "adaptive-flexvfl", os.path.join(tmp, "adaptive-edge"), rounds=2, batch=16, A=0.3,
                    dump_rounds="all", eval_every=2)
    dump = {f"r{t}_{k}": v for t, q in read_dump(adaptive).items() for k, v in q.items()}
    np.savez(os.path.join(tmp, "adaptive-bug.npz"), **dict(dump, r2_grad1=dump["r2_grad1"] * (1 + 1e-3)))
    code, text, dg = _diagnosis(adaptive, os.path.join(tmp, "adaptive-bug.npz"))
    out.append(("a bug no switch that ran explains, beside a switch that cannot rerun (--adaptive-rule authors "
                "without a utilisation trace): exit 5, the reason named in the report", code == 5
                and "--adaptive-rule authors: could not rerun" in "\n".join(dg.lines)
                and "no switch that ran explains the difference; the reruns above could not run" in text))
    return out


def _report_cases(tmp):
    """(what, right): what diagnose says without rerunning — bad input refused, a layout difference
    and a non-finite quantity named, OURS's trace without its data or a size (the entry keeps its
    index alone), a transposed square array and permuted values."""
    import json
    import os
    import shutil

    from refimpl.tools import diagnose as DG
    ours, dump, bug = _vfl_edge_run(tmp)
    refusals = [_raises(lambda: DG.diagnose(ours, os.path.join(tmp, "nowhere.npz")), "no such file or directory"),
                _raises(lambda: DG.diagnose(ours, bug, map_text="omega"), "expected OURS=THEIRS pairs")]
    np.savez(os.path.join(tmp, "complex.npz"), r1_tau=np.ones(5, dtype=complex))
    path = os.path.join(tmp, "complex.npz")
    refusals.append(_raises(lambda: DG.load_side(path), f"{path}: r1_tau holds complex values (dtype complex128); a "
                            "dump holds real numbers (refused, not cast)"))
    out = [("a missing file, a --map without '=' and complex values are refused, naming the reason", all(refusals))]
    shown = dict(dump, r1_batch=dump["r1_batch"] + 1, r2_eta=np.full_like(dump["r2_eta"], np.nan))
    np.savez(os.path.join(tmp, "vfl-shown.npz"), **shown)
    code, text, _ = _diagnosis(ours, os.path.join(tmp, "vfl-shown.npz"), rerun_switches=False)
    out.append(("1-based ids and a NaN quantity are named in the report (exit 1)",
                code == 1 and "batch: THEIR values are OURS + 1 everywhere" in text
                and "eta is not finite (NaN or inf) in round 2" in text))
    for what, change in (("data", lambda c: c.update(data_source={"kind": "npz", "path": os.path.join(tmp, "gone")})),
                         ("size", lambda c: c.pop("embed_dim"))):
        moved = os.path.join(tmp, f"vfl-no-{what}")
        shutil.copytree(ours, moved)
        with open(os.path.join(moved, "trace.json")) as fh:
            doc = json.load(fh)
        change(doc["config"])
        with open(os.path.join(moved, "trace.json"), "w") as fh:
            json.dump(doc, fh)
        code, text, _ = _diagnosis(moved, bug, rerun_switches=False)
        out.append((f"OURS's trace without its {'data' if what == 'data' else 'embedding size'}: compared all the "
                    "same, the entry named by its index alone (exit 1)",
                    code == 1 and "round 2, grad2 at local step 0 at entry (" in text and "party 2" not in text))
    sq = np.arange(9.0).reshape(3, 3)
    out.append(("a transposed square array and permuted values are named as such",
                "transposed" in (DG.layout_hint(sq, sq.T) or "")
                and "permuted" in (DG.layout_hint(sq, sq[::-1]) or "") and DG.layout_hint(sq, sq) is None
                and DG.layout_hint(sq, np.full_like(sq, np.nan)) is None))
    tried = [sorted(set(DG.switches("vfl", held)) & {"batch_order", "init_scheme"})
             for held in ({"init_theta0", "batches"}, {"theta0"}, set(), None)]
    out.append(("a convention on the inputs is tried only when THEIR dump holds no replay input fixing it (the initial "
                "point as init_theta0 or theta0, the batches), and not when what THEIR dump holds is unknown",
                tried == [[], ["batch_order"], ["batch_order", "init_scheme"], []]))
    dumped = sorted(set(DG.switches("vfl", {"r1_theta0", "r2_batch", "r3_theta0"})) & {"batch_order", "init_scheme"})
    out.append(("THEIR per-round θ and batches (r1_theta0, r2_batch) fix no replay input: both input conventions "
                "are tried; a bundle (Flex-VFL's protocol) is tried whatever THEIR dump holds",
                dumped == ["batch_order", "init_scheme"] and "protocol" in DG.switches("vfl", None)
                and "protocol" in DG.switches("vfl", {"init_theta0", "batches"})))
    out.append(("OURS given as its trace.npz reads the trace.json beside it (the run's configuration)",
                DG._trace_config(os.path.join(ours, "trace.npz")) == DG._trace_config(ours) is not None))
    out.append(("diagnose.png's curves: an infinite difference drawn at 1e3, exact agreement at 1e-18, the others "
                "as they are",
                DG.plotted_differences([np.inf, 0.0, 2.5e-7, 40.0]).tolist() == [1e3, 1e-18, 2.5e-7, 40.0]))
    out.append(_figure_case(DG))
    return out


def _inf_both_sides_case(DG):
    """inf − inf is NaN: the entry is said without a RuntimeWarning."""
    import warnings
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        said = " ".join(DG.describe(DG.compare_dumps({1: {"x": np.array([np.inf, 1.0])}},
                                                     {1: {"x": np.array([np.inf, 2.0])}}, 1e-8), 1e-8))
    return ("inf on both sides at entry 0: never agreeing, the entry named (inf vs inf), no warning printed",
            "round 1, x at entry (0,): inf vs inf" in said and not warned)


def _figure_case(DG):
    """(what, right): diagnose.png's figure on a planted comparison: a curve per quantity over the
    rounds, the first divergence a dashed black line of width 1 at its round, named by its quantity."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return ("diagnose.png's figure (matplotlib not installed: no figure is drawn)", True)
    from types import SimpleNamespace
    cmp_ = SimpleNamespace(paper="ssca", rounds=[1, 2, 3], per_round={"omega": [0.0, 1e-9, np.inf], "rho": [0, 0, 2]},
                           divergence=SimpleNamespace(round=3, quantity="omega"))
    fig = DG.diagnose_figure(cmp_, plt)
    try:
        ax = fig.axes[0]
        curves = [(ln.get_label(), list(ln.get_xdata()), list(ln.get_ydata())) for ln in ax.lines[:2]]
        mark = ax.lines[2] if len(ax.lines) == 3 else None
        said = [t.get_text() for t in ax.texts]
        right = (curves == [("omega", [1, 2, 3], [1e-18, 1e-9, 1e3]), ("rho", [1, 2, 3], [1e-18, 1e-18, 2.0])]
                 and mark is not None and list(mark.get_xdata()) == [3, 3] and mark.get_linestyle() == "--"
                 and mark.get_linewidth() == 1 and mark.get_color() == "k" and said == ["first: omega"]
                 and ax.get_yscale() == "log" and ax.get_title() == "ssca: ours vs theirs per quantity")
    finally:
        plt.close(fig)
    return ("diagnose.png's figure: a curve per quantity on a log axis, the first divergence a dashed black line "
            "of width 1 at its round, named by its quantity", right)


def _search_and_comparison_cases(tmp):
    """(what, right): the switch search's rules on planted reruns (each rerun's dump written out
    here): only switches away from OURS's value are tried, a switch is credited when it agrees and
    changes something, a pair that agrees with THEIRS but stays within the tolerance of the baseline
    is not; each rerun is asked THEIR rounds in order; a quantity dumped only from round 2 on is
    compared; a replay input that differs by 1e-13 is named; then the epoch hint (_epoch_hint_cases)."""
    import json
    import os

    from refimpl.tools import diagnose as DG
    ours = os.path.join(tmp, "planted-ours")
    os.makedirs(ours)
    with open(os.path.join(ours, "trace.json"), "w") as fh:
        json.dump({"config": {"curvature": "recursive", "activation": "swish", "sampling": "per-client"}}, fh)
    theirs = {r: {"omega": np.array([1.0, 1.0])} for r in (2, 1)}     # THEIR dump read in another order
    calls, asked = [], []

    def planted(values):
        def rerun(path, replay_file, arrays, rounds, overrides, data):
            calls.append(dict(overrides))
            asked.append(list(rounds))
            v = values[tuple(sorted(overrides.items()))]
            return {r: {"omega": np.array([v, 1.0])} for r in rounds}
        return rerun
    fixed, relu = ("curvature", "fixed"), ("activation", "relu")
    one = planted({(): 1.001, (fixed,): 1.0, (relu,): 1.001})
    said = []
    rows, verdict = DG._switch_search(ours, "", {}, theirs, "ssca", 1e-8, ("curvature", "activation"), said.append,
                                      None, one)
    out = [("of two switches the one that makes every round agree is credited, and only switches away from OURS's "
            "values are rerun", verdict["kind"] == "switch" and verdict["row"]["switch"] == "--curvature fixed"
            and calls == [{}, {"curvature": "fixed"}, {"activation": "relu"}]),
           ("each rerun is asked THEIR rounds, in order", asked == [[1, 2]] * 3)]
    both = planted({(): 1.001, (fixed,): 1.0, (relu,): 1.0})
    rows2, verdict2 = DG._switch_search(ours, "", {}, theirs, "ssca", 1e-8, ("curvature", "activation"), None, None,
                                        both)
    out.append(("when two switches each explain the difference, the first one tried (--curvature fixed) is credited",
                verdict2["kind"] == "switch" and verdict2["row"]["switch"] == "--curvature fixed" and len(rows2) == 3))
    calls.clear()
    nothing = "this switch changes nothing here"
    out.append(("the progress says 'changes nothing' of the switch whose rerun equals the baseline's (ReLU) and of "
                "no other", [nothing in line for line in said] == [False, False, True]
                and said[1] == "--curvature fixed: all rounds agree"))
    calls.clear()
    near = planted({(): 1 + 1.5e-8, (fixed,): 1 + 5e-7, (relu,): 1 + 5e-7, (relu, fixed): 1 + 0.75e-8})
    rows, verdict = DG._switch_search(ours, "", {}, theirs, "ssca", 1e-8, ("curvature", "activation"), None, None, near)
    pair = rows[-1] if rows else {}
    out.append(("a pair within 1e-8 of THEIRS and of the baseline (which is 1.5e-8 off) changes nothing: not "
                "credited", verdict["kind"] == "none" and pair.get("agrees") is True and pair.get("changes") is False
                and len(calls) == 4))
    calls.clear()
    pooled = planted({(): 1.001, (("sampling", "pooled"),): 1.001})
    DG._switch_search(ours, "", {}, theirs, "ssca", 1e-8, ("sampling",), None, None, pooled)
    without = list(calls)
    calls.clear()
    DG._switch_search(ours, "", {"batches": np.zeros((2, 3), int)}, theirs, "ssca", 1e-8, ("sampling",), None, None,
                      pooled)
    out.append(("a convention on the inputs (sampling) is rerun only when THEIR file lacks what fixes it (batches)",
                without == [{}, {"sampling": "pooled"}] and calls == [{}]))
    late = DG.compare_dumps({1: {"omega": np.ones(2)}, 2: {"omega": np.ones(2), "A": np.array([2.0])}},
                            {1: {"omega": np.ones(2)}, 2: {"omega": np.ones(2), "A": np.array([3.0])}}, 1e-8)
    out.append(("a quantity dumped only from round 2 on is compared there (round 2, A)",
                late.divergence is not None and (late.divergence.round, late.divergence.quantity) == (2, "A")))
    late = DG.compare_dumps({1: {"omega": np.ones(2)}, 2: {"omega": np.ones(2), "A": np.array([2.0])}},
                            {1: {"omega": np.ones(2)}, 2: {"omega": np.ones(2), "A": np.array([2.0])}}, 1e-8)
    out.append(("a quantity both sides dump from round 2 on agrees and leaves nothing uncompared (exit 0); its "
                "round 1 is a gap in its curve (NaN), not an exact agreement",
                late.divergence is None and late.uncompared() == [] and DG.verdict_code(late) == DG.EXIT["agree"]
                and np.isnan(late.per_round["A"][0]) and late.per_round["A"][1] == 0.0))
    w1, w2 = np.arange(6.0).reshape(2, 3) / 7, np.ones((1, 3))
    np.savez(os.path.join(ours, "trace.npz"), W1_0=w1, W2_0=w2)
    differ, unknown = DG.differing_inputs(ours, {"W1_0": w1 * (1 + 1e-13), "W2_0": w2}, "ssca")
    out.append(("an initial point 1e-13 apart is a differing replay input",
                differ == ["initial point"] and not unknown))
    return out + _epoch_hint_cases(DG)


def _epoch_hint_cases(DG):
    """(what, right): the epoch hint's probability, exp(−Σ B_i B_j / n), by hand; its underflow said as
    such; the hint given against OURS drawn independently, not against OURS drawn by epoch."""
    out = []
    rng = np.random.default_rng(3)
    rows10 = []
    for _ in range(2):                              # 2 epochs of n = 10 in batches of 4: 4, 4, 2 (padded)
        p = rng.permutation(10)
        rows10 += [p[:4], p[4:8], np.r_[p[8:], -1, -1]]
    hint = DG.epoch_order_hint(np.array(rows10), 10) or ""
    out.append(("the epoch hint's odds: 2 epochs × 3 rounds × 2/2 × 4·4/10 pairs, exp(−9.6) ≈ 7e-05",
                "probability about 7e-05" in hint))
    rows8 = [p[i:i + 4] for p in (rng.permutation(8) for _ in range(4)) for i in (0, 4)]   # 4 epochs of 2 rounds
    out.append(("… and with whole rounds per epoch: 4 epochs × 1 pair of rounds × 4·4/8, exp(−8) ≈ 0.0003",
                "probability about 0.0003" in (DG.epoch_order_hint(np.array(rows8), 8) or "")))
    long = np.concatenate([rng.permutation(100) for _ in range(40)]).reshape(-1, 10)   # exp(−1800) is 0.0
    out.append(("… and odds that underflow to 0 are said to lie below 1e-300",
                "with probability below 1e-300" in (DG.epoch_order_hint(long, 100) or "")))
    given, ours_epoch = (DG.their_schedule_hint({"batches": np.array(rows10)}, DG._paper("vfl"),
                                                {"conventions": {"batch_order": order}}, 10) for order in
                         ["independent", "epoch"])
    out.append(("the same schedule as THEIR batches gives the hint against OURS drawn independently, none against "
                "OURS drawn by epoch", "probability about 7e-05" in (given or "") and ours_epoch is None))
    return out


def _comparison_edge_cases(tmp):
    """(what, right): the comparison's own refusals and readings — a side without a dump, no common
    round, no common quantity; a quantity dumped in some rounds only; an array of the same size in
    another shape; empty arrays; a plain dump without a trace (no reruns); a damaged trace.json;
    a report written without matplotlib."""
    import json
    import os
    import sys

    from refimpl.tools import diagnose as DG
    w = np.arange(4.0)
    out = [("a side without a per-round dump, no common round and no common quantity are refused",
            _raises(lambda: DG.compare_dumps({}, {1: {"omega": w}}, 1e-9), "OURS holds no per-round dump")
            and _raises(lambda: DG.compare_dumps({1: {"omega": w}}, {}, 1e-9), "THEIRS holds no per-round dump")
            and _raises(lambda: DG.compare_dumps({1: {"omega": w}}, {2: {"omega": w}}, 1e-9),
                        "no round is dumped on both sides")
            and _raises(lambda: DG.compare_dumps({1: {"omega": w}}, {1: {"rho": 1.0}}, 1e-9), "share no quantity"))]
    c = DG.compare_dumps({1: {"omega": w, "rho": 1.0}, 2: {"omega": w}},
                         {1: {"omega": w.reshape(2, 2), "rho": 1.0}, 2: {"omega": w, "rho": 1.0}}, 1e-9)
    out.append(("a quantity missing in one round of one side is named; the same values in another shape and "
                "empty arrays agree", c.divergence is None and "rho (only in theirs)" in "; ".join(c.uncompared())
                and DG._rel(np.zeros(0), np.zeros(0)) == 0.0))
    plain_o, plain_t = os.path.join(tmp, "plain-ours.npz"), os.path.join(tmp, "plain-theirs.npz")
    np.savez(plain_o, r1_omega=w, r1_rho=1.0)
    np.savez(plain_t, r1_omega=w + 1e-3, r1_rho=1.0)
    code, text, dg = _diagnosis(plain_o, plain_t)
    out.append(("two plain dumps (no trace.json): compared, no rerun tried (exit 1)",
                code == 1 and "round 1, omega" in text and not dg.rows))
    bad = os.path.join(tmp, "bad-trace")
    os.makedirs(bad)
    np.savez(os.path.join(bad, "trace.npz"), r1_omega=w, r1_rho=1.0)
    with open(os.path.join(bad, "trace.json"), "w") as fh:
        fh.write("{not json")
    out.append(("a damaged trace.json is refused, naming it", _raises(lambda: DG.diagnose(bad, plain_t),
                                                                      "not a readable trace.json")))
    report = os.path.join(tmp, "report-no-mpl")
    saved = {k: sys.modules.get(k) for k in ("matplotlib", "matplotlib.pyplot")}
    try:
        sys.modules["matplotlib"] = sys.modules["matplotlib.pyplot"] = None       # import matplotlib fails
        png = DG.write_report(report, dg.comparison, dg.lines, dg.rows)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    out.append(("without matplotlib the report is written without its figure",
                png is None and os.path.exists(os.path.join(report, "diagnose.md"))))
    out.append(("the epoch hint stays silent on a non-integer or too small schedule and when OURS drew by epoch",
                DG.epoch_order_hint(np.ones((3, 2)), 10) is None and DG.epoch_order_hint(np.ones((3, 2), int), 1)
                is None and DG.epoch_order_hint(np.ones((3, 2), int), None) is None
                and DG.their_schedule_hint({"batches": np.arange(8).reshape(4, 2)}, DG._paper("vfl"),
                                           {"conventions": {"batch_order": "epoch"}}, 8) is None))
    agree = DG.compare_dumps({1: {"omega": w}}, {1: {"omega": w.copy()}}, 1e-9)
    import importlib.util
    figure = importlib.util.find_spec("matplotlib") is not None
    png = DG.write_report(os.path.join(tmp, "report-agree"), agree, DG.describe(agree, 1e-9), [])
    out.append(("the report of dumps that agree is written, with its figure when matplotlib is there",
                os.path.exists(os.path.join(tmp, "report-agree", "diagnose.md"))
                and (png is not None and os.path.exists(png)) == figure))
    return out


def _replay_edge_cases(tmp):
    """(what, right): the verdicts around THEIR replay inputs — a pair of switches named as the pair;
    THEIR dump without an initial point (the sources line says the reruns use OURS's); THEIR
    top-level batches that --index-base 1 cannot read (the reruns cannot run: exit 5, the reason);
    a layout difference shown in the report; the reruns' notes."""
    import os

    from refimpl.core.data import mnist_5k
    from refimpl.tools.transcriptions import their_ssca
    ds, (J, K, B, T, tau) = mnist_5k(), (8, 10, 10, 4, 0.1)
    run = dict(rounds=T, batch=B, hidden=J, tau=tau, rho_a=0.8, rho_alpha=0.6, gamma_a=0.5, gamma_alpha=0.65,
               dump_rounds="all", eval_every=T)       # the dumps are compared; the metrics at rounds 0 and T suffice
    arrays, W1, W2, batches = their_ssca(ds, np.random.default_rng(3), J, K, B, T, tau, activation="relu")
    pair = os.path.join(tmp, "pair.npz")
    np.savez(pair, **arrays)
    same = _run("ssca", "ssca", os.path.join(tmp, "ours-pair"), init=(W1, W2), batches=batches, **run)
    notes = []
    code, text, dg = _diagnosis(same, pair, tol=1e-9, note=notes.append)
    out = [("THEIR A^t = τ and ReLU together: the pair is named (exit 3); the notes say whose inputs and which data",
            code == 3 and "with --curvature fixed + --activation relu all rounds agree" in text
            and any("rerunning refimpl (the reruns start from THEIR" in n for n in notes)
            and any("the data OURS's run used" in n for n in notes)),
           ("the report opens with what was compared and ends with the count; the reruns' lines come between",
            len(dg.lines) > 3 and dg.lines[0].startswith("ssca dumps, rounds 1..4")
            and dg.lines[-1].startswith("compared ") and any("reruns" in ln for ln in dg.lines[1:-1]))]
    no_init = os.path.join(tmp, "no-init.npz")
    np.savez(no_init, **{k: v for k, v in arrays.items() if k not in ("W1_0", "W2_0") and not k.endswith("_omega")})
    notes = []
    _diagnosis(same, no_init, tol=1e-9, note=notes.append)
    out.append(("THEIR dump without an initial point: the reruns use OURS's, and say so",
                any("THEIR file holds no initial point: the reruns use OURS's" in n for n in notes)))
    theirs_b = dict(arrays, batches=arrays["batches"] + 1)
    theirs_b["batches"].flat[0] = 0
    zero = os.path.join(tmp, "zero-id.npz")
    np.savez(zero, **theirs_b)
    code, text, _ = _diagnosis(same, zero, tol=1e-9, index_base=1)
    out.append(("THEIR batches hold an id 0 under --index-base 1: the reruns cannot run (exit 5), saying why",
                code == 5 and "no switch (baseline): could not rerun: THEIRS batches: entry (0, 0, 0) = 0 is below 1"
                in text))
    return out


def _cases_in_a_directory(*groups):
    """The (what, right) cases of ``groups`` (each a function of a scratch directory), one
    temporary directory for all, as a check's record; under the mutation runner, up to the first
    group with a wrong case (:func:`~refimpl.verification.registry.fact_groups`)."""
    import tempfile

    from refimpl.verification.registry import fact_groups
    with tempfile.TemporaryDirectory() as tmp:
        return _cases_result(fact_groups([lambda g=g: g(tmp) for g in groups]))


@check("tools.diagnose", "refimpl diagnose end to end against THEIR side from an independent transcription of SSCA: "
       "THEIR A^t = τ is found at round 1, A and explained by --curvature fixed; THEIR own inputs are named as the "
       "difference, not a switch; the same method from the same inputs agrees (exit 0 only once the quantities "
       "THEIRS lacks are allowed); THEIR wrong γ_t exponent is unexplained at round 2; THEIR 1-based ids in a "
       "per-round dump are read with --index-base 1; the report names the switch; a pair of switches is named as "
       "the pair; the reruns say whose inputs they start from; THEIR unreadable ids stop the reruns with the reason "
       "(wrong answers: 0)",
       "refimpl diagnose; docs/guide.md")
def diagnose_reasons(quick):
    return _cases_in_a_directory(_replay_edge_cases, _diagnose_reason_cases)     # the cheaper group first


@check("tools.diagnose_steps", "refimpl diagnose on planted Flex-VFL dumps: a change in one local step's momentum is "
       "named at that step, its entry by index and in the paper's words; a bug no switch explains is exit 1 and a "
       "switch that changes nothing is shown as such and never credited; a baseline or a switch that cannot rerun "
       "is exit 5 with its reason, a shape change named (wrong answers: 0)",
       "refimpl diagnose; docs/guide.md")
def diagnose_steps(quick):
    return _cases_in_a_directory(_diagnose_step_cases, _diagnose_edge_cases)


@check("tools.diagnose_report", "what refimpl diagnose says without rerunning, on planted dumps: a side without a "
       "dump, no common round or quantity, a missing file, a --map without '=' and complex values are refused; a "
       "quantity dumped in some rounds only is named; 1-based ids, a transpose, permuted values and a NaN quantity are "
       "named; two plain dumps are compared without reruns; a damaged trace.json is refused; OURS's trace without its "
       "data or a size still compares; the report is written without matplotlib; on planted reruns the switch "
       "search tries only values away from OURS's, credits a switch or pair only when it agrees and changes "
       "something and says which switch changes nothing; a quantity dumped from round 2 on is compared; a replay "
       "input 1e-13 apart differs; the epoch hint's odds by hand, and no hint without the data's size (wrong "
       "answers: 0)",
       "refimpl diagnose; docs/guide.md")
def diagnose_report(quick):
    return _cases_in_a_directory(_comparison_edge_cases, _search_and_comparison_cases, _report_cases)


@check("tools.crosscheck", "refimpl's cross-check tools give the right answer on planted cases: diagnose finds a "
       "difference beyond the tolerance at its round and quantity (with the quantities before it that agree) and none "
       "within it, NaN never agrees (worst difference infinite), the first differing local step is named and a step on "
       "either side only differs, a layout is never named from one entry, a scalar against a vector is named by the "
       "shapes, a round on one side only is named, two-digit "
       "rounds are read whole, --map renames THEIR names; layouts, an epoch schedule, another paper's dump, the replay "
       "inputs a per-round dump implies (under their own names only, and none from rounds with a gap or clients that "
       "start apart; a shorter batch padded), sample ids beyond n − 1 or fractional, inf and a repeated id in a replay "
       "array (padded batches too) and a τ table's 0, a run's round files and dump.mat (a vector as a vector), the "
       "dump's size estimate (exactly at the limit allowed), a dump over an earlier one, no file left by a failed "
       "write, SSCA's and Flex-VFL's runs streaming their dumped rounds to a dump writer, a Flex-VFL --init matrix "
       "(row-major), "
       "--map's W1 and W2, --round for unnumbered .mat iterates (0 included), --init's "
       "initial_Theta2.mat sibling, MFCGD's initial estimators and replay inputs, and an entry's name (SSCA's W2 past "
       "its bias column, a Flex-VFL party's encoder on its own features; none without the data) are read right; a "
       "round's quantities are walked in data-flow order; crosscheck flags inf and NaN, a snapshot "
       "of another shape, and measures a relative difference (of a metric, of a snapshot) as such, against the first "
       "trace, names an empty or short series, saved traces load back as saved; refimpl crosscheck's exit code and "
       "words (--tol 0, --metrics-only, --allow-missing, NaN on either side, a one-round shift either way, exit 2 when "
       "nothing was compared, whatever the flags; a run that diverged early against the full run: the rounds only one "
       "trace holds named as not compared, the diverged run named); booleans refused as replay input, the 1-based "
       "hint only without an "
       "id 0, --dump-rounds sorted within 1..T; one NaN entry in a snapshot flagged on its side, a shift found within "
       "the tolerance relative to the snapshot's size, a round not kept refused, a full disk named (other write errors "
       "unchanged, no file left), the settings two runs set apart noted; a run directory read as its trace, text, "
       "DEL-led files and pickles refused, --round 1.5, a third --map key and W1 alone refused, a v7.3 .mat named, the "
       "authors' Theta1 hint only where it applies; a per-step quantity held as a scalar named by its shapes; "
       "crosscheck's metrics (on both sides, or one) and snapshots in order; refusals in full: another paper's dump "
       "(both papers named), a dump beyond its limit (the limit that admits it), no array format, a cell array and a "
       ".mat of no variables (wrong answers: 0)",
       "refimpl diagnose / crosscheck; docs/guide.md")
def crosscheck_tools(quick):
    from refimpl.verification.registry import fact_groups
    cases = fact_groups([_reading_cases, _crosscheck_cases, _diagnose_cases, _crosscheck_cli_cases,
                         _crosscheck_cli_more,  # cheapest first
                         _streamed_dump_cases])     # three papers' runs, twice each: last
    return _cases_result(cases, "planted ")


def _prepared_right(prepared_reproductions):
    got = prepared_reproductions("/r", ["b", "a"], lambda *a, **kw: (a, kw), 3, False, 7)
    return list(got.items()) == [(n, ((n, f"/r/reproductions/{n}"), dict(seeds=3, quick=False, resume=True, rounds=7)))
                                 for n in "ba"]


def _build_report_right(tmp):
    """build_report's wiring on planted parts: each reproduction prepared with the report's seeds,
    sizes and rounds, resuming; every registered check handed to the engine with the sizes and the
    checks' directory, the engine run on the report's executor, scheduler and progress; each
    reproduction finished on the executor and workers; the files written with the records, the
    execution (its seconds at least the planted engine's 0.15 and within the call's, to their
    rounding) and REPORT.md's lines (its head, the smoke warning); REPORT.md's path and the
    records returned."""
    import json
    import os
    import time
    from types import SimpleNamespace

    from refimpl.tools.engine import resolve_workers
    from refimpl.tools.report import build_report
    from refimpl.tools.reproduce import names
    from refimpl.verification.registry import CheckRecord
    out, calls = os.path.join(tmp, "built-report"), []
    rec = CheckRecord("t.a", "claim", "src", 0.5, 1.0, 0.5, True, {"kind": "theorem", "seconds": 0.25})

    def prepare(name, d, **kw):
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "reproduction.json"), "w") as fh:
            json.dump({"seeds": [0], "data": "planted", "runs": [{"label": "a", "config": {}}]}, fh)
        calls.append(("prepare", name, d, kw))
        return SimpleNamespace(out=d, tasks=[])

    def engine(ids, quick, root, reps, workers_for, run):
        calls.append(("engine", ids, quick, root, list(reps), workers_for(8) == resolve_workers(5, 8, "tasks")))
        run(["task"], 2)
        time.sleep(0.15)                    # the engine's time: the report's seconds at least 0.1 once rounded
        return {"workers": 2, "ran": 1}, [rec]
    parts = {"prepare": prepare, "load_checks": lambda: {"t.a": None, "t.b": None}, "run_engine_tasks": engine,
             "run_tasks": lambda *a, **kw: calls.append(("run", a, kw)),
             "finish": lambda *a: calls.append(("finish", a[0].out) + a[1:]),
             "write_report_files": lambda *a: calls.append(("write",) + a) or "PATH"}
    t0 = time.perf_counter()
    got = build_report(out, quick=True, seeds=3, progress=print, executor="dask", workers=5, scheduler="tcp://s",
                       rounds=4, parts=parts)
    took = time.perf_counter() - t0
    say = [c[0] for c in calls]
    reps = [(n, os.path.join(out, "reproductions", n)) for n in names()]
    write = calls[-1]
    return (got == ("PATH", [rec]) and say == ["prepare"] * len(reps) + ["engine", "run"] + ["finish"] * len(reps)
            + ["write"] and [c[1:] for c in calls[:len(reps)]] == [
                (n, d, dict(seeds=3, quick=True, resume=True, rounds=4)) for n, d in reps]
            and calls[len(reps)] == ("engine", ["t.a", "t.b"], True, os.path.join(out, "checks"), list(names()), True)
            and calls[len(reps) + 1] == ("run", (["task"], "dask", 2, "tcp://s", print), {"what": "tasks"})
            and [c[1:] for c in calls[len(reps) + 2:-1]] == [(d, None, None, "dask", 5) for _, d in reps]
            and write[1:3] == (out, [rec]) and 0.1 <= write[3]["seconds"] <= took + 0.05    # rounded to 0.1 s
            and {k: v for k, v in write[3].items() if k != "seconds"} == {
                "executor": "dask", "workers": 2, "tasks": {"workers": 2, "ran": 1}, "check_seconds": {"t.a": 0.25}}
            and write[4][0] == "# refimpl verification report" and "; quick settings;" in write[4][2]
            and any(line.startswith("**Smoke report: every reproduction was cut to 4 rounds") for line in write[4]))


def _report_files_right(tmp):
    """write_report_files into a planted directory: each file read back."""
    import json
    import os

    from refimpl.tools.report import write_report_files
    from refimpl.verification.registry import CheckRecord
    out = os.path.join(tmp, "report-files")
    os.makedirs(out)
    rec = CheckRecord("t.a", "claim", "src", 0.5, 1.0, 0.5, True, {"kind": "theorem"})
    path = write_report_files(out, [rec], {"executor": "local", "seconds": 1.5}, ["# head", "", "text"])
    with open(os.path.join(out, "checks.json")) as fh:
        checks = json.load(fh)
    with open(os.path.join(out, "execution.json")) as fh:
        execution = json.load(fh)
    with open(os.path.join(out, "REPORT.md")) as fh:
        text = fh.read()
    return (path == os.path.join(out, "REPORT.md") and text == "# head\n\ntext"
            and execution == {"executor": "local", "seconds": 1.5}
            and [(r["id"], r["measured"], r["holds"]) for r in checks] == [("t.a", 0.5, True)])


def _report_tasks_right():
    """run_engine_tasks on planted reproductions and a planted engine (what it was given, what it returns,
    the checks' directory)."""
    import os
    import shutil
    import tempfile
    from dataclasses import asdict
    from types import SimpleNamespace

    from refimpl.tools.verify import run_engine_tasks
    from refimpl.tools.verify import load_checks
    from refimpl.verification.registry import CheckRecord
    load_checks()           # the checks named below and their groups, also where only this module was imported
    ids = ["grad.fd", "ssca.lemma1_vs_cvxpy", "ssca.multi_constraint_qcqp"]
    reps = {"r": SimpleNamespace(tasks=[{"id": "r0", "label": "r-0"}, {"id": "r1", "label": "r-1"}])}
    sized, ran, stale_seen = [], [], []
    tmp = tempfile.mkdtemp(prefix="refimpl-report-")
    root = os.path.join(tmp, "checks")

    def run(failures):
        def engine(tasks, w):
            stale_seen.append(os.path.exists(os.path.join(root, "stale.json")))
            os.makedirs(os.path.join(root, "t0"), exist_ok=True)          # where the engine's checks write
            ran.append(([t["label"] for t in tasks], [t.get("part_workers") for t in tasks], w))
            results = {t["id"]: [asdict(CheckRecord(c, "", "", 0.5, 1.0, 0.5, True, {"kind": "theorem"}))
                                 for c in t["checks"]] for t in tasks
                       if "checks" in t and not any(f.startswith(t["label"] + ":") for f in failures)}
            return {"workers": w}, failures, results
        return engine
    try:
        # the checks' directory: a fresh report has none; a stale one is removed before, and after
        counts, recs = run_engine_tasks(ids, True, root, reps, lambda n: sized.append(n) or 2, run(["grad.fd: boom"]))
        os.makedirs(root)
        with open(os.path.join(root, "stale.json"), "w") as fh:
            fh.write("{}")
        run_engine_tasks(ids, True, root, reps, lambda n: 2, run(["grad.fd: boom"]))
        left = os.path.exists(root)
    except RuntimeError:        # the failed check taken for a failed run
        return False
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    right = (sized == [4] and counts == {"workers": 2} and stale_seen == [False, False] and not left
             and ran == [(["grad.fd", "ssca.cvxpy", "r-0", "r-1"], [2, 2, None, None], 2)] * 2
             and [(r.id, r.holds, r.details.get("error")) for r in recs]
             == [("grad.fd", False, "grad.fd: boom"), ("ssca.lemma1_vs_cvxpy", True, None),
                 ("ssca.multi_constraint_qcqp", True, None)])
    try:
        run_engine_tasks(ids, True, root, reps, lambda n: 2, run(["r-1: died", "grad.fd: boom"]))
        return False
    except RuntimeError as exc:
        return right and str(exc) == ("1 reproduction runs failed (finished runs are kept; rerun to retry): "
                                      "r-1: died")
    finally:                    # the planted engine made the checks' directory again
        shutil.rmtree(tmp, ignore_errors=True)


def _reproduction_table_cases(tmp):
    """(what, right): the tables `refimpl reproduce` writes, from planted runs whose rows are
    worked out by hand (two or three seeds each; the figures themselves are not drawn)."""
    import os
    from types import SimpleNamespace

    import refimpl.core.plots as plots
    from refimpl.core.trace import Trace
    from refimpl.tools.reproduce import _figure3, _time_to_target, aggregate
    rep = SimpleNamespace(out=tmp, task_of=lambda label, s: {"id": f"{label.replace(' ', '_')}-{s}"})

    def plant(label, s, status="finished", **metrics):
        Trace(config={}, metrics={k: list(v) for k, v in metrics.items()}, status=status).save(
            os.path.join(tmp, "tasks", rep.task_of(label, s)["id"]))
    r4 = [0, 1, 2, 3]
    for B, costs in ((10, ([2.0, 1.0, 0.5, 0.4], [2.0, 1.2, 0.6, 0.45])),
                     (100, ([2.0, 0.8, 0.7, 0.6], [2.0, 0.9, 0.65, 0.6]))):
        for s, c in enumerate(costs):
            plant(f"SSCA B={B}", s, round=r4, train_cost=c, comm_floats=[1000.0 * r for r in r4],
                  grad_evals=[3.0 * B * r for r in r4], sq_norm=[1.0] * 4)
    for s, (sq, cost) in enumerate(((4.0, 1.0), (6.0, 1.2))):
        plant("regularised lam=0.01", s, round=r4, train_cost=[2.0, 1.5, 1.2, cost], sq_norm=[1.0, 2.0, 3.0, sq])
        plant("constrained U=0.1", s, round=r4, train_cost=[2.0, 1.5, 1.2, 0.5], sq_norm=[1.0, 2.0, 3.0, 2.0])
    for s, acc in enumerate(([0.1, 0.5, 0.82, 0.9], [0.1, 0.81, 0.86, 0.9], [0.1, 0.2, 0.3, 0.95])):
        plant("flexvfl", s, ("finished", "stopped: planted", "diverged: round 4: planted")[s], round=r4,
              time=[0.0, 1.0, 2.0, 7.0 + s], test_accuracy=acc)
    plan3 = [(f"SSCA B={B}", None, SimpleNamespace(batch=B)) for B in (10, 100)]
    plan4 = plan3 + [("regularised lam=0.01", None, SimpleNamespace(lam=0.01)), ("constrained U=0.1", None, None)]
    drawn = plots._pyplot
    plots._pyplot = lambda: None
    try:
        f = _figure3(rep, plan4, 2)
        executions = _execution_records(rep, tmp)
    finally:
        plots._pyplot = drawn
    rows3 = {r["batch"]: r for r in f["figure3"]}
    f4 = {r["run"]: r for r in f["figure4"]}
    ttt = _time_to_target(rep, [("flexvfl", None, None)], 3)[0]
    curves = aggregate(rep, [("flexvfl", None, None)], 3, "time", ("test_accuracy",))
    by_round = aggregate(rep, plan3[:1], 2, "round", ("train_cost",))
    return [
        ("Fig. 3's default target is the largest final cost of the batch sizes (0.6); a cost equal to it counts",
         {B: (r["target_train_cost"], r["seeds_reaching"], r["rounds"]) for B, r in rows3.items()}
         == {10: (0.6, 2, 2.0), 100: (0.6, 2, 3.0)}),
        ("Fig. 3 reads floats and sample gradients at the first evaluation reaching the target, averaged over seeds",
         (rows3[10]["comm_floats"], rows3[10]["grad_evals"], rows3[100]["comm_floats"], rows3[100]["grad_evals"])
         == (2000.0, 60.0, 3000.0, 900.0)),
        ("Fig. 4's data loss is the final cost less λ||ω||² (0.96 and 1.14: mean 1.05, std 0.09); ||ω||² 5 ± 1",
         abs(f4["regularised lam=0.01"]["data_loss_mean"] - 1.05) < 1e-12
         and abs(f4["regularised lam=0.01"]["data_loss_std"] - 0.09) < 1e-12
         and (f4["regularised lam=0.01"]["sq_norm_mean"], f4["regularised lam=0.01"]["sq_norm_std"]) == (5.0, 1.0)
         and f4["constrained U=0.1"]["data_loss_mean"] == 0.5),
        ("a time to 0.8 and 0.85 is the mean over the seeds reaching it (2, 1, 9: 4; 7, 2, 9: 6), all 3 reaching",
         abs(ttt["time_to_0.8_mean"] - 4.0) < 1e-12 and abs(ttt["time_to_0.85_mean"] - 6.0) < 1e-12
         and ttt["seeds_reaching_0.8"] == ttt["seeds_reaching_0.85"] == 3),
        ("time-axis curves run to the end every seed reaches (7, not 9), interpolated there",
         len(curves) == 60 and curves[-1]["time"] == 7.0
         and abs(curves[-1]["test_accuracy_mean"] - np.mean([0.9, 0.86 + 0.04 * 5 / 6, 0.3 + 0.65 * 5 / 7])) < 1e-12),
        ("round-axis curves: per round the mean and population std over seeds (round 2: 0.55 ± 0.05)",
         len(by_round) == 4 and abs(by_round[2]["train_cost_mean"] - 0.55) < 1e-12
         and abs(by_round[2]["train_cost_std"] - 0.05) < 1e-12),
        ("execution.json: the workers the executor used (3 of the 4 asked), the runs run and reused, and the tasks "
         "in the directory the plan does not use; without counts, the workers asked",
         executions[:2] == [(3, 2, 1, ["SSCA_B=10-0", "SSCA_B=10-1"]),
                            (4, None, None, ["SSCA_B=10-0", "SSCA_B=10-1"])]),
        ("reproduction.json: each run's status per seed, and the runs that did not finish named (flexvfl's seed 1 "
         "stopped, seed 2 diverged)", executions[2] == (["finished", "stopped: planted", "diverged: round 4: planted"],
                                                        ["flexvfl seed 1: stopped: planted",
                                                         "flexvfl seed 2: diverged: round 4: planted"]))]


def _plot_dispatch():
    """[(the drawing function Trace.plot called, the name or title it passed)] for an MFCGD-family, a
    Flex-VFL and an SSCA trace, with refimpl.core.plots' functions replaced by recorders."""
    from refimpl.core import plots
    from refimpl.core.trace import Trace
    names, called = ("plot_mfcgd", "plot_vfl", "plot_trace"), []
    saved = {n: getattr(plots, n) for n in names}
    for n in names:
        setattr(plots, n, lambda first, path, title=None, n=n: called.append(
            (n, title if isinstance(first, Trace) else next(iter(first)))))
    try:
        for c, m, title in (({"algorithm": "ssca"}, {"grad_norm": [1.0], "samples": [2]}, ""),
                            ({"method": "flexvfl"}, {"time": [0.5]}, ""), ({}, {"cost": [1.0]}, "title")):
            Trace(config=c, metrics=m).plot("unused.png", title)
    finally:
        for n, f in saved.items():
            setattr(plots, n, f)
    return called


def _unfinished_section_cases(tmp):
    """(what, right): ``reproduction_lines`` of the reproduction :func:`_report_section_cases` planted,
    with two runs that did not finish added to its reproduction.json (put back afterwards), names
    them, before where its curves are."""
    import json
    import os

    from refimpl.tools.report import reproduction_lines
    d, out = os.path.join(tmp, "report", "ssca-sample"), os.path.join(tmp, "report")
    want = reproduction_lines("ssca-sample", d, out)
    path = os.path.join(d, "reproduction.json")
    with open(path) as fh:
        rec = json.load(fh)
    with open(path, "w") as fh:
        json.dump({**rec, "unfinished": ["SGD seed 1: diverged: round 3: x", "SSCA seed 0: stopped: y"]}, fh)
    try:
        got = reproduction_lines("ssca-sample", d, out)
    finally:
        with open(path, "w") as fh:
            json.dump(rec, fh)
    return [("refimpl report's section names the runs that did not finish, before where its curves are",
             got == want[:-2] + ["**Runs that did not finish** (each label's curves stop at its shortest run): "
                                 "SGD seed 1: diverged: round 3: x; SSCA seed 0: stopped: y.", ""] + want[-2:])]


def _report_section_cases(tmp):
    """(what, right): refimpl report's section on a planted reproduction and its smoke warning, written out."""
    import json
    import os
    from types import SimpleNamespace

    from refimpl.core.plots import legend_layout
    from refimpl.core.trace import Trace
    from refimpl.tools.report import (check_section, execution_record, finished_reproductions, header_lines,
                                      prepared_reproductions, report_lines, reproduction_lines, smoke_lines)
    from refimpl.tools.verify import reproduction_failures
    finished = []
    repro = finished_reproductions({"b": SimpleNamespace(out="/r/b"), "a": SimpleNamespace(out="/r/a")},
                                   lambda rep, *rest: finished.append((rep.out, rest)), "local", 3)
    d = os.path.join(tmp, "report", "ssca-sample")
    os.makedirs(d)
    with open(os.path.join(d, "reproduction.json"), "w") as fh:
        json.dump({"seeds": [0, 1], "data": "planted", "preset": "quick",
                   "runs": [{"label": "SSCA", "config": {"curvature": "0.5"}}, {"label": "SGD", "config": {}},
                            {"label": "SSCA tau=1", "config": {"curvature": "1.0"}}]}, fh)
    with open(os.path.join(d, "time_to_target.csv"), "w") as fh:
        fh.write("run,time_to_0.8_mean,seeds\nSSCA,0.00012,2\nSGD,12.5,\n")
    with open(os.path.join(d, "figure4_norm_vs_cost.csv"), "w") as fh:
        fh.write("run,sq_norm_mean\nSSCA,20000.0\n")
    open(os.path.join(d, "figure4_norm_vs_cost.png"), "w").close()
    got = reproduction_lines("ssca-sample", d, os.path.join(tmp, "report"))
    whole = report_lines(["# head", ""], 7, [], {"ssca-sample": d, "again": d}, os.path.join(tmp, "report"))
    want = ["### ssca-sample", "", "Seeds: 2; data: planted; settings: quick, SSCA curvature: 0.5, 1.0; runs: SSCA, "
            "SGD, SSCA tau=1.", "", "![ssca-sample](ssca-sample/ssca-sample.png)", "",
            "![figure4_norm_vs_cost](ssca-sample/figure4_norm_vs_cost.png)", "",
            "| run | sq_norm_mean |\n|---|---|\n| SSCA | 2.000e+04 |", "",
            "| run | time_to_0.8_mean | seeds |\n|---|---|---|\n| SSCA | 1.200e-04 | 2 |\n| SGD | 12.5 |  |", "",
            "Curves (mean and standard deviation over seeds): `ssca-sample/curves.csv`; configuration, seeds and "
            "versions: `ssca-sample/reproduction.json`.", ""]
    return [("refimpl report's section on a reproduction: seeds, data, settings with each SSCA curvature once, runs, "
             "its figure, each table it wrote (a figure beside it only where one was drawn; numbers as the check "
             "table prints them), where its curves and configuration are", got == want),
            ("REPORT.md in order: its head, the smoke warning, the checks, then each reproduction's section in the "
             "order given", whole == ["# head", ""] + smoke_lines(7) + check_section([]) + ["", "## Reproductions", ""]
             + want + reproduction_lines("again", d, os.path.join(tmp, "report"))),
            ("a report's failed runs are the failures no check task's label (with its colon) starts: a run "
             "labelled like a check and more is a run", reproduction_failures(
                 ["ssca.a: boom", "SSCA_B=10-0: died", "ssca.ab: x", "ssca.a-run: died"],
                 [{"label": "ssca.a"}, {"label": "ssca.ab"}]) == ["SSCA_B=10-0: died", "ssca.a-run: died"]),
            ("a report's one engine execution: a task per check or group and each reproduction's tasks after them, "
             "the workers sized on all of them, the checks' records in order (a failed check's with its reason), a "
             "failed reproduction run raised", _report_tasks_right()),
            ("a report's reproductions each finished once, in order, with the executor and workers, and named by "
             "their directories", finished == [("/r/b", (None, None, "local", 3)), ("/r/a", (None, None, "local", 3))]
             and list(repro.items()) == [("b", "/r/b"), ("a", "/r/a")]),
            ("execution.json of a report: executor, workers, task counts, seconds, each check's seconds",
             execution_record("local", {"workers": 2, "ran": 5}, 3.5, [
                 SimpleNamespace(id="t.a", details={"seconds": 0.25}), SimpleNamespace(id="t.b", details={})]) == {
                 "executor": "local", "workers": 2, "tasks": {"workers": 2, "ran": 5}, "seconds": 3.5,
                 "check_seconds": {"t.a": 0.25, "t.b": None}}),
            ("a report's files (checks.json, execution.json, REPORT.md) and its path; its reproductions each "
             "prepared in reproductions/NAME with its seeds, sizes and rounds, resuming, in order; build_report",
             _report_files_right(tmp) and _prepared_right(prepared_reproductions) and _build_report_right(tmp)),
            ("REPORT.md's head: when, the versions in order, quick or full settings", header_lines(
                False, "2026-01-02T03:04:05", {"numpy": "1.0", "refimpl": "0.1"}) == [
                "# refimpl verification report", "", "Generated 2026-01-02T03:04:05 with numpy 1.0, refimpl 0.1; "
                "full settings; embedded MNIST subset unless stated.", ""] and "; quick settings;" in header_lines(
                True, "now", {})[2]),
            ("a trace's figure: ||∇F(x̄_t)|| against samples with both recorded, accuracy against time with a "
             "time, per round otherwise; named by its algorithm, else its method, else 'run'", [
                 (Trace(config=c, metrics=m).figure_axis(), Trace(config=c, metrics=m).label()) for c, m in (
                     ({"algorithm": "ssca", "method": "x"}, {"grad_norm": [1.0], "samples": [2]}),
                     ({"method": "flexvfl"}, {"grad_norm": [1.0], "time": [0.5]}), ({}, {"cost": [1.0]}))] == [
                 ("samples", "ssca"), ("time", "flexvfl"), ("round", "run")]),
            ("a figure's legend below 6.4 in: 3 labels of 10 characters in 3 columns and one row (0.26 in), 12 of 30 "
             "in 2 columns and 6 rows (1.06 in), 7 of 30 in 2 and 4 rows, one of 200 in one column",
             [(n, round(r, 6)) for n, r in (legend_layout(["x" * 10] * 3, 6.4), legend_layout(["x" * 30] * 12, 6.4),
                                            legend_layout(["x" * 30] * 7, 6.4), legend_layout(["x" * 200], 6.4))]
             == [(3, 0.26), (2, 1.06), (2, 0.74), (1, 0.26)]),
            ("a trace's plot draws the figure of its axis (the drawing functions planted)", _plot_dispatch() == [
                ("plot_mfcgd", "ssca"), ("plot_vfl", "flexvfl"), ("plot_trace", "title")]),
            ("the smoke warning of --rounds 7, and none without it",
             smoke_lines(None) == [] and smoke_lines(7) == [
                 "**Smoke report: every reproduction was cut to 7 rounds (`--rounds`)**; its figures show that the "
                 "runs work, not the papers' curves. The checks ran at their own sizes.", ""])]


def _execution_records(rep, tmp):
    """``finish`` on the planted Flex-VFL runs (3 seeds; figures not drawn): execution.json's workers, new and
    reused runs and unused tasks, with the executor's counts and without."""
    import json
    import os
    from types import SimpleNamespace

    from refimpl.tools.reproduce import finish
    from refimpl.vfl.experiment import VFLConfig
    others = [{"id": n} for n in os.listdir(os.path.join(tmp, "tasks")) if not n.startswith(("SSCA_B=10-", "flexvfl"))]
    done = SimpleNamespace(**vars(rep), name="vfl-time", plan=[("flexvfl", "vfl", VFLConfig())], seeds=3, axis="time",
                           metrics=("test_accuracy",), header={"data": "planted", "seeds": [0, 1, 2]},
                           tasks=[rep.task_of("flexvfl", s) for s in range(3)] + others)
    out = []
    for counts in ({"workers": 3, "ran": 2, "reused": 1}, None):
        finish(done, counts=counts, seconds=1.0, workers=4)
        with open(os.path.join(tmp, "execution.json")) as fh:
            e = json.load(fh)
        out.append((e["workers"], e["new_runs"], e["resumed_runs"], e["unused_tasks"]))
    with open(os.path.join(tmp, "reproduction.json")) as fh:
        r = json.load(fh)
    out.append((r["runs"][0]["statuses"], r["unfinished"]))
    return out


@check("tools.reproduction_tables", "the tables refimpl reproduce writes, on planted runs worked out by hand: Fig. 3's "
       "default target (the largest final cost of the batch sizes, reached with equality) and the floats, sample "
       "gradients and rounds at the first evaluation reaching it, averaged over seeds; Fig. 4's data loss (the cost "
       "less λ||ω||²) and ||ω||², mean and spread; the time to a target averaged over the seeds reaching it; "
       "time-axis curves on the time every seed reaches, round-axis curves per round; --rounds 7 cuts every run of "
       "every reproduction to 7 rounds (steps), each run a valid configuration; vfl-time's η per method (async VFL "
       "0.1, the others 0.03); ssca-sample's FedAvg with E = min(5, (n/K)/B) local steps wherever E >= 2, and no "
       "FedAvg in ssca-feature; SSCA's plans evaluate every max(1, ⌊T/50⌋) rounds (Fig. 4 max(5, ⌊T/50⌋)) and --tune "
       "records each grid's settings; ssca-tradeoff's constrained and regularised runs on one schedule (ρ_t = "
       "1/t^0.55, γ_t = 0.5/t^0.6, B = 100); SSCA's caption one schedule per distinct step sizes, with its "
       "verdict; a figure's title counts its seeds; execution.json's workers, runs and unused tasks; an --out "
       "holding a run continued only with --resume; reproduction.json's statuses per seed and the runs that did not "
       "finish; refimpl report's failed runs (a run labelled like a check and "
       "more is a run), its execution.json and REPORT.md's head (wrong answers: 0)",
       "[SSCA] Figs. 3–4; [FlexVFL] Section 5; refimpl reproduce; docs/guide.md")
def reproduction_tables(quick):
    return _cases_in_a_directory(lambda tmp: _reproduction_table_cases(tmp) + _report_section_cases(tmp)
                                 + _unfinished_section_cases(tmp) + _resume_refusal_cases(tmp) + _plan_cases())


@check("tools.sweep_summary", "refimpl sweep-summary's table on a planted sweep worked out by hand: per cell the mean "
       "and spread (n − 1) over seeds of the criterion (final:METRIC minimised, -final:METRIC maximised, "
       "first:METRIC<=V / >=V the round of first reach, inf when never reached), the seeds that did not finish "
       "counted; cells whose seeds all finished ranked by the mean, a mean that is not a number after them, and "
       "cells with a diverged or stopped seed after every finished cell, whatever their mean (a diverged trace ends "
       "before its blow-up; reproduce --tune never picks such a run either); curves.csv's per-round mean and spread "
       "over the rounds every seed holds; failed tasks listed; an unknown metric or criterion refused, naming what "
       "is allowed (wrong answers: 0)",
       "refimpl sweep-summary; docs/guide.md")
def sweep_summary(quick):
    return _cases_in_a_directory(_sweep_summary_cases)


@check("tools.sweep_spec", "refimpl sweep's reading of a spec, the answers written out: a linear and a log range's "
       "values, the cells in the product of the grid's sorted names, a task per cell and seed, a count of seeds as "
       "0..n−1; a setting's identity by value (lam = 0 and 0.0 one task), a whole number where one is required, a "
       "repeated grid "
       "value or seed, a negative seed, a setting both fixed and in the grid, an unknown setting and a grid above "
       "--max-cells refused, each naming what is allowed; a spec that only adds seeds or grid values grows the sweep "
       "(its finished tasks reused), one that changes the runner, a fixed setting or a grid name, or drops a value, "
       "does not, its differences named (wrong answers: 0)",
       "refimpl sweep; docs/guide.md")
def sweep_spec(quick):
    return _cases_in_a_directory(lambda tmp: _sweep_spec_reading_cases())


def _sweep_spec_reading_cases():
    """(what, right): :func:`refimpl.tools.sweep.validate_spec`, ``tasks``, ``spec_grows`` and
    ``spec_difference`` on specs whose answers are written out here."""
    from refimpl.tools.sweep import spec_difference, spec_grows, tasks, validate_spec

    def spec(**kw):
        return {"runner": "sgd", "fixed": {"rounds": 3}, **kw}
    runner, fixed, grid, seeds = validate_spec(spec(seeds=2, grid={"lr": {"start": 0.1, "stop": 0.5, "num": 3},
                                                                   "batch": [10, 20]}))
    log = validate_spec(spec(grid={"lr": {"start": 0.01, "stop": 1, "num": 3, "log": True}}))[2]["lr"]
    todo = tasks(runner, fixed, grid, seeds)
    out = [("a linear range 0.1..0.5 in 3 is 0.1, 0.3, 0.5; a log range 0.01..1 in 3 is 0.01, 0.1, 1; seeds = 2 is "
            "0, 1",
            [round(v, 12) for v in grid["lr"]] == [0.1, 0.3, 0.5] and [round(v, 12) for v in log] == [0.01, 0.1, 1.0]
            and seeds == [0, 1]),
           ("a task per cell and seed (2 × 3 cells × 2 seeds = 12), cells in the product of the sorted names (batch "
            "first), seeds within a cell",
            len(todo) == 12 and [(t["cell"]["batch"], round(t["cell"]["lr"], 12), t["seed"]) for t in todo[:3]]
            == [(10, 0.1, 0), (10, 0.1, 1), (10, 0.3, 0)] and len({t["id"] for t in todo}) == 12)]
    same = [tasks(*validate_spec(spec(fixed={"rounds": 3, "lam": v})))[0]["id"] for v in (0, 0.0)]
    out.append(("lam = 0 and lam = 0.0 are one setting: one task id", same[0] == same[1]))
    refusals = [(spec(grid={"batch": [10.5]}), "batch must be a whole number"),
                (spec(grid={"lr": [0.1, 0.10]}), "'lr' repeats a value"),
                (spec(seeds=[1, 1]), "seeds repeat: [1, 1]"), (spec(seeds=[-1]), "seeds must be whole numbers >= 0"),
                (spec(seeds=True), "seeds must be a positive count or a list of integers"),
                (spec(grid={"rounds": [3, 4]}), "settings ['rounds'] are both fixed and in the grid"),
                (spec(grid={"nope": [1]}), "unknown grid settings ['nope'] for runner 'sgd'; allowed: ")]
    out.append(("a float batch, a repeated grid value or seed, a negative seed, seeds = true, a setting both fixed and "
                "in the grid and an unknown setting refused, each naming the reason",
                all(_raises(lambda d=d: validate_spec(d), w) for d, w in refusals)))
    out.append(("a grid of 2 × 3 = 6 cells above --max-cells 5 refused with the command that runs it; at 6 accepted",
                _raises(lambda: validate_spec(spec(grid={"lr": [0.1, 0.2, 0.3], "batch": [10, 20]}), 5),
                        "the grid has 6 cells (lr: 3 × batch: 2), above the limit of 5; pass --max-cells 6")
                and validate_spec(spec(grid={"lr": [0.1, 0.2, 0.3], "batch": [10, 20]}), 6)[0] == "sgd"))
    old = {"runner": "sgd", "fixed": {"rounds": 3}, "grid": {"lr": [0.1, 0.2]}, "seeds": [0, 1]}
    grows = {"a seed added": dict(old, seeds=[0, 1, 2]), "a grid value added": dict(old, grid={"lr": [0.1, 0.2, 0.4]})}
    changes = {"the runner": dict(old, runner="sgdm"), "a fixed setting": dict(old, fixed={"rounds": 4}),
               "a grid name": dict(old, grid={"lr": [0.1, 0.2], "batch": [10]}), "a value dropped":
               dict(old, grid={"lr": [0.1]}), "a seed dropped": dict(old, seeds=[0])}
    out.append(("a spec that adds a seed or a grid value grows the sweep; one that changes the runner, a fixed "
                "setting or a grid name, or drops a value or a seed, does not",
                all(spec_grows(old, n) for n in grows.values())
                and not any(spec_grows(old, n) for n in changes.values())))
    out.append(("the differences named: fixed.rounds: 3 -> 4; grid.lr: [0.1, 0.2] -> [0.1]; seeds: [0, 1] -> [0]",
                spec_difference(old, changes["a fixed setting"]) == ["fixed.rounds: 3 -> 4"]
                and spec_difference(old, changes["a value dropped"]) == ["grid.lr: [0.1, 0.2] -> [0.1]"]
                and spec_difference(old, changes["a seed dropped"]) == ["seeds: [0, 1] -> [0]"]))
    return out


def _planted_sweep(root, runs, failed=()):
    """A sweep directory as ``refimpl sweep`` leaves it: ``tasks/<id>/`` with task.json and the
    trace for each (cell, seed, status, metrics) of ``runs``; ``failed/<id>.json`` for each
    (cell, seed, error) of ``failed``."""
    import json
    import os

    from refimpl.core.trace import Trace
    for i, (cell, seed, status, metrics) in enumerate(runs):
        d = os.path.join(root, "tasks", f"t{i:02d}")
        Trace(config={"seed": seed}, metrics=metrics, status=status).save(d)
        with open(os.path.join(d, "task.json"), "w") as fh:
            json.dump({"id": f"t{i:02d}", "cell": cell, "seed": seed, "status": status}, fh)
    for i, (cell, seed, error) in enumerate(failed):
        os.makedirs(os.path.join(root, "failed"), exist_ok=True)
        with open(os.path.join(root, "failed", f"f{i}.json"), "w") as fh:
            json.dump({"id": f"f{i}", "cell": cell, "seed": seed, "error": error}, fh)
    return root


def _sweep_summary_cases(tmp):
    """(what, right): :func:`refimpl.tools.sweep.summarize` on planted sweeps, the answers written
    out by hand (means, spreads with n − 1, orders)."""
    import csv
    import math
    import os

    from refimpl.tools.sweep import summarize

    def run(cost, acc=(0.5, 0.5, 0.5), status="finished"):
        return {"round": [0, 5, 10], "train_cost": list(cost), "test_accuracy": list(acc)}, status
    plan = [({"lr": 0.1}, 0, *run((2.3, 2.1, 2.0), (0.5, 0.7, 0.8))),
            ({"lr": 0.1}, 1, *run((2.3, 2.2, 2.2), (0.5, 0.8, 0.9))),
            ({"lr": 1.0}, 0, *run((2.3, 1.7, 1.5), (0.5, 0.6, 0.6))),
            ({"lr": 1.0}, 1, *run((2.3, 1.9, 1.7), (0.5, 0.6, 0.8))),
            ({"lr": 10.0}, 0, *run((2.3, 0.5, 0.5), (0.5, 0.9, 0.9), "diverged: round 11: planted")),
            ({"lr": 10.0}, 1, *run((2.3, 1.2, 0.7), (0.5, 0.7, 0.95))),
            ({"lr": 0.3}, 0, *run((2.3, 2.2, 2.0), (0.5, 0.6, 0.7), "finished: reached test accuracy 0.7")),
            ({"lr": 0.01}, 0, *run((2.3, 2.3, float("nan"))))]
    root = _planted_sweep(os.path.join(tmp, "sweep"), [(c, s, st, m) for c, s, m, st in plan],
                          failed=[({"lr": 3.0}, 1, "ValueError: planted")])
    rows, failures = summarize(root, "final:train_cost", plot=False)

    def table(rows):
        return [(r["lr"], r["seeds"], r["unfinished"], round(r["mean"], 12), round(r["std"], 12)) for r in rows]
    sd = round(math.sqrt(0.02), 12)
    out = [("final:train_cost: lr 1 (1.6), lr 0.3 (2.0; its run finished on reaching its target), lr 0.1 (2.1), "
            "then the NaN cell, then lr 10 with a diverged seed (mean 0.6, the lowest); spreads with n − 1; a single "
            "seed's spread 0",
            [r[:3] for r in table(rows)] == [(1.0, 2, 0), (0.3, 1, 0), (0.1, 2, 0), (0.01, 1, 0), (10.0, 2, 1)]
            and [table(rows)[i] for i in (0, 2)] == [(1.0, 2, 0, 1.6, sd), (0.1, 2, 0, 2.1, sd)]
            and math.isnan(rows[3]["mean"]) and rows[3]["std"] == 0.0 and table(rows)[4][3:] == (0.6, sd)),
           ("the failed task listed with its cell, seed and error",
            failures == [{"task": "f0", "cell": '{"lr": 3.0}', "seed": 1, "error": "ValueError: planted"}])]
    rows, _ = summarize(root, "-final:test_accuracy", plot=False)
    out.append(("-final:test_accuracy: maximised (lr 0.1's 0.85 before lr 1's 0.7; lr 10's 0.925 after both)",
                [(r["lr"], round(r["mean"], 12)) for r in rows if r["lr"] not in (0.01, 0.3)]
                == [(0.1, -0.85), (1.0, -0.7), (10.0, -0.925)]))
    rows, _ = summarize(root, "first:train_cost<=1.7", plot=False)
    out.append(("first:train_cost<=1.7: the round of first reach, with equality (lr 1: rounds 5 and 10, mean 7.5), inf "
                "when a seed "
                "never reaches it (lr 0.1), its spread 0",
                [(r["lr"], r["mean"], round(r["std"], 12)) for r in rows if r["lr"] in (1.0, 0.1)]
                == [(1.0, 7.5, round(math.sqrt(12.5), 12)), (0.1, math.inf, 0.0)]))
    with open(os.path.join(root, "curves.csv")) as fh:
        curves = [r for r in csv.DictReader(fh) if r["cell"] == '{"lr": 1.0}']
    out.append(("curves.csv: lr 1's train_cost mean and spread per round (2.3, 1.8, 1.6; 0, √0.02, √0.02)",
                [(float(r["round"]), round(float(r["train_cost_mean"]), 12), round(float(r["train_cost_std"]), 12))
                 for r in curves] == [(0.0, 2.3, 0.0), (5.0, 1.8, sd), (10.0, 1.6, sd)]))
    errs = [_raises(lambda c=c: summarize(root, c, plot=False), want) for c, want in (
        ("final:loss", "'loss' is not a metric of these runs; recorded: round, test_accuracy, train_cost"),
        ("best", "criterion must be 'final:METRIC'"), ("first:train_cost<=abc", "'abc' after <= is not a number"))]
    out.append(("an unknown metric, an unknown criterion and a threshold that is no number refused, each saying "
                "what is allowed", all(errs)))
    return out


def _resume_refusal_cases(tmp):
    """(what, right): an output directory is continued only with --resume when its tasks/ holds a
    run; a directory without tasks/, or whose tasks/ holds hidden files only, is free."""
    import os

    from refimpl.tools.reproduce import _refuse_without_resume
    dirs = {name: os.path.join(tmp, "resume", name) for name in ("none", "hidden", "held")}
    for name in ("hidden", "held"):
        os.makedirs(os.path.join(dirs[name], "tasks"))
    open(os.path.join(dirs["hidden"], "tasks", ".lock"), "w").close()
    os.makedirs(os.path.join(dirs["held"], "tasks", "run-0"))

    def refused(name, resume):
        try:
            _refuse_without_resume(dirs[name], resume)
        except ValueError as exc:
            return "pass --resume to continue it" in str(exc)
        return False
    got = {(name, resume): refused(name, resume) for name in dirs for resume in (False, True)}
    return [("reproduce refuses an --out holding a run unless --resume; one without runs (or hidden files only) is "
             "free", got == {(n, r): n == "held" and not r for n in dirs for r in (False, True)})]


def _plan_cases():
    """(what, right): ``reproduce --rounds 7`` (and ``report --rounds 7``) cuts every run of every
    paper's reproductions to 7 rounds (steps for mfcgd-rates), each a configuration its paper
    accepts; without it, quick runs are longer than that."""
    from refimpl import papers
    out = []
    for paper in papers.papers():
        for name in paper.reproductions:
            runs, _ = paper.plan(name, quick=True, rounds=7)
            lengths = sorted({getattr(cfg, paper.length_field) for _, _, cfg in runs})
            try:
                valid = all(paper.validated(cfg) is not None for _, _, cfg in runs)
            except ValueError:
                valid = False
            longer = all(getattr(cfg, paper.length_field) > 7 for _, _, cfg in paper.plan(name, quick=True)[0])
            out.append((f"reproduce {name} --rounds 7: every run {paper.length_field} 7 and valid; without it longer",
                        lengths == [7] and valid and longer))
    from refimpl.ssca.reproductions import convergence_plan, tradeoff_plan, tuned_settings
    from refimpl.ssca.experiment import RunConfig
    every = {(T, setting): {c.eval_every for _, _, c in convergence_plan(setting, True, T, False)[0]}
             for T in (7, 60, 300) for setting in ("sample", "feature")}
    fig4 = {T: {c.eval_every for _, _, c in tradeoff_plan(True, T, False)[0]} for T in (7, 80, 1000)}
    out.append(("ssca-sample and ssca-feature evaluate every max(1, ⌊T/50⌋) rounds (T = 7, 60, 300: 1, 1, 6), "
                "ssca-tradeoff every max(5, ⌊T/50⌋) (T = 7, 80, 1000: 5, 5, 20)",
                every == {(T, s): {w} for T, w in ((7, 1), (60, 1), (300, 6)) for s in ("sample", "feature")}
                and fig4 == {7: {5}, 80: {5}, 1000: {20}}))
    tuned = [tuned_settings(RunConfig(*a, **kw)) for a, kw in ((("ssca",), dict(tau=0.05, gamma_a=0.9)),
                                                              (("sgdm",), dict(lr=0.3, momentum=0.5)),
                                                              (("sgd",), dict(lr=1.0, local_steps=5)))]
    out.append(("--tune records the settings each grid varies: SSCA's τ and a2, SGD-m's η0 and momentum, SGD's and "
                "FedAvg's η0", tuned == [{"tau": 0.05, "gamma_a": 0.9}, {"lr": 0.3, "momentum": 0.5}, {"lr": 1.0}]))
    return out + _plan_setting_cases()


def _plan_setting_cases():
    """(what, right): settings the reproductions' plans fix, written out: vfl-time's η per method;
    ssca-sample's FedAvg with E = min(5, (n / K) / B) local steps wherever E >= 2 (E·B distinct
    samples per client; E = 1 is SGD), none in the feature-based setting."""
    from refimpl.ssca.reproductions import convergence_plan
    from refimpl.vfl.reproductions import time_plan
    etas = {m: cfg.eta for m, _, cfg in time_plan(True, None, False)[0]}
    out = [("reproduce vfl-time: η 0.03 for Flex-VFL, adaptive Flex-VFL, sync VFL and P-BCD, 0.1 for async VFL",
            etas == {"flexvfl": "0.03", "adaptive-flexvfl": "0.03", "sync-vfl": "0.03", "async-vfl": "0.1",
                     "pbcd": "0.03"})]
    for n_train, want in ((4000, {"FedAvg E=5 B=10": 5, "FedAvg E=4 B=100": 4}),
                          (2000, {"FedAvg E=5 B=10": 5, "FedAvg E=2 B=100": 2}),
                          (1000, {"FedAvg E=5 B=10": 5})):
        got = {label: cfg.local_steps for label, _, cfg in convergence_plan("sample", True, None, False, n_train, 10)[0]
               if label.startswith("FedAvg")}
        out.append((f"reproduce ssca-sample on {n_train} samples, 10 clients: FedAvg runs {want}", got == want))
    feature = [label for label, _, _ in convergence_plan("feature", True, None, False)[0] if label.startswith("FedAvg")]
    out.append(("reproduce ssca-feature runs no FedAvg", feature == []))
    from refimpl.tools.reproduce import figure_title
    plan = time_plan(True, None, False)[0]
    titles = [figure_title("vfl-time", {"data": "MNIST", "seeds": seeds}, plan) for seeds in ([0, 1, 2], [4], [])]
    out.append(("a figure's title counts the seeds it averages: 3 seeds, 1 seed, and 1 seed when none are listed",
                [", 3 seeds, " in titles[0], ", 1 seed, " in titles[1], ", 1 seed, " in titles[2]] == [True] * 3))
    return out + _tradeoff_plan_cases()


def _tradeoff_plan_cases():
    """(what, right): Fig. 4's plan compares end points, so its constrained (U = 0.1, 0.2, 0.3, 0.5)
    and regularised (λ = 1e-4, 1e-3, 1e-2) runs share one schedule meeting (4) and (6): ρ_t = 1/t^0.55,
    γ_t = 0.5/t^0.6, batch 100; and SSCA's figure caption groups runs by their four step-size numbers."""
    from refimpl import papers
    from refimpl.ssca.experiment import RunConfig
    from refimpl.ssca.reproductions import tradeoff_plan
    runs = [(label, cfg.resolved()) for label, _, cfg in tradeoff_plan(True, None, False)[0]]
    shared = {(c.algorithm, c.U if c.algorithm == "ssca-constrained" else c.lam, c.rho_a, c.rho_alpha, c.gamma_a,
               c.gamma_alpha, c.batch) for label, c in runs if not label.startswith("SSCA")}
    want = {("ssca-constrained", U, 1.0, 0.55, 0.5, 0.6, 100) for U in (0.1, 0.2, 0.3, 0.5)} | {
        ("ssca", lam, 1.0, 0.55, 0.5, 0.6, 100) for lam in (1e-4, 1e-3, 1e-2)}
    out = [("reproduce ssca-tradeoff: the constrained and regularised runs at ρ_t = 1/t^0.55, γ_t = 0.5/t^0.6, "
            "batch 100", shared == want)]
    met = dict(rho_alpha=0.55, gamma_a=0.5)      # ρ_t = 1/t^0.55, γ_t = 0.5/t^γα meet (4) and (6) for 0.55 < γα ≤ 1
    plan = [("A", "ssca", RunConfig("ssca", gamma_alpha=0.6, **met)),
            ("B", "ssca", RunConfig("ssca", gamma_alpha=0.7, **met)),
            ("C", "ssca", RunConfig("ssca", gamma_alpha=0.6, **met)), ("D", "ssca", RunConfig("ssca"))]
    caption = papers.get("ssca").figure_caption("ssca-sample", plan)
    parts = caption.split("; ")
    out.append(("SSCA's caption names one schedule per distinct (ρ's a, α; γ's a, α), each with its verdict: A and C "
                "share one, B its own, both meeting (4) and (6); D at the paper's ρ_t = 1/t^0.1 outside them",
                len(parts) == 3 and parts[0].startswith("A, C: ") and parts[1].startswith("B: ")
                and all(p.endswith("meets (4) and (6)") for p in parts[:2])
                and parts[2].startswith("D: ") and "is outside the theorems' conditions (" in parts[2]))
    fedavg = [("FedAvg E=5 B=10", "ssca", RunConfig("sgd", local_steps=5)), ("SGD B=10", "ssca", RunConfig("sgd"))]
    out.append(("the caption adds FedAvg's local-step rule when the plan runs FedAvg (here its first run), not "
                "otherwise",
                "FedAvg E = min(5" in (papers.get("ssca").figure_caption("ssca-sample", fedavg) or "")
                and "FedAvg" not in (papers.get("ssca").figure_caption("ssca-sample", fedavg[1:]) or "")))
    return out


def _claims_line_right(VF, CheckRecord):
    """A --claims run's records written (the cache in a temporary directory, named by
    REFIMPL_CACHE_DIR: the file lands there) and read back by the main job's closing line: the first
    claim with its verdict, every other one not run yet. HOME points at another temporary directory
    meanwhile, which must stay empty: a record that missed REFIMPL_CACHE_DIR would otherwise land in
    the user's own cache as their claims' last verdicts."""
    import os
    import tempfile

    from refimpl.core.runtime import environ
    ids = VF.tier_ids(("claim",))
    rec = CheckRecord(ids[0], "planted", "nowhere", 0.5, 1.0, 0.5, True, {"kind": "claim"})
    second = CheckRecord(ids[1], "planted", "nowhere", 2.0, 1.0, 2.0, False, {"kind": "claim"})
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as home, \
            environ({"REFIMPL_CACHE_DIR": tmp, "HOME": home}):
        written = VF.record_claims([rec], quick=True)
        line = VF.claims_line()
        VF.record_claims([second], quick=True)             # a later run of another claim keeps the first's verdict
        kept = VF.last_claims()
        strayed = os.listdir(home)
    return (written == os.path.join(tmp, "last_claims.json") and not strayed and f"{ids[0]} yes" in line
            and all(f"{cid} (not run yet)" in line for cid in ids[1:]) and f"{ids[0]} (not run yet)" not in line
            and kept.get(ids[0], {}).get("verdict") == "yes" and kept.get(ids[1], {}).get("verdict") == "no (claim)")


def _tiers_right(VF):
    theorems, claims = VF.tier_ids(("theorem",)), VF.tier_ids(("claim",))
    every = VF.tier_ids()
    return (theorems and claims and set(every) == set(theorems) | set(claims)
            and VF.selection() == (theorems, True, "verify")
            and VF.selection(claims=True) == (claims, True, "verify --claims")
            and VF.selection(both=True) == (every, True, "verify --all")
            and VF.selection(full=True) == (every, False, "verify --full")
            and VF.selection(["grad.fd"], full=True) == (["grad.fd"], False, "verify")
            and VF.selection(["grad.fd"]) == (["grad.fd"], True, "verify"))


def _planted_warnings(quick):
    """A planted check that warns twice (the second warning first in sorted order) and holds."""
    import warnings
    warnings.warn("b second")
    warnings.warn("a first", RuntimeWarning)
    return {"measured": 1.0, "bound": 2.0, "note": "its note"}


_RECORD_FIELDS = ("NumPy scalars measured (an int64 count, a float32 bound) recorded as Python floats, as --json "
                  "writes them, with the relation; a note cut short on one line; check tasks handed to the engine "
                  "counted as checks")


def _record_fields_right(VF, REGISTRY):
    """Records' fields (below), a note's text cut short (its whitespace one space, cut at a word) and
    the check tasks handed to the engine."""
    return (_numpy_scalars_recorded_right(VF, REGISTRY)
            and VF.short("a\n   b\tc", 60) == "a b c" and VF.short("word " * 20, 12) == "word word…"
            and _checks_on_engine_right(VF))


def _checks_on_engine_right(VF):
    """refimpl verify's check tasks on a recording engine: counted as checks, weighed by their checks
    and placed by their seconds with a progress bar, neither without."""
    calls = []
    record = lambda tasks, *args, **kw: calls.append((tasks, args, kw))
    task = {"checks": ["a", "b", "c"], "cost": 4.5}
    VF.checks_on_engine(record, "local", "sched", print)([task], 2)
    VF.checks_on_engine(record, "dask", None, None)([task], 1)
    (_, a1, k1), (_, a2, k2) = calls
    return (a1 == ("local", 2, "sched", print) and k1["what"] == "checks" and k1["weight"](task) == 3
            and k1["position"](task) == 4.5 and a2 == ("dask", 1, None, None)
            and (k2["what"], k2["weight"], k2["position"]) == ("checks", None, None))


def _numpy_scalars_recorded_right(VF, REGISTRY):
    """A planted check measuring NumPy scalars: its record holds Python floats (4.0 ≥ 3.0, ratio 0.75)
    and names its relation and kind, and that it is vacuous as the check said. It measures 4 only
    when run_check hands it quick=True, run_check's default."""
    cid = "planted.verdict.numpy-scalars"
    REGISTRY[cid] = ("planted numpy-scalars", "nowhere",
                     lambda q: {"measured": np.int64(4 if q is True else 5), "bound": np.float32(3), "relation": "≥",
                                "vacuous": True},
                     "theorem")
    try:
        rec = VF.run_check(cid)
    finally:
        REGISTRY.pop(cid, None)
    return ([type(rec.measured), type(rec.bound), rec.measured, rec.ratio, rec.holds, rec.details.get("relation"),
             rec.details.get("kind"), rec.details.get("vacuous")] == [float, float, 4.0, 0.75, True, "≥", "theorem", True])


def _planted_verdicts():
    """The planted checks of :func:`_verdict_cases`: name → (what the check returns, or a function;
    holds; ratio — None: no ratio)."""
    nan = float("nan")

    def crash(quick):
        raise RuntimeError("planted crash")
    return {
        "le-below": ({"measured": 1.0, "bound": 2.0}, True, 0.5),
        "le-equal": ({"measured": 2.0, "bound": 2.0}, True, 1.0),
        "le-above": ({"measured": 3.0, "bound": 2.0}, False, 1.5),
        "lt-equal": ({"measured": 2.0, "bound": 2.0, "relation": "<"}, False, 1.0),
        "lt-below": ({"measured": 1.0, "bound": 4.0, "relation": "<"}, True, 0.25),
        "ge-above": ({"measured": 4.0, "bound": 2.0, "relation": "≥"}, True, 0.5),
        "ge-below": ({"measured": 1.0, "bound": 2.0, "relation": "≥"}, False, 2.0),
        "ge-equal": ({"measured": 2.0, "bound": 2.0, "relation": "≥"}, True, 1.0),
        "gt-equal": ({"measured": 2.0, "bound": 2.0, "relation": ">"}, False, 1.0),
        "gt-above": ({"measured": 8.0, "bound": 2.0, "relation": ">"}, True, 0.25),
        "ge-above-bound-below-1": ({"measured": 1.0, "bound": 0.5, "relation": "≥"}, True, 0.5),
        "negative-le-holds": ({"measured": -0.5, "bound": -0.25}, True, 0.5),      # a slope of -1/2 ≤ -1/4
        "negative-le-fails": ({"measured": -0.1, "bound": -0.25}, False, 2.5),
        "approx-own-holds": ({"measured": 1.1, "bound": 1.0, "relation": "≈", "holds": True}, True, 1.1),
        "approx-without-holds": ({"measured": 1.0, "bound": 1.0, "relation": "≈"}, False, 1.0),
        "approx-half": ({"measured": 2.0, "bound": 4.0, "relation": "≈", "holds": False}, False, 0.5),
        "own-holds-false": ({"measured": 1.0, "bound": 2.0, "holds": False}, False, 0.5),
        "own-holds-true": ({"measured": 3.0, "bound": 2.0, "holds": True}, True, 1.5),
        "zero-below": ({"measured": 0.0, "bound": 1.0}, True, 0.0),
        # a zero against a positive lower bound fails: no ratio on the holding side (0 would read as "holds")
        "zero-ge-fails": ({"measured": 0.0, "bound": 1.0, "relation": "≥"}, False, None),
        "zero-ge-negative-bound": ({"measured": 0.0, "bound": -1.0, "relation": "≥"}, True, 0.0),
        "not-vacuous": ({"measured": 1.0, "bound": 2.0, "vacuous": False}, True, 0.5),
        "nan-measured": ({"measured": nan, "bound": 1.0}, False, None),
        "no-measured": ({"measured": None, "bound": 1.0}, False, None),
        "unknown-relation": ({"measured": 1.0, "bound": 2.0, "relation": "=<"}, False, None),
        "equals-relation": ({"measured": 1.0, "bound": 1.0, "relation": "="}, False, None),
        "crash": (crash, False, None),
        "warned": (_planted_warnings, True, 0.5),
    }


def _verdict_cases():
    """(what, right): the verdicts `refimpl verify` names for planted checks whose outcome is
    written out here, beside the machinery's answer (run_check, uniform_ratio, failing, verdict)."""
    from refimpl.tools import verify as VF
    from refimpl.verification.registry import REGISTRY, CheckRecord
    planted = _planted_verdicts()
    ids = {name: f"planted.verdict.{name}" for name in planted}
    try:
        for name, (out, _, _) in planted.items():
            REGISTRY[ids[name]] = (f"planted {name}", "nowhere", out if callable(out) else (lambda q, o=out: dict(o)),
                                   "theorem")
        recs = {name: VF.run_check(ids[name]) for name in planted}
    finally:
        for i in ids.values():
            REGISTRY.pop(i, None)
    same = lambda a, b: (a is None and b is None) or (a is not None and b is not None and abs(a - b) <= 1e-12 * abs(b))
    cases = [(f"planted check {name}: holds={want}, ratio {ratio}",
              recs[name].holds is want and same(recs[name].ratio, ratio)) for name, (_, want, ratio) in planted.items()]
    cases += [("a NaN measured value is recorded as no value (None), never as NaN",
               recs["nan-measured"].measured is None),
              ("a check that returns vacuous=False is not marked vacuous (its verdict: yes)",
               "vacuous" not in recs["not-vacuous"].details and VF.verdict(recs["not-vacuous"]) == "yes"),
              (_RECORD_FIELDS, _record_fields_right(VF, REGISTRY)),
              ("a check's warnings in its record, sorted, and the first of them in its table note after its own",
               recs["warned"].details.get("warnings") == ["RuntimeWarning: a first", "UserWarning: b second"]
               and recs["warned"].details.get("table_note") == "its note; 2 warning(s): RuntimeWarning: a first"),
              ("a progress bar's total: the recorded seconds of the checks summed, 1 s for one never recorded",
               _recorded_cost_right(VF)),
              ("a crash, an unknown relation and ≈ without the check's own holds carry an error naming it",
               "planted crash" in recs["crash"].details.get("error", "")
               and "=<" in recs["unknown-relation"].details.get("error", "")
               and "relation must be one of" in recs["equals-relation"].details.get("error", "")
               and "≈" in recs["approx-without-holds"].details.get("error", "")),
              ("the main job's closing line: a claim's verdict recorded by a --claims run, the others not run yet",
               _claims_line_right(VF, CheckRecord)),
              ("the tiers: verify runs the theorem-kind checks at quick sizes, --claims the claims, --all both, --full "
               "both at full sizes, --only the ids given (full sizes with --full)", _tiers_right(VF)),
              ("'claims not reproduced' names the failing claims only (not a failing theorem check, not a claim that "
               "holds)", VF.unreproduced([CheckRecord(i, "p", "s", 1.0, 0.0, None, h, {"kind": k})
                                          for i, h, k in (("a", False, "claim"), ("b", True, "claim"),
                                                          ("c", False, "theorem"), ("d", False, "claim"))])
               == ["a", "d"])]

    def rec(i, holds, kind, vacuous=False):
        return CheckRecord(i, "c", "s", 1.0, 1.0, 1.0, holds, {"kind": kind, **({"vacuous": True} if vacuous else {})})
    rs = [rec("t.ok", True, "theorem"), rec("t.no", False, "theorem"), rec("c.no", False, "claim"),
          rec("c.ok", True, "claim"), rec("t.vac", True, "theorem", True)]
    cases += [("only a failing theorem-kind check is fatal; --strict adds a failing claim",
               VF.failing(rs) == ["t.no"] and VF.failing(rs, strict=True) == ["t.no", "c.no"]),
              ("the table's words: yes, NO, no (claim), yes, yes (vacuous)",
               [VF.verdict(r) for r in rs] == ["yes", "NO", "no (claim)", "yes", "yes (vacuous)"])]
    return (cases + _timed_case(VF, REGISTRY) + _report_table_cases(CheckRecord) + _table_layout_cases(CheckRecord)
            + _engine_and_coverage_cases() + [_library_sizes_case(VF)])


def _library_sizes_case(VF):
    """(what, right): the functions behind `refimpl verify` run its default, the quick sizes, unless
    told otherwise (--full), and the mutation runner runs the claims only when asked (--with-claims)."""
    from refimpl.tools.mutations import run_catalogue, run_mutation
    from refimpl.verification.registry import default_of as arg
    return ("run_check, run_checks and run_coverage default to the quick sizes, run_catalogue and run_mutation to no "
            "claims, as refimpl verify does", [arg(f, "quick") for f in (VF.run_check, VF.run_checks, VF.run_coverage)]
            + [arg(f, "claims") for f in (run_catalogue, run_mutation)] == [True, True, True, False, False])


def _timed_case(VF, REGISTRY):
    """(what, right): a planted check's recorded seconds lie within the time its run took; its Numba
    seconds are the 0.02 s it holds Numba's compiler lock (the event Numba fires while compiling)."""
    import time

    from numba.core import event

    def compiling(q):
        with event.trigger_event("numba:compiler_lock"):
            time.sleep(0.02)
        return {"measured": 1.0, "bound": 2.0}
    t0, c0 = time.perf_counter(), VF.cpu_seconds()
    REGISTRY["planted.verdict.timed"] = ("planted timed", "nowhere", compiling, "theorem")
    try:
        details = VF.run_check("planted.verdict.timed").details
    finally:
        REGISTRY.pop("planted.verdict.timed", None)
    timed, jit, cpu = details.get("seconds"), details.get("jit_seconds"), details.get("cpu_seconds")
    cpu_taken = VF.cpu_seconds() - c0
    import resource

    def larger():
        return max(resource.getrusage(w).ru_maxrss / 1024 for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    before, peak, after = larger(), VF.peak_rss_mb(), larger()
    return [("a check's recorded seconds lie between 0 and the time its run took",
             isinstance(timed, float) and 0.0 <= timed <= time.perf_counter() - t0 + 1e-3),
            ("its CPU seconds lie between 0 and the CPU time its run took",
             isinstance(cpu, float) and 0.0 <= cpu <= cpu_taken + 1e-3),
            ("its Numba seconds are the time it held Numba's compiler lock: 0.02 s, within its seconds",
             isinstance(jit, float) and 0.02 <= jit <= timed),
            ("the peak memory reported is the larger of this process's and its largest finished child's",
             0 < before <= peak <= after)]


def _engine_and_coverage_cases():
    """(what, right): an engine task's status over its checks (planted: one holds, one does not), and
    the --coverage table on planted module rows, written out."""
    import os
    import tempfile

    from refimpl.tools import verify as VF
    from refimpl.verification.registry import PARTS_WORKERS_ENV, REGISTRY
    REGISTRY["planted.task.holds"] = ("p", "nowhere", lambda q: {"measured": 1.0, "bound": 2.0, "details": {
        "n": np.int64(7), "ok": np.bool_(True), "a": np.arange(2)}}, "theorem")      # NumPy values in its details
    REGISTRY["planted.task.fails"] = ("p", "nowhere", lambda q: {"measured": 3.0, "bound": 2.0}, "theorem")
    before = os.environ.get(PARTS_WORKERS_ENV)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            both = VF.check_task({"checks": ["planted.task.holds", "planted.task.fails"], "quick": True}, tmp)
            alone = os.environ.get(PARTS_WORKERS_ENV)          # no part workers asked: one
            one = VF.check_task({"checks": ["planted.task.holds"], "quick": True, "part_workers": 2}, tmp)
            workers = (alone, os.environ.get(PARTS_WORKERS_ENV))
    finally:
        REGISTRY.pop("planted.task.holds", None)
        REGISTRY.pop("planted.task.fails", None)
        if before is None:
            os.environ.pop(PARTS_WORKERS_ENV, None)
        else:
            os.environ[PARTS_WORKERS_ENV] = before
    top = "refimpl"                # planted modules: names under the package, files that are not there
    rows = [{"module": f"{top}/core/a.py", "statements": 10, "executed": 6, "compiled": 2, "not_executed": 2},
            {"module": f"{top}/tools/b.py", "statements": 30, "executed": 3, "compiled": 0, "not_executed": 27},
            {"module": f"{top}/vfl/c.py", "statements": 0, "executed": 0, "compiled": 0, "not_executed": 0}]
    lines = VF.format_coverage(rows).split("\n")
    return [("an engine task holds only when each of its checks does, and gives its checks their part workers",
             (both[0], [r["holds"] for r in both[1]], one[0], workers)
             == ("does not hold", [True, False], "holds", ("1", "2"))),
            ("an engine task's records as plain JSON: an int64 an int, a bool_ a bool, an array its values",
             [(d.get("n"), type(d.get("n")), d.get("ok"), d.get("a")) for d in [both[1][0]["details"]]]
             == [(7, int, True, [0, 1])]),
            ("the --coverage table: a row per module with statements (none: no row), (executed + Numba) / statements "
             "in %, the papers' total without the tools, the package's total",
             [ln.split(" | ")[0].strip() for ln in lines[2:-1]] == [f"{top}/core/a.py", f"{top}/tools/b.py",
                                                                     "total: core + the three papers", "total: package"]
             and [ln.rsplit(" | ", 1)[1].strip() for ln in lines[2:-1]] == ["80", "10", "80", "28"]
             and [c.strip() for c in lines[4].split(" | ")[1:5]] == ["10", "6", "2", "2"]
             # the columns aligned (each line as wide, the rule's joints under the bars), the module's column
             # padded on the right, the numbers' on the left
             and len({len(ln) for ln in lines[:-1]}) == 1
             and [i for i, ch in enumerate(lines[1]) if ch == "+"] == [i for i, ch in enumerate(lines[0]) if ch == "|"]
             and all(c[0] == c[0].strip().ljust(len(c[0])) and all(x == x.strip().rjust(len(x)) for x in c[1:])
                     for c in (ln.split(" | ") for ln in [lines[0]] + lines[2:-1]))),
            _compiled_lines_case(),
            ("a module's coverage row: a line run at import is executed, a compiled one is counted apart, the "
             "lines not executed listed in order",
             VF.coverage_row(f"{top}/x.py", [1, 2, 3, 5, 70, 1000], [1000, 3, 70, 5], [5], [70, 2])
             == {"module": f"{top}/x.py", "statements": 6, "executed": 3, "compiled": 1, "not_executed": 2,
                 "missing": [3, 1000]}),
            ("the --coverage rows of a package directory: one per Python file, named from the package down, in "
             "name order, the import-time lines executed only in an imported module", _coverage_rows_right(VF))]


def _coverage_rows_right(VF):
    import os
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "pkg")                 # os.walk gives b.py before a/c.py
        os.makedirs(os.path.join(root, "a"))
        files = {"a/c.py": "y = 2\n", "b.py": "x = 1\ndef f():\n    return 2\n", "notes.txt": "x = 1\n"}
        for name, text in files.items():
            with open(os.path.join(root, name), "w") as fh:
                fh.write(text)
        b, c = os.path.join(root, "b.py"), os.path.join(root, "a", "c.py")
        seen = {b: ([1, 2, 3], [1, 2, 3]), c: ([1], [1])}
        rows = VF.coverage_rows(root, seen.__getitem__, {os.path.realpath(b)}, {b: [3]})
    return rows == [{"module": "pkg/a/c.py", "statements": 1, "executed": 0, "compiled": 0, "not_executed": 1,
                     "missing": [1]},
                    {"module": "pkg/b.py", "statements": 3, "executed": 2, "compiled": 1, "not_executed": 0,
                     "missing": []}]


def _compiled_lines_case():
    """(what, right): the lines --coverage counts as compiled — a Numba function's, decorator to last line,
    of the package's modules; not a plain function's, not another package's kernel."""
    import importlib.util
    import os
    import sys
    import tempfile
    from types import SimpleNamespace

    from refimpl.tools import verify as VF
    src = "from numba import njit\n\n\n@njit\ndef k(x):\n    y = x + 1\n    return y\n\n\ndef plain(x):\n    return x\n"
    names = ("refimpl_planted_kernels", "planted_other_kernels")
    with tempfile.TemporaryDirectory() as tmp:
        paths = [os.path.realpath(os.path.join(tmp, n + ".py")) for n in names]
        for name, path in zip(names, paths):
            with open(path, "w") as fh:
                fh.write(src)
            spec = importlib.util.spec_from_file_location(name, path)
            sys.modules[name] = mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        try:
            got = VF._compiled_lines()
        finally:
            for name in names:
                sys.modules.pop(name, None)
        top = names[0].split("_")[0]            # the package's name: its modules, planted here
        found = VF.imported_paths({names[0]: sys.modules.get("os"), f"{top}.none": None,
                                   names[1]: SimpleNamespace(__file__=paths[1]),
                                   f"{top}.mine": SimpleNamespace(__file__=paths[0])})
        # at import: the import, the decorator and both def lines of an imported module; none of one not imported
        at_import = (set(VF.import_time_lines(paths[0], {paths[0]})), VF.import_time_lines(paths[1], {paths[0]}))
    return ("--coverage's compiled lines: a Numba function of the package, its decorator to its last line; no plain "
            "function, no other package's kernel; the lines run at import only for an imported module, the package's "
            "modules imported read from sys.modules",
            got.get(paths[0]) == {4, 5, 6, 7} and paths[1] not in got and at_import == ({1, 4, 5, 10}, ())
            and found == {paths[0], os.path.realpath(os.__file__)})


def _table_layout_cases(CheckRecord):
    """(what, right): the layout of what ``refimpl verify`` prints, written out — a number in
    scientific form from 1e4 and below 1e-3 (never 0); the table's header, rule and one row per
    record in the records' order (narrow and wide); --profile's rows longest first and its totals
    line; a CSV table of the reproductions as Markdown (header from the first row, numbers formatted,
    text left as it is)."""
    import os
    import tempfile

    from refimpl.tools import verify as VF
    from refimpl.tools.report import _csv_table
    fmt = [VF._fmt(x) for x in (1e4, 9999.5, 1e-3, 9.99e-4, 0.0, None, 3, -0.5, -9.99e-4)]
    from refimpl.tools.report import _fmt as report_fmt
    report_numbers = [report_fmt(x) for x in (-0.5, -2e-4, -2e4, 0.0, None, True, False)]
    recs = [CheckRecord(i, "claim " + i, "src", m, 1.0, m, m <= 1.0, {"kind": "theorem", "relation": "≤",
                                                                        "seconds": sec, "cpu_seconds": sec})
            for i, m, sec in (("t.a", 0.5, 1.0), ("t.b", 2.0, 3.0), ("t.c", 1.0, 2.0))]
    narrow, wide = VF.format_table(recs).splitlines(), VF.format_table(recs, wide=True).splitlines()
    prof = VF.format_profile(recs, wall=5.0, cpu=7.5, rss=100.0, target=20.0).splitlines()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.csv")
        with open(path, "w") as fh:
            fh.write("method,rounds,time\nssca,12,0.000123\nsgd,n/a,2\n")
        md = _csv_table(path).splitlines()
        cut = _csv_table(path, limit=1).splitlines()
        with open(path, "w") as fh:
            fh.write("k\n" + "".join(f"{k}\n" for k in range(45)))
        long_csv = _csv_table(path).splitlines()
    long_claim = CheckRecord("t.d", "abcd " * 30, "src", 0.5, 1.0, 0.5, True, {"kind": "theorem"})
    claim_cell = VF.format_table([long_claim], wide=True).splitlines()[2]
    hint = "A check's claim: refimpl verify --list; one wide row each: --wide"
    return [("numbers: 1.000e+04 from 1e4 (9999.5 to 4 digits, 1e+04), 0.001 plain, 9.990e-04 below it, 0 plain, "
             "none as -, a negative number by its size", fmt == ["1.000e+04", "1e+04", "0.001", "9.990e-04", "0", "-",
                                                                "3", "-0.5", "-9.990e-04"]),
            ("REPORT.md's numbers: a negative one by its size, 0 plain, none as –, booleans as words",
             report_numbers == ["-0.5", "-2.000e-04", "-2.000e+04", "0", "–", "yes", "**no**"]),
            ("the table: header, rule, then t.a, t.b, t.c in that order (narrow and wide, the wide one with the "
             "claim)", [ln.split(" ")[0] for ln in narrow[2:5]] == ["t.a", "t.b", "t.c"]
             and narrow[0].startswith("id ") and set(narrow[1]) <= {"-", "+"}
             and [ln.split(" ")[0] for ln in wide[2:5]] == ["t.a", "t.b", "t.c"] and "claim t.b" in wide[3]),
            ("--profile: the checks longest first (t.b 3 s, t.c 2 s, t.a 1 s) in columns as wide as their widest "
             "cell, their seconds summed, and the command's totals",
             [ln.split(" ")[0] for ln in prof[2:5]] == ["t.b", "t.c", "t.a"]
             and prof[0] == "id  | wall s | cpu s | numba s | holds" and len({len(ln) for ln in prof[:5]}) == 1
             and prof[2] == "t.b |   3.00 |  3.00 |       - | no   "           # the seconds padded on the left
             and prof[-2] == "checks' wall seconds summed: 6.0"
             and prof[-1] == "command: 5.0 s wall, 7.5 s CPU (all processes), peak memory 100 MB (largest process); "
                             "target ≤ 20 s: met"),
            ("a reproduction's CSV as Markdown: its header, a rule, numbers formatted and text kept; with a limit "
             "of 1, the first row only",
             md == ["| method | rounds | time |", "|---|---|---|", "| ssca | 12 | 1.230e-04 |", "| sgd | n/a | 2 |"]
             and cut == md[:3]),
            ("… of 45 rows, the first 40 by default", len(long_csv) == 42 and long_csv[-1] == "| 39 |"),
            ("the wide table's claim cut at 60 characters, on a word's end: 'abcd' 11 times and '…' of 30",
             " ".join(["abcd"] * 11) + "…" in claim_cell and " ".join(["abcd"] * 12) not in claim_cell),
            ("the narrow table ends saying where the claims are; the wide one, which shows them, does not",
             narrow[-1].endswith(hint) and hint not in "\n".join(wide)),
            ] + _table_note_cases(VF, CheckRecord) + _records_of_cases(VF, CheckRecord)


def _records_of_cases(VF, CheckRecord):
    """(what, right): a note cut at a word boundary (short), and the records an engine run reads from
    its tasks' results (records_of): in the order asked, a check whose task died failed with the
    task's reason, one no task answered failed with "no result"."""
    from dataclasses import asdict
    ids = ["tools.verdicts", "grad.fd", "tools.crosscheck", "kernels.numba_numpy"]
    rec = {i: CheckRecord(i, "c", "s", 0.5, 1.0, 0.5, True, {"kind": "theorem"}) for i in ids}
    tasks = [{"id": "t1", "label": "one", "checks": ["grad.fd", "tools.verdicts"]},
             {"id": "t2", "label": "two", "checks": ["tools.crosscheck"]}]
    got = VF.records_of(ids, tasks, {"t1": [asdict(rec["grad.fd"]), asdict(rec["tools.verdicts"])]},
                        ["two: the worker died (signal 9)"])
    return [("a note cut at a word boundary to at most its width, an ellipsis marking the cut, punctuation before "
             "it dropped; one word longer than the width cut inside it",
             [VF.short("alpha beta, gamma delta", w) for w in (23, 22, 13, 11)] + [VF.short("abcdefghij", 5)]
             == ["alpha beta, gamma delta", "alpha beta, gamma…", "alpha beta…", "alpha…", "abcd…"]),
            ("an engine run's records: in the order asked, from its tasks' results",
             got[:2] == [rec[i] for i in ids[:2]]),
            ("a check whose task died failed with the task's reason; one no task answered, with 'no result'",
             [(r.id, r.holds, r.details.get("error")) for r in got[2:]]
             == [("tools.crosscheck", False, "two: the worker died (signal 9)"),
                 ("kernels.numba_numpy", False, "no result")]),
            ("the engine's tasks: one per check, the checks of a group in one task named after the group, each "
             "with its part workers, its checks' recorded seconds summed (1 s for one never recorded)",
             _check_tasks_right(VF)),
            ("without an executor the checks run in this process, their records in the order asked",
             _in_process_right(VF))]


def _check_tasks_right(VF):
    VF.load_checks()        # the groups of the checks named below, also where only this module was imported
    cost = VF.check_costs(True)
    tasks = VF.check_tasks(["ssca.lemma1_vs_cvxpy", "grad.fd", "ssca.multi_constraint_qcqp", "planted.none"], True,
                           "/r", part_workers=2)
    want = {("ssca.cvxpy", ("ssca.lemma1_vs_cvxpy", "ssca.multi_constraint_qcqp"),
             cost["ssca.lemma1_vs_cvxpy"] + cost["ssca.multi_constraint_qcqp"]),
            ("grad.fd", ("grad.fd",), cost["grad.fd"]), ("planted.none", ("planted.none",), 1.0)}
    return (len(tasks) == 3 and {(t["label"], tuple(t["checks"]), t["cost"]) for t in tasks} == want
            and all(t["part_workers"] == 2 and t["quick"] is True and t["root"] == "/r"
                    and t["fn"] == "refimpl.tools.verify:check_task" for t in tasks))


def _in_process_right(VF):
    from refimpl.verification.registry import REGISTRY
    ids = ["planted.in-process.b", "planted.in-process.a"]
    try:
        for i, m in zip(ids, (3.0, 1.0)):
            REGISTRY[i] = (f"planted {i}", "nowhere", lambda q, m=m: {"measured": m, "bound": 2.0}, "theorem")
        recs = VF.run_checks(only=ids)
    finally:
        for i in ids:
            REGISTRY.pop(i, None)
    return [(r.id, r.holds) for r in recs] == [(ids[0], False), (ids[1], True)]


def _table_note_cases(VF, CheckRecord):
    """(what, right): a check's note (or its error) on the lines under its row, wrapped to the table's
    width, in the narrow table; in a column, on its row, in the wide one; none for a check without."""
    recs = [CheckRecord("t.n", "c", "s", 0.5, 1.0, 0.5, True, {"kind": "theorem", "table_note": "a long note " * 12}),
            CheckRecord("t.e", "c", "s", None, None, None, False, {"kind": "theorem", "error": "RuntimeError: boom"}),
            CheckRecord("t.q", "c", "s", 0.5, 1.0, 0.5, True, {"kind": "theorem"})]
    narrow, wide = VF.format_table(recs).splitlines(), VF.format_table(recs, wide=True).splitlines()
    return [("the narrow table: each note under its row, wrapped at 100 columns", narrow[2:8] == [
                "t.n | 0.5      | ≤   | 1     | 0.5   | yes",
                "    note: " + "a long note " * 7 + "a long", "          note" + " a long note" * 4,
                "t.e | -        | ≤   | -     | -     | NO", "    note: RuntimeError: boom",
                "t.q | 0.5      | ≤   | 1     | 0.5   | yes"]),
            ("the wide table: the note in its column, no line under a row",
             wide[2].endswith("| yes   | " + ("a long note " * 12).strip())
             and wide[3].endswith("| NO    | RuntimeError: boom")
             and wide[4].endswith("| yes") and not any("note:" in ln for ln in wide))]


def _report_table_cases(CheckRecord):
    """(what, right): REPORT.md's lines on three planted records, written out by hand."""
    from refimpl.tools.report import check_section
    recs = [CheckRecord("t.a", "a claim with a | bar", "src", 0.54054, 1.0, 0.54054, True,
                        {"kind": "theorem", "relation": "≤"}),
            CheckRecord("c.b", "claim b", "src", 0.8, 1.0, 1.25, False, {"kind": "claim", "relation": ">"}),
            CheckRecord("t.v", "vacuous", "src", 3e-5, 6.86, 3e-5 / 6.86, True, {"kind": "theorem", "vacuous": True})]
    lines = check_section(recs)
    rows = [ln for ln in lines if ln.startswith("| `")]
    return [("REPORT.md counts the checks that hold: 2 of 3", lines[0].startswith("**2 of 3 checks hold.**")),
            ("REPORT.md's rows: measured, relation, bound, ratio to 4 digits, verify's words, a | in a claim escaped",
             rows == ["| `t.a` | a claim with a \\| bar | 0.5405 | ≤ | 1 | 0.5405 | yes |  | src |",
                      "| `c.b` | claim b | 0.8 | > | 1 | 1.25 | no (claim) |  | src |",
                      "| `t.v` | vacuous | 3.000e-05 | ≤ | 6.86 | 4.373e-06 | yes (vacuous) |  | src |"])]


def _recorded_cost_right(VF):
    """recorded_cost against the recorded seconds read here: two recorded checks' sum (2 decimals),
    1 s for an id never recorded, and 0.01 s for none (a bar's total is never 0)."""
    cost = VF.check_costs(True)
    a, b = sorted(cost)[:2]
    return (VF.recorded_cost([a, b], True) == round(cost[a] + cost[b], 2)
            and VF.recorded_cost([a, "planted.never-recorded"], True) == round(cost[a] + 1.0, 2)
            and VF.recorded_cost([], True) == 0.01)


@check("tools.verdicts", "the verdicts refimpl verify names are right on planted checks: each side of ≤ < ≥ > "
       "(equality too, negative bounds such as slopes), ≈ only with the check's own holds, a check's own holds over "
       "the relation, a NaN or missing value, an unknown relation and a crash fail (the last three with their error); "
       "the uniform ratio is ≤ 1 exactly when a one-sided relation holds; only a failing theorem-kind check is fatal "
       "unless --strict; the table's words yes, yes (vacuous), no (claim), NO; the closing line's claims; REPORT.md's "
       "count of the checks that hold and its rows, written out by hand; a check's seconds and warnings; a progress "
       "bar's total; the table's and --profile's layout and number format; a reproduction's CSV as Markdown; the "
       "tiers each of verify's flags selects; the claims named as not reproduced (wrong answers: 0)",
       "refimpl/tools/verify.py (run_check, uniform_ratio, failing, verdict, format_table, format_profile, "
       "selection, unreproduced); "
       "refimpl/tools/report.py (check_section, _csv_table)")
def verdicts(quick):
    return _cases_result(_verdict_cases(), "planted ")
