"""The assembly of one [SSCA]-family run from a resolved configuration and a data set: the
model, the initial point, the clients' split, the batch schedule, the algorithm and the evaluator
(:func:`build`). Both runners use it: refimpl's own loop (:mod:`refimpl.ssca.experiment`) and the
Flower adapter (:mod:`refimpl.ssca.flower`), neither importing the other for it."""
from __future__ import annotations

from dataclasses import asdict

import numpy as np

from refimpl.core.data import data_record
from refimpl.core.divergence import DivergenceRule
from refimpl.core.model import TwoLayerNet
from refimpl.core.partition import (BatchSchedule, feature_based_schedule, feature_partition, read_feature_blocks,
                                    read_partition_file, sample_based_schedule, sample_partition)
from refimpl.core.schedules import PowerLaw
from refimpl.core.trace import Trace
from refimpl.ssca.algorithms import SSCA, Evaluator, FeatureSGD, FedAvg, LearningRate
from refimpl.ssca.constrained_algorithms import ConstrainedEvaluator, ConstrainedSSCA
from refimpl.ssca.protocols import FeatureBasedProtocol, SampleBasedProtocol


def client_partition(cfg, data, rng=None):
    """The sample-based clients' index sets of a resolved configuration: from ``partition_file``,
    or drawn by ``partition`` with the run's partition stream (child 2 of the seed), so that
    ``refimpl partition-stats`` shows exactly the split a run with the same seed uses."""
    if cfg.partition_file:
        return read_partition_file(cfg.partition_file, data.n_train)
    if rng is None:
        rng = np.random.default_rng(np.random.SeedSequence(cfg.seed).spawn(3)[2])
    return sample_partition(data.n_train, cfg.clients, cfg.partition, rng, data.y_train)


def _initial_weights(model, init):
    """``init``: (W1, W2), or the flat ω^0 (W1 then W2, row-major, as the dumps write it)."""
    if isinstance(init, tuple):
        return init
    flat = np.asarray(init)
    if flat.ndim != 1 or flat.size != model.n_params:
        raise ValueError(f"the initial point ω^0 as one flat vector must have {model.n_params} entries (W1 "
                         f"{model.shape_W1[0]}×{model.shape_W1[1]} then W2 {model.shape_W2[0]}×{model.shape_W2[1]}, "
                         f"row-major), got shape {flat.shape}")
    if flat.dtype.kind not in "iuf":
        raise ValueError(f"the initial point ω^0 must be real numbers, got dtype {flat.dtype}")
    return model.unpack(flat.astype(np.float64))


def build(cfg, data, init=None, batches=None):
    """Return ``(algorithm, theta0, schedule, evaluator, model)`` for a resolved configuration."""
    cfg = cfg.resolved()
    rng_init, rng_batch, rng_part = (np.random.default_rng(s) for s in np.random.SeedSequence(cfg.seed).spawn(3))
    model = TwoLayerNet(data.n_features, cfg.hidden, data.n_classes, cfg.activation, cfg.bias, cfg.backend)
    theta0 = model.init_params(rng_init) if init is None else model.pack(*_initial_weights(model, init))
    rho = PowerLaw(cfg.rho_a, cfg.rho_alpha)
    gamma = PowerLaw(cfg.gamma_a, cfg.gamma_alpha)
    lr = LearningRate(cfg.lr, cfg.lr_decay)
    E = cfg.local_steps
    if cfg.setting == "sample":
        parts = client_partition(cfg, data, rng_part)
        protocol = SampleBasedProtocol(model, data.X_train, data.y_train, parts, cfg.sampling)
        pooled = cfg.sampling == "pooled"
        if pooled and batches is None:
            schedule = feature_based_schedule(data.n_train, cfg.rounds, cfg.batch * len(parts), rng_batch)
        elif pooled:
            schedule = BatchSchedule(batches)
            schedule.validate_feature_based(data.n_train, cfg.rounds, cfg.batch * len(parts),
                                            kind="pooled (--sampling pooled)",
                                            shape_text=f"(T, K·B) = (T, {cfg.batch * len(parts)}): each round's K·B "
                                                       f"ids drawn from all samples")
        elif batches is None:
            schedule = sample_based_schedule(parts, cfg.rounds, cfg.batch * E, rng_batch)
        else:
            schedule = BatchSchedule(batches)
            schedule.validate_sample_based(parts, cfg.rounds, cfg.batch * E)
        algo = {"ssca": lambda: SSCA(protocol, rho, gamma, cfg.tau, cfg.lam, cfg.curvature),
                "ssca-constrained": lambda: _constrained(cfg, protocol, rho, gamma),
                "sgd": lambda: FedAvg(protocol, lr, cfg.lam, 0.0, E),
                "sgdm": lambda: FedAvg(protocol, lr, cfg.lam, cfg.momentum, E)}[cfg.algorithm]()
    else:
        if cfg.feature_blocks:
            try:
                blocks = feature_partition(data.n_features, blocks=read_feature_blocks(cfg.feature_blocks))
            except ValueError as exc:
                raise ValueError(f"--feature-blocks {cfg.feature_blocks}: {exc}")
        else:
            blocks = feature_partition(data.n_features, cfg.clients)
        protocol = FeatureBasedProtocol(model, data.X_train, data.y_train, blocks, cfg.designated, cfg.collection)
        if batches is None:
            schedule = feature_based_schedule(data.n_train, cfg.rounds, cfg.batch, rng_batch)
        else:
            schedule = BatchSchedule(batches)
            schedule.validate_feature_based(data.n_train, cfg.rounds, cfg.batch)
        algo = {"ssca": lambda: SSCA(protocol, rho, gamma, cfg.tau, cfg.lam, cfg.curvature),
                "ssca-constrained": lambda: _constrained(cfg, protocol, rho, gamma),
                "sgd": lambda: FeatureSGD(protocol, lr, cfg.lam, 0.0),
                "sgdm": lambda: FeatureSGD(protocol, lr, cfg.lam, cfg.momentum)}[cfg.algorithm]()
    if cfg.algorithm == "ssca-constrained":
        evaluator = ConstrainedEvaluator(model, data.X_train, data.y_train, data.X_test, data.y_test, 0.0,
                                         cfg.eval_every, cfg.authors_cost, U=algo.U, parts=protocol.parts if cfg.per_client else None)
    else:
        evaluator = Evaluator(model, data.X_train, data.y_train, data.X_test, data.y_test, cfg.lam, cfg.eval_every,
                              cfg.authors_cost)
    return algo, theta0, schedule, evaluator, model


def _constrained(cfg, protocol, rho, gamma):
    return ConstrainedSSCA(protocol, rho, gamma, cfg.tau, cfg.U, cfg.penalty, cfg.solver, cfg.per_client,
                           cfg.ball_radius, cfg.cvxpy_solver, cfg.curvature)


def run_inputs(cfg, data, init=None, batches=None):
    """What a run of the resolved ``cfg`` starts from, for refimpl's runner and the Flower engine
    alike: (algorithm, θ⁰, batch schedule, evaluator, trace, snapshot rounds, divergence rule). The
    trace holds the configuration, the data's record and the rounds' batches (schedule rows 0..T−1
    for rounds 1..T); the initial point and the last iterate are always among the snapshots, so a
    trace can be replayed and continued."""
    algo, theta0, schedule, evaluator, _ = build(cfg, data, init, batches)
    trace = Trace(config={**asdict(cfg), "data": data.name, **data_record(data)})
    trace.batches = schedule.indices[:cfg.rounds]
    snapshots = sorted(set(cfg.snapshots) | {0, cfg.rounds})
    return algo, theta0, schedule, evaluator, trace, snapshots, DivergenceRule(cfg.diverge_cost_factor,
                                                                              cfg.diverge_sq_norm)
