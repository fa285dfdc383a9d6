"""Local optimizers of Flex-VFL parties as (init, update) pairs, [FlexVFL] (6)–(8), docs/flexvfl.md

``init(theta0) -> state`` at the start of each round (state is reset every round);
``update(g, state, theta, eta) -> (theta_next, state)`` is one local step (6);
``weights(tau, eta)`` returns w^{r,t}, t = 0..τ−1, such that the round's cumulative update is
θ^{r,τ} − θ^{r,0} = −η Σ_t w^{r,t} g^{r,t}  (8). ``w_bar`` = max_t w, ``W`` = Σ_t w.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SGD:
    """D = g; w = 1."""

    name = "sgd"

    def init(self, theta0):
        return None

    def update(self, g, state, theta, theta0, eta, t):
        return theta - eta * g, state

    def weights(self, tau, eta):
        return np.ones(tau)


@dataclass(frozen=True)
class LocalMomentum:
    """u^t = ρ u^{t−1} + g^t (u^{−1} = 0), D = u; w^t = (1 − ρ^{τ−t}) / (1 − ρ)."""

    rho: float = 0.9
    name = "momentum"

    def __post_init__(self):
        if not 0.0 <= self.rho < 1.0:
            raise ValueError(f"momentum ρ must be in [0, 1), got {self.rho}")

    def init(self, theta0):
        return np.zeros_like(theta0)

    def update(self, g, u, theta, theta0, eta, t):
        u = self.rho * u + g
        return theta - eta * u, u

    def weights(self, tau, eta):
        t = np.arange(tau)
        return (1.0 - self.rho ** (tau - t)) / (1.0 - self.rho)


@dataclass(frozen=True)
class Proximal:
    """D = g + μ(θ^t − θ^0); w^t = (1 − ημ)^{τ−1−t}.

    [FlexVFL] prints the exponent τ − t + 1; unrolling θ^{t+1} − θ^0 = (1 − ημ)(θ^t − θ^0) − η g^t
    gives τ − 1 − t (``vfl.weights_prox`` checks it). These weights are ≤ 1, against the paper's
    assumption w ≥ 1 (reported by :func:`weights_assumption`)."""

    mu: float = 0.1
    name = "proximal"

    def __post_init__(self):
        if not (np.isfinite(self.mu) and self.mu >= 0):
            raise ValueError(f"proximal μ must be finite and >= 0, got {self.mu}")

    def init(self, theta0):
        return None

    def update(self, g, state, theta, theta0, eta, t):
        return theta - eta * (g + self.mu * (theta - theta0)), state

    def weights(self, tau, eta):
        return (1.0 - eta * self.mu) ** (tau - 1 - np.arange(tau))


@dataclass(frozen=True)
class TimeVaryingLR:
    """η_t = η / (1 + decay·t) within the round; D = (η_t/η) g; w^t = η_t / η."""

    decay: float = 0.1
    name = "time-varying-lr"

    def __post_init__(self):
        if not (np.isfinite(self.decay) and self.decay >= 0):
            raise ValueError(f"learning-rate decay must be finite and >= 0, got {self.decay}")

    def init(self, theta0):
        return None

    def update(self, g, state, theta, theta0, eta, t):
        return theta - eta / (1.0 + self.decay * t) * g, state

    def weights(self, tau, eta):
        return 1.0 / (1.0 + self.decay * np.arange(tau))


def weight_summary(opt, tau, eta):
    """(w̄, W) = (max_t w^t, Σ_t w^t)."""
    w = opt.weights(tau, eta)
    return float(w.max()), float(w.sum())


def weights_assumption(opt, tau, eta):
    """Whether [FlexVFL]'s assumption w^{r,t} ≥ 1 holds for this optimizer, τ and η."""
    return bool(np.all(opt.weights(tau, eta) >= 1.0 - 1e-15))


def make_optimizer(spec):
    """'sgd', 'momentum[:ρ]', 'proximal[:μ]', 'time-varying-lr[:decay]'."""
    name, _, arg = str(spec).partition(":")
    table = {"sgd": SGD, "momentum": LocalMomentum, "proximal": Proximal, "time-varying-lr": TimeVaryingLR}
    if name not in table:
        raise ValueError(f"local optimizer must be one of {sorted(table)} (optionally ':value'), got {spec!r}")
    if name == "sgd":
        return SGD()
    if not arg:
        return table[name]()
    try:
        value = float(arg)
    except ValueError:
        raise ValueError(f"local optimizer {spec!r}: {arg!r} is not a number (e.g. momentum:0.9, proximal:0.1)")
    return table[name](value)
