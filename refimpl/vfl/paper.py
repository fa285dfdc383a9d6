"""[FlexVFL] as the tools see it: Flex-VFL, Adaptive Flex-VFL and the vertical baselines on a
simulated clock, their options, conventions, replay inputs and dump quantities (one description,
registered in :mod:`refimpl.papers`)."""
from __future__ import annotations

from refimpl.core.paper import Convention, Opt, Paper, ReplayInput
from refimpl.vfl.conventions import (ADAPTIVE_RULES, BATCH_ORDERS, CONVENTIONS, INIT_SCHEMES, METHODS, MOMENTUM,
                                     RUN_PROTOCOLS, SERVER_TIME_UNITS)

_HELP = {
    "flexvfl": "Flex-VFL, [FlexVFL] Algorithm 1, on a simulated clock",
    "adaptive-flexvfl": "Adaptive Flex-VFL, [FlexVFL] Algorithm 2",
    "sync-vfl": "synchronous VFL baseline (Q local steps, the slowest party sets the pace)",
    "async-vfl": "asynchronous VFL baseline (VAFL-style event queue)",
    "pbcd": "parallel block coordinate descent baseline (one local step per round)",
}
ALGORITHMS = {m: _HELP[m] for m in METHODS}
_ROUND_VFL = tuple(m for m in METHODS if m != "async-vfl")


def _convention(option, first, acts_on, help_, replay=""):
    row = CONVENTIONS[option]
    return Convention(option, row["allowed"], None, first, acts_on, help_ + f" (default: the protocol's, "
                      f"{row['refimpl']} under refimpl, {row['authors']} under authors)", replay)


class VFLPaper(Paper):
    key = "vfl"
    title = "Flexible Vertical Federated Learning with Heterogeneous Parties"
    citation = ("Timothy Castiglia, Shiqiang Wang, Stacy Patterson: " + title
                + " (IEEE Transactions on Neural Networks and Learning Systems, 2023)")
    short_name = "Flex-VFL"
    cite_key = "[FlexVFL]"
    algorithms = ALGORITHMS
    method_field = "method"
    length_field = "rounds"
    options = (
        Opt("parties", "number of parties K (4: image quadrants of 28×28 data)"),
        Opt("encoder", "party encoder: linear | swish, or a comma list, one per party", text=True),
        Opt("embed_dim", "embedding size O_k"),
        Opt("hidden", "hidden width of swish encoders"),
        Opt("optimizer", "sgd | momentum[:ρ] | proximal[:μ] | time-varying-lr[:d], or a server,parties list",
            text=True),
        Opt("eta", "learning rate(s) η_k, server first (not adaptive-flexvfl: its rates come from --A)", text=True),
        Opt("A", "Adaptive Flex-VFL constants A_k of η_k = A_k / (τ_k w̄_k)", ("adaptive-flexvfl",), text=True),
        Opt("batch", "mini-batch size"),
        Opt("rounds", "cap on global rounds (async: events)", default=1000),
        Opt("time_budget", "stop at this simulated time"),
        Opt("timeout", "round timeout in simulated time (Flex-VFL; every method: the unit of S with "
            "--server-time-unit timeout-over-Q, as under --protocol authors)"),
        Opt("Q", "local steps per round of synchronous VFL (Flex-VFL: the server's steps under --protocol authors; "
            "every method: the unit of S with --server-time-unit timeout-over-Q)"),
        Opt("speeds", "step times: constant | lognormal | markov | trace | cputrace | steptimes:TRACE (docs/flexvfl.md)", text=True),
        Opt("bandwidth", "bytes per simulated second"),
        Opt("latency", "simulated seconds per message"),
        Opt("server_time", "server round trip S per round (async: per event), see --server-time-unit"),
        Opt("protocol", "authors: the authors' code's conventions (docs/flexvfl.md)",
            choices=RUN_PROTOCOLS),
        Opt("labels", "who holds the labels", choices=("all", "server")),
        Opt("target", "stop when the test accuracy reaches this value"),
        Opt("eval_every", "rounds between test-accuracy evaluations"),
        Opt("loss_every", "training loss at every n-th evaluation only (NaN between; time-to-target runs)"),
        Opt("theory_every", "rounds between evaluations of Σ_k ||∇_k F||² (0: never)"),
        Opt("smoothness", "condition (14): none | estimate | L,L_0,...,L_K", text=True),
        Opt("momentum", "local optimizer state: reset every round (paper) or persistent (default: the protocol's)",
            _ROUND_VFL, choices=MOMENTUM),
        Opt("batch_order", "mini-batches: independent draws (paper) or one permutation per epoch (authors)",
            _ROUND_VFL, choices=BATCH_ORDERS),
        Opt("adaptive_rule", "η^{r+1} = A/(τ w̄) (paper) or lr τ_prev/τ (authors' code)", ("adaptive-flexvfl",),
            choices=ADAPTIVE_RULES),
        Opt("server_time_unit", "unit of S: step (the fastest party's mean step) or timeout-over-Q (authors' plots)",
            choices=SERVER_TIME_UNITS, metavar="UNIT"),
        Opt("init_scheme", "initial point: Glorot-uniform (refimpl) or torch's defaults + N(0, 0.01) head (authors)",
            choices=INIT_SCHEMES),
        Opt("feature_blocks", "FILE.json: one list of feature indices per party, every feature once (default: the four "
            "image quadrants of 28×28 data with 4 parties, else contiguous blocks)", text=True, metavar="FILE"),
        Opt("init", "FILE.npz/.mat with theta0 (server head) … thetaK, or a trace.npz (docs/guide.md)", text=True),
        Opt("batches", "FILE.npy (rounds, B) of 0-based sample ids (async-vfl: one row per event), or a trace.npz",
            text=True),
        Opt("index_base", "the id of the first sample in --batches: 0, or 1 (MATLAB's 1-based ids)", choices=(0, 1),
            kind=int),
        Opt("taus", "FILE.npy (rounds, K+1) of local steps per round, server first, or a trace.npz", _ROUND_VFL,
            text=True),
        Opt("dump_rounds", "rounds whose intermediate quantities the trace stores: 1,2,10 | all", _ROUND_VFL,
            default="", text=True),
        Opt("seed", "seed of the run's numpy.random.Generator"),
        Opt("diverge_cost_factor", "diverged when the training loss exceeds this × its initial value"),
        Opt("diverge_sq_norm", "diverged when Σ_k ||θ_k||² exceeds this"),
    )

    conventions = (
        _convention("momentum", "momentum<k>", "arithmetic", "local optimizer state reset every round or kept"),
        _convention("batch_order", "batch", "inputs", "independent mini-batch draws or one permutation per epoch",
                    "batches"),
        _convention("adaptive_rule", "eta", "arithmetic", "Adaptive Flex-VFL's rate: the paper's or the authors' code's"),
        _convention("server_time_unit", "tau", "arithmetic", "the unit of the server time S on the clock"),
        _convention("init_scheme", "theta<k>", "inputs", "Glorot-uniform or torch's initialisation",
                    r"(init_)?theta0"),
        Convention("protocol", RUN_PROTOCOLS, "refimpl", "tau", "bundle",
                   "the protocol: server τ = Q with free server compute, and every convention above (authors)"),
    )
    dump_order = ("batch", "H", "dh<k>", "tau", "eta", "theta<k>", "grad<k>", "momentum<k>", "w_bar", "W")
    # within a round: row t of theta<k> is local step t's input, rows t of grad<k> and momentum<k>
    # what step t computes from it (θ^{r,t} → g^{r,t} → u^t → θ^{r,t+1})
    step_quantities = ("theta<k>", "grad<k>", "momentum<k>")
    dump_markers = (r"theta\d+",)
    id_names = ("batch", "batches")
    replay_inputs = (ReplayInput(r"init_theta\d+", "initial point"), ReplayInput("batches", "batch schedule"),
                     ReplayInput("tau", "τ table"))
    command_module = "refimpl.vfl.command"
    vectors_module = "refimpl.conformance.families.vfl"
    kernels_module = "refimpl.vfl.kernels"
    checks_module = "refimpl.verification.vfl"
    mutation_prefixes = ("vfl.", "core.", "tools.")
    reproductions = ("vfl-time",)

    def config_class(self):
        from refimpl.vfl.experiment import VFLConfig
        return VFLConfig

    def validated(self, cfg):
        cfg.method_key()
        cfg.check_numbers()
        return cfg

    def run(self, cfg, data=None, replay=None, progress=None):
        from refimpl.vfl.experiment import run_vfl
        return run_vfl(cfg, data, progress)

    def replay_from(self, arrays, path):
        return {"init": path if any(k.startswith(("theta0", "init_theta0")) for k in arrays) else None,
                "batches": path if "batches" in arrays else None,
                "index_base": 0,            # a dump's and a trace's ids are 0-based, whatever OURS's run read
                "taus": path if "tau" in arrays else None}, {}

    def pinning_argv(self, trace_dir, algorithm, config):
        """The initial parameters, the batches (async: one per event), the step times as drawn
        (which fix the simulated clock and the asynchronous event order) and, for the round-based
        methods, the local step counts with τ^0."""
        d = str(trace_dir)
        argv = ["--init", d, "--batches", d, "--speeds", f"steptimes:{d}"]
        return argv if algorithm == "async-vfl" else argv + ["--taus", d]

    def entry_words(self, quantity, index, config, data=None):
        """theta<k>, grad<k>, momentum<k> (row: the local step; column: party k's flat block): the
        layer, row and column — the head (L × (ΣO_k + 1)), a linear encoder (O × (D_k + 1)) or a
        swish encoder (W1 (J × (D_k + 1)) then W2 (O × (J + 1))); column 0 is the bias."""
        import re as _re
        m = _re.fullmatch(r"(theta|grad|momentum)(\d+)", quantity)
        if m is None or data is None or len(index) != 2:
            return None
        from refimpl.vfl.experiment import _list, vertical_data
        k, (step, flat) = int(m.group(2)), (int(index[0]), int(index[1]))
        K, O = int(config["parties"]), int(config["embed_dim"])
        if k == 0:
            layers = [("head", int(data.n_classes), K * O + 1)]
        else:
            D = vertical_data(data, K, config.get("feature_blocks")).Xs_train[k - 1].shape[1]
            kind = _list(config["encoder"], K, "encoder")[k - 1]
            J = int(config["hidden"])
            layers = ([("W", O, D + 1)] if kind == "linear" else [("W1", J, D + 1), ("W2", O, J + 1)])
        for name, rows, cols in layers:
            if flat < rows * cols:
                r, c = divmod(flat, cols)
                return f"party {k}, local step {step}, {name}[{r}, {c}]" + (" (bias)" if c == 0 else "")
            flat -= rows * cols
        return None

    def replay_from_dump(self, dump):
        """Θ^{1,0} from round 1's theta<k> (row 0: the local steps' input), and — when every round
        1..R is dumped — the batch schedule and the τ table from r<t>_batch and r<t>_tau."""
        import re

        import numpy as np
        out = {}
        first = dump.get(1, {})
        for name, arr in first.items():
            m = re.fullmatch(r"theta(\d+)", name)
            if m and np.ndim(arr) >= 2:
                out[f"init_theta{m.group(1)}"] = np.asarray(arr)[0]
        rounds = sorted(dump)
        if rounds and rounds == list(range(1, rounds[-1] + 1)):
            for name, key in (("batch", "batches"), ("tau", "tau")):
                rows = [dump[r].get(name) for r in rounds]
                if all(x is not None for x in rows) and len({np.shape(x) for x in rows}) == 1:
                    out[key] = np.stack([np.asarray(x) for x in rows])
                elif name == "batch" and all(x is not None and np.ndim(x) == 1 for x in rows):
                    from refimpl.vfl.policies import padded_schedule     # a shorter batch: −1 padding
                    out[key] = padded_schedule([np.asarray(x) for x in rows])
        return out

    def rerun_changes(self, changes):
        if changes.get("protocol") == "authors":
            # the protocol's step counts only: THEIR batches and initial point stay
            changes = {**changes, "batch_order": "independent", "init_scheme": "glorot", "server_time_unit": "step"}
        return changes

    def plan(self, name, quick=True, rounds=None, paper=False, n_train=4000, preset="paper"):
        if name != "vfl-time":
            return super().plan(name)
        from refimpl.vfl.reproductions import time_plan
        return time_plan(quick, rounds, paper)

    def cost(self, cfg):
        return cfg.rounds * 0.05

    def horizon(self, cfgs):
        cfg = cfgs[0]
        return f"time budget {cfg.time_budget:g}, at most {cfg.rounds} rounds"


PAPER = VFLPaper()
