"""[SSCA] as the tools see it: Mini-batch SSCA for sample-based and feature-based federated
learning, its baselines, options, conventions, replay inputs and dump quantities (one description,
registered in :mod:`refimpl.papers`)."""
from __future__ import annotations

from refimpl.core.model import ACTIVATIONS
from refimpl.core.paper import Convention, Opt, Paper, ReplayInput
from refimpl.ssca.protocols import SAMPLINGS
from refimpl.ssca.surrogate import CURVATURES

ALGORITHMS = {
    "ssca": "mini-batch SSCA, [SSCA] Algorithms 1 (sample-based) and 3 (feature-based)",
    "ssca-constrained": "constrained mini-batch SSCA, [SSCA] Algorithms 2 and 4 (problem (40))",
    "sgd": "SGD / FedAvg baseline of [SSCA] Section VI",
    "sgdm": "SGD with momentum (SGD-m) baseline of [SSCA] Section VI",
}
_BASELINES = ("sgd", "sgdm")
_SSCA_STEP = ("ssca", "ssca-constrained")


class SSCAPaper(Paper):
    key = "ssca"
    title = ("Sample-based and Feature-based Federated Learning for Unconstrained and Constrained Nonconvex "
             "Optimization via Mini-batch SSCA")
    citation = "Ying Cui, Yangchen Li, Chencheng Ye: " + title + " (IEEE Transactions on Signal Processing, 2022)"
    short_name = "SSCA"
    cite_key = "[SSCA]"
    algorithms = ALGORITHMS
    method_field = "algorithm"
    length_field = "rounds"
    options = (
        Opt("setting", "sample- or feature-based FL", choices=("sample", "feature")),
        Opt("preset", "the paper's table, or the authors' scripts (ReLU, bias, a1/a2/α/τ, A = τ)",
            choices=("paper", "authors")),
        Opt("batch", "mini-batch size, per client (sample) or per round (feature)"),
        Opt("rounds", "communication rounds T"),
        Opt("clients", "number of clients K (default: 10, or the number of --feature-blocks)", kind=int),
        Opt("hidden", "hidden width J of the two-layer network"),
        Opt("activation", "hidden activation", choices=ACTIVATIONS),
        Opt("bias", "bias as column 0 of W1 and W2 (the authors' MATLAB layout)", flag=True),
        Opt("lam", "λ of problem (32); a comma list runs the λ trade-off study", ("ssca",) + _BASELINES, text=True),
        Opt("U", "loss bound U of problem (40); a comma list runs the U trade-off study", ("ssca-constrained",), text=True),
        Opt("penalty", "slack penalty c of (41)", ("ssca-constrained",)),
        Opt("solver", "Lemma 1's closed form or cvxpy", ("ssca-constrained",),
            choices=("closed-form", "cvxpy")),
        Opt("per_client", "one loss constraint per client (needs --solver cvxpy)", ("ssca-constrained",), flag=True),
        Opt("ball_radius", "extra constraint ||ω|| <= r (needs --solver cvxpy)", ("ssca-constrained",)),
        Opt("cvxpy_solver", "cvxpy solver name", ("ssca-constrained",)),
        Opt("tau", "τ of surrogate (7) (default: the paper's for setting and batch)", _SSCA_STEP),
        Opt("curvature", "the paper's A-recursion, or A^t = τ (authors' code)", _SSCA_STEP,
            choices=CURVATURES),
        Opt("rho_a", "a1 of ρ_t = a1 / t^α", _SSCA_STEP),
        Opt("rho_alpha", "α of ρ_t (default: the paper's for setting and batch)", _SSCA_STEP),
        Opt("gamma_a", "a2 of γ_t = a2 / t^(α+0.05)", _SSCA_STEP),
        Opt("gamma_alpha", "exponent of γ_t (default: α + 0.05)", _SSCA_STEP),
        Opt("lr", "η0 of the learning rate η_t = η0 / t^β", _BASELINES),
        Opt("lr_decay", "β of η_t", _BASELINES),
        Opt("momentum", "momentum m of SGD-m", ("sgdm",)),
        Opt("local_steps", "local steps E per round (sample-based; E > 1 is FedAvg)", _BASELINES),
        Opt("partition", "contiguous | iid | label_skew | dirichlet:α[:MIN] | quantity:σ", text=True),
        Opt("sampling", "B per client from its shard, or K·B pooled from all (authors' SSCA)",
            choices=SAMPLINGS),
        Opt("partition_file", "sample-based: JSON file, one list of sample ids per client", text=True),
        Opt("feature_blocks", "feature-based: JSON file, one list of feature indices per client", text=True),
        Opt("collection", "feature-based: three-step (Algorithm 3) or one-step (Remark 4)",
            choices=("three-step", "one-step"), metavar="MODE"),
        Opt("eval_every", "rounds between evaluations of the full training cost"),
        Opt("snapshots", "rounds whose iterates the trace keeps, e.g. 0,10,100", default="", text=True),
        Opt("dump_rounds", "rounds whose intermediate quantities the trace keeps: 1,2,10 | all", default="", text=True),
        Opt("authors_cost", "also record the authors' cost J (docs/ssca.md; on under --preset authors)", flag=True),
        Opt("backend", "kernels", choices=("numba", "numpy")),
        Opt("engine", "refimpl, or Flower's simulation engine (extra flower)",
            choices=("refimpl", "flower")),
        Opt("seed", "seed of the run's numpy.random.Generator"),
        Opt("diverge_cost_factor", "diverged when the training cost exceeds this × its initial value"),
        Opt("diverge_sq_norm", "diverged when ||ω||² exceeds this"),
    )

    # replay inputs of `refimpl run` that are files, not Config fields (flag → help)
    replay_args = (("init", "FILE.npz/.npy with W1, W2 (a trace's W1_0, W2_0, or one flat ω^0: W1 then W2, "
                            "row-major), the authors' initial_Theta1.mat (bias in column 0), or a run directory"),
                   ("batches", "FILE.npy/.npz/.mat (array batches) or a trace: sample ids, (T,K,B) sample-based, "
                               "(T,K·B) with --sampling pooled, (T,B) feature-based"),
                   ("index_base", "the id of the first sample in --batches: 0 (default), or 1 (MATLAB's 1-based ids)"))
    conventions = (
        Convention("curvature", CURVATURES, "recursive", "A", "arithmetic",
                   "the paper's A-recursion, or A^t = τ (the authors' code)"),
        Convention("activation", ACTIVATIONS, "swish", "client_loss", "arithmetic",
                   "the paper's swish, or the authors' ReLU"),
        Convention("sampling", SAMPLINGS, "per-client", "batch", "inputs",
                   "B per client from its shard, or K·B pooled from all (the authors' code)", "batches"),
        Convention("authors_cost", (False, True), False, "train_cost", "record",
                   "also record the authors' cost J"),
    )
    dump_order = ("batch", "omega", "client_count", "client_loss", "client_grad", "loss_hat", "grad_hat", "rho",
                  "gamma", "A", "B", "C", "omega_bar", "multiplier", "slack", "eta", "velocity", "omega_next")
    dump_markers = ("omega", "omega_next")
    id_names = ("batch", "batches")
    replay_inputs = (ReplayInput("W1_0", "initial point"), ReplayInput("W2_0", "initial point"),
                     ReplayInput("omega_0", "initial point"), ReplayInput("batches", "batch schedule"))
    command_module = "refimpl.ssca.command"
    vectors_module = "refimpl.conformance.families.ssca"
    kernels_module = "refimpl.ssca.kernels"
    checks_module = "refimpl.verification.ssca"
    mutation_prefixes = ("ssca.", "grad.", "kernels.", "core.", "tools.")
    reproductions = ("ssca-sample", "ssca-feature", "ssca-tradeoff")
    reproduction_presets = ("paper", "authors")
    paper_settings_n_train = 60000

    def config_class(self):
        from refimpl.ssca.experiment import RunConfig
        return RunConfig

    def validated(self, cfg):
        return cfg.resolved()

    def run(self, cfg, data=None, replay=None, progress=None):
        from refimpl.ssca.experiment import run_experiment
        replay = replay or {}
        return run_experiment(cfg, data, init=replay.get("init"), batches=replay.get("batches"), progress=progress)

    def replay_from(self, arrays, path):
        init = (arrays["W1_0"], arrays["W2_0"]) if "W1_0" in arrays and "W2_0" in arrays else arrays.get("omega_0")
        return {"snapshots": []}, {"init": init, "batches": arrays.get("batches")}

    def pinning_argv(self, trace_dir, algorithm, config):
        """The initial point (W1_0, W2_0) and the batch schedule; the clients' partition and the
        evaluation subsets come from the data, not the seed."""
        return ["--init", str(trace_dir), "--batches", str(trace_dir)]

    def plan(self, name, quick=True, rounds=None, paper=False, n_train=4000, preset="paper"):
        from refimpl.ssca import reproductions as R
        if name == "ssca-tradeoff":
            return R.tradeoff_plan(quick, rounds, paper, preset)
        if name in ("ssca-sample", "ssca-feature"):
            return R.convergence_plan(name.split("-")[1], quick, rounds, paper, n_train, preset=preset)
        return super().plan(name)

    #: the dump quantities the size of ω (one row per client for client_grad)
    omega_sized = ("omega", "omega_bar", "omega_next", "B", "grad_hat", "client_grad", "velocity")

    def entry_words(self, quantity, index, config, data=None):
        """An entry of a vector the size of ω (ω, ω̄, the next iterate, B, ĝ, a client's gradient):
        W1[row, column] or W2[row, column] of the flat ω (W1 then W2, row-major; column 0 is the
        bias with --bias). Needs the data's feature and class counts."""
        if data is None or not index or quantity not in self.omega_sized:
            return None
        J, bias = int(config.get("hidden", 0)), int(bool(config.get("bias")))
        D, L = int(data.n_features), int(data.n_classes)
        n1, n = J * (D + bias), J * (D + bias) + L * (J + bias)
        lead, flat = index[:-1], int(index[-1])
        if not J or flat >= n:
            return None
        row, col, name = ((flat // (D + bias), flat % (D + bias), "W1") if flat < n1 else
                          ((flat - n1) // (J + bias), (flat - n1) % (J + bias), "W2"))
        where = f"{name}[{row}, {col}]" + (" (bias)" if bias and col == 0 else "")
        return (f"client {lead[0]}, " if quantity == "client_grad" and lead else "") + where

    def figure_caption(self, name, plan):
        """SSCA's step sizes against the theorems' conditions (4) and (6), and FedAvg's local-step
        rule, under an ``ssca-sample`` / ``ssca-feature`` figure."""
        if name not in ("ssca-sample", "ssca-feature"):
            return None
        from refimpl.core.schedules import PowerLaw, check_step_sizes
        groups = {}
        for label, _, cfg in plan:
            c = cfg.resolved()
            if c.algorithm == "ssca":
                groups.setdefault((c.rho_a, c.rho_alpha, c.gamma_a, c.gamma_alpha), []).append(label)
        parts = []
        for (ra, rp, ga, gp), labels in groups.items():
            failed = [v.name for v in check_step_sizes(PowerLaw(ra, rp), PowerLaw(ga, gp)) if not v.met]
            verdict = ("meets (4) and (6)" if not failed else
                       f"is outside the theorems' conditions ({', '.join(failed)}): no convergence guarantee, "
                       "and the training cost may spike early")
            parts.append(f"{', '.join(labels)}: ρ_t = {ra:g}/t^{rp:g}, γ_t = {ga:g}/t^{gp:.3g} {verdict}")
        if any(label.startswith("FedAvg") for label, _, _ in plan):
            parts.append("FedAvg E = min(5, ⌊N_k / B⌋) local steps: E·B distinct samples per client and round")
        return "; ".join(parts) or None

    def tune_grids(self, name, batch, rounds, every, n_train=None):
        if name not in ("ssca-sample", "ssca-feature"):
            return None
        from refimpl.ssca.reproductions import tune_grids
        return tune_grids(name.split("-")[1], batch, rounds, every, n_train)

    def tuned_settings(self, cfg):
        from refimpl.ssca.reproductions import tuned_settings
        return tuned_settings(cfg)

    def replay_from_dump(self, dump):
        """From a dump in the documented per-round names: the batch schedule from r<t>_batch when
        every round 1..T is dumped ((T, K, B) sample-based, (T, B) feature-based), and the initial
        point ω^0 from r1_omega (the flat vector: W1 then W2, row-major; the run checks its length
        against the network's), as ``omega_0``."""
        import numpy as np
        rounds = sorted(dump)
        out = {}
        if rounds and rounds[0] == 1 and dump[1].get("omega") is not None and np.ndim(dump[1]["omega"]) == 1:
            out["omega_0"] = np.asarray(dump[1]["omega"])
        if not rounds or rounds != list(range(1, rounds[-1] + 1)):
            return out
        rows = [dump[r].get("batch") for r in rounds]
        if any(x is None for x in rows) or len({np.shape(x) for x in rows}) != 1:
            return out
        return {**out, "batches": np.stack([np.asarray(x) for x in rows])}

    def cost(self, cfg):
        c = cfg.resolved()
        return c.rounds * (c.batch * c.local_steps * (c.clients if c.setting == "sample" else 1) + 2000) * 1e-6

    def preflight(self, label, cfg, ds):
        c = cfg.resolved()
        per_round = c.batch * c.local_steps
        room = ds.n_train // c.clients if c.setting == "sample" else ds.n_train
        if per_round > room:
            raise ValueError(f"reproduction run {label!r} needs batches of {per_round} samples but the data give "
                             f"{'each client' if c.setting == 'sample' else 'the server'} only {room}; use larger data "
                             "(--data-dir) or another reproduction")


PAPER = SSCAPaper()
