"""[MFCGD]'s reproduction: the run plan of ``refimpl reproduce mfcgd-rates`` (||∇F|| against
samples and communication rounds, Algorithm 1 against the baselines)."""
from __future__ import annotations

from dataclasses import replace

from refimpl.mfcgd.experiment import MFCGDConfig


def rates_plan(quick, rounds, paper):
    T = rounds or (3000 if quick else 30000)
    base = MFCGDConfig(steps=T, eval_every=max(1, T // 200), heterogeneity=0.1)
    plan = [("MFCGD", "mfcgd", replace(base, method="mfcgd")),
            ("AdaMFCGD", "mfcgd", replace(base, method="adamfcgd", gamma=0.1)),
            ("ComFedL", "mfcgd", replace(base, method="comfedl", eta=0.1, beta=0.5)),
            ("Local-SCGDM", "mfcgd", replace(base, method="local-scgdm", eta=0.1, beta=0.5))]
    return plan, ("samples", ("grad_norm", "rounds"))
