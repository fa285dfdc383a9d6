"""The toy paper's description: everything refimpl's tools need, in one place."""
from __future__ import annotations

from refimpl.core.paper import Convention, Opt, Paper, ReplayInput

from toypaper.algorithm import AGGREGATIONS, SCHEDULES


class ToyPaper(Paper):
    key = "toy"
    title = "FedAvg on least squares (a test's paper)"
    short_name = "Toy"
    citation = "refimpl's tests: " + title
    cite_key = "[Toy]"
    algorithms = {"toy-fedavg": "FedAvg on a least-squares problem (the toy paper)"}
    method_field = "method"
    length_field = "rounds"
    options = (
        Opt("rounds", "communication rounds T"),
        Opt("clients", "number of clients K"),
        Opt("dim", "dimension d"),
        Opt("lr", "step size"),
        Opt("local_steps", "local steps E per round"),
        Opt("aggregation", "the server's average", choices=AGGREGATIONS),
        Opt("schedule", "step sizes: constant or lr/√t", choices=SCHEDULES),
        Opt("seed", "seed of the problem and the initial point"),
        Opt("eval_every", "rounds between evaluations of F"),
        Opt("dump_rounds", "rounds whose intermediate quantities the trace keeps", default="", text=True),
        Opt("init", "FILE.npz with z0, or a trace.npz", text=True),
    )
    conventions = (
        Convention("aggregation", AGGREGATIONS, "mean", "z_next", "arithmetic", "the server's average"),
        Convention("schedule", SCHEDULES, "constant", "lr", "arithmetic", "the step size schedule"),
    )
    dump_order = ("z", "lr", "g", "z_next")
    dump_markers = ("z_next",)
    replay_inputs = (ReplayInput("z0", "initial point"),)
    checks_module = "toypaper.checks"
    vectors_module = "toypaper.vectors"
    mutation_prefixes = ("toy.",)

    def config_class(self):
        from toypaper.algorithm import ToyConfig
        return ToyConfig

    def needs_data(self, cfg):
        return False

    def run(self, cfg, data=None, replay=None, progress=None):
        from toypaper.algorithm import run_toy
        return run_toy(cfg, progress)

    def replay_from(self, arrays, path):
        return {"init": path if "z0" in arrays else None}, {}


PAPER = ToyPaper()
