"""Progress display: a bar with rate and ETA on a terminal, today's plain lines elsewhere, nothing
with --quiet."""
import io

import pytest

from refimpl.cli import main
from refimpl.core.progress import Progress


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_bar_on_a_terminal_lines_elsewhere_nothing_when_quiet():
    tty = _Terminal()
    with Progress(total=4, desc="verify", unit="check", stream=tty) as p:
        assert p.bar_mode
        for i in range(4):
            p(f"running check {i} ...")
    out = tty.getvalue()
    assert "verify" in out and "100%" in out and "4/4" in out and ("check/s" in out or "s/check" in out)
    plain = io.StringIO()
    with Progress(total=4, desc="verify", stream=plain) as p:
        assert not p.bar_mode
        p("running a ...")
        p("running b ...", n=2)
    assert plain.getvalue() == "running a ...\nrunning b ...\n"
    quiet = _Terminal()
    with Progress(total=4, quiet=True, stream=quiet) as p:
        p("x")
    assert quiet.getvalue() == ""


def test_a_position_summed_past_the_rounded_total_stops_at_the_total():
    """The verify bar's positions are sums of recorded seconds (0.05 + 0.01 = 0.060000000000000005)
    and its total their rounded sum (0.06): the bar ends at its total, with no warning from tqdm."""
    import warnings
    tty = _Terminal()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with Progress(total=0.06, desc="verify", unit="s", stream=tty) as p:
            p("grad.fd finished", n=0.05)
            p("kernels.numba_numpy finished", n=0.05 + 0.01)
            assert p.bar.n == 0.06
            p("", n=0.06)


@pytest.mark.parametrize("argv, plain", [
    (["verify", "--only", "grad.fd,kernels.numba_numpy"], "grad.fd finished ("),
    (["run", "ssca", "--rounds", "4", "--hidden", "4", "--batch", "5"], "round     4/4"),
    (["run", "flexvfl", "--rounds", "3"], "round     3"),
])
def test_commands_draw_a_bar_on_a_terminal(monkeypatch, capsys, argv, plain):
    tty = _Terminal()
    monkeypatch.setattr("sys.stderr", tty)
    assert main(argv) == 0
    out = tty.getvalue()
    assert "100%" in out and "|" in out                                # a bar …
    assert all(line.strip() != plain for line in out.splitlines())        # … not the lines
    if argv[0] == "run":
        assert plain not in out
    monkeypatch.setattr("sys.stderr", io.StringIO())                   # not a terminal: the lines
    assert main(argv) == 0
    import sys
    assert plain in sys.stderr.getvalue()
    monkeypatch.setattr("sys.stderr", _Terminal())                     # --quiet: nothing at all
    assert main([*argv, "--quiet"]) == 0
    assert sys.stderr.getvalue() == ""


def test_verify_bar_weighs_checks_by_their_recorded_seconds():
    """The verify bar's total is the checks' recorded seconds, and the engine reports positions in
    those units: a long check finished moves the bar (and its estimate of the time left) further
    than a short one."""
    from refimpl.tools import verify
    costs = verify.check_costs(True)
    ids = ["grad.fd", "ssca.theorem2_kkt"]
    assert verify.recorded_cost(ids, True) == round(sum(costs[c] for c in ids), 2)
    assert costs["ssca.theorem2_kkt"] > 10 * costs["grad.fd"]
    tasks = verify.check_tasks(ids, True, "/nonexistent")
    assert sorted(t["cost"] for t in tasks) == sorted(costs[c] for c in ids)
