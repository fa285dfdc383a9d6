"""The toy paper's conformance family: one local step."""
import numpy as np

from refimpl.conformance.family import Family

from toypaper.problem import local_step


def _cases(rng):
    out = []
    for n, lr in ((6, 0.1), (9, 0.0)):
        out.append(dict(id=f"toy_local_step-{len(out)}", comment=f"{n} rows, lr {lr}", flags=["zero-step"] if lr == 0 else [],
                        inputs=dict(A=rng.standard_normal((n, 3)), b=rng.standard_normal(n), z=rng.standard_normal(3),
                                    lr=lr), tol={"rel": 1e-14}))
    return out


TOY_LOCAL_STEP = Family("toy_local_step", "toy", "toy paper, one local step", inputs=("A", "b", "z", "lr"),
                        outputs=("z_next",), description="z − lr Aᵀ(Az − b)/n",
                        reference=lambda A, b, z, lr: local_step(np.asarray(A), np.asarray(b), np.asarray(z), float(lr)),
                        cases=_cases,
                        # a flag is a claim about its case, tested by refimpl verify's tools.vector_flags
                        witnesses={"zero-step": lambda c: c["inputs"]["lr"] == 0
                                   and np.array_equal(c["expected"]["z_next"], c["inputs"]["z"])})
FAMILIES = (TOY_LOCAL_STEP,)
