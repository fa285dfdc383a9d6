"""Every ``refimpl …`` command in the README and docs/ runs as written.

Each command is taken from the documents' code blocks and run through the real command line, in
a fresh directory holding the files it names (built by refimpl itself: a placeholder such as
``theirs.npz`` becomes a trace of a short run of the same command). The test may *add*
reduced-size flags (fewer rounds, steps, seeds; the quick settings; a subset of checks) — never
change a command. A command that reads another's output (``sweep-summary runs/grid``,
``crosscheck runs/own runs/fl``, ``diagnose runs/ours …``) runs beside the output of the command
before it in the same document. The commands this test cannot run are listed in ``NOT_RUN`` with
the reason; the list is checked to be exactly those commands.
"""
import json
import os
import pathlib
import re
import shlex
import shutil

import numpy as np
import pytest

from conftest import flat_dump  # noqa: E402

from refimpl.cli import main

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
from conftest import FASHION, fashion_or_skip  # noqa: E402


def doc_commands():
    """(file, command text) of every refimpl command in a fenced code block, in order; a
    trailing ``\\`` joins lines, ``# …`` comments are dropped, ``pip … && refimpl …`` keeps the
    refimpl part."""
    out = []
    for f in DOCS:
        inside, buf = False, ""
        for line in f.read_text().splitlines():
            if line.strip().startswith("```"):
                inside = not inside
                continue
            if not inside:
                continue
            s = (buf + " " + line.strip()) if buf else line.strip()
            buf = ""
            if s.endswith("\\"):
                buf = s[:-1]
                continue
            s = s.split(" #")[0].strip()
            m = re.search(r"(?:^|&& )(refimpl .*)$", s)
            if m:
                out.append((f.name, m.group(1).strip()))
    return out


#: commands that need what a test machine does not have, with the reason (checked to be exact)
NOT_RUN = {
    "refimpl report --out report --quick --executor dask --scheduler tcp://scheduler-host:8786":
        "needs a Dask scheduler at scheduler-host:8786",
    "refimpl sweep sweep.toml --out runs/grid --executor dask --scheduler tcp://scheduler-host:8786":
        "needs a Dask scheduler at scheduler-host:8786",
}
#: commands whose full run another test performs with exactly these arguments (named here)
RUN_ELSEWHERE = {
    "refimpl report --quick --out report": "tests/test_verify.py::test_quick_report_lists_every_check_and_theorems_hold",
    "refimpl report --out report --quick": "tests/test_verify.py::test_quick_report_lists_every_check_and_theorems_hold",
    "refimpl report --out smoke --quick --seeds 1 --rounds 2":
        "tests/test_verify.py::test_quick_report_lists_every_check_and_theorems_hold",
    "refimpl reproduce ssca-sample --data-dir DIR --tune --out runs/tuned":
        "tests/test_reproduce.py::test_tune_picks_each_methods_best_on_validation_then_runs_it",
    **{f"refimpl {c}": "tests/test_flower.py::test_the_readme_commands_agree" for c in (
        "run ssca --engine flower --clients 4 --batch 10 --rounds 20 --snapshots 0,10,20 --out runs/fl",
        "run ssca --clients 4 --batch 10 --rounds 20 --snapshots 0,10,20 --out runs/own",
        "crosscheck runs/own runs/fl --tol 1e-10")},
    **{c: "tests/test_guide_walkthroughs.py (THEIR files written as MATLAB and PyTorch write them)" for c in (
        "refimpl run ssca --rounds 4 --batch 10 --hidden 8 --tau 0.1 --rho-a 0.8 --rho-alpha 0.6 --gamma-a 0.5 "
        "--gamma-alpha 0.65 --dump-rounds all --out runs/ours",
        "refimpl diagnose runs/ours theirs.mat --index-base 1 --tol 1e-9",
        "refimpl run flexvfl --rounds 3 --optimizer momentum:0.9 --dump-rounds all --out runs/ours-vfl",
        "refimpl diagnose runs/ours-vfl theirs.npz --tol 1e-9")},
}

VFL = {"flexvfl", "adaptive-flexvfl", "sync-vfl", "async-vfl", "pbcd"}
MFCGD = {"mfcgd", "adamfcgd", "comfedl", "local-scgdm", "storm", "scgd"}


def _largest_round(argv):
    """The largest round a command's --snapshots / --dump-rounds name (the rounds it must reach)."""
    best = 0
    for flag in ("--snapshots", "--dump-rounds"):
        if flag in argv:
            v = argv[argv.index(flag) + 1]
            best = max([best] + [int(x) for x in v.split(",") if x.isdigit()])
    return best


def reduced(argv):
    """The flags the test adds to keep a command short (argparse: a later flag wins). A command
    that names no --workers / --executor runs on one worker process: each worker pays about 1.5
    CPU-s to start (imports, the Numba target, its data), more than these reduced runs compute;
    tests/test_engine.py runs the pools of two."""
    one = [] if ("--workers" in argv or "--executor" in argv) else ["--workers", "1"]
    return _reduced(argv) + (one if argv[0] in ("verify", "reproduce") else [])


def _reduced(argv):
    cmd = argv[0]
    if cmd == "verify":
        return ["--quick", "--only", "grad.fd,vfl.clock"]
    if cmd == "bench":
        return ["--batches", "10", "--repeats", "1"]
    if cmd == "reproduce":
        if "--paper" in argv:                 # the paper's batch sizes on 60,000 samples: one round
            return ["--seeds", "1", "--rounds", "1"]
        return ["--seeds", "1", "--rounds", "2", "--quick"]
    if cmd == "sweep":
        return ["--workers", "2"]
    if cmd == "compare":
        return ["--steps", "40"] if argv[1] == "mfcgd" else ["--rounds", "3", "--seeds", "1"] \
            if "--server-time" in argv else ["--rounds", "3"]
    if cmd == "run" and "--help" not in argv:
        alg = argv[1]
        if alg in MFCGD:
            return ["--steps", "40"]
        if alg in VFL:
            return ["--rounds", str(max(3, _largest_round(argv)))]
        return ["--rounds", str(max(2, _largest_round(argv))), "--hidden", "16"] if "--init" not in argv else \
            ["--rounds", str(max(2, _largest_round(argv)))]
    return []


def _run(argv):
    assert main(argv) == 0, argv


def _data_npz(path):
    from refimpl.core.data import load_embedded_mnist
    d = load_embedded_mnist()
    np.savez(path, X_train=d.X_train[:1000], y_train=d.y_train[:1000], X_test=d.X_test[:200], y_test=d.y_test[:200])


def make_fixtures(argv, here):
    """The files a command names that do not exist yet, built by refimpl (see the module text)."""
    if argv[0] == "run" and "--help" not in argv and any(f in argv for f in ("--init", "--samples")):
        alg = argv[1]
        src = [a for a in argv]
        for flag in ("--init", "--batches", "--taus", "--samples", "--dump-rounds", "--out"):
            while flag in src:
                i = src.index(flag)
                del src[i:i + 2]
        if "--data" in src and not (here / src[src.index("--data") + 1]).exists():
            _data_npz(here / src[src.index("--data") + 1])
        fx = here / "fixture-run"
        extra = ["--keep-samples"] if alg in MFCGD else []
        if alg not in MFCGD and alg not in VFL and "--snapshots" not in src:
            extra += ["--snapshots", "0"]
        rounds = reduced(argv)
        if alg not in MFCGD and alg not in VFL:
            rounds = ["--rounds", str(max(2, _largest_round(argv)))]
        _run([*src, *rounds, *extra, "--quiet", "--out", str(fx)])
        tr = dict(np.load(fx / "trace.npz"))
        for flag in ("--init", "--batches", "--taus", "--samples"):
            if flag not in argv:
                continue
            name = here / argv[argv.index(flag) + 1]
            if name.suffix == ".npz" and flag == "--init" and alg not in MFCGD and alg not in VFL:
                np.savez(name, W1=tr["W1_0"], W2=tr["W2_0"])                     # SSCA: W1, W2
            elif name.suffix == ".npz":
                shutil.copy(fx / "trace.npz", name)                               # a trace is a replay file
            elif flag == "--batches":
                np.save(name, tr["batches"])
            elif flag == "--taus":
                np.save(name, tr["array_tau"])
        shutil.rmtree(fx)
    for a in argv:
        p = here / a
        if p.exists() or "/" in a:
            continue
        if a in ("spec.toml", "sweep.toml"):
            p.write_text('runner = "ssca"\nseeds = 1\n[fixed]\nrounds = 2\nhidden = 8\nbatch = 10\neval_every = 1\n'
                         '[grid]\ntau = [0.1, 0.2]\n')
        elif a == "run.toml":
            p.write_text("gamma = 0.1\nq = 2\n")
        elif a == "gamma.npy":                   # a step-size sequence of the user's own
            np.save(p, 0.5 * np.arange(1, 1001, dtype=float) ** -0.8)
        elif a == "constants.json":
            p.write_text(json.dumps({"C_f": 2.3, "C_g": 3.0, "L_f": 1.0, "L_g": 0.5, "sigma": 0.3,
                                     "delta_f": 1.0, "delta_g": 1.0, "F_gap": 5.0}))


def _reads(argv):
    """The paths a command reads that an earlier command of the same document writes."""
    if argv[0] == "sweep-summary":
        return [argv[1]]
    if argv[0] == "crosscheck":
        return [argv[1], argv[2]]
    if argv[0] == "diagnose":
        return [argv[1]]
    return []


COMMANDS = doc_commands()


def test_the_documents_hold_commands_and_the_exceptions_are_exact():
    texts = [c for _, c in COMMANDS]
    assert len(texts) >= 50
    assert set(NOT_RUN) == {c for c in texts if "scheduler-host" in c}
    import test_guide_walkthroughs as W
    walkthrough = {W.MATLAB_OURS, W.MATLAB_DIAGNOSE, W.TORCH_OURS, W.TORCH_DIAGNOSE}
    assert set(RUN_ELSEWHERE) == {c for c in texts if (c.startswith("refimpl report") or "--tune" in c
                                                       or " runs/fl" in c.replace("runs/flex", "")
                                                       or "runs/own" in c or c in walkthrough) and c not in NOT_RUN}
    # the other tests run the same commands (plus the reduced sizes and --out they add)
    src = (ROOT / "tests" / "test_verify.py").read_text()
    assert 'main(["report", "--quick", "--quiet", "--out", str(tmp_path), "--seeds", "1", "--rounds", "2",\n' \
           '                 "--workers", "1"])' in src
    from test_flower import README_FLOWER
    assert {f"refimpl {c}" for c in README_FLOWER} == {c for c in RUN_ELSEWHERE if "test_flower" in RUN_ELSEWHERE[c]}
    from test_reproduce import TUNE_ARGV
    assert ["refimpl", *[{"OUT": "runs/tuned"}.get(a, a) for a in TUNE_ARGV]] == shlex.split(
        "refimpl reproduce ssca-sample --data-dir DIR --tune --out runs/tuned")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """{(document, path): directory} of what the commands wrote, for the commands that read it
    (kept under the key "" : the directory holding the copies)."""
    return {"": tmp_path_factory.mktemp("doc-outputs")}


@pytest.mark.parametrize("doc, command", [c for c in COMMANDS if c[1] not in NOT_RUN and c[1] not in RUN_ELSEWHERE],
                         ids=lambda v: v if v.endswith(".md") else re.sub(r"\s+", "_", v[8:])[:80])
def test_command_runs_as_written(doc, command, tmp_path, monkeypatch, outputs, capsys):
    argv = shlex.split(command)[1:]
    if "DIR" in argv:
        argv = [fashion_or_skip() if a == "DIR" else a for a in argv]
    monkeypatch.chdir(tmp_path)
    for path in _reads(argv):
        src = outputs.get((doc, path))
        assert src is not None, f"{command}: reads {path}, which no earlier command of {doc} wrote"
        shutil.copytree(src, tmp_path / path)
    make_fixtures(argv, tmp_path)
    if argv[0] == "diagnose" and not (tmp_path / argv[2]).exists():
        np.savez(tmp_path / argv[2], **flat_dump(tmp_path / argv[1]))          # their dump: our own, so they agree
    extra = reduced(argv)
    if argv[0] == "run" and "--help" in argv:
        with pytest.raises(SystemExit) as ex:
            main(argv)
        assert ex.value.code == 0
        return
    code = main([*argv, *extra])
    err = capsys.readouterr().err
    assert code == 0, f"{command} (+ {' '.join(extra)}) exited {code}: {err[-800:]}"
    assert "Traceback" not in err
    if "--out" in argv:
        out = argv[argv.index("--out") + 1]
        assert (tmp_path / out).exists(), f"{command} wrote nothing to {out}"
        keep = outputs[""] / tmp_path.name                  # one directory per test: never reused
        shutil.copytree(tmp_path / out, keep / out)
        keep = keep / out
        outputs[(doc, out)] = keep
    elif argv[0] == "vectors":
        assert any((tmp_path / argv[2]).iterdir())
