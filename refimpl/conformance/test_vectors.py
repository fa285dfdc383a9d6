"""The conformance harness: one test per vector, against the adapter named by REFIMPL_IMPL
(default: refimpl's own). Run: ``REFIMPL_IMPL=mypkg.adapter python -m pytest --pyargs refimpl.conformance``."""
import pytest

from refimpl.conformance.harness import adapter_module, documents, run_case

DOCS = documents()
PARAMS = [pytest.param(fam, case, id=f"{fam}[{case['equation']}]-{case['id']}")
          for fam, doc in DOCS.items() for case in doc["cases"]]


@pytest.fixture(scope="module")
def adapter():
    return adapter_module()


@pytest.mark.parametrize("family,case", PARAMS)
def test_vector(adapter, family, case):
    outcome, msg = run_case(adapter, family, case)
    if outcome == "skip":
        pytest.skip(msg)
    assert outcome == "pass", msg
