"""Each tutorial in examples/ runs as plain Python (reduced mode) and shows its theorem check holding."""
import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = sorted((pathlib.Path(__file__).parent.parent / "examples").glob("*_tutorial.py"))


def test_there_is_one_tutorial_per_paper():
    assert [p.name for p in EXAMPLES] == ["flexvfl_tutorial.py", "mfcgd_tutorial.py", "ssca_tutorial.py"]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_tutorial_runs(path, tmp_path):
    env = {**os.environ, "REFIMPL_TUTORIAL_QUICK": "1", "REFIMPL_TUTORIAL_OUT": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(path)], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "| yes" in proc.stdout                     # the theorem check's row: measured | bound | ratio | holds
    assert "# %%" in path.read_text()                 # percent-cell format: opens as a notebook
    pngs = list(tmp_path.glob("*.png"))
    assert pngs or "figure: None" in proc.stdout      # a figure, unless matplotlib is missing
