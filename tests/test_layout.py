"""The package's shape: one subpackage per paper over a shared core, the multi-run tools above
them, the CLI on top; imports only point down."""
import ast
import pathlib
import re

import refimpl

ROOT = pathlib.Path(refimpl.__file__).parent
PAPERS = ("ssca", "vfl", "mfcgd")
# which subpackages each layer may import
ALLOWED = {
    "core": {"core"},
    "ssca": {"core", "ssca"},
    "vfl": {"core", "vfl"},
    "mfcgd": {"core", "mfcgd"},
    "verification": {"core", "ssca", "vfl", "mfcgd", "verification", "papers"},
    "tools": {"core", "ssca", "vfl", "mfcgd", "tools", "verification", "conformance", "papers"},
    "conformance": {"core", "ssca", "vfl", "mfcgd", "conformance", "papers"},
}


def _imports(path):
    """Every refimpl module a file imports, as dotted names relative to the package."""
    tree = ast.parse(path.read_text())
    pkg = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts[:-1])
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.rsplit(".", node.level - 1)[0] if node.level > 1 else pkg
                mod = f"{base}.{node.module}" if node.module else base
                out += [mod] + ([f"{mod}.{a.name}" for a in node.names] if not node.module else [])
            else:
                out.append(node.module)
    return [m[len("refimpl."):] for m in out if m and m.startswith("refimpl.")]


def _violations():
    bad = []
    for layer, allowed in ALLOWED.items():
        for path in (ROOT / layer).rglob("*.py"):
            for mod in _imports(path):
                if not any(mod == a or mod.startswith(a + ".") for a in allowed):
                    bad.append(f"{path.relative_to(ROOT)} imports refimpl.{mod}")
    return bad


def test_imports_point_down_only():
    assert _violations() == []


def test_the_scanner_sees_a_cross_paper_import(tmp_path, monkeypatch):
    """The scan itself can fail: a planted ssca → vfl import is reported."""
    fake = tmp_path / "refimpl"
    for layer in ALLOWED:
        (fake / layer).mkdir(parents=True)
    (fake / "ssca" / "bad.py").write_text("from refimpl.vfl.flexvfl import FlexVFL\n")
    (fake / "core" / "worse.py").write_text("from ..mfcgd import bounds\n")
    monkeypatch.setitem(globals(), "ROOT", fake)
    assert sorted(_violations()) == ["core/worse.py imports refimpl.mfcgd", "ssca/bad.py imports refimpl.vfl.flexvfl"]


def test_paper_subpackages_import():
    import refimpl.mfcgd
    import refimpl.ssca
    import refimpl.vfl
    for mod in (refimpl.ssca, refimpl.vfl, refimpl.mfcgd):
        assert callable(mod.run) and mod.Config is not None


def test_no_reference_outside_the_repository():
    """Docstrings cite papers by key ([SSCA], [FlexVFL], [MFCGD]) and docs/, never study material."""
    repo = ROOT.parent
    pattern = re.compile(r"seed\s00\d|spec\s(ssca|mfcgd|flexvfl)\.md|shared/(?:spec|seeds)")
    hits = []
    for sub in ("refimpl", "docs", "examples", "verification", "tests"):
        for path in (repo / sub).rglob("*"):
            if path.suffix in (".py", ".md", ".toml", ".cfg") and path.name != "test_layout.py":
                hits += [f"{path}:{i}" for i, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    readme = (repo / "README.md").read_text()
    hits += ["README.md"] * bool(pattern.search(readme))
    assert hits == []


def test_install_has_no_top_level_verification_package():
    """setup.cfg's package list: refimpl and its subpackages only (checks ship as refimpl.verification)."""
    import configparser

    from setuptools import find_packages
    repo = ROOT.parent
    cfg = configparser.ConfigParser()
    cfg.read(repo / "setup.cfg")
    include = cfg["options.packages.find"]["include"].split()
    pkgs = find_packages(where=str(repo), include=include)
    assert "refimpl.verification" in pkgs and {"refimpl.ssca", "refimpl.vfl", "refimpl.mfcgd", "refimpl.core"} <= set(pkgs)
    assert all(p == "refimpl" or p.startswith("refimpl.") for p in pkgs)


def test_readme_python_example_runs(tmp_path, monkeypatch):
    text = (ROOT.parent / "README.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    code = code.replace("rounds=300, snapshots=[0, 300]", "rounds=20, snapshots=[0, 20]").replace(
        "iterate(300)", "iterate(20)").replace("steps=2000", "steps=200").replace("time_budget=200", "time_budget=20")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
    assert (tmp_path / "runs" / "ssca" / "trace.npz").exists()


# ----------------------------------------------------------------------------- one description per paper

def _family_comparisons(root, keys):
    """Where code outside a paper's folder asks "which paper is this?" itself: a comparison with a
    paper key (``== "ssca"``, ``in ("ssca", …)``, ``.startswith("ssca")``) or a table keyed by two
    or more paper keys and nothing else (a second Config table)."""
    keys = set(keys)

    def is_key(node):
        return isinstance(node, ast.Constant) and node.value in keys

    def holds_key(node):
        return isinstance(node, (ast.Tuple, ast.List, ast.Set)) and any(is_key(e) for e in node.elts)

    hits = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] in keys:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            bad = False
            if isinstance(node, ast.Compare):
                sides = [node.left] + node.comparators
                bad = any(is_key(s) for s in sides) or any(
                    isinstance(op, (ast.In, ast.NotIn)) and holds_key(c) for op, c in zip(node.ops, node.comparators))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("startswith", "endswith"):
                bad = any(is_key(a) or holds_key(a) for a in node.args)
            elif isinstance(node, ast.Dict):     # a table over papers (not, e.g., over benchmarks)
                named = [k for k in node.keys if k is not None]
                bad = len(named) >= 2 and all(is_key(k) for k in named)
            if bad:
                hits.append(f"{rel}:{node.lineno}")
    return hits


def test_no_family_name_comparison_outside_the_papers_folders():
    from refimpl import papers
    assert _family_comparisons(ROOT, papers.keys()) == []


def test_the_family_scan_sees_a_comparison_and_a_config_table(tmp_path):
    """The scan itself can fail: planted comparisons and a planted Config table are found, a paper's
    own folder is left alone."""
    (tmp_path / "tools").mkdir()
    (tmp_path / "ssca").mkdir()
    (tmp_path / "tools" / "bad.py").write_text(
        'def f(fam, alg):\n'
        '    if fam == "ssca":\n        return 1\n'
        '    if alg.startswith("vfl"):\n        return 2\n'
        '    if fam in ("mfcgd", "x"):\n        return 3\n'
        '    return {"ssca": 1, "vfl": 2}\n')
    (tmp_path / "ssca" / "own.py").write_text('KEY = "ssca"\nOK = KEY == "ssca"\n')
    assert _family_comparisons(tmp_path, ("ssca", "vfl", "mfcgd")) == [
        "tools/bad.py:2", "tools/bad.py:4", "tools/bad.py:6", "tools/bad.py:8"]


def test_each_convention_and_option_choice_is_written_once():
    """A convention's values and an option's choices are written as a literal in one file only
    (the paper's description or the module it reads them from)."""
    from refimpl import papers
    literals = {}
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Tuple) and len(node.elts) >= 2 and all(
                    isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
                literals.setdefault(tuple(e.value for e in node.elts), set()).add(str(path.relative_to(ROOT)))
    seen = []
    keys = set(papers.keys())
    for p in papers.papers():
        for c in p.conventions:
            if all(isinstance(v, str) for v in c.values):
                # another paper's folder may hold an equal tuple of another meaning (a preset's names)
                where = sorted(f for f in literals.get(tuple(c.values), ())
                               if f.split("/")[0] == p.key or f.split("/")[0] not in keys)
                seen.append((p.key, c.option, where))
    twice = [s for s in seen if len(s[2]) > 1]
    assert twice == [], twice
    assert len(seen) >= 8 and all(len(s[2]) == 1 for s in seen if s[1] != "protocol")


def _import_cycles(root):
    """Groups of refimpl modules that import each other, directly or through others (imports
    inside functions included: a lazy import is still a dependency)."""
    mods = {}
    for p in root.rglob("*.py"):
        name = ".".join(p.relative_to(root.parent).with_suffix("").parts)
        mods[name[:-len(".__init__")] if name.endswith(".__init__") else name] = p
    graph = {}
    for name, p in mods.items():
        pkg = name if p.name == "__init__.py" else name.rsplit(".", 1)[0]
        out = set()
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Import):
                out |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = (pkg.rsplit(".", node.level - 1)[0] if node.level > 1 else pkg) if node.level else ""
                mod = ".".join(x for x in (base, node.module) if x)
                out |= {mod} | {f"{mod}.{a.name}" for a in node.names}
        graph[name] = {m for m in out if m in mods and m != name}
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def strongly_connected(v):               # Tarjan: each group of mutually reachable modules
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                strongly_connected(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))
    for v in sorted(graph):
        if v not in index:
            strongly_connected(v)
    return cycles


def test_no_import_circles():
    assert _import_cycles(ROOT) == []


def test_the_cycle_scan_sees_a_lazy_circle(tmp_path):
    pkg = tmp_path / "refimpl"
    (pkg / "mfcgd").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "mfcgd" / "__init__.py").write_text("")
    (pkg / "mfcgd" / "algorithm.py").write_text("from refimpl.mfcgd.kernels import k\n")
    (pkg / "mfcgd" / "kernels.py").write_text("def k():\n    from refimpl.mfcgd.algorithm import P\n")
    assert _import_cycles(pkg) == [["refimpl.mfcgd.algorithm", "refimpl.mfcgd.kernels"]]


def test_no_function_outside_the_numba_kernels_is_longer_than_80_lines():
    long = []
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                numba = any("jit" in ast.unparse(d) for d in node.decorator_list)
                if not numba and node.end_lineno - node.lineno + 1 > 80:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} "
                                f"({node.end_lineno - node.lineno + 1} lines)")
    assert long == []


def test_a_paper_description_without_its_run_is_refused():
    """Paper's config_class and run are abstract: a description that leaves one out cannot be built."""
    import pytest

    from refimpl.core.paper import Paper

    class Half(Paper):
        key = "half"

        def config_class(self):
            return dict
    with pytest.raises(TypeError, match="run"):
        Half()


def test_every_option_the_glossary_names_exists():
    """docs/glossary.md names the option of each symbol: each is an option of some `refimpl run`
    algorithm (or of `refimpl bound`), so the glossary cannot drift from the command line."""
    import re as _re
    from refimpl import papers
    text = (ROOT.parent / "docs" / "glossary.md").read_text()
    named = set(_re.findall(r"`(?:bound )?(--[a-zA-Z][\w-]*)", text))
    assert len(named) > 30
    run_opts = {o.name for p in papers.papers() for a in p.algorithms for o, _ in p.options_for(a)}
    run_opts |= {"--" + f.replace("_", "-") for p in papers.papers() for f, _ in p.replay_args}
    bound_opts = {"--constants", "--params", "--theorem", "--T", "--q", "--rho", "--A-rms"}
    assert named <= run_opts | bound_opts, sorted(named - run_opts - bound_opts)


def test_the_readmes_counts_are_the_codes():
    """The README's counts — theorem-kind checks, catalogued mutations, mutations per paper — are
    the registry's and the catalogue's, so a new check or entry cannot leave them stale."""
    import re as _re
    from collections import Counter
    from refimpl.tools import verify as V
    from refimpl.tools.mutations import load_catalogue
    text = (ROOT.parent / "README.md").read_text()
    kinds = Counter(V.REGISTRY[i][3] for i in V.load_checks())
    assert f"{kinds['theorem']} theorem-kind checks" in text
    cat = load_catalogue()
    assert _re.search(rf"catalogues\s+{len(cat)} one-line", text)
    per = Counter(m.paper for m in cat)
    rows = dict(_re.findall(r"^\| (core|ssca|vfl|mfcgd) \| (\d+) \|", text, _re.M))
    assert {p: int(n) for p, n in rows.items()} == dict(per)


def test_the_independent_numpy_adapter_imports_nothing_from_refimpl():
    """``tools.conformance`` runs refimpl/conformance/numpy_adapter.py as the independent side of every
    vector: it is a transcription of the equations only while it imports nothing from refimpl."""
    import ast
    tree = ast.parse((ROOT / "conformance" / "numpy_adapter.py").read_text())
    mods = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    mods += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert mods and not [m for m in mods if m.split(".")[0] == "refimpl" or m.startswith(".")], mods


def test_ci_runs_the_readmes_test_command_then_the_whole_mutation_catalogue():
    """The tests run one catalogue entry per catching check; the whole catalogue runs in .ci/run,
    after the README's test command, and fails CI when an entry escapes every theorem-kind check."""
    ci = (ROOT.parent / ".ci" / "run").read_text()
    readme = (ROOT.parent / "README.md").read_text()
    lines = [ln.split("#")[0].strip() for ln in ci.splitlines()]
    test_cmd = next(ln for ln in lines if ln.startswith("python3 -m pytest"))
    assert test_cmd.replace(" -q", "") in readme
    mutations = [i for i, ln in enumerate(lines) if ln.startswith("python3 -m refimpl verify --mutations")]
    assert mutations and mutations[0] > lines.index(test_cmd)
    sets = [ln for ln in lines[:mutations[0]] if ln.startswith("set ")]
    assert sets[-1] == "set -e"              # its exit status is CI's


def test_the_conformance_pages_counts_are_the_vectors():
    """docs/conformance.md's table (cases and flags per family) and its sentence on the independent
    adapter (its lines, every case, every family) are the generated vectors' and the file's."""
    import re as _re
    from refimpl.conformance.harness import documents
    docs = documents()
    text = (ROOT.parent / "docs" / "conformance.md").read_text()
    n_lines = len((ROOT / "conformance" / "numpy_adapter.py").read_text().splitlines())
    n_cases = sum(len(d["cases"]) for d in docs.values())
    assert f"{n_lines} lines, and it passes every vector ({n_cases} cases in {len(docs)} families)" in text
    for name, d in docs.items():
        row = _re.search(rf"^\| `{name}\(.*\| (\d+) \| ([^|]*) \|$", text, _re.M)
        flags = sorted({f for c in d["cases"] for f in c.get("flags", [])})
        assert row and (int(row.group(1)), row.group(2).strip()) == (len(d["cases"]), ", ".join(flags)), name


def _cli_defaults(parser, *path):
    """{dest: default} of ``parser`` reached through the subcommands ``path``."""
    for name in path:
        parser = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices[name]
    return {a.dest: a.default for a in parser._actions}


def test_the_tools_defaults_are_their_commands():
    """A tool's function and its command share their defaults (core.paper_descriptions compares the
    papers' functions with their configurations): diagnose, crosscheck, compare's regime seeds,
    report, the dump writer's limit and the mutation runner's claims."""
    from types import SimpleNamespace

    from refimpl.cli import build_parser
    from refimpl.cli.common import max_dump_gb
    from refimpl.core.dumps import DumpWriter
    from refimpl.tools.crosscheck import compare_runs
    from refimpl.tools.diagnose import _reruns, diagnose, their_replay
    from refimpl.tools.mutations import run_catalogue
    from refimpl.tools.report import build_report
    from refimpl.vfl.regime import regime_row, regime_rows, regime_table
    from refimpl.verification.registry import default_of as arg
    cli = build_parser()
    dg, cc, cmp_, rep = (_cli_defaults(cli, c) for c in ("diagnose", "crosscheck", "compare", "report"))
    assert (arg(diagnose, "tol"), arg(their_replay, "index_base"), arg(_reruns, "index_base")) == (
        dg["tol"], dg["index_base"], dg["index_base"])
    assert [arg(compare_runs, n) for n in ("tol", "metrics_only", "allow_missing")] == [
        cc["tol"], cc["metrics_only"], cc["allow_missing"]]
    assert [arg(f, "seeds") for f in (regime_table, regime_row, regime_rows)] == [cmp_["seeds"]] * 3
    names = ("quick", "seeds", "rounds", "executor", "workers", "scheduler")
    assert [arg(build_report, n) for n in names] == [rep[n] for n in names]
    assert arg(DumpWriter.__init__, "max_bytes") == max_dump_gb(SimpleNamespace()) * 1e9      # --max-dump-gb
    assert arg(run_catalogue, "claims") == _cli_defaults(cli, "verify")["with_claims"]      # --with-claims


def test_no_module_defines_a_top_level_name_twice():
    """A second ``def`` of a name silently replaces the first: a check module once lost two of its
    cases when a new helper reused an old helper's name (``_sweep_spec_cases``)."""
    import ast
    import collections
    twice = {}
    for p in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(p.read_text())
        names = collections.Counter(n.name for n in tree.body
                                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))
        dup = sorted(k for k, v in names.items() if v > 1)
        if dup:
            twice[str(p.relative_to(ROOT))] = dup
    assert not twice, twice
