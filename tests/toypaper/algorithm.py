"""The toy paper's run: T rounds of FedAvg with E local steps per client; the conventions are
the aggregation (the plain mean of the client models, or weighted by n_k) and the step size
schedule (constant lr, or lr/√t)."""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from refimpl.core.replay import parse_dump_rounds, read_arrays
from refimpl.core.trace import Trace

from toypaper.problem import Problem, gradient, local_step

AGGREGATIONS = ("mean", "weighted")
SCHEDULES = ("constant", "decay")


@dataclass
class ToyConfig:
    method: str = "toy-fedavg"
    rounds: int = 20
    clients: int = 4
    dim: int = 5
    lr: float = 0.05
    local_steps: int = 2
    aggregation: str = "mean"
    schedule: str = "constant"
    seed: int = 0
    eval_every: int = 1
    dump_rounds: str = ""
    init: str | None = None

    def validate(self):
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {self.aggregation!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        for f in ("rounds", "clients", "dim", "local_steps", "eval_every"):
            if int(getattr(self, f)) < 1:
                raise ValueError(f"{f} must be >= 1, got {getattr(self, f)}")
        return self


def run_toy(cfg, progress=None):
    cfg.validate()
    pr = Problem.random(cfg.clients, cfg.dim, cfg.seed)
    if cfg.init:
        arrays = read_arrays(cfg.init, "--init")
        z = np.asarray(arrays["z0"], dtype=np.float64)
    else:
        z = np.random.default_rng(cfg.seed + 1).standard_normal(cfg.dim)
    sizes = np.array([len(b) for b in pr.b], dtype=np.float64)
    weights = sizes / sizes.sum() if cfg.aggregation == "weighted" else np.full(cfg.clients, 1.0 / cfg.clients)
    dumps = set(parse_dump_rounds(cfg.dump_rounds, cfg.rounds))
    tr = Trace(config=asdict(cfg), metrics={"round": [], "loss": []})
    tr.arrays["z0"] = z.copy()
    tr.record(round=0, loss=pr.loss(z))
    for t in range(1, cfg.rounds + 1):
        lr = cfg.lr if cfg.schedule == "constant" else cfg.lr / np.sqrt(t)
        grads, models = [], []
        for A, b in zip(pr.A, pr.b):
            zk = z.copy()
            grads.append(gradient(A, b, zk))
            for _ in range(cfg.local_steps):
                zk = local_step(A, b, zk, lr)
            models.append(zk)
        z_next = weights @ np.array(models)
        if t in dumps:
            tr.arrays.update({f"r{t}_z": z.copy(), f"r{t}_lr": np.array(lr), f"r{t}_g": np.array(grads),
                              f"r{t}_z_next": z_next.copy()})
        z = z_next
        if t % cfg.eval_every == 0 or t == cfg.rounds:
            tr.record(round=t, loss=pr.loss(z))
            if progress:
                progress(t, z)
    tr.status = "finished"
    return tr
