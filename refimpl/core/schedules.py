"""Step-size schedules ρ_t, γ_t and the checker of [SSCA]'s rules (4) and (6).

(4):  ρ_t ∈ (0, 1],  ρ_t → 0,  Σ ρ_t = ∞,  Σ ρ_t² < ∞
(6):  γ_t ∈ (0, 1],  γ_t → 0,  Σ γ_t = ∞,  Σ γ_t² < ∞,  γ_t / ρ_t → 0

For power laws a / t^α the verdict is analytic (Σ t^−α = ∞ iff α ≤ 1, Σ t^−2α < ∞ iff α > 1/2,
γ/ρ → 0 iff γ's exponent is larger). For a user-supplied finite sequence nothing about the
infinite tail can be known; the checker fits the tail exponent on the last half (log–log
least squares) and applies the power-law criteria to it, marking every verdict "estimated".
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PowerLaw:
    """s_t = a / t^α for t = 1, 2, … (the experiments' ρ_t = a1/t^α, γ_t = a2/t^(α+0.05))."""

    a: float
    alpha: float

    def __post_init__(self):
        if not (0.0 < self.a <= 1.0):
            raise ValueError(f"power-law scale a = {self.a} must be in (0, 1] so that s_1 = a "
                             "lies in (0, 1] as (4)/(6) require")
        if not (self.alpha >= 0.0 and np.isfinite(self.alpha)):
            raise ValueError(f"power-law exponent alpha = {self.alpha} must be finite and >= 0")

    def __call__(self, t):
        return self.a / float(t) ** self.alpha

    def values(self, T):
        return self.a / np.arange(1, T + 1, dtype=np.float64) ** self.alpha

    def describe(self):
        return f"{self.a:g}/t^{self.alpha:g}"


@dataclass(frozen=True)
class Sequence:
    """A user-supplied finite schedule s_1, …, s_T (e.g. read from a file)."""

    s: np.ndarray
    #: False: values outside (0, 1] are kept, so that :func:`check_step_sizes` reports the
    #: condition as not met (``refimpl check-schedule``) instead of refusing the sequence
    check_range: bool = True
    #: where the values came from (a file name, an expression), for :meth:`describe`
    label: str = ""

    def __post_init__(self):
        arr = np.asarray(self.s, dtype=np.float64).ravel()
        if arr.size == 0 or not np.all(np.isfinite(arr)):
            raise ValueError("a step-size sequence must be non-empty and finite")
        bad = np.flatnonzero((arr <= 0) | (arr > 1))
        if bad.size and self.check_range:
            raise ValueError(f"step size at t = {bad[0] + 1} is {arr[bad[0]]}, outside (0, 1] "
                             "as required by (4)/(6)")
        object.__setattr__(self, "s", arr)

    def __call__(self, t):
        if t > self.s.size:
            raise ValueError(f"schedule has {self.s.size} values; round {t} asked for")
        return float(self.s[t - 1])

    def values(self, T):
        return np.array([self(t) for t in range(1, T + 1)])

    def describe(self):
        return f"sequence of {self.s.size} values" + (f" ({self.label})" if self.label else "")


@dataclass(frozen=True)
class Condition:
    name: str
    equation: str
    met: bool
    reason: str


def _decay(sched):
    """(exponent, estimated?) of a schedule's tail: a power law's own exponent, or the slope fitted
    on a sequence's last half in log–log (0 for fewer than 4 values: no decay can be told)."""
    if isinstance(sched, PowerLaw):
        return sched.alpha, False
    s = sched.s
    n = s.size
    if n < 4:
        return 0.0, True
    t = np.arange(1, n + 1, dtype=np.float64)[n // 2:]
    slope, _ = np.polyfit(np.log(t), np.log(s[n // 2:]), 1)
    return float(-slope), True


def check_step_sizes(rho, gamma):
    """Verdict on each condition of (4) (for ρ) and (6) (for γ); returns a list of Condition."""
    out = []
    for label, eq, sched in (("rho", "(4)", rho), ("gamma", "(6)", gamma)):
        p, est = _decay(sched)
        how = f"tail exponent {'≈' if est else '='} {p:.3g}" + (" (estimated from a finite sequence)" if est else "")
        vals = sched.s if isinstance(sched, Sequence) else sched.values(1000)
        in_range = bool(np.all((vals > 0) & (vals <= 1)))
        which = (f"all {vals.size} values of the sequence checked" if isinstance(sched, Sequence)
                 else "the first 1000 values of the power law checked (it decreases after them)")
        if not in_range:
            i = int(np.flatnonzero((vals <= 0) | (vals > 1))[0])
            which += f"; {label}_{i + 1} = {vals[i]:g} is outside (0, 1]"
        out.append(Condition(f"{label}_in_(0,1]", eq, in_range, which))
        out.append(Condition(f"{label}_to_0", eq, p > 0, how + "; → 0 iff exponent > 0"))
        out.append(Condition(f"sum_{label}_infinite", eq, p <= 1, how + "; Σ t^−p = ∞ iff p ≤ 1"))
        out.append(Condition(f"sum_{label}_sq_finite", eq, 2 * p > 1, how + "; Σ t^−2p < ∞ iff p > 1/2"))
    pr, _ = _decay(rho)
    pg, _ = _decay(gamma)
    out.append(Condition("gamma_over_rho_to_0", "(6)", pg > pr,
                         f"γ/ρ ~ t^−({pg:.3g} − {pr:.3g}); → 0 iff γ decays faster than ρ"))
    return out


def meets_conditions(rho, gamma):
    """True when every condition of (4) and (6) holds."""
    return all(c.met for c in check_step_sizes(rho, gamma))
