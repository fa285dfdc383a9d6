"""The mutation catalogue and its runner (refimpl verify --mutations)."""
import json
from pathlib import Path

import pytest

from refimpl.cli import main
from refimpl.tools import mutations as MU


def test_catalogue_is_valid_and_covers_every_paper():
    cat = MU.load_catalogue()
    assert len(cat) >= 40
    papers = {m.paper for m in cat}
    assert {"ssca", "vfl", "mfcgd"} <= papers
    for paper in ("ssca", "vfl", "mfcgd"):
        assert sum(m.paper == paper for m in cat) >= 10
    assert all(m.equation and m.checks for m in cat)


def _write(tmp_path, body):
    p = tmp_path / "cat.toml"
    p.write_text(body)
    return p


#: one catalogue entry on the MFCGD algorithm, its text to find, replacement and checks left open
ENTRY = '''[[mutation]]
id = "x"
paper = "mfcgd"
file = "refimpl/mfcgd/algorithm.py"
find = "{find}"
replace = "{replace}"
equation = "e"
checks = [{checks}]
'''


def test_bad_catalogues_are_refused(tmp_path):
    entry = ENTRY.replace("{replace}", "y")
    with pytest.raises(ValueError, match="occurs 0 times"):
        MU.load_catalogue(_write(tmp_path, entry.format(find="no such text anywhere", checks="")))
    with pytest.raises(ValueError, match="not theorem-kind"):
        MU.load_catalogue(_write(tmp_path, entry.format(find="def storm_update(", checks='"mfcgd.rate_slope"')))
    with pytest.raises(ValueError, match="id repeated"):
        one = entry.format(find="def storm_update(", checks="").replace('replace = "y"', 'replace = "def storm_update2("')
        MU.load_catalogue(_write(tmp_path, one + "\n" + one))
    with pytest.raises(ValueError, match="paper must be one of"):
        MU.load_catalogue(_write(tmp_path, entry.format(find="def storm_update(", checks="").replace('"mfcgd"', '"x"', 1)))
    assert main(["verify", "--only-paper", "ssca"]) == 2            # --only-paper needs --mutations


def test_a_mutated_source_is_compiled_once_a_process_and_a_failure_every_time(tmp_path, monkeypatch, capsys):
    """Loading the catalogue compiles each mutated file (most of a load's time): a text that
    compiled is not compiled again in the process; one that does not compile is refused at every
    load. ``verify --mutations --only`` validates just the entries named, and names an unknown id
    or one outside ``--only-paper``."""
    entry = ENTRY.replace("{find}", "def storm_update(").replace("{checks}", '"mfcgd.lemma9_tracking"')
    calls = []
    real = compile
    monkeypatch.setattr(MU, "compile", lambda *a: calls.append(a[1]) or real(*a), raising=False)
    good = _write(tmp_path, entry.format(replace="def storm_update_("))
    assert [m.id for m in MU.load_catalogue(good)] == ["x"] and calls == ["refimpl/mfcgd/algorithm.py"]
    assert [m.id for m in MU.load_catalogue(good)] == ["x"] and len(calls) == 1
    bad = tmp_path / "bad.toml"
    bad.write_text(entry.format(replace="def storm_update(("))
    for _ in range(2):
        with pytest.raises(ValueError, match=r"mutation #1 x: the mutated refimpl/mfcgd/algorithm.py does not compile"):
            MU.load_catalogue(bad)
    assert len(calls) == 3
    # the command leaves the compiling to the runner, which does it while its workers start: refused all the same
    assert main(["verify", "--mutations", "--catalogue", str(bad), "--quiet"]) == 2
    assert "mutation x: the mutated refimpl/mfcgd/algorithm.py does not compile" in capsys.readouterr().err
    assert len(calls) == 4
    assert main(["verify", "--mutations", "--only", "no-such-entry"]) == 2
    assert "--only: unknown mutation ids ['no-such-entry']" in capsys.readouterr().err
    first_core = next(m.id for m in MU.load_catalogue() if m.paper == "core")
    assert main(["verify", "--mutations", "--only-paper", "ssca", "--only", first_core]) == 2
    assert f"--only: mutation ids ['{first_core}'] are not of --only-paper ssca" in capsys.readouterr().err


def test_a_catalogued_mutation_is_caught_on_a_copy():
    m = next(m for m in MU.load_catalogue() if m.id == "mfcgd-u-momentum-sign")
    out = MU.run_mutation(m)
    assert out.error is None and out.caught_by == ["mfcgd.lemma9_tracking"], out


#: a catalogue of one mutation that changes nothing a check can see (a comment)
HARMLESS = '''[[mutation]]
id = "comment-only"
paper = "mfcgd"
file = "refimpl/mfcgd/bounds.py"
find = "def params_to_dict(p):"
replace = "def params_to_dict(p):  # harmless"
equation = "none"
checks = ["mfcgd.theorem_statement_literal"]
'''


def test_one_entry_per_first_named_check_is_caught_by_a_check_it_names(tmp_path):
    """One entry per check the catalogue names first (that check's first entry in the file), two at
    a time: each is caught, and by one of the checks the entry names. The whole catalogue is ``refimpl verify
    --mutations`` (about 3.5 minutes on 2 cores), which .ci/run runs after the tests, so an entry no
    theorem-kind check catches still fails CI (tests/test_layout.py keeps that step)."""
    firsts = {}
    for m in MU.load_catalogue():
        firsts.setdefault(m.checks[0], m)
    assert len(firsts) >= 40
    js = tmp_path / "firsts.json"
    rc = main(["verify", "--mutations", "--only", ",".join(m.id for m in firsts.values()), "--workers", "2",
               "--json", str(js), "--quiet"])
    recs = {r["id"]: r for r in json.loads(js.read_text())}
    assert rc == 0 and len(recs) == len(firsts)
    wrong = [(m.id, m.checks, recs[m.id]["caught_by"], recs[m.id]["error"]) for m in firsts.values()
             if not recs[m.id]["caught"] or not set(recs[m.id]["caught_by"]) <= set(m.checks)]
    assert not wrong, wrong


def test_a_child_imports_only_the_modules_of_the_checks_it_runs():
    """The child on a mutated copy imports the module registering each check it runs, not every
    check module; a wrong or missing entry in its module map falls back to all of them."""
    import subprocess
    import sys
    code = ("import json, sys; from refimpl.tools.mutations import _child; "
            "_child(json.dumps(sys.argv[1].split(',')), '[]', sys.argv[2]); "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('refimpl.verification.'))))")
    for ids, modules, loaded in (
            ("ssca.server_step_equations", {"ssca.server_step_equations": "refimpl.verification.ssca"},
             "refimpl.verification.ssca"),
            ("grad.fd", {"grad.fd": "refimpl.verification.registry"}, "refimpl.verification.mfcgd"),  # wrong entry
            ("grad.fd", {}, "refimpl.verification.mfcgd")):                                       # no entry
        proc = subprocess.run([sys.executable, "-c", code, ids, json.dumps(modules)], capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-1500:]
        rec, mods = [json.loads(ln) for ln in proc.stdout.strip().splitlines()[-2:]]
        assert rec["ran"] == [ids] and rec["caught_by"] == [], rec
        assert loaded in mods, mods
        if modules.get(ids) == loaded:
            assert "refimpl.verification.mfcgd" not in mods and "refimpl.verification.vfl" not in mods, mods
    assert MU.check_modules(["grad.fd"]) == {"grad.fd": "refimpl.verification.core"}


def test_the_zygote_runs_the_mutated_copy_and_reports_a_crash(tmp_path):
    """The forked interpreter imports refimpl from the mutated copy (never the installed package);
    a copy that fails to import, or kills its interpreter, is reported as not run with the error or
    the signal; a dead zygote is replaced by a fresh interpreter for that mutation."""
    import os
    if not hasattr(os, "fork"):
        pytest.skip("no os.fork on this platform: the runner starts one interpreter per mutation")
    m = next(m for m in MU.load_catalogue() if m.id == "core-tune-last-of-equal")
    z = MU.Zygote(MU._mutation_env())
    try:
        out = MU.run_mutation(m, zygote=z)
        assert out.error is None and out.caught_by == ["core.tune_selection"], out
        broken = MU.Mutation("broken-import", "core", m.file, m.find, "if best is None or s >>> scores[best]:",
                             "none", ("core.tune_selection",))
        bad = MU.run_mutation(broken, zygote=z)
        assert not bad.caught and "the checks did not run (the fork exited 0)" in bad.error, bad
        assert "SyntaxError" in bad.error, bad
        # a copy that kills its own interpreter is reported with the signal; the zygote lives on
        killer = MU.Mutation("kills-itself", "core", "refimpl/core/identity.py", "def content_id(doc, n=20):",
                             "import os as _os; _os.kill(_os.getpid(), 9)\ndef content_id(doc, n=20):", "none",
                             ("core.tune_selection",))
        dead = MU.run_mutation(killer, zygote=z)
        assert not dead.caught and "killed by signal 9" in dead.error and z.alive, dead
        # a zygote that has died: the mutation runs in a fresh interpreter instead
        z.proc.kill()
        z.proc.wait()
        again = MU.run_mutation(m, zygote=z)
        assert again.error is None and again.caught_by == ["core.tune_selection"], again
    finally:
        z.close()


def test_a_copy_that_does_not_import_loops_or_grows_is_caught_by_the_check_it_stops(monkeypatch):
    """A mutation that makes the package raise as it imports is the first check's crash (refimpl
    verify could not start); one that makes a check loop, or grow without end, is stopped by the
    runner (its time, its memory) and caught by the check that was running, crashed — each then
    confirmed against the unmutated package as every crash is."""
    import os
    if not hasattr(os, "fork"):
        pytest.skip("no os.fork on this platform: the runner starts one interpreter per mutation")
    m = next(m for m in MU.load_catalogue() if m.id == "core-tune-last-of-equal")
    line = "if best is None or s > scores[best]:"

    def planted(mid, before, at=line):
        return MU.Mutation(mid, "core", m.file, at, before + at, "none", ("core.tune_selection",))
    monkeypatch.setattr(MU, "MAX_RSS_BYTES", 2 ** 30)
    z = MU.Zygote(MU._mutation_env())
    try:
        raising = planted("raises-on-import", "raise ValueError('planted')\n", "def select(scores):")
        out = MU.run_mutation(raising, zygote=z)
        assert out.caught_by and out.crashed and "did not import (ValueError: planted)" in out.ended, out
        loops = MU.run_mutation(planted("loops", "while s == s:\n            pass\n        "), zygote=z, timeout=5)
        assert loops.caught_by == ["core.tune_selection"] and loops.crashed, loops
        assert loops.ended == "stopped: timed out after 5 s", loops
        grows = MU.run_mutation(planted("grows", "_g = [__import__('time').sleep(0.01) or b'x' * 2 ** 22 "
                                                 "for _ in iter(int, 1)]\n        "), zygote=z)
        assert grows.caught_by == ["core.tune_selection"] and grows.ended == "stopped: above 1 GiB of memory", grows
        results = [out, loops, grows]
        assert MU.void_broken_catchers(results) == {} and all(r.caught for r in results), results
    finally:
        z.close()


def test_loading_some_entries_ignores_edits_under_the_others(tmp_path):
    """``load_catalogue(only=…)`` validates just those entries: a catalogue whose other entry no
    longer matches the source still yields them; an unknown id is an error."""
    from refimpl.tools.mutations import CATALOGUE, load_catalogue
    text = CATALOGUE.read_text()
    first = load_catalogue()[0]
    broken = tmp_path / "cat.toml"
    broken.write_text(text.replace(_toml_str(first.find), _toml_str(first.find + "  # edited"), 1))
    with pytest.raises(ValueError, match="occurs 0 times"):
        load_catalogue(broken)
    other = load_catalogue()[1]
    assert [m.id for m in load_catalogue(broken, only={other.id})] == [other.id]
    with pytest.raises(ValueError, match="no mutation"):
        load_catalogue(only={"no-such-mutation"})


def _toml_str(text):
    import json
    return json.dumps(text, ensure_ascii=False)[1:-1]


def test_a_harmless_edit_is_not_caught_and_the_claims_column_runs_the_papers_claims(tmp_path, capsys):
    """A harmless edit (a comment) is reported NOT CAUGHT, in the table, the JSON and the Markdown,
    after every check its paper's mutations are tried against ran; ``--with-claims`` then runs its
    paper's claims too, and the table says whether they still reproduce (not counted as caught)."""
    cat = _write(tmp_path, HARMLESS)
    js = tmp_path / "m.json"
    mdp = tmp_path / "m.md"
    assert main(["verify", "--mutations", "--with-claims", "--catalogue", str(cat), "--json", str(js),
                 "--markdown", str(mdp), "--quiet"]) == 1
    assert "**not caught**" in mdp.read_text() and "| mfcgd | 1 | 0 | 0 % |" in mdp.read_text()
    rec = json.loads(js.read_text())[0]
    assert rec["caught"] is False and rec["error"] is None and "mfcgd.lemma9_tracking" in rec["ran"]
    assert set(rec["ran"]) == set(MU.theorem_checks("mfcgd")), sorted(set(MU.theorem_checks("mfcgd")) - set(rec["ran"]))
    assert set(rec["claims"]) == {"mfcgd.rate_slope", "mfcgd.complexity_vs_baselines"}
    out = capsys.readouterr().out
    assert "NOT CAUGHT" in out
    assert out.splitlines()[0].rstrip().endswith("claims")
    assert ("all 2 reproduce" in out) == all(rec["claims"].values())
    assert main(["verify", "--with-claims"]) == 2 and "--with-claims applies only with --mutations" in \
        capsys.readouterr().err


def test_a_mutated_kernel_file_runs_interpreted_and_is_caught_compiled_too(monkeypatch):
    """A mutation of a file with Numba kernels runs that file's kernels as Python functions (the
    other files' load compiled from the cache); ``REFIMPL_MUTATION_KERNELS=compile`` recompiles
    them instead, and the same check catches the mutation either way."""
    import subprocess
    import sys
    ids = ("vfl-numba-incoming-momentum-dropped", "mfcgd-scgd-nb-round-count")
    cat = {m.id: m for m in MU.load_catalogue(only=set(ids))}
    code = MU._interpreting(cat[ids[0]])
    assert "refimpl.vfl.kernels" in code
    probe = code + ("import refimpl.vfl.kernels as V, refimpl.core.kernels as C; "
                    "print(hasattr(V._linear_party_loop_nb, 'signatures'), hasattr(C._gather_rows_nb, 'signatures'))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert proc.stdout.split() == ["False", "True"], proc.stderr[-800:]
    core = next(m for m in MU.load_catalogue() if m.file == "refimpl/core/kernels.py")
    assert MU._interpreting(core) == ""                 # Numba intrinsics cannot run as Python: compiled
    interpreted = {i: MU.run_mutation(cat[i]).caught_by for i in ids}
    monkeypatch.setenv(MU.KERNELS_ENV, "compile")
    assert MU._interpreting(cat[ids[0]]) == ""
    compiled = {i: MU.run_mutation(cat[i]).caught_by for i in ids}
    assert interpreted == compiled == {i: list(cat[i].checks[:1]) for i in ids}, (interpreted, compiled)
    monkeypatch.setenv(MU.KERNELS_ENV, "jit")
    with pytest.raises(ValueError, match="must be 'interpret' or 'compile'"):
        MU._interpreting(cat[ids[0]])


def test_a_check_of_fact_groups_stops_at_its_first_wrong_group_only_under_the_runner(monkeypatch):
    """Under the mutation runner (where only verdicts are read) a check made of fact groups stops
    after the first group with a wrong fact; a plain run runs every group. Both run them in the
    order given, so the runner's evaluation is the first part of the plain one and its verdict the
    plain one's. On the unmutated code each such check holds either way."""
    from refimpl.tools.verify import run_checks
    import numpy as np

    from refimpl.verification.registry import FIRST_WRONG_ENV, error_groups, fact_groups, wrong_groups
    calls = []

    def group(name, right):
        return lambda: calls.append(name) or [(name, right)]
    groups = [group("a", True), group("b", False), group("c", False)]
    monkeypatch.delenv(FIRST_WRONG_ENV, raising=False)
    assert fact_groups(groups) == [("a", True), ("b", False), ("c", False)] and calls == ["a", "b", "c"]
    assert wrong_groups([lambda: [], lambda: ["x"], lambda: ["y"]]) == ["x", "y"]
    monkeypatch.setenv(FIRST_WRONG_ENV, "1")
    calls.clear()
    assert fact_groups(groups) == [("a", True), ("b", False)] and calls == ["a", "b"]
    assert wrong_groups([lambda: [], lambda: ["x"], lambda: calls.append("late") or ["y"]]) == ["x"]
    assert "late" not in calls
    # {what: error} groups: stopped after the first with an error above the bound or NaN
    assert error_groups([lambda: {"a": 0.0}, lambda: {"b": 2.0}, lambda: calls.append("late") or {"c": 0.0}], 1.0) \
        == {"a": 0.0, "b": 2.0} and "late" not in calls
    assert list(error_groups([lambda: {"a": np.nan}, lambda: {"b": 0.0}], 1.0)) == ["a"]
    assert error_groups([lambda: {"a": 1.0}, lambda: {"b": 0.5}], 1.0) == {"a": 1.0, "b": 0.5}
    monkeypatch.delenv(FIRST_WRONG_ENV)
    assert error_groups([lambda: {"a": 0.0}, lambda: {"b": 2.0}, lambda: {"c": 0.0}], 1.0) == {"a": 0.0, "b": 2.0, "c": 0.0}
    monkeypatch.setenv(FIRST_WRONG_ENV, "1")
    import inspect

    from refimpl.tools.verify import load_checks
    ids = [cid for cid, (_, _, fn, _) in load_checks().items()
           if any(f"{name}(" in inspect.getsource(fn) for name in ("fact_groups", "wrong_groups", "error_groups", "_cases_in_a_directory"))]
    assert {"tools.diagnose", "tools.diagnose_steps", "core.paper_descriptions", "vfl.assembly_literal",
            "mfcgd.algorithm1_literal", "vfl.clock"} <= set(ids)
    recs = run_checks(ids)
    assert all(r.holds for r in recs), [(r.id, r.details.get("wrong"), r.details.get("error")) for r in recs if not r.holds]


def test_a_catch_by_a_check_that_fails_unmutated_too_is_void(monkeypatch):
    """A check that ends in an error counts as catching only if it holds on the unmutated package
    (run once per such check): a broken check would otherwise catch every entry named on it."""
    from refimpl.tools import verify

    def crash(quick):
        raise NameError("planted: broken on every package")
    monkeypatch.setitem(verify.REGISTRY, "planted.broken", ("c", "s", crash, "theorem"))
    rs = [MU.Outcome("a", "core", "e", caught_by=["planted.broken"], crashed=True),
          MU.Outcome("b", "core", "e", caught_by=["grad.fd"], crashed=True),
          MU.Outcome("c", "core", "e", caught_by=["planted.broken"], crashed=False),
          MU.Outcome("d", "core", "e")]
    broken = MU.void_broken_catchers(rs)
    assert list(broken) == ["planted.broken"] and "planted: broken" in broken["planted.broken"]
    assert [r.caught for r in rs] == [False, True, True, False]
    assert "fails on the unmutated package too" in rs[0].error and rs[1].error is None


def test_a_crashed_catchers_unmutated_verdict_is_found_in_the_pool_and_used():
    """The pool runs a catcher that ended in an error once on the unmutated copy (a child process,
    as the mutations run), and :func:`void_broken_catchers` then uses that verdict instead of
    running the check again: a check that holds is None, one broken on the copy names itself."""
    space = MU.Workspace()
    try:
        assert MU._unmutated_verdict("grad.fd", None, space, 300, MU.PACKAGE) is None
        model = Path(space.dir) / "refimpl" / "core" / "model.py"
        model.write_text(model.read_text().replace("D1 *= dA", "D1 *= 0.34 * dA"))
        assert MU._unmutated_verdict("grad.fd", None, space, 300, MU.PACKAGE) == \
            "grad.fd does not hold on the unmutated package"
    finally:
        space.close()
    rs = [MU.Outcome("a", "core", "e", caught_by=["grad.fd"], crashed=True),
          MU.Outcome("b", "core", "e", caught_by=["planted.never-run"], crashed=True)]
    broken = MU.void_broken_catchers(rs, {("grad.fd", "f.py"): "grad.fd does not hold on the unmutated package",
                                          ("planted.never-run", "f.py"): None}, {"a": "f.py", "b": "f.py"})
    assert list(broken) == ["grad.fd"] and [r.caught for r in rs] == [False, True]


def _ends_with_its_runner(runner_code, tmp):
    """Start ``runner_code`` (it starts a mutation run that loops for ever, which writes its pid to
    ``tmp/pid``), kill the runner with SIGKILL, and tell whether the looping run ended within 10 s."""
    import os
    import signal
    import subprocess
    import sys
    import time
    runner = subprocess.Popen([sys.executable, "-c", runner_code])
    pid_file = tmp / "pid"
    deadline = time.monotonic() + 120
    while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.1)
    pid = int(pid_file.read_text())
    runner.send_signal(signal.SIGKILL)
    runner.wait()

    def running():
        try:
            with open(f"/proc/{pid}/stat") as fh:
                return fh.read().split(")")[-1].split()[0] not in ("Z", "X")
        except OSError:
            return False
    deadline = time.monotonic() + 10
    while running() and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = running()
    if alive:
        os.kill(pid, signal.SIGKILL)
    return not alive


LOOP = "import os; open('pid', 'w').write(str(os.getpid()))\nwhile True: pass\n"


def test_a_mutation_run_ends_with_its_runner(tmp_path):
    """A mutated copy that loops for ever does not outlive a runner killed from outside: neither in
    a fresh interpreter (no zygote; a thread watches the parent) nor forked by a zygote (which stops
    waiting and kills it when its runner is gone)."""
    fresh = ("import subprocess, time\nfrom refimpl.tools.mutations import fallback_argv\n"
             f"subprocess.Popen(fallback_argv({LOOP!r}), cwd={str(tmp_path)!r})\ntime.sleep(120)\n")
    assert _ends_with_its_runner(fresh, tmp_path)
    (tmp_path / "pid").unlink()
    forked = ("import time\nfrom refimpl.tools.mutations import Zygote, _mutation_env\n"
              f"Zygote(_mutation_env()).run({str(tmp_path)!r}, {LOOP!r}, 600)\n")
    assert _ends_with_its_runner(forked, tmp_path)


def test_module_references_and_what_a_mutation_makes_a_child_execute_afresh(tmp_path):
    """The preloading zygote's dependency graph, on a planted package: absolute, relative and
    submodule imports are references; a name imported by ``import_module`` while the module is
    imported is one, inside a function it is not (the child runs it through ``sys.modules``), nor
    is a docstring's mention; a mutation makes the child execute its module and every module
    naming one of those again, to a fixed point, and re-execute a package among them in place."""
    files = {"pk/__init__.py": '"""pk.c is documented here."""\nfrom pk.a import X\n',
             "pk/a.py": "X = 1\n", "pk/b.py": "from . import a\n",
             "pk/c.py": "import importlib\nM = importlib.import_module('pk.d')\n", "pk/d.py": "",
             "pk/e.py": "def f():\n    import importlib\n    return importlib.import_module('pk.a')\n",
             "pk/sub/__init__.py": "", "pk/sub/f.py": "from ..b import a as _a\n",
             "pk/sub/g.py": "import pk.c as C\n"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    g = MU.module_references({"pk": tmp_path / "pk"})
    assert g == {"pk": {"pk.a"}, "pk.a": set(), "pk.b": {"pk.a"}, "pk.c": {"pk.d"}, "pk.d": set(), "pk.e": set(),
                 "pk.sub": set(), "pk.sub.f": {"pk.b"}, "pk.sub.g": {"pk.c"}}, g
    assert MU.reloaded_with(g, "pk.a") == {"pk.a", "pk", "pk.b", "pk.sub.f"}
    assert MU.reloaded_with(g, "pk.d") == {"pk.d", "pk.c", "pk.sub.g"}
    assert MU.reloaded_with(g, "pk.e") == {"pk.e"}
    code = MU._purging(MU.reloaded_with(g, "pk.a"), g)
    assert "['pk.a', 'pk.b', 'pk.sub.f'], ['pk']" in code and MU._purging(set(), g) == ""
    assert MU.module_name("refimpl/core/__init__.py") == "refimpl.core"
    # refimpl itself: a paper's kernels are named by its runners, never by the cross-check tools
    real = MU.package_graph()
    assert "refimpl.vfl.flexvfl" in MU.reloaded_with(real, "refimpl.vfl.kernels")
    assert "refimpl.tools.diagnose" not in MU.reloaded_with(real, "refimpl.vfl.kernels")


def test_a_preloaded_zygote_gives_the_verdicts_of_a_bare_one():
    """A zygote holding the copy's unmutated modules (and its kernels, loaded) runs each mutation
    with the mutated module and every module naming it executed afresh: on entries in a tool, a
    kernel file (run as Python), a transcription a check module imports (the check module, which
    registers checks, is executed again), the check registry, the paper registry and a paper's
    description (read anew in each child: ``papers.forget``), it gives the catches of a zygote that imports nothing of refimpl; it refuses another copy."""
    ids = ("core-tune-last-of-equal", "vfl-numba-incoming-momentum-dropped", "mfcgd-literal-search-n",
           "core-max-or-nan-drops-nan", "core-registry-env-papers-never-loaded",
           "ssca-entry-words-w2-column-without-bias")
    cat = {m.id: m for m in MU.load_catalogue(only=set(ids))}
    space = MU.Workspace()
    found = {}
    try:
        for preload in (space.dir, None):
            z = MU.Zygote(MU._mutation_env(), preload=preload)
            try:
                assert z.preload == preload
                found[preload] = {i: MU.run_mutation(cat[i], zygote=z, workspace=space).caught_by for i in ids}
                if preload:
                    with pytest.raises(ValueError, match="holds the modules of"):
                        z.run(str(Path(space.dir).parent), "pass", 60)
            finally:
                z.close()
    finally:
        space.close()
    assert found[space.dir] == found[None], found
    assert all(found[None][i][:1] == [cat[i].checks[0]] for i in ids), found


def test_a_catcher_that_crashes_only_after_its_files_dependants_are_dropped_does_not_catch():
    """In a preloaded zygote a mutation's child drops the checks of every module depending on the
    mutated file and re-imports only its own checks' modules. A check that reads another check's
    registration without loading it then crashes there under any edit, a harmless one too. The
    unmutated run that confirms such a crash drops the same modules: the catch is void."""
    import os
    if not hasattr(os, "fork"):
        pytest.skip("no os.fork on this platform: a preloading zygote forks")
    space = MU.Workspace()
    core = Path(space.dir) / "refimpl" / "verification" / "core.py"    # the copy's grad.fd needs an ssca check
    core.write_text(core.read_text().replace(
        "def grad_fd(quick):\n", "def grad_fd(quick):\n    from refimpl.verification.registry import REGISTRY\n"
        "    REGISTRY['ssca.stepsize_conditions']\n", 1))
    harmless = MU.Mutation("harmless", "core", "refimpl/core/model.py", "D1 *= dA", "D1 *= dA  # planted", "",
                           ("grad.fd",))
    try:
        z = MU.Zygote(MU._mutation_env(), preload=space.dir)
        try:
            out = MU.run_mutation(harmless, zygote=z, workspace=space)
            assert out.crashed and out.caught_by == ["grad.fd"], out
            plain = MU._unmutated_verdict("grad.fd", z, space, 300, MU.PACKAGE)
            as_after = MU._unmutated_verdict("grad.fd", z, space, 300, MU.PACKAGE, harmless.file)
        finally:
            z.close()
    finally:
        space.close()
    assert plain is None, plain           # run as before: every check registered, it holds
    assert as_after == ("grad.fd does not hold on the unmutated package with refimpl/core/model.py's "
                        "dependants re-imported"), as_after
    assert MU.void_broken_catchers([out], {("grad.fd", harmless.file): as_after}, {"harmless": harmless.file}) \
        and not out.caught and "fails on the unmutated package too" in out.error
