"""Every dotted ``refimpl.…`` name and every repository path the README, docs/, verification/,
docstrings and examples mention resolves (a stale reference is a defect a reader hits)."""
import importlib
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOTTED = re.compile(r"(?<![\w./-])refimpl(?:\.[A-Za-z_]\w*)+")
PATH = re.compile(r"(?<![\w/.-])((?:refimpl|tests|examples|verification|docs)/[\w/.-]+\.(?:py|md|toml|json))")


def _files():
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "verification").glob("*.md")),
            *sorted((ROOT / "refimpl").rglob("*.py")), *sorted((ROOT / "examples").glob("*.py"))]


def _resolves(name):
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            if not hasattr(obj, p):
                return False
            obj = getattr(obj, p)
        return True
    return False


def stale(files):
    bad = []
    for f in files:
        text = f.read_text()
        bad += [(f.name, m.group(0)) for m in DOTTED.finditer(text) if not _resolves(m.group(0).rstrip("."))]
        bad += [(f.name, m.group(1)) for m in PATH.finditer(text) if not (ROOT / m.group(1)).exists()]
    return sorted(set(bad))


def test_every_reference_resolves():
    assert stale(_files()) == []


def test_the_scan_finds_a_stale_name(tmp_path):
    p = tmp_path / "doc.md"
    p.write_text("see `refimpl.core.kernels.ssca_round_nb` and refimpl/kernels.py, and refimpl.ssca.kernels.ssca_round_nb")
    assert stale([p]) == [("doc.md", "refimpl.core.kernels.ssca_round_nb"), ("doc.md", "refimpl/kernels.py")]
