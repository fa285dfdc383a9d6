"""FedAvg on least squares: K clients, client k holds (A_k, b_k) with n_k = 6 + 3k rows;
F(z) = (1/K) Σ_k f_k(z), f_k(z) = ||A_k z − b_k||² / (2 n_k)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Problem:
    A: tuple
    b: tuple

    @classmethod
    def random(cls, clients, dim, seed):
        rng = np.random.default_rng(seed)
        A = tuple(rng.standard_normal((6 + 3 * k, dim)) for k in range(clients))
        b = tuple(rng.standard_normal(6 + 3 * k) for k in range(clients))
        return cls(A, b)

    def loss(self, z):
        return float(np.mean([0.5 * np.sum((A @ z - b) ** 2) / len(b) for A, b in zip(self.A, self.b)]))


def gradient(A, b, z):
    """∇f_k(z) = A_kᵀ(A_k z − b_k) / n_k."""
    return A.T @ (A @ z - b) / len(b)


def local_step(A, b, z, lr):
    """One local gradient step z − lr ∇f_k(z)."""
    return z - lr * gradient(A, b, z)
