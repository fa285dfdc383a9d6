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


def test_the_adapter_provides_a_family(adapter):
    """An adapter with none of the families' functions would skip every vector and pass having
    compared nothing: that run is a failure, naming what the adapter should provide."""
    provided = [fam for fam in DOCS if callable(getattr(adapter, fam, None))]
    assert provided, (f"the adapter {adapter.__name__} provides none of the {len(DOCS)} families "
                      f"({', '.join(sorted(DOCS))}): this run compared nothing; define at least one of them "
                      "(docs/conformance.md)")
