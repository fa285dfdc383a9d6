"""Mutation testing of the verification checks (``refimpl verify --mutations``).

The catalogue (``refimpl/verification/mutations.toml``) lists one-line, paper-derived mutations:
each names the file, the exact text it replaces (which must occur exactly once), the replacement
and the equation it breaks, and the checks expected to catch it. Each worker keeps one copy of
the package (modification times kept, so Numba's on-disk cache is reused: it is filled first,
``engine.ensure_kernel_cache``; its bytecode compiled once); for every mutation the runner
applies the replacement to that copy, runs, in an interpreter forked from the worker's zygote (one
that has imported NumPy, SciPy, Numba, cvxpy and the copy's unmutated checks, kernels loaded), the
theorem-kind checks of the mutation's paper in quick mode — the expected catchers first, then the
others until one fails — and puts the file and its bytecode back. The fork first executes afresh
the mutated module and every module that names it, to a fixed point (``reloaded_with``): the
modules it keeps cannot have run the mutated line. The
mutated file's Numba kernels run as the Python they are written in (``KERNELS_ENV``). A mutation
is *caught* when a theorem-kind check does not hold (a check that crashes on the mutated code
counts: the runner reports it as failing); claim checks and tests never count.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

#: check-id prefixes a mutation of the core is tested against (model and kernels, which the
#: SSCA checks exercise most); a paper's own prefixes come from its description
CORE_PREFIXES = ("grad.", "kernels.", "core.", "ssca.", "tools.")


def paper_names():
    """``core`` and every registered paper's key: what a catalogue entry's ``paper`` may be."""
    from refimpl import papers
    return ("core",) + papers.keys()


def __getattr__(name):          # PAPERS, computed from the registry when asked
    if name == "PAPERS":
        return paper_names()
    raise AttributeError(name)
CATALOGUE = Path(__file__).resolve().parent.parent / "verification" / "mutations.toml"
PACKAGE = Path(__file__).resolve().parent.parent
#: a mutation's run is stopped after this many seconds (the slowest entry takes about 20 s running
#: every check of its paper) or above this much resident memory (a run takes about 0.3 GiB): a
#: mutation that makes a check loop, or grow without end, is then caught by the check that was
#: running (:data:`RUNNING_FILE`), as one that makes it crash is
TIMEOUT = 300
MAX_RSS_BYTES = 4 * 2 ** 30
RUNNING_FILE = ".running-check"
CLAIMS_RUNNING = "(the claims)"


@dataclass(frozen=True)
class Mutation:
    id: str
    paper: str
    file: str
    find: str
    replace: str
    equation: str
    checks: tuple = ()


@dataclass
class Outcome:
    id: str
    paper: str
    equation: str
    caught_by: list = field(default_factory=list)
    ran: list = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None
    claims: dict | None = None      # with claims: claim id → reproduces (run when no theorem check caught it)
    crashed: bool = False           # the catching check ended in an error, not in a verdict
    ended: str | None = None        # a catch by a check that never gave a verdict: how it ended

    @property
    def caught(self):
        return bool(self.caught_by)


def outside_packages(package=PACKAGE):
    """{top-level package: its directory} of the registered papers written outside refimpl (a
    mutation of one is applied to a copy of that package, which the mutated run imports)."""
    import importlib

    from refimpl import papers
    out = {}
    for p in papers.papers():
        top = type(p).__module__.split(".")[0]
        if top != package.name and top not in out:
            out[top] = Path(importlib.import_module(top).__file__).resolve().parent
    return out


def source_file(file, package=PACKAGE):
    """The file a catalogue entry names: ``refimpl/…`` from the repository root, ``<package>/…``
    of a paper written outside refimpl from that package's parent directory."""
    first = Path(file).parts[0] if file else ""
    outside = outside_packages(package)
    if first in outside:
        return outside[first].parent / file
    return package.parent / file


def theorem_checks(paper):
    """Theorem-kind check ids a mutation of ``paper`` is tested against (core: model and kernels,
    which every paper's checks exercise)."""
    from refimpl.tools.verify import load_checks
    reg = load_checks()
    from refimpl import papers
    prefixes = CORE_PREFIXES if paper == "core" else papers.get(paper).mutation_prefixes
    return [cid for cid, (_, _, _, kind) in reg.items() if kind == "theorem" and cid.startswith(prefixes)]


#: hashes of mutated sources that compiled, in this process (a compile is most of a catalogue's load:
#: 3 s for 775 entries; the tests load it several times in one process)
_COMPILED = set()


def _compiles(text, file):
    """Raises SyntaxError unless ``text`` compiles; each distinct text is compiled once a process."""
    import hashlib
    key = (file, hashlib.sha256(text.encode()).hexdigest())
    if key not in _COMPILED:
        compile(text, file, "exec")
        _COMPILED.add(key)


def compile_mutated(mutations, package=PACKAGE, where=None):
    """Raises ValueError for the first of ``mutations`` whose mutated file does not compile."""
    for m in mutations:
        try:
            _compiles(source_file(m.file, package).read_text().replace(m.find, m.replace), m.file)
        except SyntaxError as exc:
            raise ValueError(f"{where or 'mutation'} {m.id}: the mutated {m.file} does not compile "
                             f"({exc.msg}, line {exc.lineno})") from None


def load_catalogue(path=CATALOGUE, package=PACKAGE, only=None, compiled=True):
    """Read and validate the catalogue: unique ids, known papers and check ids, each ``find`` text
    present exactly once in its file, and the mutated file still compiles. ``only``: the ids to
    read (the others are not validated against the source: an edit to a line another entry
    mutates does not stop these); an id not in the catalogue is an error. ``compiled=False``
    leaves the compiling to the caller (:func:`run_catalogue` does it while its workers start)."""
    from refimpl.tools.verify import load_checks
    reg = load_checks()
    from refimpl.tools.sweep import read_document
    doc = read_document(path)
    out, seen = [], set()
    for i, entry in enumerate(doc.get("mutation", [])):
        where = f"{path}: mutation #{i + 1} ({entry.get('id', '?')})"
        missing = [k for k in ("id", "paper", "file", "find", "replace", "equation") if k not in entry]
        if missing:
            raise ValueError(f"{where}: missing keys {missing}")
        m = Mutation(entry["id"], entry["paper"], entry["file"], entry["find"], entry["replace"], entry["equation"],
                     tuple(entry.get("checks", ())))
        if m.id in seen:
            raise ValueError(f"{where}: id repeated")
        seen.add(m.id)
        if only is not None and m.id not in only:
            continue
        if m.paper not in paper_names():
            raise ValueError(f"{where}: paper must be one of {paper_names()}, got {m.paper!r}")
        bad = [c for c in m.checks if c not in reg or reg[c][3] != "theorem"]
        if bad:
            raise ValueError(f"{where}: {bad} are not theorem-kind check ids")
        src_path = source_file(m.file, package)
        if not src_path.is_file():
            raise ValueError(f"{where}: no file {m.file}")
        src = src_path.read_text()
        count = src.count(m.find)
        if count != 1:
            raise ValueError(f"{where}: the text to replace occurs {count} times in {m.file} (must be once): {m.find!r}")
        if m.find == m.replace:
            raise ValueError(f"{where}: replacement equals the original")
        if compiled:
            compile_mutated([m], package, where=f"{path}: mutation #{i + 1}")
        out.append(m)
    unknown = sorted(set(only or ()) - seen)
    if unknown:
        raise ValueError(f"{path}: no mutation {unknown}")
    return out


def fails(rec):
    """Whether a check's record catches a mutation: its verdict does not hold, or it names a wrong
    fact (``details["wrong"]``) under a verdict that says it holds."""
    return not rec.holds or bool(rec.details.get("wrong"))


def check_modules(ids):
    """{check id: the module whose import registers it (where its function is defined)}."""
    from refimpl.tools.verify import load_checks
    reg = load_checks()
    return {cid: reg[cid][2].__module__ for cid in ids}


def _child(ids_json, claims_json="[]", modules_json="{}", running=RUNNING_FILE):
    """Entry point of the interpreter running on the mutated copy: runs the checks in order, stops
    at the first theorem-kind check that does not hold or names a wrong fact (``details["wrong"]``,
    read beside the verdict because the verdict machinery can be the mutated file); when none
    does, runs the claim checks of ``claims_json`` (the experiments a mutation may break without
    breaking a theorem) and records whether each still reproduces; prints one JSON line. Only
    verdicts (and named wrong facts) are read, so a check made of fact groups stops at its first
    group with a wrong fact (``registry.fact_groups``: the same verdict, sooner). ``modules_json``
    maps a check id to the module registering it: only the modules of the checks that run are imported (all of them for
    an id it does not map, or one its module does not register). A check whose module does not
    import on the mutated copy (an exception other than a SyntaxError) ends there, caught and
    crashed; the check running is kept in ``running`` (:data:`RUNNING_FILE`), so that a run the runner stops
    (its time or memory) is that check's crash too."""
    import importlib

    import refimpl
    from refimpl.tools.verify import REGISTRY, load_checks, run_check
    from refimpl.verification.registry import FIRST_WRONG_ENV
    os.environ[FIRST_WRONG_ENV] = "1"       # only verdicts are read here: a check may stop at its first wrong group
    modules = json.loads(modules_json)

    def run(cid):
        if cid in modules:
            importlib.import_module(modules[cid])
        if cid not in REGISTRY:
            load_checks()
        return run_check(cid, quick=True)
    ids = json.loads(ids_json)
    ran, caught, crashed = [], [], False
    for cid in ids:
        with open(running, "w") as fh:          # read by the runner when this process is stopped
            fh.write(cid)
        try:
            rec = run(cid)
        except SyntaxError:                     # not a runnable copy (the catalogue refuses such entries)
            raise
        except Exception as exc:                # the check's module does not import: the check crashes
            print(json.dumps({"package": refimpl.__file__, "ran": ran + [cid], "caught_by": [cid], "claims": None,
                              "crashed": True, "ended": f"its module did not import ({type(exc).__name__}: "
                                                        f"{str(exc)[:160]})"}))
            return
        ran.append(cid)
        crashed = bool(rec.details.get("error"))
        # a wrong fact the check names counts as well: the verdict machinery may be the mutated file
        # (a verdict that says "holds" over a named wrong answer is itself the bug)
        if fails(rec):
            caught.append(cid)
            break
    claims = None
    with open(running, "w") as fh:              # a claim that never ends is no theorem-kind catch
        fh.write(CLAIMS_RUNNING)
    if not caught and json.loads(claims_json):
        claims = {cid: bool(run(cid).holds) for cid in json.loads(claims_json)}
    print(json.dumps({"package": refimpl.__file__, "ran": ran, "caught_by": caught, "claims": claims,
                      "crashed": bool(caught) and crashed}))


def _vector_child(vectors_dir):
    """Entry point on the mutated copy for the conformance vectors: every vector of ``vectors_dir``
    (exported from the unmutated package) against the copy's own adapter; one JSON line."""
    import refimpl
    from refimpl.conformance import adapter
    from refimpl.conformance.harness import run_case
    from refimpl.conformance.vectors import load
    failed = []
    for fam, doc in load(vectors_dir).items():
        for case in doc["cases"]:
            try:
                outcome, _ = run_case(adapter, fam, case)
            except Exception:                   # a crash on the mutated code counts as a failing vector
                outcome = "fail"
            if outcome == "fail":
                failed.append(case["id"])
    print(json.dumps({"package": refimpl.__file__, "ran": ["vectors"], "caught_by": failed[:3]}))


def module_name(file):
    """The module a source file of the copy defines: ``refimpl/ssca/algorithms.py`` → ``refimpl.ssca.algorithms``,
    a package's ``__init__.py`` → the package."""
    parts = list(Path(file).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_references(tops):
    """{module: the modules of ``tops`` ({top-level package: its directory}) its source names} for
    every ``.py`` file of them: its ``import`` and ``from … import`` statements at any depth
    (relative ones resolved; ``from P import sub`` names the submodule ``P.sub`` where there is
    one, else ``P``). A module that imports by name while it is imported (``import_module`` or
    ``__import__`` outside a function) also names every dotted name of a top in its strings other
    than docstrings. Imports by name inside functions run in the child, through ``sys.modules``,
    so they see the modules the child executes afresh. An over-approximation on purpose: a module
    named here that is not imported costs a re-execution, a reference missed would let a child
    run stale code."""
    import ast
    import re
    files = {module_name(path.relative_to(Path(where).parent)): path for where in tops.values()
             for path in Path(where).rglob("*.py") if "__pycache__" not in path.parts}
    names = set(files)
    dotted = re.compile(r"(?<![\w.])((?:%s)(?:\.\w+)+)" % "|".join(re.escape(t) for t in tops))
    graph = {}
    for name, path in files.items():
        pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        refs = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                refs |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")[:len(pkg.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                refs |= {f"{base}.{a.name}" if f"{base}.{a.name}" in names else base for a in node.names}
        if _imports_by_name_when_imported(tree):
            bare = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in bare:
                    refs |= {n for m in dotted.findall(node.value) for n in names
                             if n == m.rstrip(".") or n.startswith(m.rstrip(".") + ".")}
        graph[name] = (refs & names) - {name}
    return graph


def _imports_by_name_when_imported(tree):
    """Whether a module's own execution calls ``import_module`` or ``__import__`` (a call outside
    every function body: at the top level or in a class body)."""
    import ast
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Call):
            f = node.func
            if (getattr(f, "attr", None) or getattr(f, "id", None)) in ("import_module", "__import__"):
                return True
        stack.extend(ast.iter_child_nodes(node))
    return False


#: "0": the zygotes import no refimpl module (each child imports every module it runs afresh)
PRELOAD_ENV = "REFIMPL_MUTATION_PRELOAD"


_GRAPHS = {}       # package directory -> module_references, read once per process


def package_graph(package=PACKAGE):
    """:func:`module_references` of refimpl and of the papers written outside it, read from their
    sources once per process (a second for refimpl's hundred modules)."""
    key = str(Path(package).resolve())
    if key not in _GRAPHS:
        _GRAPHS[key] = module_references({package.name: package, **outside_packages(package)})
    return _GRAPHS[key]


def _purging(drop, graph, registry="refimpl.verification.registry"):
    """Code run first in a child of a preloading zygote (after :func:`_interpreting`'s): the
    modules of ``drop`` (:func:`reloaded_with`) leave ``sys.modules`` and their parents'
    attributes, so that the child's imports execute them afresh from the mutated copy; a package
    among them is executed again in place (its submodules that are kept stay its attributes);
    the checks they registered leave the registry (they register again on import). Nothing of
    refimpl is imported here: the registry is read from ``sys.modules`` where the zygote put it."""
    if not drop:
        return ""
    pkgs = sorted((n for n in drop if any(m.startswith(n + ".") for m in graph)), key=lambda n: n.count("."))
    mods = sorted(set(drop) - set(pkgs))
    return ("import sys as _s, importlib as _il\n"
            f"_mods, _pkgs, _reg = {mods!r}, {pkgs!r}, _s.modules.get({registry!r})\n"
            f"if _reg is not None and {registry!r} not in _mods:\n"
            "    for _c in [c for c, e in _reg.REGISTRY.items() if e[2].__module__ in set(_mods) | set(_pkgs)]:\n"
            "        del _reg.REGISTRY[_c]\n"
            "        _reg.GROUPS.pop(_c, None)\n"
            "for _n in _mods:\n"
            "    if _s.modules.pop(_n, None) is not None:\n"
            "        _p, _, _a = _n.rpartition('.')\n"
            "        if _p in _s.modules and _a in vars(_s.modules[_p]):\n"
            "            delattr(_s.modules[_p], _a)\n"
            "for _n in _pkgs:\n"
            "    if _n in _s.modules:\n"
            "        _il.reload(_s.modules[_n])\n")


def reloaded_with(graph, module):
    """The modules a child must execute afresh when ``module`` is mutated: the module and every
    module naming one of them (:func:`module_references`), to a fixed point. The rest, imported
    unmutated by the zygote, cannot have run the mutated code."""
    drop, grew = {module}, True
    while grew:
        more = {n for n, refs in graph.items() if refs & drop}
        grew = not more <= drop
        drop |= more
    return drop


#: the zygote: an interpreter that imports the heavy libraries once, then forks one child per
#: mutation; the child puts the mutated copy first on sys.path and imports refimpl from it. Saves
#: each mutation the libraries' import (about a second; matplotlib's, 0.5 s, where installed).
#: Given its worker's copy (``preload``), it also imports that copy's checks unmutated and loads
#: its Numba kernels from the on-disk cache; a child then executes afresh only what the mutation
#: reaches (``_purging``). It also compiles one throw-away Numba function (not cached,
#: not refimpl's) touching what refimpl's kernels use: Numba's CPU target and its NumPy, math and
#: random registries are then set up once here instead of in every child on its first cached
#: kernel (0.15–0.4 s a mutation, measured). The script is the libraries' warm-up
#: (``_ZYGOTE_LIBRARIES``) then the fork server (``_ZYGOTE_SERVER``); tools.mutation_runner runs
#: the server alone, on planted jobs.
_ZYGOTE_LIBRARIES = r"""
import math
import numpy, scipy.linalg, scipy.optimize, scipy.stats, numba, cvxpy
try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot
except ImportError:          # no plot extra: the children run without matplotlib as well
    matplotlib = None
np = numpy


@numba.njit
def _warm(x, a, M):
    numpy.random.seed(1)
    b, z, f, r = np.empty(3), np.zeros((2, 3)), np.full(3, 2.0), np.arange(3)
    c = np.ascontiguousarray(M.T)
    s = 0.0
    for i in range(a.size):
        s += math.sqrt(a[i]) + math.log(a[i]) + np.random.standard_normal()
    return (math.exp(x) + np.sum(np.exp(a)) + np.dot(a, a) + np.dot(M, M.T)[0, 0] + np.dot(c, a[:2])[0] + s
            + b.size + z.size + f[0] + r[0] + np.sqrt(a)[0])


_warm(1.0, np.ones(3), np.ones((2, 3)))
"""
_ZYGOTE_SERVER = r"""
import json, os, select, sys, time, traceback


def _resident_bytes(pid):      # the fork's resident memory (Linux's /proc); 0 where unreadable (no watch)
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


preload = sys.argv[1] if len(sys.argv) > 1 else ""
if preload:                  # the worker's unmutated copy: its checks' modules, imported once here
    sys.path.insert(0, preload)
    try:
        from refimpl.tools.verify import load_checks
        load_checks()
        import refimpl.tools.mutations
        from refimpl import papers
        papers.warm_kernels()    # from the copy's on-disk cache: a child whose kernels' modules are kept calls them ready
        papers.forget()          # the one cache load_checks fills: each child reads the descriptions anew
    except BaseException:    # the copy does not import: the children import it themselves
        traceback.print_exc()
        for name in [n for n in sys.modules if n == "refimpl" or n.startswith("refimpl.")]:
            del sys.modules[name]
        preload = ""
    del sys.path[0]
import gc
gc.collect()
gc.freeze()
print("ready " + ("preloaded" if preload else "bare"), flush=True)
runner = os.getppid()
for line in sys.stdin:
    job = json.loads(line)
    pid = os.fork()
    if pid == 0:
        try:
            out = os.open(job["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            err = os.open(job["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(out, 1)
            os.dup2(err, 2)
            os.chdir(job["tmp"])
            sys.path.insert(0, job["tmp"])
            exec(job["code"], {"__name__": "__mutation__"})
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
    deadline, status, why = time.monotonic() + job["timeout"], None, None
    try:                     # woken the moment the fork ends (Linux; its time and memory looked at every
                             # 0.1 s meanwhile), else polled every 10 ms
        ended = os.pidfd_open(pid)
    except (AttributeError, OSError):
        ended = None
    while True:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
            break
        over = _resident_bytes(pid) > job["max_rss"]
        if time.monotonic() > deadline or os.getppid() != runner or over:   # timeout, runner gone, memory
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            why = "over memory" if over else "timed out"
            break
        if ended is None:
            time.sleep(0.01)
        else:
            select.select([ended], [], [], 0.1)
    if ended is not None:
        os.close(ended)
    print(json.dumps({"status": status, "why": why}), flush=True)
"""
_ZYGOTE = _ZYGOTE_LIBRARIES + _ZYGOTE_SERVER


class ZygoteGone(RuntimeError):
    """The zygote process died (killed, out of memory): the runner falls back to a fresh interpreter."""


def zygote_argv(preload=None, libraries=True):
    """The command that starts a zygote: this interpreter running ``_ZYGOTE``, given the copy whose
    unmutated modules it is to hold (``preload``), if any; ``libraries=False``: the fork server
    alone (``_ZYGOTE_SERVER``: nothing imported ahead, for tools.mutation_runner's planted jobs)."""
    return [sys.executable, "-c", _ZYGOTE if libraries else _ZYGOTE_SERVER] + ([str(preload)] if preload else [])


class Zygote:
    """One forking interpreter (see ``_ZYGOTE``); :meth:`run` executes code on a mutated copy.
    ``libraries`` and ``max_rss`` (a fork's memory cap; default :data:`MAX_RSS_BYTES`): for
    tools.mutation_runner's server-only zygote."""

    def __init__(self, env, wait=True, preload=None, libraries=True, max_rss=None):
        env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
        self.preload = None                     # the copy whose unmutated modules it holds, once ready
        self._asked, self.max_rss = preload, max_rss
        self.proc = subprocess.Popen(zygote_argv(preload, libraries), env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        if wait:
            self.wait_ready()

    def wait_ready(self):
        """Block until the zygote has imported its libraries (``wait=False`` starts several at once),
        and, where it was given a copy (``preload``), that copy's checks."""
        line = self.proc.stdout.readline().split()
        if not line or line[0] != "ready":
            raise RuntimeError("the mutation runner's zygote did not start")
        self.preload = self._asked if line[1:] == ["preloaded"] else None

    @property
    def alive(self):
        return self.proc.poll() is None

    def run(self, tmp, code, timeout):
        """(stdout, stderr, timed_out, how the fork ended) of ``code`` run in a fork with ``tmp``
        first on sys.path; :class:`ZygoteGone` when the zygote itself has died."""
        if self.preload is not None and os.path.realpath(tmp) != os.path.realpath(self.preload):
            raise ValueError(f"this zygote holds the modules of {self.preload}, not of {tmp}")
        out, err = os.path.join(tmp, ".out"), os.path.join(tmp, ".err")
        max_rss = MAX_RSS_BYTES if self.max_rss is None else self.max_rss
        try:
            self.proc.stdin.write(json.dumps({"tmp": tmp, "code": code, "timeout": timeout, "out": out, "err": err,
                                              "max_rss": max_rss}) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except (BrokenPipeError, OSError) as exc:
            raise ZygoteGone(str(exc))
        if not line:
            raise ZygoteGone(f"the zygote exited ({self.proc.poll()})")
        reply = json.loads(line)
        status = reply["status"]
        read = (lambda p: Path(p).read_text() if os.path.exists(p) else "")
        if status is None:
            how = (f"above {max_rss / 2 ** 30:g} GiB of memory" if reply.get("why") == "over memory"
                   else f"timed out after {timeout:g} s")
        elif os.WIFSIGNALED(status):
            how = f"the fork was killed by signal {os.WTERMSIG(status)}"
        else:
            how = f"the fork exited {os.WEXITSTATUS(status)}"
        return read(out), read(err), status is None, how

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
        finally:
            self.proc.stdout.close()


def _mutation_env():
    # NUMBA_OPT=0: the mutated file's kernels compile about a third faster (the unmutated files'
    # kernels load from the copied on-disk cache as compiled); the checks' verdicts do not
    # depend on LLVM's optimisation level (the whole catalogue is caught either way: tested)
    return dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
                NUMBA_OPT=os.environ.get("REFIMPL_MUTATION_NUMBA_OPT", "0"))


#: how a mutated file's Numba kernels run: "interpret" (default) runs that one file's kernels as
#: the Python functions they are written as, every other file's from the on-disk cache as compiled;
#: "compile" recompiles the mutated file's kernels (5-7 s a mutation, the slowest share of the
#: catalogue). The source run is the same either way: when this mode came in, each of the
#: catalogue's 22 kernel entries was caught by the same check both ways (measured); the tests run
#: two entries both ways (tests/test_mutations.py).
KERNELS_ENV = "REFIMPL_MUTATION_KERNELS"


def _interpreting(m, package=PACKAGE, mode=None):
    """Code that makes ``numba.njit`` return the plain Python function (Numba's own DISABLE_JIT
    wrapper) for the functions of ``m``'s file, when that file holds Numba kernels and the mode
    is "interpret"; run before the child imports refimpl. Empty otherwise."""
    mode = os.environ.get(KERNELS_ENV, "interpret") if mode is None else mode
    if mode not in ("interpret", "compile"):
        raise ValueError(f"{KERNELS_ENV} must be 'interpret' or 'compile', got {mode!r}")
    try:
        src = source_file(m.file, package).read_text()
    except OSError:
        return ""
    if mode == "compile" or "@njit" not in src or "@intrinsic" in src or not m.file.endswith(".py"):
        return ""
    module = m.file[:-3].replace("/", ".")
    return ("import numba, numba.core.config as _cfg\n"
            "_njit = numba.njit\n"
            "def _njit_here(*a, **kw):\n"
            "    bare = bool(a) and callable(a[0])\n"
            "    def wrap(fn):\n"
            f"        _cfg.DISABLE_JIT = fn.__module__ == {module!r}\n"
            "        try:\n"
            "            return _njit(*(() if bare else a), **kw)(fn)\n"
            "        finally:\n"
            "            _cfg.DISABLE_JIT = False\n"
            "    return wrap(a[0]) if bare else wrap\n"
            "numba.njit = _njit_here\n")


def claim_checks(paper):
    """Claim-kind check ids of ``paper`` (by its check-id prefixes; the core's: none of its own)."""
    from refimpl.tools.verify import load_checks
    from refimpl import papers
    if paper == "core":
        return []
    prefixes = papers.get(paper).mutation_prefixes[:1]
    return [cid for cid, (_, _, _, kind) in load_checks().items() if kind == "claim" and cid.startswith(prefixes)]


def check_order(m):
    """The theorem-kind checks a mutation runs, in order: its expected catchers first, then its
    paper's other theorem-kind checks, each once (the child stops at the first catch)."""
    return list(m.checks) + [c for c in theorem_checks(m.paper) if c not in m.checks]


def run_mutation(m: Mutation, timeout=TIMEOUT, package=PACKAGE, vectors_dir=None, zygote=None, claims=False,
                 workspace=None):
    order = check_order(m)
    claim_ids = claim_checks(m.paper) if claims else []
    t0 = time.perf_counter()
    out = Outcome(m.id, m.paper, m.equation)
    own = workspace is None
    workspace = Workspace(package) if own else workspace
    try:
        with workspace.applied(m) as tmp:
            _run_in(m, tmp, order, claim_ids, out, timeout, package, vectors_dir, zygote)
    finally:
        if own:
            workspace.close()
    out.seconds = time.perf_counter() - t0
    return out


class Workspace:
    """A copy of the package (and of each paper written outside it) that mutations are applied to
    one at a time: modification times kept, so Numba's on-disk cache is reused, and the copy's
    bytecode written once (the untouched modules then load compiled in every child, even where
    ``PYTHONDONTWRITEBYTECODE`` keeps Python from writing it: 0.06 s a mutation, measured).
    :meth:`applied` writes one mutation and, after the run, puts back the file and its directory's
    ``__pycache__`` as they were before it, and removes whatever the run left at the top level.
    ``outside``: {top-level package: directory} of those papers (default: the registered ones);
    ``root``: the directory the copy is made in (default: the system's temporary directory)."""

    def __init__(self, package=PACKAGE, outside=None, root=None):
        self.package = package
        if Path(package) == PACKAGE:
            from refimpl.tools.engine import ensure_kernel_cache
            ensure_kernel_cache()               # the copy then takes a full cache
        self.dir = tempfile.mkdtemp(prefix="refimpl-mut-", dir=root)
        try:
            self._copy(package, outside)
        except BaseException:                   # a copy that could not be made is not left behind
            shutil.rmtree(self.dir, ignore_errors=True)
            raise
        self.stash = self.dir + "-pycache"      # the mutated file's __pycache__ during a run

    def _copy(self, package, outside):
        """The package and each outside paper copied into the copy's directory, its bytecode written."""
        import compileall
        import py_compile
        shutil.copytree(package, Path(self.dir) / package.name, copy_function=shutil.copy2)
        outside = outside_packages(package) if outside is None else outside
        for top, where in outside.items():                          # papers written outside refimpl
            shutil.copytree(where, Path(self.dir) / top, copy_function=shutil.copy2,
                            ignore=shutil.ignore_patterns("__pycache__"))
        self.tops = set(os.listdir(self.dir))
        compileall.compile_dir(self.dir, quiet=2, invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)

    @contextlib.contextmanager
    def unmutated(self):
        """The copy as it is, for a run of the unmutated package; afterwards whatever the run left at the
        top level is removed."""
        try:
            yield self.dir
        finally:
            for name in set(os.listdir(self.dir)) - self.tops:
                path = Path(self.dir) / name
                shutil.rmtree(path) if path.is_dir() else path.unlink()

    @contextlib.contextmanager
    def applied(self, m):
        target = Path(self.dir) / m.file
        pristine = source_file(m.file, self.package)
        cache = target.parent / "__pycache__"
        own = f"{target.stem}."                 # the module's bytecode and Numba cache files (a run writes only these:
        os.makedirs(self.stash, exist_ok=True)  # every other module's are valid copies, kept as they are)
        for f in (cache.glob(own + "*") if cache.is_dir() else ()):
            shutil.copy2(f, self.stash)
        try:
            target.write_text(target.read_text().replace(m.find, m.replace))
            for pyc in cache.glob(f"{target.stem}.*.pyc"):     # never the unmutated bytecode: a mutation
                pyc.unlink()                                    # of equal size in the same second would load it
            with self.unmutated() as where:                     # (its top-level leftovers removed after)
                yield where
        finally:
            shutil.copy2(pristine, target)
            for f in (cache.glob(own + "*") if cache.is_dir() else ()):
                f.unlink()
            for f in os.listdir(self.stash):
                os.replace(os.path.join(self.stash, f), cache / f)

    def close(self):
        shutil.rmtree(self.stash, ignore_errors=True)
        shutil.rmtree(self.dir, ignore_errors=True)


def fallback_argv(code, every=0.5):
    """The command of a mutation run in a fresh interpreter (where no zygote can fork one): ``code``
    after a daemon thread that ends the interpreter once this process, its parent, is gone — a
    mutated copy may loop for ever, and a runner killed from outside must not leave it running.
    The thread is written out here, importing nothing of refimpl (the copy may be the mutated one)."""
    watch = ("import os as _os, threading as _th, time as _t\n"
             f"def _watch(parent={os.getpid()}):\n"
             "    while True:\n"
             f"        _t.sleep({every})\n"
             "        if _os.getppid() != parent:\n"
             "            _os._exit(1)\n"
             "_th.Thread(target=_watch, daemon=True).start()\n")
    return [sys.executable, "-c", watch + code]


def purge_code(m, zygote, package=PACKAGE, changed=None):
    """What a child of ``zygote`` runs first so that it executes ``m``'s mutated module afresh: the
    :func:`_purging` of :func:`reloaded_with` that module, where the zygote preloaded the package
    (nothing where it did not). ``changed``: whether the file counts as mutated (default: ``m``'s
    find differs from its replace; the unmutated run of a crash's catcher passes True to purge as
    the mutation it confirms did, with no file changed)."""
    if zygote is None or zygote.preload is None:
        return ""
    graph = package_graph(package)
    changed = m.find != m.replace if changed is None else changed
    return _purging(reloaded_with(graph, module_name(m.file)) if changed else set(), graph)


def child_code(m, order, claim_ids, purge, package=PACKAGE, vectors_dir=None):
    """The code a child runs on the mutated copy: ``purge`` (:func:`purge_code`) first, then
    :func:`_child` on the checks ``order`` and the claims ``claim_ids`` (each with the module that
    registers it), after :func:`_interpreting`'s switch; or :func:`_vector_child` on
    ``vectors_dir``. A package that does not import there prints its error as the answer."""
    if vectors_dir is not None:
        return (purge + "from refimpl.tools.mutations import _vector_child; "
                f"_vector_child({json.dumps(str(vectors_dir))})")
    modules = check_modules(order + claim_ids)
    # the package itself may not import on the mutated copy (a module raising as it runs): that is
    # the first check's crash (refimpl verify could not start), told apart from a SyntaxError
    importing = "".join("    " + ln + "\n" for ln in (purge + "from refimpl.tools.mutations import _child\n"
                                                         "import refimpl.tools.verify\n").splitlines())
    return (_interpreting(m, package) + "try:\n" + importing + "except SyntaxError:\n    raise\n"
            "except Exception as _exc:\n    import json as _json\n"
            "    print(_json.dumps({'package_error': f'{type(_exc).__name__}: {_exc}'[:200]}))\n    raise SystemExit(0)\n"
            f"_child({json.dumps(json.dumps(order))}, {json.dumps(json.dumps(claim_ids))}, "
            f"{json.dumps(json.dumps(modules))})")


def progress_text(r, done, total):
    """The runner's line as the ``done``-th of ``total`` mutations ends: its catcher (and how a
    crashed one ended), or NOT CAUGHT (and why none could)."""
    said = ("caught by " + ", ".join(r.caught_by) + (f" ({r.ended})" if r.ended else "") if r.caught
            else "NOT CAUGHT" + (f" ({r.error})" if r.error else ""))
    return f"[{done}/{total}] {r.id}: {said} ({r.seconds:.0f} s)"


def _run_in(m, tmp, order, claim_ids, out, timeout, package, vectors_dir, zygote, changed=None):
    """Run ``m``'s checks (or the vectors) on the mutated copy ``tmp``; fills ``out``. ``changed``:
    as :func:`purge_code`'s."""
    code = child_code(m, order, claim_ids, purge_code(m, zygote, package, changed), package, vectors_dir)
    running = os.path.join(tmp, RUNNING_FILE)
    if os.path.exists(running):
        os.remove(running)
    if zygote is not None:
        try:
            stdout, stderr, timed_out, exit_note = zygote.run(tmp, code, timeout)
        except ZygoteGone:
            zygote = None                   # this mutation in a fresh interpreter instead
    if zygote is None:
        try:
            proc = subprocess.run(fallback_argv(code), env=dict(_mutation_env(), PYTHONPATH=tmp), cwd=tmp,
                                  capture_output=True, text=True, timeout=timeout)
            stdout, stderr, timed_out = proc.stdout, proc.stderr, False
            exit_note = f"exit {proc.returncode}"
        except subprocess.TimeoutExpired:
            timed_out, exit_note = True, f"timed out after {timeout:g} s"
    cid = None
    if timed_out and os.path.exists(running):
        with open(running) as fh:
            cid = fh.read().strip()
    read_child(out, order, tmp, stdout if not timed_out else "", stderr if not timed_out else "", timed_out,
               exit_note, cid, vectors_dir is not None)


def read_child(out, order, tmp, stdout, stderr, timed_out, exit_note, running, vectors=False):
    """Fill ``out`` from what a child on the copy ``tmp`` left: ``running`` is the check id its
    :data:`RUNNING_FILE` held when it was stopped (None: no such file), ``order`` the checks it was
    to run. A child stopped inside a check (its time or memory) is that check's crash; stopped
    before the first, the first check's (the package was being imported); stopped in the claims
    or the vectors, no catch. Otherwise its last line of output is read: the package did not import
    (the first check's crash), it imported another package than the copy (an error), it names a
    check it was not given (an error: its bookkeeping is not to be trusted), or its verdicts."""
    if timed_out:        # stopped inside a check (that check never gave a verdict), or before the first
        where = ""
        cid = running
        if cid is None:
            cid, where = (order[0] if order else ""), " while the package was imported"
        if cid and cid not in order and cid != CLAIMS_RUNNING and not vectors:
            out.error = f"the child was stopped in a check it was not given ({cid!r}): {exit_note}"
        elif cid and cid != CLAIMS_RUNNING and not vectors:
            out.caught_by, out.crashed, out.ended = [cid], True, f"stopped{where}: {exit_note}"
        else:
            out.error = exit_note
        return
    last = stdout.strip().splitlines()[-1:] if stdout.strip() else []
    try:
        res = json.loads(last[0])
    except (IndexError, json.JSONDecodeError):
        tail = " ".join(stderr.strip().splitlines()[-2:])[-300:]
        out.error = f"the checks did not run ({exit_note}): {tail}"
        return
    if "package_error" in res:
        out.caught_by, out.crashed = order[:1], True
        out.ended = f"the package did not import ({res['package_error']})"
    elif not res["package"].startswith(tmp):
        out.error = f"the child imported {res['package']}, not the mutated copy"
    elif not vectors and any(c not in order for c in res["caught_by"] + res["ran"]):
        # a child whose own bookkeeping is mutated can name what it was not given: no verdict of it is read
        out.error = ("the child named checks it was not given: "
                     f"{[c for c in res['caught_by'] + res['ran'] if c not in order][:3]}")
    else:
        out.caught_by, out.ran, out.claims = res["caught_by"], res["ran"], res.get("claims")
        out.crashed, out.ended = bool(res.get("crashed")), res.get("ended")


def _started_workers(mutations, workers, package, preload, zygote=None, forking=hasattr(os, "fork")):
    """A queue of (zygote, its copy of the package) per worker, each zygote started as soon as its
    copy exists (holding the copy's unmutated modules when ``preload``): the zygotes set up on
    their own cores while this process copies, reads the module graph and compiles the mutated
    files. Without os.fork (``forking``) the zygote is None (one fresh interpreter per mutation).
    ``zygote``: the class started (:class:`Zygote`)."""
    import queue
    zygote = zygote or Zygote
    workers_, starting = queue.Queue(), []
    try:
        for _ in range(max(1, int(workers))):
            sp = Workspace(package)
            starting.append((zygote(_mutation_env(), wait=False, preload=sp.dir if preload else None)
                             if forking else None, sp))
        package_graph(package)                  # read once here, before the workers share it
        compile_mutated(mutations, package)     # once a process: see _compiles
        for z, sp in starting:
            if z is not None:
                z.wait_ready()
            workers_.put((z, sp))
    except BaseException:
        for z, sp in starting:
            z.close() if z is not None else None
            sp.close()
        raise
    return workers_


def run_catalogue(mutations, workers=2, progress=None, timeout=TIMEOUT, vectors_dir=None, package=PACKAGE, claims=False,
                  parts=None):
    """Every mutation against its paper's theorem checks, or (``vectors_dir``: vectors exported
    from the unmutated package) against the conformance vectors; ``caught_by`` then lists the
    first failing vector ids. ``parts``: stand-ins for this module's ``_started_workers``,
    ``pool_mutations``, ``close_workers``, ``void_broken_catchers`` and verify's ``check_costs``
    by those names (tools.mutation_runner's planted run)."""
    from refimpl.tools.verify import check_costs
    p = {"_started_workers": _started_workers, "pool_mutations": pool_mutations, "close_workers": close_workers,
         "void_broken_catchers": void_broken_catchers, "check_costs": check_costs, **(parts or {})}
    preload = os.environ.get(PRELOAD_ENV, "1") != "0"
    workers_ = p["_started_workers"](mutations, workers, package, preload)
    seconds, compiling = p["check_costs"](True), os.environ.get(KERNELS_ENV, "interpret") == "compile"
    try:
        results, confirmed = p["pool_mutations"](mutations, workers_, workers,
                                                 *catalogue_callables(timeout, vectors_dir, package, claims, preload),
                                                 progress, lambda m: mutation_cost(m, seconds, compiling, package))
    finally:
        p["close_workers"](workers_)
    if package == PACKAGE:
        p["void_broken_catchers"](results, confirmed, {m.id: m.file for m in mutations})
    return results


def catalogue_callables(timeout, vectors_dir, package, claims, preload, run=None, verdict=None, zygote=None):
    """What :func:`run_catalogue` hands :func:`pool_mutations`: (run a mutation on a worker's zygote
    and copy, confirm a crash's catcher unmutated — None where :func:`confirms_crashes` says not —,
    start a worker's new zygote, preloading its copy when ``preload``). ``run``, ``verdict`` and
    ``zygote`` stand for :func:`run_mutation`, :func:`_unmutated_verdict` and :class:`Zygote`."""
    run, verdict, zygote = run or run_mutation, verdict or _unmutated_verdict, zygote or Zygote
    return (lambda m, z, space: run(m, timeout=timeout, vectors_dir=vectors_dir, zygote=z, claims=claims,
                                    package=package, workspace=space),
            (lambda cid, file, z, space: verdict(cid, z, space, timeout, package, file))
            if confirms_crashes(package, vectors_dir) else None,
            lambda space: zygote(_mutation_env(), preload=space.dir if preload else None))


def close_workers(workers_):
    """Close every worker's zygote (None without fork) and remove its copy, emptying the queue."""
    while not workers_.empty():
        z, space = workers_.get()
        z.close() if z is not None else None
        space.close()


def confirms_crashes(package, vectors_dir):
    """Whether a crash's catcher is run on the unmutated package before the catch counts: for
    refimpl's own catalogue against the theorem checks (a vector that fails is no crash)."""
    return package == PACKAGE and vectors_dir is None


def mutation_cost(m, seconds, compiling, package=PACKAGE):
    """The seconds a mutation is expected to take, to run the longest first (so that the pool does
    not end on a long one): its first expected catcher's recorded ``seconds`` (1 without), and 10 s
    more for a file whose Numba kernels recompile (``compiling``: the copy's cache no longer matches)."""
    first = seconds.get(m.checks[0], 1.0) if m.checks else 1.0
    try:
        return first + (10 if compiling and "@njit" in source_file(m.file, package).read_text() else 0)
    except OSError:
        return first


def pool_mutations(mutations, workers_, workers, run, confirm, new_zygote, progress=None, cost=None):
    """(results in the mutations' order, {(check, mutated file): its verdict unmutated}) of ``run(m,
    zygote, space)`` on ``workers`` threads sharing the queue ``workers_`` of (zygote, copy), longest
    ``cost`` first. A zygote that died under a mutation is closed and replaced by
    ``new_zygote(space)`` before its copy is used again. Each check a crash was caught by is run
    unmutated once for each file whose mutation it crashed on, by ``confirm(check, file, zygote,
    space)``, while the pool still has work (None: no confirming); ``progress`` is told each
    mutation's line as it ends."""
    results, done = [None] * len(mutations), [0]
    confirmed, lock = {}, threading.Lock()     # (catcher that ended in an error, file) -> its verdict unmutated
    cost = cost or (lambda m: 1.0)

    def pooled(fn):
        z, space = workers_.get()
        try:
            return fn(z, space)
        finally:
            if z is not None and not z.alive:   # died under a mutation: the next one gets a new zygote
                z.close()
                z = new_zygote(space)
            workers_.put((z, space))

    def one(i):
        results[i] = r = pooled(lambda z, space: run(mutations[i], z, space))
        if confirm is not None and r.crashed and r.caught_by:
            key = (r.caught_by[0], mutations[i].file)
            with lock:                          # checked at once, while the pool still has work
                first = key not in confirmed
                confirmed.setdefault(key, None)
            if first:
                confirmed[key] = pooled(lambda z, space: confirm(*key, z, space))
        if progress:
            with lock:                          # counted here: two mutations ending at once get two numbers
                done[0] += 1
                said = progress_text(r, done[0], len(mutations))
            progress(said)
    order = sorted(range(len(mutations)), key=lambda i: -cost(mutations[i]))
    with ThreadPoolExecutor(max_workers=max(1, int(workers))) as ex:
        list(ex.map(one, order))
    return results, confirmed


def _unmutated_verdict(cid, zygote, space, timeout, package, file=None):
    """Check ``cid`` run alone on the worker's copy of the package with no mutation applied (as a
    mutation's checks run): None when it holds there, else why not ("" when it could not be run:
    :func:`void_broken_catchers` then runs it itself). ``file``: the mutated file of the crash it
    confirms; the run then drops and re-imports that file's dependants and runs its kernels as
    that mutation's run did, with the file unchanged (a check that crashes only there, say for a
    check it needs that the drop unregistered, does not hold)."""
    none = Mutation("unmutated", "core", file or "refimpl/__init__.py", "", "", "", (cid,))   # no file is changed
    out = Outcome(none.id, none.paper, none.equation)
    with space.unmutated() as tmp:
        _run_in(none, tmp, [cid], [], out, timeout, package, None, zygote, changed=file is not None)
    if out.error:
        return ""
    return None if not out.caught_by else (f"{cid} does not hold on the unmutated package"
                                           + (f" with {file}'s dependants re-imported" if file else ""))


def void_broken_catchers(results, confirmed=None, files=None):
    """A catch by a check that ended in an error counts only if that check holds on the unmutated
    package. ``confirmed`` holds the verdicts the pool found, by (check, mutated file) (None: holds;
    a reason: does not; "" or absent: not found), ``files`` {mutation id: its file}; each check with
    a verdict not found runs once here, in this process (the live tree, unmutated). A check that
    does not hold there would "catch" every entry it is named first on; its catches become NOT
    CAUGHT with the reason. Returns {check id: why it does not hold} (its first reason)."""
    from refimpl.tools.verify import load_checks, run_check
    confirmed, files = confirmed or {}, files or {}
    crashes = [r for r in results if r is not None and r.crashed and r.caught_by]
    found = {id(r): confirmed.get((r.caught_by[0], files.get(r.id)), "") for r in crashes}
    rerun, here = sorted({r.caught_by[0] for r in crashes if found[id(r)] == ""}), {}
    if rerun:
        load_checks()
    for cid in rerun:
        rec = run_check(cid, quick=True)
        here[cid] = (str(rec.details.get("error") or rec.details.get("wrong") or "it does not hold")[:160]
                     if fails(rec) else None)
    broken = {}
    for r in crashes:
        why = here[r.caught_by[0]] if found[id(r)] == "" else found[id(r)]
        if why:
            broken.setdefault(r.caught_by[0], why)
            r.error = f"{r.caught_by[0]} fails on the unmutated package too ({why}): no catch"
            r.caught_by = []
    return broken


def catch_rates(results):
    rates = {}
    for r in results:
        c, n = rates.get(r.paper, (0, 0))
        rates[r.paper] = (c + r.caught, n + 1)
    return rates


def claims_cell(r):
    """What the claims say of a mutation no theorem check caught: the claims it breaks, or that
    every claim still reproduces ('-' when they were not run)."""
    if not r.claims:
        return "-"
    broken = [c for c, ok in r.claims.items() if not ok]
    return ("breaks " + ", ".join(broken)) if broken else f"all {len(r.claims)} reproduce"


def format_table(results):
    with_claims = any(r.claims is not None for r in results)
    rows = [("mutation", "equation", "caught by", "seconds") + (("claims",) if with_claims else ())]
    for r in results:
        rows.append((r.id, r.equation[:48], ", ".join(r.caught_by) if r.caught else f"NOT CAUGHT{' — ' + r.error if r.error else ''}",
                     f"{r.seconds:.0f}") + ((claims_cell(r),) if with_claims else ()))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    lines.append("")
    for paper, (c, n) in catch_rates(results).items():
        lines.append(f"catch rate {paper}: {c}/{n} ({100 * c / n:.0f} %)")
    return "\n".join(lines)


def format_markdown(results):
    """The per-paper catch rates and the per-mutation table as Markdown (README, verification/README.md)."""
    lines = ["| paper | mutations | caught by a theorem check | catch rate |", "|---|---|---|---|"]
    for paper, (c, n) in catch_rates(results).items():
        lines.append(f"| {paper} | {n} | {c} | {100 * c / n:.0f} % |")
    lines += ["", "| mutation | equation it breaks | caught by | seconds |", "|---|---|---|---|"]
    for r in results:
        eq = r.equation.replace("|", "\\|")
        lines.append(f"| `{r.id}` | {eq} | {', '.join('`' + c + '`' for c in r.caught_by) or '**not caught**'} "
                     f"| {r.seconds:.0f} |")
    return "\n".join(lines) + "\n"


def write_json(results, path):
    with open(path, "w") as fh:
        json.dump([{**asdict(r), "caught": r.caught} for r in results], fh, indent=1)
