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
    "verification": {"core", "ssca", "vfl", "mfcgd", "verification"},
    "tools": {"core", "ssca", "vfl", "mfcgd", "tools", "verification", "conformance"},
    "conformance": {"core", "ssca", "vfl", "mfcgd", "conformance"},
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
