"""[MFCGD] as the tools see it: MFCGD and AdaMFCGD for federated compositional optimisation and
the compositional baselines, their options, conventions, replay inputs and dump quantities (one
description, registered in :mod:`refimpl.papers`)."""
from __future__ import annotations

from refimpl.core.paper import Convention, Opt, Paper, ReplayInput

ALGORITHMS = {
    "mfcgd": "MFCGD, [MFCGD] Algorithm 1 with A_t = I",
    "adamfcgd": "AdaMFCGD, [MFCGD] Algorithm 1 with an adaptive matrix",
    "comfedl": "ComFedL-style local SCGD baseline",
    "local-scgdm": "Local-SCGDM baseline",
    "scgd": "single-machine SCGD baseline (M = 1)",
    "storm": "single-machine STORM-compositional baseline",
}
MATRICES = ("adam", "norm", "amsgrad")
_STORM_LIKE = ("mfcgd", "adamfcgd", "storm")
_SCGD_LIKE = ("comfedl", "local-scgdm", "scgd")


class MFCGDPaper(Paper):
    key = "mfcgd"
    title = "Faster Adaptive Momentum-Based Federated Methods for Distributed Composition Optimization"
    citation = "Feihu Huang: " + title + " (arXiv:2211.01883, 2022)"
    short_name = "MFCGD"
    cite_key = "[MFCGD]"
    algorithms = ALGORITHMS
    method_field = "method"
    length_field = "steps"
    data_note = "problem drfl"
    options = (
        Opt("problem", "problem class", choices=("synthetic", "nonlinear", "drfl", "maml")),
        Opt("clients", "number of clients M", ("mfcgd", "adamfcgd", "comfedl", "local-scgdm")),
        Opt("dim", "dimension d (synthetic, maml)"),
        Opt("steps", "steps T"),
        Opt("q", "communication period q", ("mfcgd", "adamfcgd", "comfedl", "local-scgdm")),
        Opt("k", "k of η_t = k / (n + t)^(1/3)", _STORM_LIKE),
        Opt("n", "n of η_t", _STORM_LIKE),
        Opt("c", "c1 = c2 = c3 of α, β, ϱ = c η_t²", _STORM_LIKE),
        Opt("gamma", "γ of the step γ η_t A_t^{-1} w", _STORM_LIKE),
        Opt("matrix", "adaptive matrix A_t", ("adamfcgd",), choices=MATRICES),
        Opt("rho", "ρ of A_t ⪰ ρI", ("adamfcgd",)),
        Opt("theta", "ϑ of the moving average a_t", ("adamfcgd",)),
        Opt("eta", "step size η of the baselines", _SCGD_LIKE, default=0.05),
        Opt("beta", "tracking weight β of the baselines", _SCGD_LIKE),
        Opt("alpha", "momentum weight α of Local-SCGDM", ("local-scgdm",)),
        Opt("heterogeneity", "client heterogeneity of the synthetic problem"),
        Opt("eval_every", "steps between evaluations of ||∇F|| (default: T/100)", default=None, kind=int),
        Opt("seed", "seed of the run's numpy.random.Generator"),
        Opt("problem_seed", "seed of the problem instance (default: --seed)", kind=int, default=None),
        Opt("backend", "numba kernel (synthetic problem) or plain NumPy", choices=("numba", "numpy")),
        Opt("diverge_cost_factor", "diverged when ||∇F(x̄_t)|| exceeds this × its value at step 1"),
        Opt("diverge_sq_norm", "diverged when ||x̄_t||² exceeds this (or is not finite)"),
        Opt("init", "FILE.npz/.mat with x1 (and h1, u1, v1 for the STORM-type methods), or a trace.npz", text=True),
        Opt("samples", "FILE.npz of the samples in the order the method consumes them (docs/guide.md), or a trace",
            text=True),
        Opt("keep_samples", "store the samples in the trace (a replay input)", flag=True),
        Opt("dump_rounds", "steps whose intermediate quantities the trace stores: 1,2,10 | all", default="", text=True),
    )

    conventions = (
        Convention("matrix", MATRICES, "adam", "A", "arithmetic", "AdaMFCGD's adaptive matrix A_t"),
    )
    dump_order = ("zeta", "xi", "x", "h", "u", "v", "w", "y", "m", "x_bar", "w_bar", "communication", "A", "eta",
                  "alpha", "beta", "varrho", "d", "x_next")
    dump_markers = ("x", "x_next")
    replay_inputs = (ReplayInput("x1", "initial point"), ReplayInput("init_x1", "initial point"),
                     ReplayInput(r"zeta.*|samples_.*", "samples"))
    command_module = "refimpl.mfcgd.command"
    vectors_module = "refimpl.conformance.families.mfcgd"
    checks_module = "refimpl.verification.mfcgd"
    mutation_prefixes = ("mfcgd.",)
    reproductions = ("mfcgd-rates",)

    def config_class(self):
        from refimpl.mfcgd.experiment import MFCGDConfig
        return MFCGDConfig

    def needs_data(self, cfg):
        return cfg.problem == "drfl"

    def run(self, cfg, data=None, replay=None, progress=None):
        from refimpl.mfcgd.experiment import run_mfcgd_config
        return run_mfcgd_config(cfg, data, progress)

    def replay_from(self, arrays, path):
        return {"init": path if ("x1" in arrays or "init_x1" in arrays) else None,
                "samples": path if any(k.startswith(("zeta", "samples_")) for k in arrays) else None}, {}

    def plan(self, name, quick=True, rounds=None, paper=False, n_train=4000, preset="paper"):
        if name != "mfcgd-rates":
            return super().plan(name)
        from refimpl.mfcgd.reproductions import rates_plan
        return rates_plan(quick, rounds, paper)

    def cost(self, cfg):
        return cfg.steps * 2e-4

    def horizon(self, cfgs):
        return f"{cfgs[0].steps} steps"


PAPER = MFCGDPaper()
