import pytest

from refimpl import verify
from refimpl.cli import main

REQUIRED = {"grad.fd", "kernels.numba_numpy", "ssca.feature_equals_central", "ssca.remark2_momentum",
            "ssca.surrogate_assumption2", "ssca.stepsize_conditions", "ssca.theorem1_stationarity",
            "ssca.claim_faster_than_sgd"}


def test_registry_has_the_fixed_ids():
    assert REQUIRED <= set(verify.load_checks())


def test_failing_and_crashing_checks_are_reported(monkeypatch):
    monkeypatch.setitem(verify.REGISTRY, "test.fails", ("a claim", "nowhere",
                                                        lambda quick: {"measured": 2.0, "bound": 1.0}))

    def crash(quick):
        raise RuntimeError("boom")
    monkeypatch.setitem(verify.REGISTRY, "test.crashes", ("c", "s", crash))
    recs = verify.run_checks(["test.fails", "test.crashes"])
    assert recs[0].holds is False and recs[0].ratio == 2.0
    assert recs[1].holds is False and "boom" in recs[1].details["error"]
    assert "NO" in verify.format_table(recs)
    assert main(["verify", "--only", "test.fails", "--quiet"]) == 1


def test_unknown_id(capsys):
    assert main(["verify", "--only", "nope"]) == 2
    assert "unknown check ids" in capsys.readouterr().err


@pytest.mark.parametrize("cid", sorted(REQUIRED - {"ssca.claim_faster_than_sgd", "ssca.theorem1_stationarity"}))
def test_quick_checks_hold(cid):
    rec = verify.run_checks([cid], quick=True)[0]
    assert rec.holds, rec.details


def test_verify_quick_all_hold(tmp_path):
    """The done criterion of the foundation: ``refimpl verify --quick`` exits 0."""
    assert main(["verify", "--quick", "--quiet", "--json", str(tmp_path / "v.json")]) == 0
