"""One run from a configuration: data → partition → protocol → algorithm → trace.

``RunConfig`` holds every setting of a run (the paper's defaults, docs/ssca.md); ``build``
assembles the objects and ``run_experiment`` drives them. All randomness derives from
``RunConfig.seed`` through ``numpy.random.SeedSequence.spawn``: child 0 draws the initial point,
child 1 the batch schedule, child 2 a random partition.
"""
from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass, field

import numpy as np

from refimpl.core import validate as V
from refimpl.core.data import Dataset
from refimpl.core.divergence import check_limits
from refimpl.core.partition import parse_partition
from refimpl.ssca.algorithms import train
from refimpl.ssca.assembly import (build, client_partition, read_feature_blocks,  # noqa: F401  (re-exported)
                                    run_inputs)
from refimpl.ssca.protocols import SAMPLINGS
from refimpl.ssca.surrogate import check_curvature

ALGORITHMS = ("ssca", "ssca-constrained", "sgd", "sgdm")
SETTINGS = ("sample", "feature")

#: τ and α of the paper's experiments by (setting, batch) (docs/ssca.md)
_PAPER_TAU = {"sample": {10: 0.1, 100: 0.05}, "feature": {10: 0.1, 100: 0.1}}
_PAPER_ALPHA = {"sample": {}, "feature": {10: 0.3}}

PRESETS = ("paper", "authors")
#: settings of the authors' MATLAB scripts (docs/ssca.md §7): (a1, a2, α, τ) by (setting, problem) and
#: batch; γ_t = a2/t^(α+0.05). Their sample-based unconstrained script has no B = 6000: the preset
#: uses their constrained script's values there (the same as the paper's table).
_AUTHORS = {
    ("sample", "ssca"): {10: (0.9, 0.5, 0.1, 0.2), 100: (0.3, 0.3, 0.1, 0.05), 6000: (1.0, 0.3, 0.1, 0.03)},
    ("feature", "ssca"): {10: (1.0, 0.3, 0.3, 0.1), 100: (1.0, 0.5, 0.1, 0.2), 1000: (1.0, 0.3, 0.1, 0.05)},
    ("sample", "ssca-constrained"): {10: (1.0, 0.3, 0.1, 0.1), 100: (1.0, 0.3, 0.1, 0.05), 6000: (1.0, 0.3, 0.1, 0.03)},
    ("feature", "ssca-constrained"): {10: (1.0, 0.3, 0.3, 0.1), 100: (1.0, 0.3, 0.1, 0.1), 1000: (1.0, 0.3, 0.1, 0.05)},
}


def preset_values(preset, setting, algorithm, batch):
    """The settings a preset fixes. "paper": none (the defaults are the paper's table);
    "authors": the authors' scripts — their network (ReLU, bias columns) and their recorded cost
    (``authors_cost``) for every algorithm, and
    for SSCA their a1, a2, α, τ by batch size with the curvature of their code (A^t = τ)."""
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {PRESETS}, got {preset!r}")
    if preset == "paper":
        return {}
    vals = {"activation": "relu", "bias": True, "authors_cost": True}
    if setting == "sample" and algorithm in ("ssca", "ssca-constrained"):
        vals["sampling"] = "pooled"      # their SSCA scripts pool the round's batch; their SGD ones do not
    if algorithm in ("ssca", "ssca-constrained"):
        table = _AUTHORS[(setting, algorithm)]
        if batch not in table:
            raise ValueError(f"--preset authors: the authors' {setting}-based {algorithm} script has no batch {batch}; "
                             f"allowed: {sorted(table)}")
        a1, a2, alpha, tau = table[batch]
        vals.update(rho_a=a1, gamma_a=a2, rho_alpha=alpha, gamma_alpha=alpha + 0.05, tau=tau, curvature="fixed")
    return vals


ENGINES = ("refimpl", "flower")


@dataclass
class RunConfig:
    algorithm: str = "ssca"
    setting: str = "sample"
    batch: int = 100                 # per client (sample-based) or the server's batch (feature-based)
    rounds: int = 1000
    clients: int | None = None       # None: 10, or the number of feature blocks given
    hidden: int = 128
    activation: str = "swish"
    bias: bool = False
    lam: float = 0.0
    tau: float | None = None         # None: the paper's value for (setting, batch)
    rho_a: float = 1.0
    rho_alpha: float | None = None   # None: the paper's α for (setting, batch)
    gamma_a: float = 0.3
    gamma_alpha: float | None = None  # None: α + 0.05
    lr: float = 0.3
    lr_decay: float = 0.3
    momentum: float = 0.9
    local_steps: int = 1
    partition: str = "contiguous"    # contiguous | iid | label_skew | dirichlet:α[:MIN_SIZE] | quantity:σ
    partition_file: str | None = None  # sample-based: JSON file with one list of sample ids per client
    designated: int = 0
    seed: int = 0
    eval_every: int = 1
    backend: str = "numba"
    snapshots: list = field(default_factory=list)
    dump_rounds: str = ""            # rounds whose intermediate quantities the trace stores: 1,2,10 | all
    authors_cost: bool = False       # also record the authors' cost J (one-vs-all cross-entropy of the softmax)
    sampling: str = "per-client"     # sample-based: B per client from its shard, or "pooled" K·B from all (authors)
    # constrained SSCA (Algorithms 2 and 4)
    U: float = 0.13
    penalty: float = 1e5
    solver: str = "closed-form"
    per_client: bool = False
    ball_radius: float | None = None
    cvxpy_solver: str = "CLARABEL"
    collection: str = "three-step"   # feature-based: Algorithm 3's steps, or Remark 4's one-step
    feature_blocks: str | None = None  # feature-based: JSON file with one list of feature indices per client
    diverge_cost_factor: float = 1e3   # diverged: training cost above this × its initial value
    diverge_sq_norm: float = 1e12      # diverged: ||ω||² above this
    curvature: str = "recursive"       # "recursive": the paper's A-recursion; "fixed": A^t = τ (authors' code)
    preset: str = "paper"              # "paper" (the paper's table) or "authors" (their scripts; its values win)
    engine: str = "refimpl"            # "flower": the same run through Flower's simulation engine

    def resolved(self):
        """A copy with the paper's defaults filled in and every value validated."""
        c = RunConfig(**asdict(self))
        bad = [s for s in c.snapshots if isinstance(s, bool) or not isinstance(s, (int, np.integer))
               or not 0 <= s <= c.rounds]
        if bad:
            raise ValueError(f"--snapshots {','.join(map(str, c.snapshots))}: {bad[0]!r} is not a round of this run "
                             f"(allowed: whole numbers 0..{c.rounds})")
        if c.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {c.algorithm!r}")
        if c.engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {c.engine!r}")
        if c.engine == "flower":
            if c.setting != "sample":
                raise ValueError("--engine flower runs the sample-based protocol only (--setting sample)")
            if c.local_steps != 1:
                raise ValueError("--engine flower runs SGD and SGD-m with one local step (--local-steps 1)")
            if c.algorithm == "ssca-constrained" and (c.solver != "closed-form" or c.per_client):
                raise ValueError("--engine flower runs constrained SSCA with the closed-form step (one constraint)")
        if c.setting not in SETTINGS:
            raise ValueError(f"setting must be one of {SETTINGS}, got {c.setting!r}")
        check_curvature(c.curvature)
        for k, v in preset_values(c.preset, c.setting, c.algorithm, c.batch).items():
            setattr(c, k, v)
        if c.sampling not in SAMPLINGS:
            raise ValueError(f"sampling must be one of {SAMPLINGS}, got {c.sampling!r}")
        if c.sampling == "pooled":
            for bad, why in ((c.setting != "sample", "the sample-based setting (--setting sample)"),
                             (c.local_steps != 1, "one local step (--local-steps 1)"),
                             (c.per_client, "one loss constraint (not --per-client)"),
                             (c.engine == "flower", "refimpl's engine (not --engine flower)")):
                if bad:
                    raise ValueError(f"--sampling pooled (one batch of K·B ids from the whole training set) needs {why}")
        _resolve_split(c)
        for f in ("batch", "rounds", "clients", "hidden", "local_steps", "eval_every"):
            V.positive_int(f, getattr(c, f))
        for f, what in (("rho_a", "a1 of ρ_t = a1/t^α"), ("gamma_a", "a2 of γ_t = a2/t^(α+0.05)")):
            v = getattr(c, f)
            if not (np.isfinite(v) and 0 < v <= 1):
                raise ValueError(f"{f} ({what}) = {v:g} must be in (0, 1]: the step sizes of (4)/(6) start at it")
        V.positive("lam (λ)", c.lam, allow_zero=True)
        if c.tau is None:
            c.tau = _PAPER_TAU[c.setting].get(c.batch, 0.03 if c.setting == "sample" else 0.05)
        V.positive("tau", c.tau)
        if c.rho_alpha is None:
            c.rho_alpha = _PAPER_ALPHA[c.setting].get(c.batch, 0.1)
        if c.gamma_alpha is None:
            c.gamma_alpha = c.rho_alpha + 0.05
        V.positive("rho_alpha (α of ρ_t = a1/t^α)", c.rho_alpha, allow_zero=True)
        V.positive("gamma_alpha (the exponent of γ_t)", c.gamma_alpha, allow_zero=True)
        V.positive("lr (η0 of the baselines' η_t = η0/t^β)", c.lr)
        V.positive("lr_decay (β of η_t = η0/t^β)", c.lr_decay, allow_zero=True)
        check_limits(c)
        if c.ball_radius is not None:
            V.positive("ball_radius (the norm ball's radius)", c.ball_radius)
        if c.setting == "feature" and c.local_steps != 1:
            raise ValueError("local_steps > 1 exists only for sample-based FedAvg")
        if c.algorithm == "ssca-constrained":
            if not (np.isfinite(c.U) and c.U > 0):
                raise ValueError(f"loss bound U must be finite and > 0, got {c.U}")
            V.positive("penalty c", c.penalty)
        return c



def _resolve_split(c):
    """The clients' split of a configuration being resolved, in place: a partition file (which
    sets K and is recorded as partition "file"), a feature-block file (which sets K), or K = 10
    by default; every contradiction refused."""
    if c.partition_file:
        # the file is the split: a partition kind beside it would be ignored, so it is refused,
        # and the trace records "file"
        if c.partition not in ("contiguous", "file"):
            raise ValueError(f"--partition-file {c.partition_file} gives every client's samples; --partition "
                             f"{c.partition} would be ignored: give one of the two")
        c.partition = "file"
    elif c.partition == "file":
        raise ValueError("--partition file needs --partition-file FILE.json (one list of sample ids per client)")
    else:
        parse_partition(c.partition)
    if c.partition_file:
        if c.setting != "sample":
            raise ValueError("--partition-file applies to --setting sample only")
        import json
        try:
            with open(c.partition_file) as fh:
                n_parts = len(json.load(fh))
        except (OSError, json.JSONDecodeError, TypeError) as exc:
            raise ValueError(f"--partition-file {c.partition_file}: cannot read a JSON list of index lists ({exc})")
        if c.clients is not None and c.clients != n_parts:
            raise ValueError(f"--clients {c.clients} contradicts --partition-file {c.partition_file}, which holds "
                             f"{n_parts} clients; drop --clients or make them agree")
        c.clients = n_parts
    if c.feature_blocks:
        if c.setting != "feature":
            raise ValueError("--feature-blocks applies to --setting feature only")
        n_blocks = len(read_feature_blocks(c.feature_blocks))
        if c.clients is not None and c.clients != n_blocks:
            raise ValueError(f"--clients {c.clients} contradicts --feature-blocks {c.feature_blocks}, which holds "
                             f"{n_blocks} blocks (one per client); drop --clients or make them agree")
        c.clients = n_blocks
    elif c.clients is None:
        c.clients = 10


def rounds_to_target(trace, target):
    """The first evaluated round whose training cost is ≤ ``target`` (None if none): what a run
    with ``stop_at_cost=target`` is for. A screened evaluation's cost is NaN, never ≤ the target."""
    r, c = trace.series("round"), trace.series("train_cost")
    hit = np.flatnonzero(c <= target)
    return int(r[hit[0]]) if hit.size else None


def run_experiment(cfg: RunConfig, data: Dataset, init=None, batches=None, progress=None, on_round=None,
                   stop_at_cost=None, test_accuracy=True, dump_writer=None, screen=False):
    """Build and run; returns the :class:`Trace` (its ``status`` says whether it finished).
    ``stop_at_cost``: end the run at the first evaluation with training cost ≤ this value (see
    :func:`~refimpl.ssca.algorithms.train`; ``screen``: its evaluations above the target read only
    as many training rows as show it). ``test_accuracy=False``: the evaluations skip the
    test set (recorded as NaN), for runs that read only the training cost. ``dump_writer``: the
    dumped rounds go to disk as they finish (:class:`~refimpl.core.dumps.DumpWriter`)."""
    cfg = cfg.resolved()
    algo, theta0, schedule, evaluator, trace, snapshots, rule = run_inputs(cfg, data, init, batches)
    if not test_accuracy:
        evaluator = dataclasses.replace(evaluator, test_accuracy=False)
    from refimpl.core.replay import parse_dump_rounds
    dumps = parse_dump_rounds(cfg.dump_rounds, cfg.rounds)
    if cfg.engine == "flower":
        if on_round is not None or stop_at_cost is not None or dumps or screen:
            raise ValueError("on_round, stop_at_cost, screen and --dump-rounds are not available with the Flower "
                             "engine")
        from refimpl.ssca.flower import run_flower
        final = run_flower(algo, theta0, schedule, cfg.rounds, evaluator, trace, snapshots, progress, rule)
    else:
        final = train(algo, theta0, schedule, cfg.rounds, evaluator, trace, snapshots, progress, on_round, rule,
                      stop_at_cost, dumps, dump_writer, screen)
    trace.extra["final_state"] = final
    if getattr(final, "note", ""):
        trace.status += f"; solver note: {final.note} ({final.fallbacks} rounds)"
    return trace
