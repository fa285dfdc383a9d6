"""The toy paper's check: the hand-written gradient against central finite differences."""
import numpy as np

from refimpl.verification.registry import check

from toypaper.problem import Problem, gradient


@check("toy.gradient_fd", "∇f_k(z) = A_kᵀ(A_k z − b_k)/n_k agrees with central differences", "toy paper, f_k")
def gradient_fd(quick):
    pr = Problem.random(3, 4, 0)
    z = np.random.default_rng(1).standard_normal(4)
    worst = 0.0
    for A, b in zip(pr.A, pr.b):
        f = lambda x: 0.5 * np.sum((A @ x - b) ** 2) / len(b)      # noqa: E731
        fd = np.array([(f(z + 1e-6 * e) - f(z - 1e-6 * e)) / 2e-6 for e in np.eye(4)])
        worst = max(worst, float(np.max(np.abs(fd - gradient(A, b, z))) / max(1e-12, np.max(np.abs(fd)))))
    return {"measured": worst, "bound": 1e-6}
