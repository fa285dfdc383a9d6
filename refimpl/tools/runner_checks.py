"""Checks of the mutation runner (``refimpl verify --mutations``): what it reads from a catalogue,
which modules a mutated child executes afresh, how it reads a child's answer, and how it counts
and tabulates the catches — on planted catalogues, packages and answers whose right outcome is
written out here, independently of the runner. A runner that loses a catch (a mutated module not
executed afresh, a crash read as a pass) would report the checks weaker than they are; one that
invents a catch, stronger."""
from __future__ import annotations

import builtins
import json
import pathlib
import tempfile
import time
from types import SimpleNamespace

from refimpl.tools.tool_checks import _cases_result
from refimpl.verification.registry import check, fact_groups, raises


#: the planted package: module → source (its graph is written out in _graph_cases)
_PLANTED = {
    "__init__.py": "",
    "a.py": "X = 1\n",
    "b.py": "from pkg.a import X\n",
    "c.py": "from . import b\n",
    "d.py": "import pkg.c as cc\n",
    "e.py": "def f():\n    import pkg.a\n    return pkg.a.X\n",
    "f.py": "import importlib\nM = importlib.import_module('pkg.h')\n",
    "g.py": '"""Names pkg.a only in this docstring."""\nimport importlib\nM = importlib.import_module("pkg" + ".h")\n',
    "h.py": "Y = 0\n",
    "i.py": "from pkg import sub\n",
    "j.py": "def late():\n    import importlib\n    return importlib.import_module('pkg.h')\n",
    "kern.py": "from numba import njit\n\n\n@njit(cache=True)\ndef k(x):\n    return x + 1\n",
    "notes.txt": "@njit is named here, in no module\n",
    "sub/__init__.py": "from .leaf import Y\n",
    "sub/leaf.py": "from ..a import X\nY = X\n",
}


def _planted_package(tmp):
    root = pathlib.Path(tmp) / "pkg"
    for name, src in _PLANTED.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(src)
    return root


def _catalogue_cases(tmp, pkg):
    """load_catalogue on planted catalogues of the planted package: each refusal, and a valid one."""
    from refimpl.tools.mutations import Mutation, load_catalogue

    def entry(**kw):
        return {"id": "m1", "paper": "core", "file": "pkg/h.py", "find": "Y = 0", "replace": "Y = 1",
                "equation": "planted", **kw}

    def load(*entries, only=None):
        def run():
            path = pathlib.Path(tmp) / "catalogue.json"
            path.write_text(json.dumps({"mutation": list(entries)}))
            return load_catalogue(path, package=pkg, only=only)
        return run
    out = []
    got = load(entry(checks=["tools.verdicts"]), entry(id="m2", file="pkg/a.py", find="X = 1", replace="X = 2"))()
    out.append(("a valid catalogue loads in its order, each entry's fields and checks as written",
                got == [Mutation("m1", "core", "pkg/h.py", "Y = 0", "Y = 1", "planted", ("tools.verdicts",)),
                        Mutation("m2", "core", "pkg/a.py", "X = 1", "X = 2", "planted", ())]))
    no_eq = entry()
    del no_eq["equation"]
    refusals = [
        ("an entry without its equation", load(no_eq), "missing keys ['equation']"),
        ("an id given twice", load(entry(), entry()), "mutation #2 (m1): id repeated"),
        ("an unknown paper", load(entry(paper="nope")), "paper must be one of"),
        ("a claim's check id among its checks", load(entry(checks=["vfl.claim_adaptive"])),
         "['vfl.claim_adaptive'] are not theorem-kind check ids"),
        ("a file that does not exist", load(entry(file="pkg/none.py")), "no file pkg/none.py"),
        ("a find that is not in its file", load(entry(find="Y = 9")), "occurs 0 times in pkg/h.py (must be once)"),
        ("a find twice in its file", load(entry(file="pkg/sub/leaf.py", find="X")), "occurs 2 times"),
        ("a replacement equal to its find", load(entry(replace="Y = 0")), "replacement equals the original"),
        ("a mutated file that does not compile", load(entry(replace="Y = (")), "the mutated pkg/h.py does not compile"),
        ("an id asked for that no entry has", load(entry(), only={"m1", "ghost"}), "no mutation ['ghost']"),
        # seven, so that a set's own order (it varies with the hash seed) is the sorted one once in 5040 runs
        ("ids asked for that no entry has, named in order", load(entry(), only=["m1", "zed", "ghost", "kappa", "beta",
                                                                               "tau", "alpha", "mu"]),
         "no mutation ['alpha', 'beta', 'ghost', 'kappa', 'mu', 'tau', 'zed']"),
    ]
    for what, fn, says in refusals:
        out.append((f"{what} is refused, saying {says!r}", raises(fn, says)))
    from refimpl.tools.mutations import PACKAGE, outside_packages
    here = pathlib.Path(__file__).resolve().parent.parent
    out.append(("seen from another package, refimpl's papers are written outside it (their file names lead to "
                "refimpl's directory); seen from refimpl, they are not",
                outside_packages(pkg).get("refimpl") == here and "pkg" not in outside_packages(pkg)
                and "refimpl" not in outside_packages(PACKAGE)))
    from refimpl.tools.mutations import source_file
    out.append(("an entry's file read from its own package's directory: refimpl's beside refimpl seen from another "
                "package, that package's own beside it",
                source_file("refimpl/core/model.py", pkg) == here.parent / "refimpl/core/model.py"
                and source_file("pkg/a.py", pkg) == pkg.parent / "pkg/a.py"))
    got = load(entry(find="Y = 9"), entry(id="m2", file="pkg/a.py", find="X = 1", replace="X = 2"), only={"m2"})()
    out.append(("the entries asked for load although another's find no longer matches its file",
                [m.id for m in got] == ["m2"]))
    return out


def _graph_cases(pkg):
    """module_name, module_references and reloaded_with on the planted package, and the code
    _purging writes, run against a planted sys.modules."""
    from refimpl.tools import mutations as M
    out = [("a file's module: a package's __init__.py is the package",
            [M.module_name(f) for f in ("refimpl/ssca/algorithms.py", "pkg/sub/__init__.py", "pkg/__init__.py")]
            == ["refimpl.ssca.algorithms", "pkg.sub", "pkg"])]
    graph = M.module_references({"pkg": pkg})
    want = {"pkg": set(), "pkg.a": set(), "pkg.b": {"pkg.a"}, "pkg.c": {"pkg.b"}, "pkg.d": {"pkg.c"},
            "pkg.e": {"pkg.a"}, "pkg.f": {"pkg.h"}, "pkg.g": set(), "pkg.h": set(), "pkg.i": {"pkg.sub"},
            "pkg.j": set(), "pkg.kern": set(), "pkg.sub": {"pkg.sub.leaf"}, "pkg.sub.leaf": {"pkg.a"}}
    out.append(("each module's references: from-imports, relative ones (one and two levels up), import-as, an "
                "import inside a function, a submodule by name, a module named in a string where it imports by name "
                "while imported — not in its docstring, not where it does so only inside a function",
                {k: set(v) for k, v in graph.items()} == want))
    out.append(("a mutation of pkg.a makes every module that reaches it execute afresh, through the package "
                "pkg.sub and its parent's import of it", M.reloaded_with(want, "pkg.a")
                == {"pkg.a", "pkg.b", "pkg.c", "pkg.d", "pkg.e", "pkg.sub.leaf", "pkg.sub", "pkg.i"}))
    out.append(("a mutation of pkg.h reaches pkg.f only", M.reloaded_with(want, "pkg.h") == {"pkg.h", "pkg.f"}))
    cycle = {"pkg.p": {"pkg.q"}, "pkg.q": {"pkg.p"}, "pkg.r": {"pkg.q"}, "pkg.s": set()}
    out.append(("modules that import each other: a mutation of one reaches both and what imports them, and the "
                "search ends", M.reloaded_with(cycle, "pkg.p") == {"pkg.p", "pkg.q", "pkg.r"}))
    out.append(("nothing to execute afresh writes no code", M._purging(set(), want) == ""))
    out.append(("a package named in a string (where a module imports by name while imported) references the "
                "package and its submodules, not a module whose name merely ends like it", _named_package_right(M)))
    return out + _purge_run_cases(M, want)


def _named_package_right(M):
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp) / "pk"
        for name, src in {"__init__.py": "", "sub/__init__.py": "", "sub/leaf.py": "Y = 0\n", "x/__init__.py": "",
                          "x/sub.py": "Z = 0\n",
                          "k.py": "import importlib\nM = importlib.import_module('pk.sub')\n"}.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(src)
        graph = M.module_references({"pk": root})
    return set(graph["pk.k"]) == {"pk.sub", "pk.sub.leaf"}


def _purge_run_cases(M, graph):
    drop = M.reloaded_with(graph, "pkg.a")
    modules = {n: SimpleNamespace() for n in graph}
    for n in graph:
        parent, _, attr = n.rpartition(".")
        if parent:
            setattr(modules[parent], attr, modules[n])

    def fn_of(module):
        return SimpleNamespace(__module__=module)
    reg = SimpleNamespace(REGISTRY={"c.b": ("", "", fn_of("pkg.b"), "theorem"),
                                    "c.h": ("", "", fn_of("pkg.h"), "theorem"),
                                    "c.sub": ("", "", fn_of("pkg.sub"), "theorem")},
                          GROUPS={"c.b": "g", "c.h": "g"})
    modules["refimpl.verification.registry"] = reg
    reloaded = []
    fake = {"sys": SimpleNamespace(modules=modules), "importlib": SimpleNamespace(reload=reloaded.append)}
    exec(M._purging(drop, graph), {"__builtins__": {**vars(builtins), "__import__": lambda name, *a, **k: fake[name]}})
    gone = {"pkg.a", "pkg.b", "pkg.c", "pkg.d", "pkg.e", "pkg.i", "pkg.sub.leaf"}
    return [("the purge takes the modules a mutation reaches out of sys.modules and their parents' attributes, "
             "keeps the others", set(graph) - set(modules) == gone and "pkg.h" in modules
             and not any(hasattr(modules["pkg"], n[4:]) for n in gone if n.count(".") == 1)
             and hasattr(modules["pkg"], "sub") and not hasattr(modules["pkg.sub"], "leaf")),
            ("a package the mutation reaches is executed again in place (pkg.sub), once",
             reloaded == [modules.get("pkg.sub")] and "pkg.sub" in modules),
            ("the checks registered by a module or package executed afresh leave the registry and their group; the "
             "others stay", set(reg.REGISTRY) == {"c.h"} and reg.GROUPS == {"c.h": "g"})]


def _interpreting_cases(pkg):
    """The code that makes a mutated kernel file run interpreted, run against a planted numba."""
    from refimpl.tools.mutations import KERNELS_ENV, Mutation, _interpreting

    def m(file):
        return Mutation("k", "core", file, "x", "y", "")
    cfg = SimpleNamespace(DISABLE_JIT=False)
    fake = SimpleNamespace(core=SimpleNamespace(config=cfg))
    fake.njit = lambda *a, **kw: (lambda fn: (fn.__name__, cfg.DISABLE_JIT, a, kw))
    code = _interpreting(m("pkg/kern.py"), pkg, mode="interpret")
    exec(code, {"__builtins__": {**vars(builtins), "__import__": lambda name, *a, **k: fake}})

    def fn(name, module):
        def f():
            return None
        f.__name__, f.__module__ = name, module
        return f
    got = [fake.njit(fn("bare", "pkg.kern")), fake.njit(cache=True)(fn("cached", "pkg.kern")),
           fake.njit(fn("other", "pkg.a"))]
    out = [("in the interpret mode, the kernels of the mutated module compile with the JIT off (bare @njit and "
            "@njit(cache=True), its arguments passed on), another module's with it on, and the switch is off after",
            got == [("bare", True, (), {}), ("cached", True, (), {"cache": True}), ("other", False, (), {})]
            and cfg.DISABLE_JIT is False)]
    for what, file, mode in (("in the compile mode", "pkg/kern.py", "compile"),
                             ("for a module without @njit", "pkg/a.py", "interpret"),
                             ("for a file that is no module", "pkg/notes.txt", "interpret"),
                             ("for a file that is not there", "pkg/none.py", "interpret")):
        out.append((f"no such code {what}", _interpreting(m(file), pkg, mode=mode) == ""))
    out.append(("another mode is refused, naming the variable and the modes allowed",
                raises(lambda: _interpreting(m("pkg/kern.py"), pkg, mode="jit"),
                       f"{KERNELS_ENV} must be 'interpret' or 'compile', got 'jit'")))
    return out


def _purge_code_cases(pkg):
    from refimpl.tools import mutations as M
    M._GRAPHS.setdefault(str(pkg.resolve()), M.module_references({"pkg": pkg}))   # the runner reads it once
    mutated = M.Mutation("m", "core", "pkg/sub/leaf.py", "Y = X", "Y = -X", "")
    same = M.Mutation("unmutated", "core", "pkg/sub/leaf.py", "", "", "")
    code = M.purge_code(mutated, SimpleNamespace(preload=str(pkg)), pkg)
    return [("a child of a preloading zygote first purges what the mutated module reaches (pkg.sub.leaf, "
             "pkg.sub, pkg.i)", "['pkg.i', 'pkg.sub.leaf'], ['pkg.sub']" in code),
            ("no purge without a zygote, for a zygote that preloads nothing, or for the unmutated run",
             M.purge_code(mutated, None, pkg) == "" and M.purge_code(mutated, SimpleNamespace(preload=None), pkg) == ""
             and M.purge_code(same, SimpleNamespace(preload=str(pkg)), pkg) == "")]


def _child_code_cases(pkg):
    """The code a child runs, run here against planted modules: the purge first, then _child with
    the checks, the claims and their modules; a package that does not import answers its error."""
    import contextlib
    import io

    from refimpl.tools.mutations import Mutation, Outcome, child_code, progress_text
    m = Mutation("m", "core", "pkg/a.py", "X = 1", "X = 2", "")
    calls = []

    def run(code, failing=None):
        def fake_import(name, globals=None, locals=None, fromlist=(), level=0):
            if name == failing:
                raise ImportError("planted")
            if name == "json":
                return json
            calls.append(name)
            return SimpleNamespace(_child=lambda *a: calls.append(("child",) + a),
                                   _vector_child=lambda *a: calls.append(("vectors",) + a))
        ns = {"__builtins__": {**vars(builtins), "__import__": fake_import}, "_calls": calls}
        buf = io.StringIO()
        try:
            with contextlib.redirect_stdout(buf):
                exec(code, ns)
        except SystemExit as exc:
            return ns, buf.getvalue(), exc.code
        return ns, buf.getvalue(), None
    order, claims = ["tools.verdicts", "tools.crosscheck"], ["vfl.claim_adaptive"]
    _, printed, ended = run(child_code(m, order, claims, "_calls.append('purge')\n", pkg))
    child = [c for c in calls if isinstance(c, tuple)]
    out = [("a child runs the purge first, imports the runner and verify, then _child on the checks in order, the "
            "claims and each one's module", calls[:3] == ["purge", "refimpl.tools.mutations", "refimpl.tools.verify"]
            and len(child) == 1 and [json.loads(a) for a in child[0][1:]]
            == [order, claims, {"tools.verdicts": "refimpl.tools.tool_checks",
                                "tools.crosscheck": "refimpl.tools.tool_checks",
                                "vfl.claim_adaptive": "refimpl.verification.vfl"}] and printed == "" and ended is None)]
    calls.clear()
    _, printed, ended = run(child_code(m, order, [], "", pkg), failing="refimpl.tools.verify")
    out.append(("a package that does not import: the child prints its error as the answer and ends with 0, "
                "running no check", json.loads(printed) == {"package_error": "ImportError: planted"} and ended == 0
                and not [c for c in calls if isinstance(c, tuple)]))
    calls.clear()
    run(child_code(m, order, [], "_calls.append('purge')\n", pkg, vectors_dir="/planted/vectors"))
    out.append(("with vectors, the child purges, then runs the vectors of that directory, no check",
                calls[0] == "purge"
                and [c for c in calls if isinstance(c, tuple)] == [("vectors", "/planted/vectors")]))
    O = Outcome
    out.append(("the runner's progress line: the catcher and how a crash ended, or NOT CAUGHT and why none could",
                [progress_text(O("m1", "core", "", caught_by=["c.a"], seconds=2.6), 3, 10),
                 progress_text(O("m2", "core", "", caught_by=["c.a"], ended="stopped: timed out", seconds=0.2), 4, 10),
                 progress_text(O("m3", "core", "", error="boom"), 5, 10), progress_text(O("m4", "core", ""), 6, 10)]
                == ["[3/10] m1: caught by c.a (3 s)", "[4/10] m2: caught by c.a (stopped: timed out) (0 s)",
                    "[5/10] m3: NOT CAUGHT (boom) (0 s)", "[6/10] m4: NOT CAUGHT (0 s)"]))
    return out


def _answer_cases():
    """read_child on planted answers of a child: what the runner records."""
    from refimpl.tools.mutations import CLAIMS_RUNNING, Outcome, read_child
    order, tmp = ["core.a", "core.x"], "/tmp/copy"

    def read(stdout="", stderr="", timed_out=False, running=None, vectors=False, order=order):
        out = Outcome("m", "core", "")
        read_child(out, order, tmp, stdout, stderr, timed_out, "timed out after 5 s" if timed_out else "exit 1",
                   running, vectors)
        return (out.caught_by, out.crashed, out.ended, out.error, out.ran, out.claims)
    answer = {"package": tmp + "/refimpl/__init__.py", "ran": ["core.a", "core.x"], "caught_by": ["core.x"],
              "claims": None, "crashed": True, "ended": "its module did not import (KeyError: 'x')"}
    claims = {"package": tmp + "/refimpl/__init__.py", "ran": order, "caught_by": [], "claims": {"c.1": False}}
    cases = [
        ("a child stopped inside a check: that check's crash", read(timed_out=True, running="core.x"),
         (["core.x"], True, "stopped: timed out after 5 s", None, [], None)),
        ("a child stopped before its first check: the first check's crash, while the package was imported",
         read(timed_out=True), (["core.a"], True, "stopped while the package was imported: timed out after 5 s",
                                None, [], None)),
        ("a child stopped in the claims: no catch", read(timed_out=True, running=CLAIMS_RUNNING),
         ([], False, None, "timed out after 5 s", [], None)),
        ("a child stopped running the vectors: no catch", read(timed_out=True, vectors=True),
         ([], False, None, "timed out after 5 s", [], None)),
        ("a child with no check to run stopped: no catch", read(timed_out=True, order=[]),
         ([], False, None, "timed out after 5 s", [], None)),
        ("the child's last line is its answer, read whole", read(stdout="a warning\n" + json.dumps(answer) + "\n"),
         (["core.x"], True, "its module did not import (KeyError: 'x')", None, ["core.a", "core.x"], None)),
        ("the claims an uncaught child ran are kept; no crash where none is said", read(stdout=json.dumps(claims)),
         ([], False, None, None, order, {"c.1": False})),
        ("no answer: the checks did not run, with stderr's last two lines", read(stderr="one\ntwo\nthree\n"),
         ([], False, None, "the checks did not run (exit 1): two three", [], None)),
        ("a last line that is no JSON: the checks did not run", read(stdout="{caught\n", stderr="boom"),
         ([], False, None, "the checks did not run (exit 1): boom", [], None)),
        ("a package that did not import: the first check's crash",
         read(stdout=json.dumps({"package_error": "ImportError: gone"})),
         (["core.a"], True, "the package did not import (ImportError: gone)", None, [], None)),
        ("a child that imported another package than the copy: an error, no catch",
         read(stdout=json.dumps({**answer, "package": "/elsewhere/refimpl/__init__.py"})),
         ([], False, None, "the child imported /elsewhere/refimpl/__init__.py, not the mutated copy", [], None)),
        ("a child naming checks it was not given (its ids read letter by letter): an error, no catch",
         read(stdout=json.dumps({**answer, "ran": ["["], "caught_by": ["["]})),
         ([], False, None, "the child named checks it was not given: ['[', '[']", [], None)),
        ("… naming one only among the checks it ran: the same",
         read(stdout=json.dumps({**answer, "ran": ["core.a", "["], "caught_by": []})),
         ([], False, None, "the child named checks it was not given: ['[']", [], None)),
        ("… and one stopped in such a check: an error, no crash of it", read(timed_out=True, running="["),
         ([], False, None, "the child was stopped in a check it was not given ('['): timed out after 5 s", [], None)),
    ]
    return [(what, got == want) for what, got, want in cases]


#: planted checks a child runs: id → what the check returns (an exception: it raises)
_PLANTED_CHECKS = {
    "planted.holds": {"measured": 0.0, "bound": 1.0},
    "planted.fails": {"measured": 2.0, "bound": 1.0},
    "planted.wrong": {"measured": 0.0, "bound": 1.0, "holds": True, "details": {"wrong": ["a planted fact"]}},
    "planted.crash": RuntimeError("planted"),
    "planted.claim_no": {"measured": 2.0, "bound": 1.0},
    "planted.claim_yes": {"measured": 0.0, "bound": 1.0},
    "planted.noimport": {"measured": 0.0, "bound": 1.0},
}


def _planted_check(answer):
    def fn(quick):
        if isinstance(answer, Exception):
            raise answer
        return answer
    return fn


def _child_cases(tmp):
    """The child's loop (``_child``) on planted checks, in this process; its answer read back by
    read_child as the runner reads it."""
    import contextlib
    import io
    import os

    import refimpl
    from refimpl.tools.mutations import CLAIMS_RUNNING, Outcome, _child, read_child
    from refimpl.verification.registry import FIRST_WRONG_ENV, REGISTRY
    running = os.path.join(tmp, "running")
    copy = os.path.dirname(os.path.dirname(refimpl.__file__))

    def child(ids, claims=(), modules=None):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            _child(json.dumps(ids), json.dumps(list(claims)), json.dumps(modules or {}), running=running)
        out = Outcome("m", "core", "")
        read_child(out, ids, copy, buf.getvalue(), "", False, "exit 0", None)
        with open(running) as fh:
            left = fh.read()
        return out.caught_by, out.ran, out.crashed, out.claims, out.ended, out.error, left
    before = os.environ.get(FIRST_WRONG_ENV)
    added = [cid for cid in _PLANTED_CHECKS if cid not in REGISTRY]
    for cid in added:
        REGISTRY[cid] = ("planted", "", _planted_check(_PLANTED_CHECKS[cid]), "theorem")
    try:
        h, f, w, c = "planted.holds", "planted.fails", "planted.wrong", "planted.crash"
        claims = ("planted.claim_no", "planted.claim_yes")
        cases = [
            ("a child stops at the first check that does not hold; no claims then",
             child([h, f, w], claims), ([f], [h, f], False, None, None, None, CLAIMS_RUNNING)),
            ("a wrong fact under a verdict that holds is a catch, not a crash", child([h, w, f]),
             ([w], [h, w], False, None, None, None, CLAIMS_RUNNING)),
            ("a check that raises is a crash's catch", child([h, c, f]),
             ([c], [h, c], True, None, None, None, CLAIMS_RUNNING)),
            ("nothing caught: the claims run, each recorded as reproducing or not", child([h], claims),
             ([], [h], False, {"planted.claim_no": False, "planted.claim_yes": True}, None, None, CLAIMS_RUNNING)),
        ]
        out = [(what, got == want) for what, got, want in cases]
        got = child([h, "planted.noimport", f], claims, {"planted.noimport": "planted_no_such_module"})
        out.append(("a check whose module does not import ends the child there: caught, crashed, saying so, the "
                     "running file naming it", got[:4] == (["planted.noimport"], [h, "planted.noimport"], True, None)
                     and str(got[4]).startswith("its module did not import (ModuleNotFoundError: ")
                     and got[5] is None and got[6] == "planted.noimport"))
        out.append(("the child reads verdicts only, so a check of fact groups may stop at its first wrong one",
                    os.environ.get(FIRST_WRONG_ENV) == "1"))
    finally:
        for cid in added:
            REGISTRY.pop(cid, None)
        if before is None:
            os.environ.pop(FIRST_WRONG_ENV, None)
        else:
            os.environ[FIRST_WRONG_ENV] = before
    return out


def _counting_cases(tmp):
    """fails, void_broken_catchers, catch_rates, claims_cell, the tables and the JSON on planted outcomes."""
    from refimpl.tools import mutations as M
    from refimpl.verification.registry import CheckRecord

    def rec(holds, **details):
        return CheckRecord("c", "", "", 1.0, 1.0, 1.0, holds, details)
    out = [("a check catches when it does not hold, or names a wrong fact under a verdict that holds",
            [M.fails(r) for r in (rec(True), rec(True, wrong=[]), rec(True, wrong=["a fact"]), rec(False))]
            == [False, False, True, True])]
    O = M.Outcome
    results = [O("m1", "core", "", caught_by=["k.bad"], crashed=True),
               O("m2", "core", "", caught_by=["k.good"], crashed=True),
               O("m3", "ssca", "", caught_by=["k.bad"]), None, O("m5", "ssca", ""),
               O("m7", "vfl", "", caught_by=["k.good", "k.bad"], crashed=True)]
    broken = M.void_broken_catchers(results, {("k.bad", "a.py"): "it fails", ("k.good", "a.py"): None,
                                              ("k.good", "b.py"): "it fails with b.py"},
                                    {"m1": "a.py", "m2": "a.py", "m3": "a.py", "m7": "a.py"})
    out.append(("a crash's catch by a check that fails unmutated too is void, naming why; a crash caught first by a "
                "check that holds unmutated, and a wrong answer, stay caught",
                broken == {"k.bad": "it fails"} and results[0].caught_by == [] and results[0].caught is False
                and results[0].error == "k.bad fails on the unmutated package too (it fails): no catch"
                and results[1].caught_by == ["k.good"] and results[2].caught_by == ["k.bad"]
                and results[5].caught_by == ["k.good", "k.bad"]))
    again = [O(i, "core", "", caught_by=["k.good"], crashed=True) for i in ("m8", "m9", "m10")]
    broken = M.void_broken_catchers(again, {("k.good", "a.py"): None, ("k.good", "b.py"): "it fails with b.py",
                                            ("k.good", "c.py"): "it fails with c.py"},
                                    {"m8": "b.py", "m9": "a.py", "m10": "c.py"})
    out.append(_rerun_here_case(M, O))
    out.append(("a crash's catcher is judged as it ran after the crash's own file changed: void after a file "
                "where it fails unmutated (its first reason reported), a catch after one where it holds",
                broken == {"k.good": "it fails with b.py"} and again[0].caught_by == [] == again[2].caught_by
                and "(it fails with b.py)" in again[0].error and "(it fails with c.py)" in again[2].error
                and again[1].caught_by == ["k.good"]))
    try:            # a wrong answer's catch is final: its check is not run again (this one is not registered)
        unrun = M.void_broken_catchers([O("m6", "core", "", caught_by=["k.not-registered"])], {})
    except Exception as exc:    # noqa: BLE001 - the fact is that nothing runs
        unrun = f"{type(exc).__name__}: {exc}"
    out.append(("the check that caught a wrong answer (no crash) is not run again", unrun == {}))
    out.append(("claims' cell: '-' when not run, the claims a mutation breaks, or how many still reproduce",
                [M.claims_cell(O("m", "core", "", claims=c)) for c in (None, {}, {"x": True, "y": False, "z": False},
                                                                       {"x": True, "y": True})]
                == ["-", "-", "breaks y, z", "all 2 reproduce"]))
    runs = [O("m1", "core", "eq one", caught_by=["c.a"], seconds=3.4),
            O("m2", "ssca", "eq two", error="boom", seconds=10.6, claims={"x": True, "y": False}),
            O("m3", "core", "a|b" + "e" * 60, seconds=0.2, claims={"x": True})]
    out.append(("catch rates per paper, in the order the papers first appear",
                M.catch_rates(runs) == {"core": (1, 2), "ssca": (0, 1)}))
    lines = M.format_table(runs).split("\n")
    header = ("mutation | equation" + " " * 40 + " | caught by" + " " * 8 + " | seconds | claims" + " " * 9)
    out.append(("the table: a claims column when any mutation ran the claims, each column as wide as its widest "
                "cell, the equation cut at 48 characters, seconds rounded, the rates below",
                lines[0] == header and lines[1] == "-+-".join("-" * w for w in (8, 48, 17, 7, 15))
                and lines[3].split(" | ")[2:] == ["NOT CAUGHT — boom", "11     ", "breaks y       "]
                and lines[4].split(" | ")[1] == "a|b" + "e" * 45 and lines[-2:] == ["catch rate core: 1/2 (50 %)",
                                                                                   "catch rate ssca: 0/1 (0 %)"]))
    out.append(("without claims, no claims column",
                M.format_table(runs[:1]).split("\n")[0] == "mutation | equation | caught by | seconds"))
    md = M.format_markdown(runs).split("\n")
    out.append(("the Markdown: rates per paper, then one row per mutation, '|' escaped, an uncaught one in bold",
                md[2:4] == ["| core | 2 | 1 | 50 % |", "| ssca | 1 | 0 | 0 % |"]
                and md[7:10] == ["| `m1` | eq one | `c.a` | 3 |", "| `m2` | eq two | **not caught** | 11 |",
                                 "| `m3` | a\\|b" + "e" * 60 + " | **not caught** | 0 |"]))
    thirds = [O("a", "core", "e", caught_by=["c.a"]), O("b", "core", "e", caught_by=["c.a"]), O("c", "core", "e")]
    out.append(("2 of 3 caught is 67 %, rounded to nearest, in the Markdown and the table alike",
                M.format_markdown(thirds).split("\n")[2] == "| core | 3 | 2 | 67 % |"
                and M.format_table(thirds).split("\n")[-1] == "catch rate core: 2/3 (67 %)"))
    path = pathlib.Path(tmp) / "runs.json"
    M.write_json(runs, path)
    rows = json.loads(path.read_text())
    out.append(("the JSON: one object per mutation with its fields and whether it was caught",
                [(r["id"], r["caught"], r["caught_by"], r["claims"]) for r in rows]
                == [("m1", True, ["c.a"], None), ("m2", False, [], {"x": True, "y": False}),
                    ("m3", False, [], {"x": True})]))
    return out


def _order_cases():
    """theorem_checks and check_order: the theorem-kind checks a mutation of each paper runs, written
    out from the registry (core: the model, the kernels, core, SSCA and the tools; a paper: its own
    prefixes), its expected catchers first."""
    from refimpl import papers
    from refimpl.tools.mutations import Mutation, check_order, theorem_checks
    from refimpl.tools.verify import load_checks
    reg = load_checks()
    theorem = [cid for cid, entry in reg.items() if entry[3] == "theorem"]
    core = [cid for cid in theorem if cid.startswith(("grad.", "kernels.", "core.", "ssca.", "tools."))]
    vfl = [cid for cid in theorem if cid.startswith(papers.get("vfl").mutation_prefixes)]
    return [("a mutation of core runs the theorem-kind checks of the model, the kernels, core, SSCA and the tools, "
             "in the registry's order; one of vfl those of its description's prefixes, none of SSCA or MFCGD; no claim",
             theorem_checks("core") == core and theorem_checks("vfl") == vfl and any(c.startswith("vfl.") for c in vfl)
             and not any(c.startswith(("ssca.", "mfcgd.")) for c in vfl) and "vfl.claim_adaptive" not in vfl),
            ("a mutation runs its expected catchers first, in its order, then every other theorem-kind check of its "
             "paper, each once", _order_right(check_order(Mutation("m", "core", "f", "a", "b", "", (
                 "tools.verdicts", "grad.fd"))), core))]


def _order_right(order, core):
    return (order[:2] == ["tools.verdicts", "grad.fd"] and sorted(order) == sorted(core)
            and len(order) == len(set(order)))


class _PlantedZygote:
    """A zygote the pool is given: alive until a run marks it dead; closing it is recorded."""

    def __init__(self, name):
        self.name, self.alive, self.closed = name, True, False

    def close(self):
        self.closed = True


def _rerun_here_case(M, O):
    """(what, right): a crash's first catcher with no verdict from the pool is run here, once, on
    the live tree (two planted checks registered for the case: one fails, one holds)."""
    from refimpl.verification.registry import REGISTRY

    def crash(quick):
        raise RuntimeError("planted crash")
    planted = {"fails": lambda q: {"measured": 3.0, "bound": 2.0}, "holds": lambda q: {"measured": 1.0, "bound": 2.0},
               "crashes": crash, "wrong": lambda q: {"measured": 1.0, "bound": 2.0, "holds": False,
                                                     "details": {"wrong": ["a planted fact"]}}}
    for name, fn in planted.items():
        REGISTRY[f"planted.rerun.{name}"] = ("p", "nowhere", fn, "theorem")
    try:
        rs = [O("m12", "core", "", caught_by=["planted.rerun.fails", "planted.rerun.holds"], crashed=True),
              O("m13", "core", "", caught_by=["planted.rerun.holds"], crashed=True),
              O("m14", "core", "", caught_by=["planted.rerun.crashes"], crashed=True),
              O("m15", "core", "", caught_by=["planted.rerun.wrong"], crashed=True)]
        broken = M.void_broken_catchers(rs, {}, {f"m{i}": "a.py" for i in range(12, 16)})
    finally:
        for name in planted:
            REGISTRY.pop(f"planted.rerun.{name}", None)
    return ("a crash's first catcher without the pool's verdict is run here: one failing unmutated voids the "
            "catch, one holding keeps it, whatever the catchers after the first; the reason is the check's error, "
            "else its wrong facts", broken == {"planted.rerun.fails": "it does not hold",
                                               "planted.rerun.crashes": "RuntimeError: planted crash",
                                               "planted.rerun.wrong": "['a planted fact']"}
            and rs[0].caught_by == [] and rs[1].caught_by == ["planted.rerun.holds"])


def _catalogue_callables_cases():
    """(what, right): what run_catalogue hands the pool, with recording stand-ins for the mutation's
    run, the unmutated verdict and the zygote."""
    from types import SimpleNamespace

    from refimpl.tools.mutations import PACKAGE, _mutation_env, catalogue_callables
    calls, space = [], SimpleNamespace(dir="/copy")
    stand_ins = dict(run=lambda m, **kw: calls.append(("run", m, kw)),
                     verdict=lambda *a: calls.append(("verdict",) + a),
                     zygote=lambda env, preload=None: calls.append(("zygote", env == _mutation_env(), preload)))
    run, confirm, new_zygote = catalogue_callables(9.0, None, PACKAGE, True, True, **stand_ins)
    run("m", "z0", space), confirm("k.a", "f.py", "z0", space), new_zygote(space)
    v_run, v_confirm, v_zygote = catalogue_callables(9.0, "/vectors", PACKAGE, False, False, **stand_ins)
    v_run("m", None, space), v_zygote(space)
    want = [("run", "m", dict(timeout=9.0, vectors_dir=None, zygote="z0", claims=True, package=PACKAGE,
                              workspace=space)),
            ("verdict", "k.a", "z0", space, 9.0, PACKAGE, "f.py"), ("zygote", True, "/copy"),
            ("run", "m", dict(timeout=9.0, vectors_dir="/vectors", zygote=None, claims=False, package=PACKAGE,
                              workspace=space)), ("zygote", True, None)]
    return [("run_catalogue's pool: each mutation run with the timeout, vectors, claims, package and the worker's "
             "zygote and copy; a crash's catcher confirmed on the worker's copy for the mutated file; a new zygote "
             "in the mutation environment preloading the copy (none without preloading); nothing confirmed against "
             "the vectors", calls == want and v_confirm is None)]


def _run_catalogue_cases():
    """(what, right): run_catalogue's own wiring on recording stand-ins: the workers started for the
    mutations (preloading unless REFIMPL_MUTATION_PRELOAD is 0), the pool given them, the worker
    count, the progress and each mutation's cost from the checks' quick seconds, the workers closed
    when the pool fails too, broken catchers voided for this package's run only, its results returned."""
    import os

    from refimpl.tools.mutations import PACKAGE, PRELOAD_ENV, Mutation, mutation_cost, run_catalogue
    ms = [Mutation("m1", "vfl", "refimpl/vfl/speeds.py", "a", "b", "eq", ("vfl.clock",)),
          Mutation("m2", "core", "refimpl/core/model.py", "a", "b", "eq")]

    def planted(fail=False):
        calls = []

        def pool(*a):
            calls.append(("pool", a[:3], a[6], [a[7](m) for m in ms]))
            if fail:
                raise RuntimeError("planted pool failure")
            return "results", "confirmed"
        return calls, {"_started_workers": lambda *a: calls.append(("started",) + a) or "W", "pool_mutations": pool,
                       "close_workers": lambda w: calls.append(("closed", w)),
                       "void_broken_catchers": lambda *a: calls.append(("void",) + a),
                       "check_costs": lambda quick: calls.append(("costs", quick)) or {"vfl.clock": 4.0}}
    kept = os.environ.pop(PRELOAD_ENV, None)
    try:
        calls, parts = planted()
        got = run_catalogue(ms, workers=3, progress=print, package=PACKAGE, parts=parts)
        other_calls, other = planted()
        run_catalogue(ms, workers=1, package="/elsewhere/refimpl", parts=other)
        failed_calls, failing = planted(fail=True)
        os.environ[PRELOAD_ENV] = "0"
        try:
            run_catalogue(ms, workers=2, parts=failing)
            raised = None
        except RuntimeError as exc:         # the pool's failure reaches the caller, after the workers closed
            raised = str(exc)
    finally:
        os.environ.pop(PRELOAD_ENV, None)
        if kept is not None:
            os.environ[PRELOAD_ENV] = kept
    costs = [mutation_cost(m, {"vfl.clock": 4.0}, False) for m in ms]
    return [("run_catalogue: workers started for the mutations (preloading), the pool given them with the worker "
             "count, the progress and each mutation's cost from the checks' quick seconds, the workers closed, "
             "broken catchers voided with each mutation's file, the pool's results returned",
             got == "results" and costs == [4.0, 1.0] and calls == [
                 ("started", ms, 3, PACKAGE, True), ("costs", True), ("pool", (ms, "W", 3), print, costs),
                 ("closed", "W"), ("void", "results", "confirmed", {"m1": "refimpl/vfl/speeds.py",
                                                                    "m2": "refimpl/core/model.py"})]),
            ("… another package's run voids nothing; a failing pool still closes the workers and its error reaches "
             "the caller; REFIMPL_MUTATION_PRELOAD=0 starts them without preloading",
             [c[0] for c in other_calls] == ["started", "costs", "pool", "closed"]
             and [c[0] for c in failed_calls] == ["started", "costs", "pool", "closed"]
             and raised == "planted pool failure"
             and failed_calls[0][4] is False)]


def _pool_cases():
    """pool_mutations on planted runs, one worker (its order then fixed): the longest first, a dead
    zygote replaced before its copy is used again, each crash's catcher confirmed once, the progress
    lines counted, the results in the catalogue's order; without a zygote (no fork) none is made."""
    import queue

    from refimpl.tools.mutations import Mutation, Outcome, pool_mutations
    cost = {"m0": 1.0, "m1": 5.0, "m2": 3.0, "m3": 5.0, "m4": 0.0, "m5": 2.0}
    answers = {"m0": {}, "m1": dict(caught_by=["k.x"], crashed=True), "m2": dict(caught_by=["k.y"]),
               "m3": dict(caught_by=["k.x"], crashed=True), "m4": dict(caught_by=["k.z"], crashed=True),
               "m5": dict(caught_by=["k.x"], crashed=True)}
    mutations = [Mutation(i, "core", "g" if i == "m3" else "f", "a", "b", "") for i in cost]

    def pool(zygote, confirming=True, workers=1, costed=True):
        log, lines, made = [], [], []
        workers_ = queue.Queue()
        workers_.put((zygote, "space0"))

        def run(m, z, space):
            log.append((m.id, getattr(z, "name", None), space))
            if m.id == "m2" and z is not None:
                z.alive = False                     # this mutation kills its zygote
            return Outcome(m.id, "core", "", **answers[m.id])

        def confirm(cid, file, z, space):
            log.append(("confirm", cid, file, getattr(z, "name", None)))
            return None if cid == "k.x" else "it fails"

        def new_zygote(space):
            made.append(_PlantedZygote(f"z{len(made) + 1}"))
            return made[-1]
        results, confirmed = pool_mutations(mutations, workers_, workers, run, confirm if confirming else None,
                                            new_zygote, lines.append, (lambda m: cost[m.id]) if costed else None)
        return [r.id for r in results], confirmed, log, lines, made, list(workers_.queue)
    z0 = _PlantedZygote("z0")
    ids, confirmed, log, lines, made, left = pool(z0)
    out = [("the pool runs the longest first (ties in the catalogue's order), confirms a crash's catcher once "
            "for each file it crashed on, right after its first catch there, and returns the results in the "
            "catalogue's order",
            ids == list(cost) and confirmed == {("k.x", "f"): None, ("k.x", "g"): None, ("k.z", "f"): "it fails"}
            and log == [("m1", "z0", "space0"), ("confirm", "k.x", "f", "z0"), ("m3", "z0", "space0"),
                        ("confirm", "k.x", "g", "z0"), ("m2", "z0", "space0"), ("m5", "z1", "space0"),
                        ("m0", "z1", "space0"), ("m4", "z1", "space0"), ("confirm", "k.z", "f", "z1")]),
           ("a zygote that died under a mutation is closed and replaced once; the worker's copy is kept",
            z0.closed and [z.name for z in made] == ["z1"] and not made[0].closed and left == [(made[0], "space0")]),
           ("each mutation's progress line counts the mutations done",
            lines == ["[1/6] m1: caught by k.x (0 s)", "[2/6] m3: caught by k.x (0 s)", "[3/6] m2: caught by k.y (0 s)",
                      "[4/6] m5: caught by k.x (0 s)", "[5/6] m0: NOT CAUGHT (0 s)", "[6/6] m4: caught by k.z (0 s)"])]
    import sys

    from refimpl.tools.mutations import _ZYGOTE, zygote_argv
    out.append(("a zygote is this interpreter running the fork server, given the copy it preloads, if any",
                zygote_argv() == [sys.executable, "-c", _ZYGOTE] and zygote_argv(pathlib.Path("/copy"))[3:] == ["/copy"]
                and zygote_argv("")[3:] == []))
    from refimpl.tools.mutations import PACKAGE, confirms_crashes, mutation_cost
    with tempfile.TemporaryDirectory() as tmp:
        pkg = _planted_package(tmp)
        costs = [mutation_cost(Mutation("c", "core", f, "a", "b", "", checks), {"k.a": 4.0}, compiling, pkg)
                 for f, checks, compiling in (("pkg/h.py", ("k.a",), False), ("pkg/h.py", (), False),
                                              ("pkg/kern.py", ("k.a",), True), ("pkg/h.py", ("k.a",), True),
                                              ("pkg/kern.py", ("k.b",), False), ("pkg/gone.py", ("k.a",), True))]
    out.append(("a mutation's expected cost: its first catcher's recorded seconds (1 without), 10 s more for a "
                "kernel file that recompiles", costs == [4.0, 1.0, 14.0, 4.0, 1.0, 4.0]))
    out.append(("a crash's catcher is confirmed unmutated for refimpl's own catalogue against the checks, not "
                "against the vectors, not for another package",
                [confirms_crashes(PACKAGE, None), confirms_crashes(PACKAGE, "/vectors"),
                 confirms_crashes(pathlib.Path("/elsewhere/refimpl"), None)] == [True, False, False]))
    out.append(("0 workers asked: one runs them all, in the same order",
                pool(_PlantedZygote("z0"), workers=0)[:4] == (ids, confirmed, log, lines)))
    out.append(("without costs: the mutations run in the catalogue's order",
                [e[0] for e in pool(_PlantedZygote("z0"), costed=False)[2] if e[0] != "confirm"] == list(cost)))
    ids, confirmed, log, lines, made, left = pool(None, confirming=False)
    out.append(("without a zygote (no fork) every run gets none and none is made; without confirming, no check "
                "is run unmutated", confirmed == {} and made == [] and left == [(None, "space0")]
                and [e for e in log if e[0] == "confirm"] == [] and [e[1] for e in log] == [None] * 6))
    return out


def _workspace_cases(tmp):
    """Workspace on a planted package: the copy's bytecode written, one mutation applied and the copy
    put back after it — its file, its module's bytecode, and nothing a run left at the top level."""
    import os

    from refimpl.tools.mutations import Mutation, Workspace
    root = pathlib.Path(tmp) / "ws" / "refimpl"
    for name, src in (("__init__.py", ""), ("h.py", "Y = 0\n"), ("k.py", "Z = 2\n")):
        root.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(src)
    m = Mutation("m", "core", f"{root.name}/h.py", "Y = 0", "Y = 1", "")
    paper = pathlib.Path(tmp) / "ws" / "toyplanted"            # a paper written outside the package
    (paper / "__pycache__").mkdir(parents=True)
    (paper / "__init__.py").write_text("T = 1\n")
    (paper / "__pycache__" / "stale.pyc").write_text("not copied")
    space = Workspace(root, outside={"toyplanted": paper})
    try:
        outside = (sorted(os.listdir(space.dir)), (pathlib.Path(space.dir) / "toyplanted" / "__init__.py").read_text(),
                   (pathlib.Path(space.dir) / "toyplanted" / "__pycache__" / "stale.pyc").exists())
        copy = pathlib.Path(space.dir) / "refimpl"
        cache = copy / "__pycache__"
        pycs = sorted(f.name for f in cache.glob("*.pyc"))
        before = {f.name: f.read_bytes() for f in cache.glob("h.*")}
        with space.applied(m) as where:
            inside = ((copy / "h.py").read_text(), sorted(f.name for f in cache.glob("h.*")), where == space.dir)
            (pathlib.Path(where) / ".out").write_text("left by a run")
            (cache / "h.planted.nbi").write_text("a cache file a run wrote")
        after = ((copy / "h.py").read_text(), {f.name: f.read_bytes() for f in cache.glob("h.*")},
                 sorted(os.listdir(space.dir)))
        with space.unmutated() as where:
            (pathlib.Path(where) / "left.d").mkdir()
        after_unmutated = sorted(os.listdir(space.dir))
        with space.applied(m):                  # the copy takes the next mutation as it took the first
            again = (copy / "h.py").read_text()
        again = (again, (copy / "h.py").read_text())
    finally:
        space.close()
    # a copy that cannot be made (an outside paper's directory missing) is refused and leaves no directory
    scratch = pathlib.Path(tmp) / "ws-copies"
    scratch.mkdir()
    try:
        Workspace(root, outside={"gone": pathlib.Path(tmp) / "ws" / "no-such-paper"}, root=scratch)
        refused = False
    except OSError:
        refused = True
    return [("the copy holds the package's bytecode, one file a module", len(pycs) == 3 and len(before) == 1),
            ("a copy that cannot be made is refused and its directory removed",
             refused and os.listdir(scratch) == []),
            ("inside a mutation the copy's file is mutated, its module's bytecode gone, the run in the copy",
             inside == ("Y = 1\n", [], True) and (root / "h.py").read_text() == "Y = 0\n"),
            ("a paper written outside the package is copied beside it, without its old bytecode",
             outside == (["refimpl", "toyplanted"], "T = 1\n", False)),
            ("after it the file and its module's bytecode are as before, a run's leftovers removed",
             after == ("Y = 0\n", before, ["refimpl", "toyplanted"])
             and after_unmutated == ["refimpl", "toyplanted"]),
            ("a second mutation is applied and put back as the first", again == ("Y = 1\n", "Y = 0\n")),
            ("closing removes the copy", not os.path.exists(space.dir) and not os.path.exists(space.stash))]


def _started_workers_cases(tmp):
    """_started_workers on a planted package and zygote class: one copy and one zygote per worker (at
    least one), each started without waiting and holding its copy when preloading, then waited for
    once; without fork no zygote; a mutation that does not compile closes every zygote and copy."""
    import os

    import queue

    from refimpl.tools.mutations import Mutation, _started_workers, close_workers
    root = pathlib.Path(tmp) / "sw" / "refimpl"
    root.mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "h.py").write_text("Y = 0\n")

    class Planted:
        def __init__(self, env, wait, preload):
            self.args, self.ready, self.closed = (wait, preload), 0, 0

        def wait_ready(self):
            self.ready += 1

        def close(self):
            self.closed += 1

    def started(workers, preload=True, forking=True, mutations=()):
        q = _started_workers(list(mutations), workers, root, preload, zygote=Planted, forking=forking)
        got = [q.get_nowait() for _ in range(q.qsize())]
        for _, sp in got:
            sp.close()
        return got
    two, one, bare, none = started(2), started(0), started(1, preload=False), started(2, forking=False)
    bad = Mutation("m", "core", f"{root.name}/h.py", "Y = 0", "Y = (", "")
    made = []
    try:
        _started_workers([bad], 2, root, True, zygote=lambda *a, **k: made.append(Planted(*a, **k)) or made[-1])
        raised = False
    except ValueError:
        raised = True
    q, spaces = queue.Queue(), [SimpleNamespace(closed=0), SimpleNamespace(closed=0)]
    for sp in spaces:
        sp.close = lambda sp=sp: setattr(sp, "closed", sp.closed + 1)
    zygote = Planted({}, False, None)
    q.put((zygote, spaces[0]))
    q.put((None, spaces[1]))
    close_workers(q)
    return [("one copy and one zygote a worker, started without waiting, holding its copy, waited for once",
             len(two) == 2 and all(isinstance(z, Planted) and z.args == (False, sp.dir) and z.ready == 1
                                   and z.closed == 0 for z, sp in two) and two[0][1].dir != two[1][1].dir),
            ("0 workers asked: one; not preloading: the zygote holds no copy",
             len(one) == 1 and len(bare) == 1 and bare[0][0].args == (False, None)),
            ("without fork no zygote, a copy each", [z for z, _ in none] == [None, None]),
            ("after the pool each worker's zygote (none without fork) is closed and its copy removed, once",
             q.empty() and zygote.closed == 1 and [sp.closed for sp in spaces] == [1, 1]),
            ("a mutation that does not compile: refused, each zygote closed once, each copy removed",
             raised and len(made) == 2 and all(z.closed == 1 and not os.path.exists(z.args[1]) for z in made))]


def _zygote_server_cases(tmp):
    """A real zygote running the fork server alone (no library imported ahead: 0.1 s to start) on
    planted jobs: a fork's output, an exception, an exit status, a signal, a fork over its time and
    one over its memory stopped, the copy first on sys.path and as the working directory; a zygote
    killed is gone; closing ends it."""
    import os
    import signal

    from refimpl.tools.mutations import Zygote, ZygoteGone, _mutation_env, zygote_argv
    z = Zygote(_mutation_env(), libraries=False, max_rss=2 ** 27)
    try:
        ready = (z.preload, z.alive)
        run = lambda code, timeout=30: z.run(tmp, code, timeout)

        def timed(fn):
            t0 = time.perf_counter()
            got = fn()
            return got, time.perf_counter() - t0 < 3
        cases = [("a fork server without a copy is ready, holding none", ready, (None, True)),
                 ("a fork's output and its error output, read after it exits 0",
                  run("import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)"),
                  ("to stdout\n", "to stderr\n", False, "the fork exited 0")),
                 ("the copy first on sys.path, the working directory, the code's module name",
                  run("import os, sys\nprint(sys.path[0] == os.getcwd(), os.path.samefile(os.getcwd(), "
                      f"{tmp!r}), __name__)")[0], "True True __mutation__\n"),
                 ("an exception: its traceback in the error output, the fork exits 0",
                  (lambda r: (r[1].strip().splitlines()[-1], r[2:]))(run("raise ValueError('planted')")),
                  ("ValueError: planted", (False, "the fork exited 0"))),
                 ("an exit status", run("import os\nos._exit(3)")[2:], (False, "the fork exited 3")),
                 ("a signal", run(f"import os\nos.kill(os.getpid(), {int(signal.SIGKILL)})")[2:],
                  (False, f"the fork was killed by signal {int(signal.SIGKILL)}")),
                 ("a fork over its time (0.3 s): stopped, within 3 s", timed(lambda: run("while True:\n    pass",
                                                                                      0.3)[2:]),
                  ((True, "timed out after 0.3 s"), True)),
                 ("a fork 64 MiB over its memory (128 MiB): stopped, saying so",
                  run("import time\nx = b'x' * (3 * 2 ** 26)\ntime.sleep(2)")[2:],
                  (True, "above 0.125 GiB of memory"))]
        os.kill(z.proc.pid, signal.SIGKILL)
        z.proc.wait()
        try:
            gone = run("print(1)")
        except ZygoteGone as exc:
            gone = f"ZygoteGone: {exc}"
        cases.append(("a zygote killed: gone (its pipe broken)", (gone, z.alive),
                      ("ZygoteGone: [Errno 32] Broken pipe", False)))
    finally:
        z.close()
    closed = Zygote(_mutation_env(), libraries=False)
    closed.close()
    cases.append(("closing a zygote ends it", closed.proc.poll(), 0))
    asked = Zygote(_mutation_env(), wait=False, preload="/nowhere/copy", libraries=False)    # not waited for
    asked.proc.kill()
    asked.close()
    cases.append(("a zygote asked to preload a copy is started with it, as the server alone when so asked",
                  asked.proc.args, zygote_argv("/nowhere/copy", libraries=False)))
    return [(what, got == want) for what, got, want in cases]


def _vector_child_cases(tmp):
    """The vectors' child (``--vectors``) on Flex-VFL's exported vectors: none fails on the unmutated
    adapter; one case's expected duration moved by 1 (its file's digest renewed) is named."""
    import contextlib
    import hashlib
    import io
    import os

    from refimpl.conformance import vectors as V
    from refimpl.tools.mutations import _vector_child
    where = os.path.join(tmp, "vectors")
    V.export(where, papers=["vfl"])

    def answer():
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            _vector_child(where)
        return json.loads(buf.getvalue())
    clean = answer()
    path, manifest_path = os.path.join(where, "vfl_round_time.json"), os.path.join(where, "manifest.json")
    doc, manifest = json.loads(pathlib.Path(path).read_text()), json.loads(pathlib.Path(manifest_path).read_text())
    doc["cases"][0]["expected"]["duration"] += 1.0
    pathlib.Path(path).write_text(json.dumps(doc))
    manifest["files"]["vfl_round_time.json"] = hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()
    pathlib.Path(manifest_path).write_text(json.dumps(manifest))
    moved = answer()
    return [("the vectors' child on vectors of the unmutated package: ran, none failing",
             (clean["ran"], clean["caught_by"]) == (["vectors"], [])),
            ("… with one case's expected value moved: that case named", moved["caught_by"] == ["vfl_round_time-0"])]


def _zygote_reply_cases(tmp):
    """Zygote.run on planted replies of its fork server: the job it sends, and how each reply is read."""
    import io
    import os

    from refimpl.tools.mutations import Zygote, ZygoteGone
    (pathlib.Path(tmp) / ".out").write_text("the fork's stdout")
    (pathlib.Path(tmp) / ".err").write_text("the fork's stderr")

    def planted(**attrs):               # a Zygote over a planted process: no interpreter started
        z = Zygote.__new__(Zygote)
        z.__dict__.update(attrs)
        return z

    def run(reply, stdin=None, preload=None, where=tmp):
        z = planted(preload=preload, max_rss=None, proc=SimpleNamespace(
            stdin=stdin or io.StringIO(), stdout=io.StringIO(reply), poll=lambda: 3))
        try:
            got = z.run(where, "print(1)", 5)
        except (ZygoteGone, ValueError) as exc:
            got = f"{type(exc).__name__}: {exc}"
        return got, z.proc.stdin
    said = ("the fork's stdout", "the fork's stderr")
    got, sent = run(json.dumps({"status": 0}) + "\n")
    job = json.loads(sent.getvalue())

    class Broken(io.StringIO):
        def write(self, text):
            raise BrokenPipeError("the zygote's stdin is closed")
    cases = [("the job sent: the copy, the code, the timeout, the output files in the copy, the memory cap",
              job == {"tmp": tmp, "code": "print(1)", "timeout": 5, "out": os.path.join(tmp, ".out"),
                      "err": os.path.join(tmp, ".err"), "max_rss": 4 * 2 ** 30}),
             ("a fork that exited 0: its output read", got, (*said, False, "the fork exited 0")),
             ("a fork that exited 3", run(json.dumps({"status": 3 << 8}) + "\n")[0],
              (*said, False, "the fork exited 3")),
             ("a fork killed by signal 9", run(json.dumps({"status": 9}) + "\n")[0],
              (*said, False, "the fork was killed by signal 9")),
             ("a fork stopped over memory: stopped, saying so",
              run(json.dumps({"status": None, "why": "over memory"}) + "\n")[0],
              (*said, True, "above 4 GiB of memory")),
             ("a fork stopped at its time", run(json.dumps({"status": None, "why": "timed out"}) + "\n")[0],
              (*said, True, "timed out after 5 s")),
             ("no reply: the zygote is gone, with its exit", run("")[0], "ZygoteGone: the zygote exited (3)"),
             ("a closed pipe: the zygote is gone", run("", stdin=Broken())[0],
              "ZygoteGone: the zygote's stdin is closed"),
             ("a zygote holding another copy's modules refuses", run("", preload="/elsewhere")[0],
              f"ValueError: this zygote holds the modules of /elsewhere, not of {tmp}")]

    def ready(line, asked="/copy"):
        z = planted(_asked=asked, proc=SimpleNamespace(stdout=io.StringIO(line)))
        try:
            z.wait_ready()
        except RuntimeError as exc:
            return f"RuntimeError: {exc}"
        return z.preload
    cases.append(("a zygote ready with the copy preloaded holds it; one ready bare holds none; no 'ready' line "
                  "refused", [ready("ready preloaded\n"), ready("ready bare\n"), ready(""), ready("Traceback\n")],
                  ["/copy", None] + ["RuntimeError: the mutation runner's zygote did not start"] * 2))
    polled = [planted(proc=SimpleNamespace(poll=lambda code=code: code)).alive for code in (None, 0, -9)]
    cases.append(("a zygote is alive while its process has no exit code (None), not after 0 or a signal",
                  polled, [True, False, False]))
    os.remove(os.path.join(tmp, ".err"))
    cases.append(("an output file the fork did not write reads empty", run(json.dumps({"status": 0}) + "\n")[0],
                  ("the fork's stdout", "", False, "the fork exited 0")))
    return [(what, got == want) for what, got, want in cases[1:]] + [cases[0]]


#: the planted package a fresh interpreter imports in _fallback_cases: its ``_child`` answers as the
#: file ``mode`` in the copy says
_FALLBACK_CHILD = """import json, os, sys, time
import refimpl
def _child(ids, claims, modules):
    mode = open("mode").read()
    if mode == "answer":
        print("a line before the answer")
        print(json.dumps({"package": refimpl.__file__, "ran": json.loads(ids), "caught_by": ["grad.fd"]}))
    elif mode == "silent":
        sys.stderr.write("one\\ntwo\\nthree\\n")
        sys.exit(1)
    elif mode == "hang":
        open(".running-check", "w").write("grad.fd")
        time.sleep(30)
    else:
        time.sleep(30)
"""


def _fallback_cases(tmp):
    """_run_in without a zygote, or with one that is gone: the child run in a fresh interpreter on a
    planted copy, its answer (text), its silence (stderr's last lines) or its timeout read."""
    from refimpl.tools.mutations import Mutation, Outcome, ZygoteGone, _run_in
    copy = pathlib.Path(tmp) / "fallback"
    for name, src in (("refimpl/__init__.py", ""), ("refimpl/tools/__init__.py", ""),
                      ("refimpl/tools/verify.py", ""), ("refimpl/tools/mutations.py", _FALLBACK_CHILD)):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_text(src)
    m, order = Mutation("m", "core", "refimpl/__init__.py", "", "", ""), ["tools.verdicts", "grad.fd"]

    class Gone:
        preload = None

        def run(self, *a):
            raise ZygoteGone("planted")

    def run(mode, zygote=None, timeout=20):
        (copy / "mode").write_text(mode)
        (copy / ".running-check").write_text("grad.fd")     # a stale one: removed before the child runs
        out = Outcome("m", "core", "")
        _run_in(m, str(copy), order, [], out, timeout, copy / "refimpl", None, zygote)
        return out.caught_by, out.ran, out.crashed, out.ended, out.error
    return [(what, got == want) for what, got, want in (
        ("a child in a fresh interpreter: its last line read as text", run("answer"),
         (["grad.fd"], order, False, None, None)),
        ("a zygote that is gone: the same child in a fresh interpreter", run("answer", Gone()),
         (["grad.fd"], order, False, None, None)),
        ("a silent child: the checks did not run, with its exit and stderr's last two lines", run("silent"),
         ([], [], False, None, "the checks did not run (exit 1): two three")),
        ("a child stopped at its time inside a check: that check's crash (not the stale running file's)",
         run("hang", timeout=0.5), (["grad.fd"], [], True, "stopped: timed out after 0.5 s", None)),
        ("a child stopped before its first check: the first check's crash, whatever an earlier child's running "
         "file said", run("hang before", timeout=0.2),
         (["tools.verdicts"], [], True, "stopped while the package was imported: timed out after 0.2 s", None)))]


class _AnsweringZygote:
    """A zygote whose every fork answers ``caught`` (None: prints nothing); it records each job."""
    preload = None

    def __init__(self, caught):
        self.caught, self.jobs = caught, []

    def run(self, tmp, code, timeout):
        self.jobs.append((tmp, code, timeout))
        caught = self.caught or []
        answer = {"package": tmp + "/refimpl/__init__.py", "ran": list(caught), "caught_by": caught}
        return ("" if self.caught is None else json.dumps(answer)), "", False, "the fork exited 0"


class _PlantedSpace:
    """A worker's copy: where a mutation is applied, or the copy run unmutated; it records which."""

    def __init__(self, tmp):
        self.tmp, self.used = tmp, []

    def applied(self, m):
        import contextlib
        self.used.append(("applied", m.id))
        return contextlib.nullcontext(self.tmp)

    def unmutated(self):
        import contextlib
        self.used.append(("unmutated",))
        return contextlib.nullcontext(self.tmp)


def _run_mutation_cases(tmp):
    """run_mutation and the unmutated run of a crash's catcher on a planted copy and zygote: the
    mutated copy, the checks and claims sent (a paper's claims are its claim-kind checks: the core
    has none), the time allowed, the answer read; a catcher that holds unmutated, fails there, or
    could not be run."""
    from refimpl.tools.mutations import PACKAGE, Mutation, _unmutated_verdict, check_order, run_mutation
    from refimpl.tools.verify import load_checks
    m = Mutation("m", "vfl", "refimpl/vfl/speeds.py", "a", "b", "eq", ("vfl.clock",))
    claims = [cid for cid, e in load_checks().items() if e[3] == "claim" and cid.startswith("vfl.")]
    z, space = _AnsweringZygote(["vfl.clock"]), _PlantedSpace(tmp)
    t0 = time.perf_counter()
    r = run_mutation(m, timeout=7, zygote=z, claims=True, workspace=space)
    took = time.perf_counter() - t0
    sent = z.jobs[0][1]
    z2 = _AnsweringZygote([])
    r2 = run_mutation(Mutation("c", "core", "refimpl/core/model.py", "a", "b", "eq"), zygote=z2, claims=True,
                      workspace=space)

    def unmutated(caught):
        zu = _AnsweringZygote(caught)
        said = _unmutated_verdict("tools.verdicts", zu, space, 9, PACKAGE)
        return said, [(t, c.count(json.dumps(json.dumps(["tools.verdicts"]))), s) for t, c, s in zu.jobs]

    def as_after(file, caught, preload=tmp):
        zu = _AnsweringZygote(caught)
        zu.preload = preload
        said = _unmutated_verdict("vfl.clock", zu, space, 9, PACKAGE, file)
        return said, zu.jobs[0][1]
    holds, sent_as = as_after("refimpl/vfl/speeds.py", [])
    fails_as, _ = as_after("refimpl/vfl/speeds.py", ["vfl.clock"])
    sent_plain = as_after(None, [])[1]
    sent_kernels = as_after("refimpl/vfl/kernels.py", [])[1]
    return [("a mutation runs on its copy with its time, its checks in their order and its paper's claims sent, "
             "its answer read", z.jobs[0][0] == tmp and z.jobs[0][2] == 7 and len(claims) == 3
             and json.dumps(json.dumps(check_order(m))) in sent and json.dumps(json.dumps(claims)) in sent
             and (r.id, r.paper, r.equation, r.caught_by, r.ran) == ("m", "vfl", "eq", ["vfl.clock"], ["vfl.clock"])
             and 0 < r.seconds <= took),
            ("a core mutation has no claims to send; nothing caught is read as such",
             json.dumps(json.dumps([])) in z2.jobs[0][1] and r2.caught_by == [] and r2.ran == [] and r2.error is None),
            ("a crash's catcher that holds unmutated: None, run alone on the copy unmutated",
             unmutated([]) == (None, [(tmp, 1, 9)])),
            ("… that fails there: it does not hold, naming it",
             unmutated(["tools.verdicts"])[0] == "tools.verdicts does not hold on the unmutated package"),
            ("… that could not be run: '' (the counting runs it itself)", unmutated(None)[0] == ""),
            ("a catcher confirmed as after a file's mutation: that file's dependants dropped first, its "
             "kernels run as the mutated run's were, no file changed; a failure there names the file",
             holds is None and "'refimpl.vfl.speeds'" in sent_as and "'refimpl.vfl.speeds'" not in sent_plain
             and "_njit_here" in sent_kernels and "_njit_here" not in sent_as
             and fails_as == "vfl.clock does not hold on the unmutated package with refimpl/vfl/speeds.py's "
                             "dependants re-imported"),
            ("the copy was applied for each mutation and run unmutated for each catcher",
             space.used == [("applied", "m"), ("applied", "c")] + [("unmutated",)] * 7)]


def _runner_cases():
    """Every group of planted cases, cheapest first: under the mutation runner the groups stop after
    the first with a wrong answer (``fact_groups``), so a mutation caught early skips the exported
    vectors (0.05 s in a child of a preloading zygote), the real fork server (0.5 s) and the
    planted fresh interpreters (0.8 s) of the last three groups."""
    with tempfile.TemporaryDirectory() as tmp:
        pkg = _planted_package(tmp)
        return fact_groups([
            lambda: _catalogue_cases(tmp, pkg), lambda: _graph_cases(pkg), lambda: _interpreting_cases(pkg),
            lambda: _purge_code_cases(pkg), lambda: _child_code_cases(pkg), _answer_cases, lambda: _child_cases(tmp),
            lambda: _counting_cases(tmp), _order_cases, _pool_cases, _catalogue_callables_cases, _run_catalogue_cases,
            lambda: _run_mutation_cases(tmp),
            lambda: _zygote_reply_cases(tmp), lambda: _workspace_cases(tmp), lambda: _started_workers_cases(tmp),
            lambda: _vector_child_cases(tmp), lambda: _zygote_server_cases(tmp), lambda: _fallback_cases(tmp)])


@check("tools.mutation_runner", "the mutation runner's bookkeeping on planted catalogues, packages and answers: a "
       "catalogue entry without a key, with a repeated id, an unknown paper, a claim among its checks, a missing file, "
       "a find not exactly once in its file, a replacement equal to it or one that does not compile is refused; the "
       "module graph (imports at any depth, relative ones, names in strings of a module importing by name) and what a "
       "mutation makes a child execute afresh (purged from sys.modules, packages reloaded, their checks unregistered); "
       "a mutated kernel file's functions compile with the JIT off; the zygote's fork server on planted jobs (output, "
       "exit, signal, stops at a time and a memory cap); a stopped child is its running check's crash, "
       "another package than the copy is an error; a crash caught by a check that fails unmutated is void; the rates, "
       "the table's columns and the claims cell (wrong answers: 0)",
       "refimpl verify --mutations; verification/README.md")
def mutation_runner(quick):
    return _cases_result(_runner_cases(), "planted ")
