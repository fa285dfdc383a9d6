"""The conformance kit: vectors generated bit for bit, files valid against their schemas, a
checksummed manifest, and a harness that passes against refimpl's adapter and the independent
NumPy example and fails readably against a planted bug."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from refimpl.cli import main
from refimpl.conformance import vectors as VX
from refimpl.conformance.harness import run_case

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _harness(tmp_path, impl, extra_path=None, vectors=None):
    env = {**os.environ, "REFIMPL_IMPL": impl}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(extra_path or ""), env.get("PYTHONPATH", "")) if p)
    if vectors:
        env["REFIMPL_VECTORS"] = str(vectors)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs",
                        "refimpl.conformance"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout + r.stderr


def test_export_is_reproducible_and_valid(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    assert main(["vectors", "export", str(tmp_path / "a"), "--quiet"]) == 0
    assert main(["vectors", "export", str(tmp_path / "b"), "--quiet"]) == 0
    ma = json.loads((tmp_path / "a" / "manifest.json").read_text())
    mb = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert ma == mb and len(ma["files"]) == 2 * len(VX.families())          # bit for bit, every family
    for fam in VX.families():
        doc = json.loads((tmp_path / "a" / f"{fam}.json").read_text())
        jsonschema.validate(doc, json.loads((tmp_path / "a" / f"{fam}.schema.json").read_text()))
        assert doc["cases"] and all(c["equation"] and c["comment"] for c in doc["cases"])
    broken = json.loads((tmp_path / "a" / "move.json").read_text())
    del broken["cases"][0]["expected"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, json.loads((tmp_path / "a" / "move.schema.json").read_text()))
    # the edges the issue names are covered
    flags = {f for d in VX.generate().values() for c in d["cases"] for f in c["flags"]}
    assert {"large-logits", "relu-at-zero", "curvature-fixed", "A0=0", "C<=U", "constraint-active", "slack-active",
            "b=0", "rounding-slack", "projection-u-binds", "projection-v-binds", "cap-active", "ulp-bound"} <= flags


def test_manifest_refuses_an_edited_file(tmp_path, capsys):
    assert main(["vectors", "export", str(tmp_path), "--paper", "ssca", "--quiet"]) == 0
    assert VX.load(tmp_path).keys() == {"surrogate_update", "unconstrained_step", "move", "closed_form_step",
                                        "client_aggregate", "constrained_run"}
    p = tmp_path / "move.json"
    p.write_text(p.read_text().replace('"gamma": 0.3', '"gamma": 0.31'))
    with pytest.raises(ValueError, match="move.json: its SHA-256 does not match"):
        VX.load(tmp_path)
    assert main(["vectors", "export", str(tmp_path), "--quiet"]) == 2             # not empty
    assert "--overwrite" in capsys.readouterr().err
    assert main(["vectors", "export", str(tmp_path / "x"), "--paper", "nope"]) == 2


def test_npz_and_mat_exports_hold_the_same_values(tmp_path):
    from scipy.io import loadmat
    for fmt in ("npz", "mat"):
        assert main(["vectors", "export", str(tmp_path / fmt), "--format", fmt, "--paper", "mfcgd", "--quiet"]) == 0
    doc = VX.generate(("mfcgd",))["storm_update"]
    meta = json.loads((tmp_path / "npz" / "storm_update.meta.json").read_text())
    z = np.load(tmp_path / "npz" / "storm_update.npz")
    m = loadmat(tmp_path / "mat" / "storm_update.mat")
    key = meta["cases"][1]["arrays"]["expected.u"]
    want = VX.decode(doc["cases"][1]["expected"]["u"])
    np.testing.assert_array_equal(z[key], want)
    np.testing.assert_array_equal(m[key], want)


def test_harness_passes_for_refimpl_and_the_numpy_example(tmp_path):
    code, out = _harness(tmp_path, "refimpl.conformance.adapter")
    assert code == 0 and " passed" in out, out
    n = sum(len(d["cases"]) for d in VX.generate().values()) + 1      # + the adapter-provides-a-family test
    code, out = _harness(tmp_path, "refimpl.conformance.numpy_adapter")
    assert code == 0 and f"{n} passed" in out, out


def test_harness_passes_for_the_pytorch_example(tmp_path):
    """examples/conformance_torch_adapter.py: gradients by torch's autograd, float64 on the CPU.
    torch is the project's ``torch`` extra, installed by the README's test command and in CI."""
    try:
        import torch  # noqa: F401
    except ImportError:
        pytest.fail("torch is not installed: pip install -e '.[test,plot,flower,torch]' (the README's test command)")
    n = sum(len(d["cases"]) for d in VX.generate().values()) + 1
    code, out = _harness(tmp_path, "conformance_torch_adapter", EXAMPLES)
    assert code == 0 and f"{n} passed" in out, out


def test_harness_fails_readably_on_a_planted_bug(tmp_path):
    src = (EXAMPLES.parent / "refimpl" / "conformance" / "numpy_adapter.py").read_text()
    planted = src.replace("return ((1 - eta * param) ** (tau - 1 - t),)", "return ((1 - eta * param) ** (tau - t + 1),)")
    assert planted != src
    planted = planted.replace("def exp_nonpos(x):\n    return (np.exp(x),)\n", "")   # a missing function: skipped
    (tmp_path / "buggy_adapter.py").write_text(planted)
    code, out = _harness(tmp_path, "buggy_adapter", tmp_path)
    assert code == 1, out
    assert "local_weights[[FlexVFL] (8)]-local_weights-2" in out                     # the id carries the equation
    assert "w[0]: got 0.94148" in out and "expected 0.960596" in out and "rel tolerance 1e-14" in out
    assert "the adapter has no function 'exp_nonpos'" in out or "2 skipped" in out


def test_an_adapter_with_no_function_fails_naming_the_empty_run(tmp_path):
    """Every vector skipped is no pass: the run fails, saying it compared nothing."""
    (tmp_path / "empty_adapter.py").write_text('"""An adapter that defines nothing yet."""\n')
    code, out = _harness(tmp_path, "empty_adapter", tmp_path)
    assert code == 1, out
    assert "the adapter empty_adapter provides none of the" in out and "this run compared nothing" in out


def test_adapter_errors_and_exported_vectors(tmp_path):
    class Raising:
        @staticmethod
        def move(*a):
            raise RuntimeError("boom")

    class WrongShape:
        @staticmethod
        def move(omega, omega_bar, gamma):
            return (omega[:2],)
    case = VX.generate(("ssca",))["move"]["cases"][0]
    with pytest.raises(RuntimeError, match="boom"):
        run_case(Raising, "move", case)
    outcome, msg = run_case(WrongShape, "move", case)
    assert outcome == "fail" and "shape (2,), expected (5,)" in msg
    assert run_case(object(), "move", case)[0] == "skip"
    # the harness reads an exported directory (REFIMPL_VECTORS) after checking the manifest
    assert main(["vectors", "export", str(tmp_path / "v"), "--quiet"]) == 0
    code, out = _harness(tmp_path, "refimpl.conformance.adapter", vectors=tmp_path / "v")
    assert code == 0, out


def test_vectors_catch_a_mutation_behind_them_and_not_one_outside(tmp_path):
    """The mutation runner's copies: a Lemma 1 mutation and a mutation of the simulated clock each
    fail a vector; a mutation of a run's identity (refimpl's bookkeeping: no vector calls it)
    passes them all, which the report says."""
    from refimpl.tools.mutations import load_catalogue, run_mutation
    VX.export(tmp_path / "v")
    # only the three entries the test runs: an edit to a line another entry mutates must not fail it
    cat = {m.id: m for m in load_catalogue(only={"ssca-lemma1-d-factor", "vfl-server-time-dropped",
                                                 "core-identity-seed-dropped"})}
    assert len(cat) == 3
    caught = run_mutation(cat["ssca-lemma1-d-factor"], vectors_dir=tmp_path / "v")
    assert caught.error is None and caught.caught and caught.caught_by[0].startswith("closed_form_step-")
    clock = run_mutation(cat["vfl-server-time-dropped"], vectors_dir=tmp_path / "v")
    assert clock.error is None and clock.caught and clock.caught_by[0].startswith("vfl_round_time-")
    missed = run_mutation(cat["core-identity-seed-dropped"], vectors_dir=tmp_path / "v")
    assert missed.error is None and not missed.caught


def test_the_walkthrough_lists_every_family():
    text = (Path(__file__).resolve().parents[1] / "docs" / "conformance.md").read_text()
    for fam, rec in VX.families().items():
        assert f"`{fam}({', '.join(rec.inputs)})` → ({', '.join(rec.outputs)})" in text, fam


def test_the_flex_vfl_vectors_agree_with_the_literal_transcription():
    """The vfl_round and vfl_taus vectors' expected values (refimpl's NumPy twins) against
    refimpl/verification/vfl_literal.py, which shares no code with the package."""
    from refimpl.verification.vfl_literal import run_literal
    docs = VX.generate(("vfl",))
    for case in docs["vfl_round"]["cases"]:
        i = {k: VX.decode(v) for k, v in case["inputs"].items()}
        e = {k: VX.decode(v) for k, v in case["expected"].items()}
        n = i["X1"].shape[0]
        W, _, _, buf = run_literal([i["W0"], i["W1"], i["W2"]], [i["X1"], i["X2"]], i["y"], np.arange(n)[None],
                                   None, method="flex", eta=list(i["eta"]), opt=i["optimizer"], param=i["param"],
                                   labels=i["labels"], persistent=True, taus=i["tau"][None],
                                   buffers=[i["s0"], i["s1"], i["s2"]])
        for k in range(3):
            np.testing.assert_allclose(W[k], e[f"W{k}"], rtol=1e-13, atol=1e-15, err_msg=case["id"])
            if i["optimizer"] == "momentum":
                np.testing.assert_allclose(buf[k], e[f"s{k}"], rtol=1e-13, atol=1e-15, err_msg=case["id"])
    from refimpl.verification.vfl_literal import steps_literal
    for case in docs["vfl_taus"]["cases"]:
        i = {k: VX.decode(v) for k, v in case["inputs"].items()}
        method = "flex" if i["rule"] == "timeout" else ("pbcd" if i["Q"] == 1 else "sync")
        want = steps_literal(method, list(i["step_times"]), i["timeout"], i["Q"], i["server_steps"] or None)
        np.testing.assert_array_equal(want, VX.decode(case["expected"]["tau"]), err_msg=case["id"])


def test_the_mfcgd_machinery_vectors_agree_with_the_literal_transcriptions():
    """scgd_run's expected values (the NumPy runner) against the baselines' per-client
    transcription, and theorem_rhs's (refimpl.mfcgd.bounds) against the statements written out
    (refimpl/verification/mfcgd_literal.py, which shares no code with the package)."""
    from refimpl.mfcgd.problems import SyntheticComposition
    from refimpl.verification.mfcgd_literal import local_scgd_literal, theorem_literal
    docs = VX.generate(("mfcgd",))
    for case in docs["scgd_run"]["cases"]:
        i = {k: VX.decode(v) for k, v in case["inputs"].items()}
        pr = SyntheticComposition(i["A"], i["b"], i["c"])
        traj, used, comms = local_scgd_literal(pr, i["x1"], i["T"], i["q"], i["eta"], i["beta"],
                                               i["alpha"] if i["alpha"] > 0 else None,
                                               (i["zeta0"], i["zeta"], i["zeta2"], i["xi"]))
        np.testing.assert_allclose(traj, VX.decode(case["expected"]["x_bar"]), rtol=1e-13, err_msg=case["id"])
        np.testing.assert_array_equal(used, VX.decode(case["expected"]["samples"]), err_msg=case["id"])
        np.testing.assert_array_equal(comms, VX.decode(case["expected"]["rounds"]), err_msg=case["id"])
    for case in docs["theorem_rhs"]["cases"]:
        i = {k: VX.decode(v) for k, v in case["inputs"].items()}
        consts = [i.pop(k) for k in ("C_f", "C_g", "L_f", "L_g", "sigma", "delta_f", "delta_g", "F_gap")]
        lit = theorem_literal(*consts, B=0.0, **i)
        np.testing.assert_allclose(lit["G"], VX.decode(case["expected"]["G"]), rtol=1e-13, err_msg=case["id"])
        np.testing.assert_allclose(lit["bound"], VX.decode(case["expected"]["rhs14"]), rtol=1e-13, err_msg=case["id"])


def test_the_vectors_separate_naive_formulas_from_the_documented_ones():
    """Where the kit says a case separates two readings, an adapter with the other reading fails it
    with a readable message: Python's // (the exact quotient's floor) for τ = ⌊fl(t/s)⌋, and a
    softmax without the max subtracted on logits near 800."""
    import warnings
    docs = VX.generate(("core", "vfl"))

    class Naive:
        @staticmethod
        def vfl_taus(rule, timeout, Q, server_steps, step_times):
            t = (np.maximum(1, (float(timeout) // np.asarray(step_times)).astype(int)) if rule == "timeout"
                 else np.full(len(step_times), int(Q)))
            if server_steps > 0:
                t[0] = server_steps
            return (t,)

        @staticmethod
        def loss_grad(W1, W2, X, y, activation, bias):
            Z = X @ W1.T
            O = (Z / (1 + np.exp(-Z))) @ W2.T
            P = np.exp(O)
            P /= P.sum(axis=1, keepdims=True)
            return float(np.mean(-np.log(P[np.arange(len(y)), y]))), np.zeros_like(W1), np.zeros_like(W2)

    taus = {c["id"]: c for c in docs["vfl_taus"]["cases"]}
    for cid in ("vfl_taus-1", "vfl_taus-2"):
        assert "double-quotient" in taus[cid]["flags"]
        outcome, msg = run_case(Naive, "vfl_taus", taus[cid])
        assert outcome == "fail" and "(whole numbers, compared exactly;" in msg, msg
    assert "got 2, expected 3" in run_case(Naive, "vfl_taus", taus["vfl_taus-1"])[1]
    case = next(c for c in docs["loss_grad"]["cases"] if "overflowing-logits" in c["flags"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcome, msg = run_case(Naive, "loss_grad", case)
    assert outcome == "fail" and "loss: got nan" in msg
    # the stable reading passes (refimpl's own adapter)
    from refimpl.conformance import adapter
    assert run_case(adapter, "loss_grad", case)[0] == "pass"
    assert run_case(adapter, "vfl_taus", taus["vfl_taus-1"])[0] == "pass"


def test_the_walkthrough_table_counts_each_familys_cases_and_flags():
    text = (Path(__file__).resolve().parents[1] / "docs" / "conformance.md").read_text()
    docs = VX.generate()
    for fam, rec in VX.families().items():
        row = next(ln for ln in text.splitlines() if ln.startswith(f"| `{fam}("))
        cells = [c.strip() for c in row.split("|")]
        flags = sorted({f for c in docs[fam]["cases"] for f in c["flags"]})
        assert cells[4] == str(len(docs[fam]["cases"])), (fam, cells[4])
        assert cells[5] == (", ".join(flags) or "—") or cells[5].split(", ") == flags, (fam, cells[5], flags)


def test_the_rounding_slack_cases_are_chosen_with_sums_in_order():
    """closed_form_step's badly scaled cases are chosen for a rounding effect, so the choice must not
    follow the CPU's BLAS kernel: the sums are taken left to right (a machine with another ddot
    kernel published other cases, and the pinned digest failed there)."""
    from refimpl.conformance.families import ssca as FS
    v = np.array([1e16, 1.0, -1e16, 1.0])
    assert FS._dot_in_order(v, np.ones(4)) == 1.0          # ((1e16 + 1) − 1e16) + 1; pairwise gives 0
    assert FS._dot_in_order(v[::-1], np.ones(4)) == 0.0    # ((1 − 1e16) + 1) + 1e16: each 1 rounds away
    cases = VX.generate()["closed_form_step"]["cases"][4:]
    assert [c["id"] for c in cases] == ["closed_form_step-4", "closed_form_step-5", "closed_form_step-6"]
    for c in cases:
        i = {k: (np.asarray(v["data"]).reshape(v["shape"]) if isinstance(v, dict) else v)
             for k, v in c["inputs"].items()}
        assert FS._textbook_infeasible(i) and "rounding-slack" in c["flags"]
