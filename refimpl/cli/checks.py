"""The checks of the command line's own lines: ``refimpl diagnose``, ``crosscheck``, ``vectors`` and
``bound`` run as a user runs them, on planted inputs, their defaults, flags and exit codes written out
here. They live beside the commands (the layer above the tools), and ``refimpl verify`` loads them by
name with the other check modules (:func:`refimpl.tools.verify.check_modules`)."""
import numpy as np

from refimpl.tools.tool_checks import _cases_result, _printed
from refimpl.verification.registry import check


def _cli(*argv):
    """(exit code, what it printed) of ``refimpl ARGV…`` run in this process."""
    from refimpl.cli import main

    def exit_code():
        try:
            return main([str(a) for a in argv])
        except SystemExit as exc:             # argparse's own refusals
            return exc.code
    return _printed(exit_code)


def _diagnose_command_cases(tmp):
    """(what, right): ``refimpl diagnose`` on planted SSCA dumps: its default --tol 1e-10, --no-rerun, the
    exit code 5 when the reruns cannot run (OURS's configuration holds batch −5), --index-base 1 and
    --allow-missing with spaces around its names."""
    import json
    import os

    from refimpl.core.data import data_record
    from refimpl.verification.ssca import embedded
    rng = np.random.default_rng(3)
    ours = {f"r{r}_{k}": v for r in (1, 2, 3) for k, v in (("omega", rng.standard_normal(6)), ("rho", np.array(1 / r)),
                                                             ("batch", np.arange(4) + r))}
    run = os.path.join(tmp, "ours")
    os.makedirs(run)
    np.savez(os.path.join(run, "trace.npz"), **ours)
    with open(os.path.join(run, "trace.json"), "w") as fh:
        json.dump({"config": {"algorithm": "ssca", "setting": "sample", "batch": -5, "rounds": 3,
                              **data_record(embedded())}}, fh)
    files = {"near": dict(ours, r2_omega=ours["r2_omega"] * (1 + 1e-9)),
             "one-based": {k: v + 1 if k.endswith("_batch") else v for k, v in ours.items()},
             "extra": {**ours, "r1_nu": np.ones(2), "r4_omega": np.ones(6)}}
    for name, arrays in files.items():
        np.savez(os.path.join(tmp, f"{name}.npz"), **arrays)
    near, one, extra = (os.path.join(tmp, f"{n}.npz") for n in files)
    code, said = _cli("diagnose", run, near, "--no-rerun")
    out = [("refimpl diagnose: a relative difference of 1e-9 differs at the default --tol 1e-10; --no-rerun "
            "reruns nothing (exit 1)", code == 1 and "tolerance 1e-10 (relative)" in said and "rerunning" not in said
            and _cli("diagnose", run, near, "--no-rerun", "--tol", "1e-8")[0] == 0)]
    code, said = _cli("diagnose", run, near)
    out.append(("refimpl diagnose: reruns that cannot run (OURS's batch −5) exit 5, saying why",
                code == 5 and "could not rerun: batch must be a positive integer" in said))
    out.append(("refimpl diagnose --index-base 1: THEIR ids + 1 agree (exit 0); without it they differ (exit 1)",
                _cli("diagnose", run, one, "--no-rerun", "--index-base", "1")[0] == 0
                and _cli("diagnose", run, one, "--no-rerun")[0] == 1))
    out.append(("refimpl diagnose --allow-missing ' nu , rounds': THEIR extra quantity and round accepted (exit 0); "
                "without it exit 1", _cli("diagnose", run, extra, "--no-rerun", "--allow-missing", " nu , rounds")[0] == 0
                and _cli("diagnose", run, extra, "--no-rerun")[0] == 1))
    return out


def _crosscheck_command_cases(tmp):
    """(what, right): ``refimpl crosscheck`` on saved planted traces: its default --tol 1e-8 (relative),
    --allow-missing, and a .mat of plain Theta1a/Theta2a read at --round."""
    import os

    from scipy.io import savemat

    from refimpl.core.trace import Trace
    rng = np.random.default_rng(4)
    w = {r: (rng.standard_normal((3, 4)), rng.standard_normal((2, 3))) for r in (0, 1, 2)}
    cost = [1.0, 0.8, 0.7]

    def saved(name, scale, **more):
        path = os.path.join(tmp, name)
        Trace(config={}, metrics={"round": [0, 1, 2], "train_cost": [c * scale for c in cost], **more},
              snapshots={r: tuple(u * scale for u in w[r]) for r in w}).save(path)
        return path
    a, off7, off9 = saved("a", 1.0), saved("off7", 1 + 1e-7), saved("off9", 1 + 1e-9)
    extra = saved("extra", 1.0, test_accuracy=[0.1, 0.2, 0.3])
    mat = os.path.join(tmp, "theirs.mat")
    savemat(mat, {"Theta1a": w[2][0], "Theta2a": w[2][1]})
    out = [("refimpl crosscheck: 1e-7 relative differs at the default --tol 1e-8, 1e-9 agrees",
            _cli("crosscheck", a, off7)[0] == 1 and _cli("crosscheck", a, off9)[0] == 0),
           ("refimpl crosscheck --allow-missing test_accuracy: a metric of one trace only accepted (exit 0; else 1)",
            _cli("crosscheck", a, extra, "--allow-missing", "test_accuracy")[0] == 0
            and _cli("crosscheck", a, extra)[0] == 1)]
    code, said = _cli("crosscheck", mat, a, "--round", "2")
    out.append(("refimpl crosscheck THEIRS.mat --round 2: plain Theta1a/Theta2a are round 2's iterate, equal to the "
                "trace's (exit 0)", code == 0 and "compared 2 snapshot arrays" in said))
    return out


def _vectors_command_cases(tmp):
    """(what, right): ``refimpl vectors``: export into a non-empty directory refused without --overwrite;
    ``vectors digests`` exit 1 when a pinned digest differs (a planted digests file), 0 otherwise."""
    import json
    import os
    import pathlib

    from refimpl.conformance import vectors as VX
    target = os.path.join(tmp, "vec")
    os.makedirs(target)
    with open(os.path.join(target, "notes.txt"), "w") as fh:
        fh.write("mine")
    refused = _cli("vectors", "export", target, "--paper", "core", "--quiet")
    written = _cli("vectors", "export", target, "--paper", "core", "--quiet", "--overwrite")
    pinned = json.loads(VX.DIGESTS_FILE.read_text())
    first = sorted(pinned)[0]
    planted = os.path.join(tmp, "digests.json")
    with open(planted, "w") as fh:
        json.dump({**pinned, first: "0" * 64}, fh)
    kept, VX.DIGESTS_FILE = VX.DIGESTS_FILE, pathlib.Path(planted)
    try:
        moved = _cli("vectors", "digests", "--quiet")
    finally:
        VX.DIGESTS_FILE = kept
    return [("refimpl vectors export into a non-empty directory: refused without --overwrite (exit 2), written with it",
             refused[0] == 2 and "not empty" in refused[1] and written[0] == 0),
            ("refimpl vectors digests: a pinned digest that differs is named, exit 1; the package's own pins, exit 0",
             moved[0] == 1 and first in moved[1] and _cli("vectors", "digests", "--quiet")[0] == 0)]


def _bound_command_cases(tmp):
    """(what, right): ``refimpl bound mfcgd`` with given constants and parameters: the default T = 10⁴,
    Theorem 1's default ρ = 0.5 (A-rms 1), the whole verdict line, exit 1 for an unmet condition, and
    --A-rms under Theorem 2 or q given twice refused."""
    import json
    import os

    from refimpl.mfcgd.bounds import Constants, find_theorem_parameters, theorem1_bound
    c = Constants(1.0, 1.0, 1.0, 1.0, 0.1, 0.1, 0.1, 1.0)
    p = find_theorem_parameters(c, 10 ** 4, 10, 0.5)[0]
    cpath, ppath, bad = (os.path.join(tmp, f"{n}.json") for n in ("c", "p", "bad"))
    with open(cpath, "w") as fh:
        json.dump({f: getattr(c, f) for f in ("C_f", "C_g", "L_f", "L_g", "sigma", "delta_f", "delta_g", "F_gap")}, fh)
    doc = {k: float(v) if k != "q" else int(v) for k, v in p.__dict__.items()}
    for path, d in ((ppath, doc), (bad, dict(doc, n=2.0))):
        with open(path, "w") as fh:
            json.dump(d, fh)

    def run(*extra):
        code, said = _cli("bound", "mfcgd", "--constants", cpath, *extra)
        body = said[said.index("\n{\n") + 1:said.rindex("\n}") + 2] if "\n{\n" in said else "{}"
        return code, said, json.loads(body)
    code, said, rep = run("--params", ppath, "--theorem", "1")
    want = theorem1_bound(c, p, 10 ** 4, 0.5, 1.0)
    out = [("refimpl bound mfcgd --theorem 1: T = 10⁴, ρ = 0.5 and A-rms 1 by default; every condition met (exit 0); "
            "the verdict line whole", code == 0 and rep.get("T") == 10 ** 4
            and abs(rep.get("right_hand_side", 0) - want) <= 1e-12 * want
            and any(ln.startswith("verdict: ") and "; with these parameters" in ln for ln in said.splitlines()))]
    code, said, _ = run("--params", bad)
    out.append(("refimpl bound mfcgd: a parameter that breaks a condition (n = 2) is NOT MET, exit 1",
                code == 1 and "NOT MET" in said))
    out.append(("refimpl bound mfcgd: --A-rms under Theorem 2 and q given twice are refused (exit 2)",
                run("--params", ppath, "--A-rms", "2")[0] == 2 and run("--params", ppath, "--q", "3")[0] == 2))
    return out


def _run_command_cases(tmp):
    """(what, right): ``refimpl run``'s shared lines: a flag given as 0 kept (SGD-m's --momentum 0), an
    --out holding a trace.npz refused, --overwrite clearing an earlier result's files and U=* runs,
    --label-base without --data and a foreign --opt=value refused, --label-base 2 refused by the
    parser; a run stopped before its end exits 3; an error naming its flag is not prefixed again."""
    import argparse
    import json
    import os

    from refimpl.cli import common
    from refimpl.core.trace import Trace
    out = os.path.join(tmp, "run")
    base = ("run", "sgdm", "--rounds", "2", "--batch", "4", "--clients", "2", "--hidden", "4", "--quiet")
    code, _ = _cli(*base, "--momentum", "0", "--out", out)
    with open(os.path.join(out, "trace.json")) as fh:
        momentum = json.load(fh)["config"].get("momentum")
    right = [("refimpl run sgdm --momentum 0: the run keeps momentum 0 (not the default 0.9)",
              code == 0 and momentum == 0)]
    held = os.path.join(tmp, "held")
    os.makedirs(os.path.join(held, "U=0.1"))
    for name in ("trace.npz", "tradeoff.csv", os.path.join("U=0.1", "trace.json")):
        with open(os.path.join(held, name), "w") as fh:
            fh.write("{}")
        os.utime(os.path.join(held, name), (1e9, 1e9))
    refused = _cli(*base, "--out", held)[0]
    code = _cli(*base, "--out", held, "--overwrite")[0]
    left = sorted(os.listdir(held))
    right.append(("refimpl run: an --out holding a trace.npz refused (exit 2); --overwrite replaces it and removes "
                  "the old tradeoff.csv and U=0.1 run", refused == 2 and code == 0 and "tradeoff.csv" not in left
                  and "U=0.1" not in left and "trace.npz" in left))
    foreign, two = _cli(*base, "--timeout=5"), _cli(*base, "--label-base", "2", "--data", "x.npz")
    right.append(("refimpl run: --label-base without --data, a foreign --timeout=5 (named as another method's) and "
                  "--label-base 2 (not a choice) refused (exit 2)", _cli(*base, "--label-base", "1")[0] == 2
                  and foreign[0] == 2 and "--timeout does not apply to sgdm; it is an option of" in foreign[1]
                  and two[0] == 2 and "invalid choice: 2" in two[1]))
    ns = argparse.Namespace(quiet=True)
    # its "run stopped" line captured, not printed into verify's table
    stopped = _printed(common.finish_run, ns, Trace(config={}, metrics={}, status="stopped: planted"), None,
                       lambda p: None)[0]
    reached = _printed(common.finish_run, ns, Trace(config={}, metrics={}, status="finished: reached test accuracy "
                                                    "0.8"), None, lambda p: None)[0]
    flagged = argparse.Namespace(command="run", algorithm="sgd")
    right.append(("a run stopped before its end exits 3, one finished on reaching its target 0; an error naming its "
                  "flag is not prefixed again", stopped == 3 and reached == 0
                  and common.name_the_flag("lr must be > 0 (see --lr)", flagged)
                  == "lr must be > 0 (see --lr)" and common.name_the_flag("lr must be > 0", flagged)
                  == "--lr: lr must be > 0"))
    return right


def _schedule_and_split_cases():
    """(what, right): ``refimpl check-schedule``'s refusal of a sequence given twice, its exit 1 for an
    unmet condition, an expression evaluated from t = 1, the default a2 = 0.3; ``refimpl
    partition-stats``'s split is the run's at its --seed, every label's column printed."""
    from refimpl.core.data import load_embedded_mnist
    from refimpl.ssca.experiment import RunConfig, client_partition
    twice = _cli("check-schedule", "--rho", "1/t", "--rho-alpha", "0.5", "--gamma-alpha", "0.9")[0]
    unmet = _cli("check-schedule", "--rho-alpha", "0.9", "--gamma-alpha", "0.1")
    expr = _cli("check-schedule", "--rho", "1/t**0.5", "--gamma-alpha", "0.9")[0]
    right = [("refimpl check-schedule: ρ given twice refused (exit 2), γ decaying slower than ρ NOT MET (exit 1, "
              "a2 = 0.3 said), an expression in t evaluated from t = 1", twice == 2 and unmet[0] == 1
              and "gamma_t: 0.3" in unmet[1] and "NOT MET" in unmet[1] and expr in (0, 1))]
    code, said = _cli("partition-stats", "--partition", "iid", "--seed", "3", "--clients", "3")
    data = load_embedded_mnist()
    parts = client_partition(RunConfig(clients=3, partition="iid", seed=3).resolved(), data)
    rows = [ln.split() for ln in said.splitlines()[1:4]]
    want = [[str(k), str(len(p))] + [str(int(v)) for v in np.bincount(data.y_train[p], minlength=data.n_classes)]
            for k, p in enumerate(parts)]
    right.append(("refimpl partition-stats --seed 3: the run's split at seed 3, a column for every label",
                  code == 0 and rows == want))
    return right


def _sweep_command_cases(tmp):
    """(what, right): ``refimpl sweep-summary`` on a planted sweep (two finished cells, one with a
    diverged seed, one failed task): its head, --top, the row of the best cell, the line on the
    cells that did not finish, the failed task; --top 0 and ``refimpl sweep --max-cells 0`` refused."""
    import os

    from refimpl.tools.tool_checks import _planted_sweep

    def run(cost, status="finished"):
        return {"round": [0, 5], "train_cost": [2.3, cost]}, status
    plan = [({"lr": 0.1}, 0, *run(2.0)), ({"lr": 1.0}, 0, *run(1.5)), ({"lr": 10.0}, 0, *run(0.5, "diverged: planted")),
            ({"lr": 10.0}, 1, *run(0.7))]
    root = _planted_sweep(os.path.join(tmp, "sweep"), [(c, s, st, m) for c, s, m, st in plan],
                          failed=[({"lr": 3.0}, 1, "ValueError: planted")])
    code, said = _cli("sweep-summary", root, "--top", "1")
    lines = [ln for ln in said.splitlines() if not ln.startswith("written to")]
    want = [f"the best 1 of 3 cells by final:train_cost (--top N for more; every cell is in "
            f"{os.path.join(root, 'summary.csv')})",
            "lr=1, seeds=1, unfinished=0, criterion=final:train_cost, mean=1.5, std=0",
            "1 of 3 cells have a seed that did not finish (diverged or stopped; 'unfinished' counts them): "
            "ranked after every cell whose seeds all finished, whatever their mean",
            f"1 failed tasks (see {root}/failures.csv):", '  f0 cell {"lr": 3.0} seed 1: ValueError: planted']
    return [("refimpl sweep-summary --top 1: the finished cell of lowest mean first, not the cell with a diverged "
             "seed (mean 0.6); the line on unfinished cells and the failed task", code == 0 and lines == want),
            ("refimpl sweep-summary --top 5 of 3 cells: 'the best 3 of 3 cells … (every cell)'",
             _cli("sweep-summary", root, "--top", "5")[1].splitlines()[1] == "the best 3 of 3 cells by "
             "final:train_cost (every cell)"),
            ("refimpl reproduce's note on a reproduction.json naming two runs that did not finish, and one; none "
             "without them", _unfinished_notes(tmp) == [
                 "note: 2 runs did not finish; each label's curves stop at its shortest run: a seed 1: diverged: x; "
                 "b seed 0: stopped: y\n", "note: 1 run did not finish; each label's curves stop at its shortest run: "
                 "a seed 1: diverged: x\n", ""]),
            ("refimpl sweep-summary --top 0 and refimpl sweep --max-cells 0 refused (exit 2), each naming its flag",
             _cli("sweep-summary", root, "--top", "0") == (2, "refimpl: error: --top must be >= 1 (how many best cells "
                                                             "to print), got 0\n")
             and _cli("sweep", os.path.join(tmp, "none.toml"), "--out", os.path.join(tmp, "o"), "--max-cells", "0")
             == (2, "refimpl: error: --max-cells must be >= 1, got 0\n"))]


def _unfinished_notes(tmp):
    """What ``refimpl reproduce`` prints after a reproduction.json with two unfinished runs, and after
    one without (the record planted)."""
    import json
    import os

    from refimpl.cli.reproduce import _say_unfinished
    said = []
    for i, unfinished in enumerate((["a seed 1: diverged: x", "b seed 0: stopped: y"], ["a seed 1: diverged: x"], [])):
        path = os.path.join(tmp, f"reproduction-{i}.json")
        with open(path, "w") as fh:
            json.dump({"unfinished": unfinished}, fh)
        said.append(_printed(_say_unfinished, path)[1])
    return said


def _verify_command_cases(tmp):
    """(what, right): ``refimpl verify``'s own lines, the work beneath them planted (a catalogue of
    three entries, a catalogue run that catches the first mutation it is given, a run of checks that
    returns one claim not reproducing): --only-paper, --only, --with-claims, --markdown and the exit codes of --mutations;
    the flags refused where they do not apply; --strict; no claims line under --only."""
    import os

    from refimpl.core.runtime import environ
    from refimpl.tools import mutations as MU
    from refimpl.tools import verify as VF
    from refimpl.verification.registry import CheckRecord
    cat = os.path.join(tmp, "planted.toml")       # never read: the catalogue is planted below
    planted = [MU.Mutation(i, p, "nowhere.py", "x", "y", "planted", ()) for i, p in
               (("planted-core", "core"), ("planted-ssca-1", "ssca"), ("planted-ssca-2", "ssca"))]

    def load(path, only=None, **kw):
        unknown = sorted(set(only or ()) - {m.id for m in planted})
        if unknown:
            raise ValueError(f"{path}: no mutation {unknown}")
        return [m for m in planted if only is None or m.id in only]
    given = []

    def catalogue(mutations, claims=False, **kw):
        given.append(([m.id for m in mutations], claims))
        return [MU.Outcome(m.id, m.paper, m.equation, caught_by=["planted.check"] if i == 0 else [],
                           claims={"planted.claim": False} if claims and i else None) for i, m in enumerate(mutations)]

    def checks(ids, quick=True, **kw):           # a planted claim does not reproduce; a planted theorem holds
        return [CheckRecord(cid, "planted", "nowhere", 2.0, 1.0, 2.0, False, {"kind": "claim"}) if "claim" in cid
                else CheckRecord(cid, "planted", "nowhere", 0.5, 1.0, 0.5, True, {"kind": "theorem"}) for cid in ids]
    kept = MU.run_catalogue, VF.run_checks, MU.load_catalogue
    MU.run_catalogue, VF.run_checks, MU.load_catalogue = catalogue, checks, load
    md = os.path.join(tmp, "m.md")
    try:
        # the planted claim's record lands in tmp; HOME there too, so a record that missed
        # REFIMPL_CACHE_DIR never reaches the user's own cache
        with environ({"REFIMPL_CACHE_DIR": tmp, "HOME": tmp}):
            run = _cli("verify", "--mutations", "--catalogue", cat, "--only-paper", "ssca", "--with-claims",
                       "--markdown", md, "--quiet", "--workers", "1")
            refusals = [_cli("verify", "--mutations", "--catalogue", cat, *a)[1] for a in
                        (("--only", "planted-core", "--only-paper", "ssca"), ("--only", "nope"), ("--full",))]
            plain = [_cli("verify", "--only", "planted.claim", "--quiet", *a) for a in ((), ("--strict",))]
            plain.append(_cli("verify", "--only", "planted.theorem", "--quiet"))
            lone = _cli("verify", "--with-claims")[0]
    finally:
        MU.run_catalogue, VF.run_checks, MU.load_catalogue = kept
    with open(md) as fh:
        rows = [ln for ln in fh.read().splitlines() if ln.startswith("| `planted")]
    return [("refimpl verify --mutations --only-paper ssca --with-claims: the ssca entries alone, with claims; one "
             "not caught: exit 1; --markdown writes both rows", given[:1] == [(["planted-ssca-1", "planted-ssca-2"],
                                                                              True)]
             and run[0] == 1 and len(rows) == 2),
            ("refimpl verify --mutations: an --only id outside --only-paper, an unknown --only id and --full refused, "
             "each named", "are not of --only-paper ssca" in refusals[0] and "--only: unknown mutation ids" in refusals[1]
             and "--full do(es) not apply with --mutations" in refusals[2]),
            ("refimpl verify: --with-claims without --mutations refused (exit 2)", lone == 2),
            ("refimpl verify --only a claim not reproducing: exit 0, exit 1 with --strict; no closing claims line "
             "under --only (a theorem-kind check alone)", plain[0][0] == 0 and plain[1][0] == 1
             and plain[2][0] == 0 and "planted.theorem" in plain[2][1] and "are not part of this run" not in plain[2][1])]


@check("tools.command_lines", "the cross-check and bound commands' own lines, run as a user runs them on planted "
       "inputs: refimpl diagnose's default --tol, --no-rerun, --index-base, --allow-missing and exit code 5; refimpl "
       "crosscheck's default --tol, --allow-missing and a .mat read at --round; refimpl vectors export's refusal of a "
       "non-empty directory and digests' exit on a changed pin; refimpl bound's defaults (T, ρ, A-rms), verdict line, "
       "refusals and exit codes; refimpl run's shared lines (a flag given as 0, --out and --overwrite, refusals, exit "
       "3 for a stopped run); refimpl check-schedule's refusals and exit codes; refimpl partition-stats' split at "
       "its --seed; refimpl sweep-summary's lines (the best cells, unfinished cells, failed tasks, --top) and "
       "sweep's --max-cells refusal; refimpl reproduce's note on runs that did not finish; refimpl verify's own flags "
       "and exit codes, with the work beneath them planted (wrong answers: 0)",
       "refimpl/cli/diagnose.py, crosscheck.py, vectors.py, bound.py, run.py, common.py, check_schedule.py, "
       "partition_stats.py, sweep.py, sweep_summary.py, reproduce.py; docs/guide.md")
def command_lines(quick):
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        cases = (_diagnose_command_cases(tmp) + _crosscheck_command_cases(tmp) + _vectors_command_cases(tmp)
                 + _bound_command_cases(tmp) + _run_command_cases(tmp) + _schedule_and_split_cases()
                 + _sweep_command_cases(tmp) + _verify_command_cases(tmp))
    return _cases_result(cases, "planted ")
