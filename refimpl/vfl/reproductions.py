"""[FlexVFL]'s reproduction: the run plan of ``refimpl reproduce vfl-time`` (test accuracy against
simulated time, every method on one clock)."""
from __future__ import annotations

from dataclasses import replace

from refimpl.vfl.conventions import METHODS
from refimpl.vfl.experiment import VFLConfig


def time_plan(quick, rounds, paper):
    budget = 300.0 if quick else 1500.0
    R = rounds or (200 if quick else 1000)
    base = VFLConfig(rounds=R, time_budget=budget, eta="0.03")
    plan = [(m, "vfl", replace(base, method=m, eta="0.1" if m == "async-vfl" else base.eta))
            for m in METHODS]
    return plan, ("time", ("test_accuracy",))
