"""When a run counts as diverged: caught while the numbers are still finite, so a blow-up ends
with status ``diverged`` and the round and quantity named, never as a "finished" run holding
1e90-sized iterates.

A run diverges when its training cost (SSCA, VFL: the loss on the training set; MFCGD: the
stationarity measure ||∇F(x̄_t)||) exceeds ``cost_factor`` times its value at the initial point,
or when the squared norm of its iterate exceeds ``max_sq_norm``, or when either is not finite.
Both limits are set far above anything a converging run reaches (the initial cost of the default
networks is about 2.3 and their ||ω||² about 10²–10³) and are configurable per run.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


def check_limits(cfg):
    """A run configuration's ``diverge_cost_factor`` and ``diverge_sq_norm``, checked and named by
    their fields (the command line names the flags that set them)."""
    for name in ("diverge_cost_factor", "diverge_sq_norm"):
        _check_limit(name, getattr(cfg, name))


def _check_limit(name, v):
    if isinstance(v, bool) or not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {v!r}")


@dataclass(frozen=True)
class DivergenceRule:
    cost_factor: float = 1e3
    max_sq_norm: float = 1e12

    def __post_init__(self):
        for name in ("cost_factor", "max_sq_norm"):
            _check_limit(f"divergence {name}", getattr(self, name))

    def cost(self, name, value, initial):
        """The reason the cost ``value`` counts as diverged, or None."""
        value = float(value)
        if not math.isfinite(value):
            return f"{name} is not finite ({value})"
        if math.isfinite(initial) and abs(value) > self.cost_factor * max(abs(initial), 1e-300):
            return f"{name} {value:.4g} exceeds {self.cost_factor:g} x its initial value {initial:.4g}"
        return None

    def sq_norm(self, name, value):
        """The reason the squared norm ``value`` counts as diverged, or None."""
        value = float(value)
        if not math.isfinite(value):
            return f"{name} is not finite ({value})"
        if value > self.max_sq_norm:
            return f"{name} {value:.4g} exceeds the bound {self.max_sq_norm:g}"
        return None
