"""One Flex-VFL-family run from a configuration (data → parties → speeds → method → trace), and
the side-by-side comparison of ``refimpl compare vfl``."""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass

import numpy as np

from refimpl.core.data import data_record
from refimpl.vfl.conventions import CONVENTIONS, METHODS, RUN_PROTOCOLS
from refimpl.vfl.flexvfl import (FlexVFL, VerticalData, condition20, estimate_smoothness, max_change_factor, quadrant_blocks,
                      run_async, time_to_target)
from refimpl.vfl.local_optimizers import make_optimizer
from refimpl.core.divergence import DivergenceRule
from refimpl.core.partition import feature_partition
from refimpl.vfl.speeds import Network, parse_speeds
from refimpl.vfl.models import LinearEncoder, LinearFusion, SwishEncoder, VerticalModel

VFL_METHODS = METHODS


@dataclass
class VFLConfig:
    method: str = "flexvfl"
    parties: int = 4
    encoder: str = "linear"          # one value or a comma list, one per party: linear | swish
    embed_dim: int = 16
    hidden: int = 32
    optimizer: str = "sgd"           # one value or a comma list for server + parties
    eta: str = "0.05"                # one value or a comma list for server + parties
    A: str = "1.0"                   # adaptive constants A_k
    batch: int = 64
    rounds: int = 300
    time_budget: float | None = None
    timeout: float = 10.0
    Q: int = 10
    speeds: str = "lognormal:0.2,1,1,2,8:0.3"
    bandwidth: float = 1e8
    latency: float = 0.01
    server_time: float = 0.0          # server round trip per round (async: per event), in units of the
                                      # fastest party's mean step time
    protocol: str = "refimpl"         # "authors": server τ = Q (P-BCD: 1) with free server compute
    labels: str = "all"
    target: float | None = None
    seed: int = 0
    eval_every: int = 1
    loss_every: int = 1               # training loss at every n-th evaluation (NaN between; accuracy at all)
    theory_every: int = 0             # every that many rounds: Σ_k ||∇_k F(Θ^{r,0})||² (left side of (15))
    smoothness: str = "none"          # "none" | "estimate" | "L,L_0,…,L_K" for condition (14)
    # conventions (None: the protocol's; "refimpl" = the paper's, "authors" = the authors' code's)
    momentum: str | None = None        # reset | persistent
    batch_order: str | None = None     # independent | epoch
    adaptive_rule: str | None = None   # paper | authors
    server_time_unit: str | None = None   # step | timeout-over-Q
    init_scheme: str | None = None     # glorot | torch
    # replay inputs and dumps
    feature_blocks: str | None = None  # FILE.json: one list of feature indices per party (default: quadrants/contiguous)
    init: str | None = None            # FILE.npz/.mat with theta0 … thetaK, or a trace.npz
    batches: str | None = None         # FILE.npy (R, B) of 0-based ids (async: (events, B)), or a trace.npz
    index_base: int = 0                # the id of the first sample in --batches: 0, or 1 (MATLAB)
    taus: str | None = None            # FILE.npy (R, K+1) local steps, server first, or a trace.npz
    dump_rounds: str = ""              # "1,2,10" | "all": store every intermediate quantity of those rounds
    diverge_cost_factor: float = 1e3   # diverged: training loss above this × its initial value
    diverge_sq_norm: float = 1e12      # diverged: Σ_k ||θ_k||² above this

    def check_numbers(self):
        """The numeric settings, each named by its field (the command line names its flag)."""
        from refimpl.core import validate as V
        from refimpl.core.divergence import check_limits
        for f in ("parties", "embed_dim", "hidden"):
            V.positive_int(f, getattr(self, f))
        V.positive("timeout", self.timeout)
        V.positive("bandwidth", self.bandwidth)
        V.positive("latency", self.latency, allow_zero=True)
        for v in str(self.eta).split(","):
            try:
                x = float(v)
            except ValueError:
                raise ValueError(f"eta must be a number or a comma list of numbers, got {self.eta!r}")
            V.positive(f"eta (the learning rate{'s' if ',' in str(self.eta) else ''} η_k)", x)
        check_limits(self)

    def method_key(self):
        if self.method not in VFL_METHODS:
            raise ValueError(f"VFL method must be one of {sorted(VFL_METHODS)}, got {self.method!r}")
        return VFL_METHODS[self.method]


def _list(text, n, name, conv=str):
    vals = [conv(v) for v in str(text).split(",") if v.strip()]
    if len(vals) == 1:
        vals = vals * n
    if len(vals) != n:
        raise ValueError(f"--{name} needs 1 or {n} values, got {len(vals)}")
    return vals


def _smoothness(cfg, model, thetas, data, K1):
    if cfg.smoothness == "none":
        return None
    if cfg.smoothness == "estimate":
        sub = np.random.default_rng(cfg.seed).choice(data.n, min(500, data.n), replace=False)
        return estimate_smoothness(model, thetas, [X[sub] for X in data.Xs_train], data.y_train[sub],
                                   np.random.default_rng(cfg.seed), iters=20)
    vals = [float(v) for v in cfg.smoothness.split(",")]
    if len(vals) != K1 + 1 or min(vals) <= 0:
        raise ValueError(f"--smoothness needs L and L_0..L_{K1 - 1} ({K1 + 1} positive values), got {cfg.smoothness!r}")
    return vals[0], np.array(vals[1:])


def vertical_data(ds, parties, feature_blocks=None):
    """The parties' feature blocks: ``feature_blocks`` (FILE.json, one index list per party, every
    feature exactly once), else the four image quadrants of 28×28 data with 4 parties, else
    contiguous blocks."""
    if feature_blocks is not None:
        from refimpl.core.partition import read_feature_blocks
        blocks = feature_partition(ds.n_features, blocks=read_feature_blocks(feature_blocks))
        if len(blocks) != parties:
            raise ValueError(f"--feature-blocks {feature_blocks} holds {len(blocks)} blocks but --parties is {parties}; "
                             "give one block per party")
        return VerticalData.from_dataset(ds, blocks)
    blocks = quadrant_blocks() if (ds.n_features == 784 and parties == 4) else feature_partition(ds.n_features, parties)
    return VerticalData.from_dataset(ds, blocks)


def build_model(cfg, data, n_classes):
    encs = []
    for k, (kind, X) in enumerate(zip(_list(cfg.encoder, cfg.parties, "encoder"), data.Xs_train)):
        if kind == "linear":
            encs.append(LinearEncoder(X.shape[1], cfg.embed_dim))
        elif kind == "swish":
            encs.append(SwishEncoder(X.shape[1], cfg.embed_dim, cfg.hidden))
        else:
            raise ValueError(f"encoder of party {k + 1} must be 'linear' or 'swish', got {kind!r}")
    return VerticalModel(tuple(encs), LinearFusion(cfg.parties * cfg.embed_dim, n_classes))


def run_vfl(cfg: VFLConfig, ds, progress=None, dump_writer=None):
    """Returns the trace; every random stream derives from ``cfg.seed``; ``dump_writer``: the
    dumped rounds go to disk as they finish."""
    from refimpl.core.replay import parse_dump_rounds
    from refimpl.vfl.policies import validate_batches
    method = cfg.method_key()
    cfg.check_numbers()
    conv = conventions(cfg)
    data = vertical_data(ds, cfg.parties, cfg.feature_blocks)
    model = build_model(cfg, data, ds.n_classes)
    rng_init, rng_speed, rng_run = (np.random.default_rng(s) for s in np.random.SeedSequence(cfg.seed).spawn(3))
    thetas = model.init(rng_init, conv["init_scheme"]) if cfg.init is None else load_init(cfg.init, model)
    K1 = cfg.parties + 1
    model_speeds = _speed_model(cfg, K1)
    # a CPU trace also names the machines drawn (the authors' adaptive rule reads their rows)
    speeds, machines = (model_speeds.draw(cfg.rounds + 1, rng_speed) if hasattr(model_speeds, "draw")
                        else (model_speeds.sample(cfg.rounds + 1, rng_speed), None))
    eta = _list(cfg.eta, K1, "eta", float)
    net = network_of(cfg, model_speeds, conv["server_time_unit"])
    authors = cfg.protocol == "authors"
    budget = _budget_and_target(cfg)
    rule = DivergenceRule(cfg.diverge_cost_factor, cfg.diverge_sq_norm)
    batches = None
    if cfg.batches is not None:
        from refimpl.core.replay import from_index_base
        batches = from_index_base(load_schedule(cfg.batches, "--batches", ("batches",)), cfg.index_base,
                                  f"--batches {cfg.batches}")
    if method == "async":
        if budget is None:
            raise ValueError("async-vfl runs on simulated time: give --time-budget")
        if cfg.optimizer not in ("sgd",):
            raise ValueError("asynchronous VFL uses SGD steps only (--optimizer sgd)")
        for key in ("taus", "dump_rounds"):
            if getattr(cfg, key):
                raise ValueError(f"--{key.replace('_', '-')} applies to the round-based methods, not async-vfl")
        if batches is not None:
            batches = validate_batches(batches, 1, data.n, f"--batches {cfg.batches}")
        tr = run_async(model, data, thetas, eta, cfg.batch, speeds, rng_run, budget, net,
                       eval_every_time=budget / max(cfg.rounds // cfg.eval_every, 1), progress=progress,
                       stop_at_accuracy=cfg.target, divergence=rule, server_free=authors, batches=batches,
                       loss_every=cfg.loss_every)
    else:
        opts = [make_optimizer(o) for o in _list(cfg.optimizer, K1, "optimizer")]
        smooth = _smoothness(cfg, model, thetas, data, K1)
        A = _list(cfg.A, K1, "A", float) if method == "adaptive" else None
        adaptive_rule = conv["adaptive_rule"] if method == "adaptive" else None
        taus, tau0, lr_den = _replayed_taus(cfg, K1, adaptive_rule)
        if adaptive_rule == "authors" and lr_den is None and machines is not None:
            lr_den = model_speeds.lr_denominators(machines)
        if batches is not None:
            batches = validate_batches(batches, cfg.rounds, data.n, f"--batches {cfg.batches}")
            if batches.shape[1] != cfg.batch:
                raise ValueError(f"--batches {cfg.batches}: rows hold {batches.shape[1]} samples but --batch is "
                                 f"{cfg.batch}")
        dumps = parse_dump_rounds(cfg.dump_rounds, cfg.rounds)
        # the authors' protocol: the server takes Q steps under sync/flex (1 under P-BCD) for free
        server_steps = (1 if method == "pbcd" else cfg.Q) if authors else None
        # the paper's adaptive rule takes its round-0 rate from a dummy round on speed row 0
        dummy = adaptive_rule == "paper"
        run = FlexVFL.from_method(model, data, method, opts, eta, cfg.batch, speeds if dummy else speeds[1:],
                      timeout=cfg.timeout, Q=cfg.Q, network=net, labels=cfg.labels, A=A, smoothness=smooth,
                      server_steps=server_steps, momentum=conv["momentum"], batch_order=conv["batch_order"],
                      adaptive_rule=conv["adaptive_rule"], taus=taus, batches=batches, tau0=tau0,
                      lr_denominator=lr_den)
        tr = run.run(thetas, cfg.rounds, rng_run, cfg.eval_every, budget, progress, theory_every=cfg.theory_every,
                     stop_at_accuracy=cfg.target, divergence=rule, dump_rounds=dumps,
                     loss_every=cfg.loss_every, dump_writer=dump_writer)
        if smooth is not None:
            tr.config["L"], tr.config["L_k"] = float(smooth[0]), [float(x) for x in smooth[1]]
            if "cond14" in tr.arrays:
                tr.config["condition14_fraction_met"] = float(np.mean(tr.arrays["cond14"]))
            if method == "adaptive" and "tau" in tr.arrays:
                alpha = max_change_factor(tr.arrays["tau"], tr.arrays["w_bar"])
                tr.config["condition20"] = {"alpha": alpha,
                                            "met": condition20(A, smooth[0], smooth[1], alpha).tolist()}
        if adaptive_rule == "authors":
            tr.arrays["lr_denominator"] = np.asarray(lr_den, dtype=np.float64)   # a replay input (--taus)
    if machines is not None:
        tr.arrays["machines"] = np.asarray(machines)
    return _recorded(tr, cfg, conv, ds, net, model_speeds, speeds)


def _budget_and_target(cfg):
    """``--time-budget`` (a finite simulated time > 0, or None) after checking it and ``--target``."""
    budget = cfg.time_budget
    if budget is not None and not (isinstance(budget, (int, float)) and np.isfinite(budget) and budget > 0):
        raise ValueError(f"--time-budget must be a finite simulated time > 0, got {budget}")
    if cfg.target is not None and not (isinstance(cfg.target, (int, float)) and 0 < cfg.target <= 1):
        raise ValueError(f"--target is a test accuracy in (0, 1], got {cfg.target}")
    return budget


def _speed_model(cfg, K1):
    """``--speeds`` for the K + 1 parties. Given ``--taus`` (the local steps fixed) and the default
    speed model, which is written for 4 parties, another number of parties runs on unit step times
    (``constant:1``: the clock charges τ_k units a round), said in a note."""
    from refimpl.vfl.speeds import ConstantSpeed
    if cfg.taus is not None and cfg.speeds == VFLConfig.__dataclass_fields__["speeds"].default and K1 != 5:
        return ConstantSpeed((1.0,) * K1, note=f"--taus without --speeds for {K1 - 1} parties: unit step times "
                                               "(constant:1); the default speed model is written for 4 parties")
    return parse_speeds(cfg.speeds, K1, cfg.timeout)


def _recorded(tr, cfg, conv, ds, net, model_speeds, speeds):
    """The run's record in its trace: the configuration, conventions and data, the server time,
    a note on the speeds, and the clock as drawn (``step_times``, ``step_time_means``), which
    ``--speeds steptimes:TRACE`` replays (the event order of async-vfl with it)."""
    tr.arrays["step_times"], tr.arrays["step_time_means"] = speeds, np.asarray(model_speeds.mean(), dtype=np.float64)
    tr.config.update(asdict(cfg))
    tr.config["conventions"] = conv
    tr.config["data"] = ds.name
    tr.config.update(data_record(ds))
    tr.config["server_time_absolute"] = net.server_time
    note = getattr(model_speeds, "note", None)
    if note:
        tr.config["speeds_note"] = note          # the CLI prints it once the run is over
    return tr


def _replayed_taus(cfg, K1, adaptive_rule):
    """``--taus``: the τ table (R, K+1) and what the adaptive rule reads beside it when the file
    records it, as a trace does: the paper's rule the dummy round's τ^0 (array ``tau0``), the
    authors' rule the d_k of its first rates (array ``lr_denominator``); (None, None, None)
    without ``--taus``."""
    if cfg.taus is None:
        return None, None, None
    from refimpl.core.replay import numeric, pick_one, read_arrays
    from refimpl.vfl.policies import validate_taus
    arrays = read_arrays(cfg.taus, "--taus")
    taus = validate_taus(pick_one(arrays, ("tau",), "--taus", cfg.taus), cfg.rounds, K1, f"--taus {cfg.taus}")
    den = arrays.get("lr_denominator") if adaptive_rule == "authors" else None
    return (taus, arrays.get("tau0") if adaptive_rule == "paper" else None,
            None if den is None else numeric(den, f"--taus {cfg.taus}", "lr_denominator"))


def conventions(cfg):
    """The convention switches of a run: the option's value, else the protocol's."""
    if cfg.protocol not in RUN_PROTOCOLS:
        raise ValueError(f"protocol must be one of {RUN_PROTOCOLS}, got {cfg.protocol!r}")
    out = {}
    for key, row in CONVENTIONS.items():
        v = getattr(cfg, key)
        v = row[cfg.protocol] if v is None else v
        if v not in row["allowed"]:
            raise ValueError(f"--{key.replace('_', '-')} must be one of {', '.join(row['allowed'])}, got {v!r}")
        out[key] = v
    return out


def load_init(path, model):
    """Θ^{1,0} from a replay file: arrays ``theta0`` (server head) … ``thetaK`` (encoders), or a
    refimpl trace's ``init_theta0`` … (docs/guide.md gives the layouts)."""
    from refimpl.core.replay import numeric, read_arrays
    arrays = read_arrays(path, "--init")
    out = []
    for k, (n, mat) in enumerate(model.param_shapes()):
        name = next((c for c in (f"theta{k}", f"init_theta{k}") if c in arrays), None)
        allowed = f"({n},)" + (f" or {mat}" if mat else "")
        if name is None:
            raise ValueError(f"--init {path}: missing array 'theta{k}' ({'server head' if k == 0 else f'party {k}'}"
                             f", shape {allowed}); found {sorted(arrays) or 'none'}")
        a = numeric(arrays[name], f"--init {path}", name)
        if a.shape == (n,) or (mat is not None and a.shape == tuple(mat)) or (a.ndim == 2 and 1 in a.shape
                                                                          and a.size == n):
            out.append(np.ascontiguousarray(a.reshape(-1)))
        else:
            raise ValueError(f"--init {path}: array {name!r} has shape {a.shape}; expected {allowed}")
    extra = sorted(k for k in arrays if re.fullmatch(r"(init_)?theta\d+", k)
                   and int(re.sub(r"\D", "", k)) > model.K)
    if extra:
        raise ValueError(f"--init {path}: arrays {extra} name parties beyond K = {model.K}")
    return out


def load_schedule(path, what, names):
    from refimpl.core.replay import read_one
    return read_one(path, names, what)


def network_of(cfg, speed_model, unit_rule="step"):
    """The network of a configuration: ``server_time`` is given in units of the fastest party's
    mean step time (parties 1..K, not the server; ``unit_rule`` "step") or of timeout / Q (the
    authors' plot scripts; "timeout-over-Q")."""
    st = cfg.server_time
    if not (isinstance(st, (int, float)) and np.isfinite(st) and st >= 0):
        raise ValueError(f"--server-time must be a finite number >= 0 (units of the fastest party's mean step), "
                         f"got {st!r}")
    if unit_rule == "timeout-over-Q":
        unit = float(cfg.timeout) / int(cfg.Q)
    else:
        unit = float(np.min(np.asarray(speed_model.mean(), dtype=np.float64)[1:]))
    return Network(cfg.bandwidth, cfg.latency, st * unit)


def compare_vfl(cfg: VFLConfig, ds, methods=("flexvfl", "adaptive-flexvfl", "sync-vfl", "async-vfl", "pbcd"),
                targets=(0.8, 0.85, 0.9), progress=None):
    """Every method on the same data, speeds and seed; returns (traces, curve rows, table rows), a
    row per method with its times to the targets, its last accuracy and its status (finished, or
    diverged with the round)."""
    from dataclasses import replace
    budget = cfg.time_budget
    if budget is None:
        raise ValueError("compare vfl needs --time-budget (simulated time shared by all methods)")
    traces, curve, table = {}, [], []
    for meth in methods:
        tr = run_vfl(replace(cfg, method=meth, target=None, rounds=max(cfg.rounds, 1)), ds)
        traces[meth] = tr
        for t, a in zip(tr.series("time"), tr.series("test_accuracy")):
            curve.append({"method": meth, "time": float(t), "test_accuracy": float(a)})
        row = {"method": meth}
        for tgt in targets:
            row[f"time_to_{tgt:g}"] = time_to_target(tr, tgt)
        row["final_accuracy"] = float(tr.series("test_accuracy")[-1])
        row["status"] = tr.status          # a diverged run's "final" accuracy is the one before its blow-up
        table.append(row)
        if progress:
            progress(f"{meth}: final accuracy {row['final_accuracy']:.4f} at time {tr.series('time')[-1]:.1f}")
    return traces, curve, table
