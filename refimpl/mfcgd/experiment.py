"""Runs of MFCGD, AdaMFCGD and the baselines on the three problem classes (CLI layer below
``refimpl run mfcgd|adamfcgd|comfedl|local-scgdm``, ``refimpl compare mfcgd``)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from refimpl.core import dumps as dump_files
from refimpl.mfcgd.problems import DistributionallyRobustFL, LeastSquaresMAML, NonlinearComposition, SyntheticComposition
from refimpl.core.divergence import DivergenceRule
from refimpl.core.data import data_record, load_embedded_mnist
from refimpl.mfcgd.algorithm import (MFCGDParams, draw_scgd_samples, draw_storm_samples, evaluation_steps, make_matrix,
                                     run_local_scgd, run_local_scgd_synthetic_nb, run_mfcgd, run_mfcgd_synthetic_nb)
from refimpl.core.partition import sample_partition
from refimpl.core.trace import Trace

METHODS = ("mfcgd", "adamfcgd", "comfedl", "local-scgdm", "scgd", "storm")
SINGLE_MACHINE = ("scgd", "storm")
PROBLEMS = ("synthetic", "nonlinear", "drfl", "maml")
STORM_METHODS = ("mfcgd", "adamfcgd", "storm")
# the replay arrays of each kind of method, in the order the algorithm consumes them
SAMPLE_ARRAYS = {"storm": ("zeta0", "xi0", "zeta", "xi"), "scgd": ("zeta0", "zeta", "zeta2", "xi")}


@dataclass
class MFCGDConfig:
    method: str = "mfcgd"
    problem: str = "synthetic"
    clients: int = 10
    dim: int = 20
    steps: int = 2000
    q: int = 10
    k: float = 1.0
    n: float = 1000.0
    c: float = 10.0                  # c1 = c2 = c3
    gamma: float = 0.5
    matrix: str = "adam"             # adamfcgd: adam | norm | amsgrad
    rho: float = 0.2
    theta: float = 0.9
    eta: float = 0.1                 # baselines
    beta: float = 0.5
    alpha: float = 0.2
    heterogeneity: float = 0.5
    radius_scale: float = 1.0        # Π_{C_g}, Π_{C_f} radii × this (1: the problem's a-priori bounds)
    eval_every: int = 10
    seed: int = 0
    problem_seed: int | None = None  # the problem instance's seed (None: seed)
    backend: str = "numba"
    diverge_cost_factor: float = 1e3   # diverged: ||∇F(x̄_t)|| above this × its value at step 1
    diverge_sq_norm: float = 1e12      # diverged: ||x̄_t||² above this (or not finite)
    init: str | None = None          # FILE.npz/.mat: x1 (d,) and optionally h1, u1, v1 (STORM-type) / y1
    samples: str | None = None       # FILE.npz: the samples in consumption order (docs/guide.md)
    keep_samples: bool = False       # store the samples in the trace (a replay input; large for long runs)
    dump_rounds: str = ""            # steps whose intermediate quantities the trace stores: 1,2,10 | all

    def validate(self):
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.problem not in PROBLEMS:
            raise ValueError(f"problem must be one of {PROBLEMS}, got {self.problem!r}")
        for f in ("clients", "dim", "steps", "q", "eval_every"):
            if int(getattr(self, f)) < 1:
                raise ValueError(f"{f} must be >= 1, got {getattr(self, f)}")
        rs = self.radius_scale
        if isinstance(rs, bool) or not isinstance(rs, (int, float)) or not (np.isfinite(rs) and rs > 0):
            raise ValueError(f"--radius-scale must be a finite number > 0 (1: the a-priori bounds C_g, C_f), "
                             f"got {rs!r}")
        for f in ("k", "n", "c", "gamma", "rho", "theta", "eta", "beta", "alpha", "heterogeneity"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)) or not np.isfinite(v):
                raise ValueError(f"{f} must be a finite number, got {v!r}")
        for f in ("eta", "beta", "alpha"):                 # the baselines' step sizes
            if getattr(self, f) <= 0:
                raise ValueError(f"{f} must be > 0 (a step size of the baselines), got {getattr(self, f)!r}")
        if self.rho <= 0:
            raise ValueError(f"rho (ρ of the adaptive matrix, A_t ⪰ ρI: Assumption 5) must be > 0, got {self.rho!r}")
        if not 0 < self.theta <= 1:
            raise ValueError(f"theta (ϑ, the adaptive matrix's averaging weight) must be in (0, 1], got {self.theta!r}")
        if self.heterogeneity < 0:
            raise ValueError(f"heterogeneity must be >= 0, got {self.heterogeneity!r}")
        from refimpl.core.divergence import check_limits
        check_limits(self)
        for f in ("seed", "problem_seed"):
            v = getattr(self, f)
            if v is not None and (not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0):
                raise ValueError(f"--{f.replace('_', '-')} must be a whole number >= 0, got {v!r}")
        return self


def build_problem(cfg: MFCGDConfig, rng, ds=None):
    if cfg.problem == "synthetic":
        return SyntheticComposition.random(M=cfg.clients, p=5, d=cfg.dim, heterogeneity=cfg.heterogeneity, rng=rng)
    if cfg.problem == "maml":
        return LeastSquaresMAML.random(M=cfg.clients, d=cfg.dim, rng=rng)
    if cfg.problem == "nonlinear":
        return NonlinearComposition.random(M=cfg.clients, d=cfg.dim, heterogeneity=cfg.heterogeneity, rng=rng)
    ds = ds if ds is not None else load_embedded_mnist()
    parts = sample_partition(ds.n_train, cfg.clients, "label_skew", rng, ds.y_train)
    test_parts = sample_partition(len(ds.y_test), cfg.clients, "label_skew", np.random.default_rng(cfg.seed + 1),
                                  ds.y_test)
    pr = DistributionallyRobustFL(tuple(ds.X_train[p] for p in parts), tuple(ds.y_train[p] for p in parts))
    return pr, tuple(ds.X_test[p] for p in test_parts), tuple(ds.y_test[p] for p in test_parts)


def run_mfcgd_config(cfg: MFCGDConfig, ds=None, progress=None, dump_writer=None):
    """Returns a Trace with metrics step, grad_norm, samples, rounds (and, for DRFL, worst/average
    client test accuracy; for MAML, post-adaptation loss on held-out tasks). ``dump_writer``:
    receives the dumped steps when the run ends."""
    cfg.validate()
    if cfg.method in SINGLE_MACHINE and cfg.clients != 1:
        # SCGD and the STORM-compositional estimator are single-machine methods: M = 1 (as their
        # papers define them), not M clients averaging every step
        cfg = replace(cfg, clients=1)
    rng_prob, rng_run, rng_eval = (np.random.default_rng(s) for s in np.random.SeedSequence(cfg.seed).spawn(3))
    if cfg.problem_seed is not None:
        # the problem instance from its own seed, the run's randomness from ``seed`` (replays)
        rng_prob = np.random.default_rng(np.random.SeedSequence(cfg.problem_seed).spawn(3)[0])
    built = build_problem(cfg, rng_prob, ds)
    pr, test = (built[0], built[1:]) if isinstance(built, tuple) else (built, None)
    extra = {}
    on_eval = _problem_evaluations(cfg, pr, test, rng_prob, extra, progress)
    from refimpl.core.replay import parse_dump_rounds
    dumps = parse_dump_rounds(cfg.dump_rounds, cfg.steps)
    kind = "storm" if cfg.method in STORM_METHODS else "scgd"
    x1, start = _initial_point(cfg, pr, kind)
    samples = _samples(cfg, pr, kind, start is not None) if cfg.samples else None
    # replay inputs and dumps run the NumPy twin, except given samples on the synthetic kernel
    numba = cfg.backend == "numba" and cfg.problem == "synthetic" and not dumps and start is None
    numba = numba and (kind == "storm" or samples is None and not cfg.keep_samples)
    if cfg.keep_samples and samples is None:
        samples = (draw_storm_samples(pr, cfg.steps, 1 if cfg.method == "storm" else cfg.q, rng_run)
                   if kind == "storm" else draw_scgd_samples(pr, cfg.steps, rng_run))
    if kind == "storm":
        (gn, smp, rnd, xsq), result, par = _run_storm(cfg, pr, x1, start, samples, numba, rng_run, on_eval, dumps)
    else:
        ((gn, smp, rnd, xsq), result), par = _run_scgd(cfg, pr, x1, samples, numba, rng_run, on_eval, dumps), None
    tr = _trace_of(cfg, ds, pr, kind, x1, samples, result, par, numba, dump_writer=dump_writer)
    if result is not None and getattr(result, "x_bar", None) is not None:
        xsq = np.einsum("ij,ij->i", result.x_bar, result.x_bar)
    _record_steps(tr, cfg, gn, smp, rnd, xsq, extra)
    if cfg.problem == "drfl":
        tr.extra["fedavg"] = fedavg_drfl(pr, test, cfg, np.random.default_rng(cfg.seed))
    return tr


def _problem_evaluations(cfg, pr, test, rng_prob, extra, progress):
    """``on_eval(t, x̄_t)``: the problem's own metrics at an evaluation (DRFL: the clients' test
    accuracies; MAML: the loss after adaptation on held-out tasks) into ``extra``."""
    held_out = None
    if cfg.problem == "maml":
        held_out = pr.a.mean(axis=0) + rng_prob.standard_normal((20, pr.d)) * np.std(pr.a, axis=0)

    def on_eval(t, xb):
        if cfg.problem == "drfl":
            acc = pr.client_accuracy(xb, *test)
            extra.setdefault(t, {}).update(worst_client_accuracy=min(acc), average_accuracy=float(np.mean(acc)))
        elif cfg.problem == "maml":
            extra.setdefault(t, {}).update(post_adaptation_loss=pr.post_adaptation_loss(xb, held_out, np.random.default_rng(7)))
        if progress:
            progress(t, xb)
    return on_eval


def _run_storm(cfg, pr, x1, start, samples, numba, rng_run, on_eval, dumps):
    """MFCGD, AdaMFCGD or STORM: ((grad_norm, samples, rounds, None), the result, the parameters)."""
    C_g, C_f = (cfg.radius_scale * r for r in _projection_radii(pr))
    q = 1 if cfg.method == "storm" else cfg.q
    par = MFCGDParams(k=cfg.k, n=cfg.n, c1=cfg.c, c2=cfg.c, c3=cfg.c, gamma=cfg.gamma, q=q, C_g=C_g, C_f=C_f)
    mat = make_matrix(cfg.matrix if cfg.method == "adamfcgd" else "identity", cfg.rho, cfg.theta)
    if numba:
        r = run_mfcgd_synthetic_nb(pr, x1, cfg.steps, par, mat, rng_run, noise=samples)
        for t in evaluation_steps(cfg.steps, cfg.eval_every):       # where the NumPy runner calls it
            on_eval(t, r.x_bar[t - 1])
    else:
        r = run_mfcgd(pr, x1, cfg.steps, par, mat, rng_run, noise=samples, eval_every=cfg.eval_every,
                      on_eval=on_eval, estimators=start, dump_steps=dumps)
    return (r.grad_norm, r.samples, r.rounds, None), r, par


def _run_scgd(cfg, pr, x1, samples, numba, rng_run, on_eval, dumps):
    """ComFedL-style SCGD, Local-SCGDM or SCGD: ((grad_norm, samples, rounds, ||x̄_t||² or None), the
    result (None from the kernel)). The kernel returns no x̄_t, so it calls no ``on_eval``: on the
    synthetic problem, the only one it runs, that is the progress bar alone, which then moves at the end."""
    q = 1 if cfg.method == "scgd" else cfg.q
    alpha = cfg.alpha if cfg.method == "local-scgdm" else None
    if numba:
        gn, smp, rnd, xsq = run_local_scgd_synthetic_nb(pr, x1, cfg.steps, q, cfg.eta, cfg.beta, alpha, rng_run,
                                                        sq_norms=True)
        return (gn, smp, rnd, xsq), None
    r = run_local_scgd(pr, x1, cfg.steps, q, cfg.eta, cfg.beta, alpha, rng_run, cfg.eval_every, on_eval,
                       samples=samples, dump_steps=dumps)
    return (r.grad_norm, r.samples, r.rounds, None), r


def _trace_of(cfg, ds, pr, kind, x1, samples, result, par, numba, dump_writer=None):
    """The run's trace before its metrics: configuration, data record, replay inputs, dumps and the
    theorems' conditions."""
    tr = Trace(config={**asdict(cfg)})
    tr.config["backend_used"] = "numba" if numba else "numpy"
    if cfg.problem == "drfl":
        tr.config.update(data_record(ds if ds is not None else load_embedded_mnist()))
    tr.arrays["init_x1"] = np.asarray(x1, dtype=np.float64)
    if cfg.problem != "drfl":
        _record_instance(tr, pr)
    if result is not None and getattr(result, "x_bar", None) is not None:
        tr.arrays["x_bar"] = result.x_bar
    if cfg.keep_samples:
        for name, arr in zip(SAMPLE_ARRAYS[kind], samples):
            tr.arrays[f"samples_{name}"] = np.asarray(arr)
    if result is not None and result.dumps:
        for t, quantities in result.dumps.items():
            dump_files.put(tr, t, quantities, dump_writer)
    if cfg.method in ("mfcgd", "adamfcgd", "storm"):
        # both kernels use min(1, c η_t²): record the steps where the cap was active
        tr.config["capped_steps"] = par.capped_steps(cfg.steps)
        tr.config["projection_radii"] = {"C_g": float(par.C_g), "C_f": float(par.C_f)}
        if not numba:
            # client-steps at which Π_{C_g} (8) and Π_{C_f} (9) changed u and v (the Numba kernel does not count)
            tr.config["projected_client_steps"] = {"u": int(result.bound_u), "v": int(result.bound_v),
                                                   "of": int(pr.M * cfg.steps)}
    if cfg.problem == "synthetic" and cfg.method in ("mfcgd", "adamfcgd", "storm"):
        tr.config["theorem_conditions"] = theorem_report(pr, cfg, x1)
    return tr


def _record_instance(tr, pr):
    """The problem instance in the trace, so that another implementation can run on the very same
    problem: its arrays as ``problem_<field>`` (synthetic and nonlinear: A, b, c; MAML: a), its
    scalars (noise scales, inner step, batch) under ``problem_instance`` in the configuration."""
    from dataclasses import fields, is_dataclass
    if not is_dataclass(pr):
        return
    scalars, arrays = {}, []
    for f in fields(pr):
        v = getattr(pr, f.name)
        if isinstance(v, np.ndarray):
            tr.arrays[f"problem_{f.name}"] = np.asarray(v, dtype=np.float64)
            arrays.append(f"problem_{f.name}")
        elif isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
            scalars[f.name] = float(v)
    tr.config["problem_instance"] = {"class": type(pr).__name__, "arrays": arrays, **scalars}


def _record_steps(tr, cfg, gn, smp, rnd, xsq, extra):
    """The evaluated steps into the trace, stopping at the first the divergence rule flags."""
    rule = DivergenceRule(cost_factor=cfg.diverge_cost_factor, max_sq_norm=cfg.diverge_sq_norm)
    tr.status = "finished"
    for t in evaluation_steps(cfg.steps, cfg.eval_every):
        # the runs above are kernels without early exit: a blow-up is found here, and the
        # trace keeps the evaluations before it. ||∇F|| is bounded on these problems, so the
        # iterate's norm is tested too
        reason = rule.sq_norm("||x_bar||^2", xsq[t - 1])
        if reason is None and t > 1:
            reason = rule.cost("||grad F(x_bar)||", gn[t - 1], gn[0])
        if reason:
            tr.status = f"diverged: step {t}: {reason}; trace holds steps 1..{t - 1}"
            break
        vals = dict(step=t, grad_norm=gn[t - 1], samples=smp[t - 1], rounds=rnd[t - 1])
        vals.update(extra.get(t, {}))
        tr.record(**vals)


def _initial_point(cfg, pr, kind):
    """x1 (zeros by default) and, for the STORM-type methods, optional initial estimators
    (h1 (M, p), u1 (M, p, d), v1 (M, p): all three or none) from ``cfg.init``."""
    if cfg.init is None:
        return np.zeros(pr.d), None
    from refimpl.core.replay import numeric, read_arrays
    what = f"--init {cfg.init}"
    arrays = read_arrays(cfg.init, "--init")
    name = next((n for n in ("x1", "init_x1") if n in arrays), None)
    if name is None:
        raise ValueError(f"{what}: missing array 'x1' (the initial point, shape ({pr.d},)); found {sorted(arrays)}")
    # (d,), or a MATLAB row or column vector (1, d) / (d, 1); a matrix of d entries is not a point
    vector = arrays[name].size == pr.d and np.squeeze(arrays[name]).ndim <= 1
    x1 = numeric(arrays[name], what, name).reshape(-1) if vector else None
    if x1 is None:
        raise ValueError(f"{what}: array {name!r} has shape {arrays[name].shape}; expected ({pr.d},)")
    est = [n for n in ("h1", "u1", "v1") if n in arrays]
    if not est:
        return x1, None
    if kind != "storm":
        raise ValueError(f"{what}: {est} are MFCGD/AdaMFCGD/STORM estimators; {cfg.method} has none")
    if len(est) != 3:
        raise ValueError(f"{what}: give all of h1, u1, v1 or none (found {est})")
    M, p, d = pr.M, pr.p, pr.d
    out = []
    for n, shape in (("h1", (M, p)), ("u1", (M, p, d)), ("v1", (M, p))):
        a = numeric(arrays[n], what, n)
        if a.shape != shape:
            raise ValueError(f"{what}: array {n!r} has shape {a.shape}; expected {shape} (M = {M}, p = {p}, d = {d})")
        out.append(a)
    return x1, tuple(out)


def _samples(cfg, pr, kind, estimators_given=False):
    """The samples of ``cfg.samples`` in consumption order (SAMPLE_ARRAYS), each checked against
    the problem's sample shapes; a trace's ``samples_<name>`` arrays are accepted too. With the
    initial estimators given (h1, u1, v1 in ``--init``), the q initial samples zeta0, xi0 that
    would have built them are not consumed and may be absent (None)."""
    from refimpl.core.replay import read_arrays
    what = f"--samples {cfg.samples}"
    arrays = read_arrays(cfg.samples, "--samples")
    probe = np.random.default_rng(0)
    zs, xs = np.shape(pr.draw_zeta(probe, ())), np.shape(pr.draw_xi(probe, ()))
    M, T = pr.M, cfg.steps
    q = 1 if cfg.method == "storm" else cfg.q
    lead = {"zeta0": (M, q) if kind == "storm" else (M,), "xi0": (M, q), "zeta": (T, M), "zeta2": (T, M), "xi": (T, M)}
    out = []
    for n in SAMPLE_ARRAYS[kind]:
        a = arrays.get(n, arrays.get(f"samples_{n}"))
        shape = lead[n] + (xs if n.startswith("xi") else zs)
        if a is None and estimators_given and kind == "storm" and n in ("zeta0", "xi0"):
            out.append(None)
            continue
        if a is None:
            raise ValueError(f"{what}: missing array {n!r} (shape {shape}); {cfg.method} consumes "
                             f"{', '.join(SAMPLE_ARRAYS[kind])}")
        a = np.asarray(a)
        if a.ndim >= 1 and n in ("zeta", "zeta2", "xi") and a.shape[0] > T:
            a = a[:T]
        if a.shape != shape:
            raise ValueError(f"{what}: array {n!r} has shape {a.shape}; expected {shape}")
        seeds = pr.draw_zeta(probe, ()).dtype.kind in "iu"
        if seeds and a.dtype.kind not in "iu":
            raise ValueError(f"{what}: array {n!r} must hold integer sample seeds for problem {cfg.problem}, "
                             f"got dtype {a.dtype}")
        if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            raise ValueError(f"{what}: array {n!r} holds a non-finite sample")
        out.append(a)
    return tuple(out)


def theorem_report(pr, cfg, x1):
    """Which conditions of Theorem 2 (MFCGD) or Theorem 1 (AdaMFCGD, ρ) the run's parameters meet
    on the synthetic problem (its constants are known); B is taken at its smallest admissible value."""
    from refimpl.mfcgd.bounds import Constants, TheoremParams, _B_lower, theorem_conditions
    C = pr.constants()
    c = Constants(C["C_f"], C["C_g"], C["L_f"], C["L_g"], C["sigma"], C["delta_f"], C["delta_g"], pr.F(x1) - C["F_star"])
    rho = cfg.rho if cfg.method == "adamfcgd" else 1.0
    q = 1 if cfg.method == "storm" else cfg.q
    p = TheoremParams(cfg.k, cfg.n, cfg.c, cfg.c, cfg.c, cfg.gamma, q, 0.0)
    p = TheoremParams(cfg.k, cfg.n, cfg.c, cfg.c, cfg.c, cfg.gamma, q, _B_lower(c, p, rho))
    conds = theorem_conditions(c, p, rho)
    return {"theorem": 1 if cfg.method == "adamfcgd" else 2, "rho": rho,
            "failed": [r["name"] for r in conds if not r["met"]], "all_met": all(r["met"] for r in conds)}


def _projection_radii(pr):
    if isinstance(pr, (SyntheticComposition, NonlinearComposition)):
        C = pr.constants()
        return C["C_g"], C["C_f"]
    if isinstance(pr, DistributionallyRobustFL):
        # ||∇ loss|| ≤ sqrt(2) (||x_n|| + 1) for softmax cross-entropy; f' ∈ (0, 1)
        return float(np.sqrt(2.0) * (max(np.linalg.norm(X, axis=1).max() for X in pr.Xs) + 1.0)), 1.0
    # MAML: finite radii large enough not to bind in practice (the Gaussian design is unbounded)
    return 100.0, 100.0


def fedavg_drfl(pr, test, cfg, rng):
    """FedAvg on the same label-skewed split (average of the clients' losses, no f): q local SGD
    steps of size ``cfg.eta`` per round; returns worst-client and average test accuracy."""
    x = np.zeros(pr.d)
    for r in range(max(1, cfg.steps // cfg.q)):
        xs = []
        for m in range(pr.M):
            xm = x.copy()
            for _ in range(cfg.q):
                xm -= cfg.eta * pr.jac_g(m, xm, rng.integers(2 ** 31))[0]
            xs.append(xm)
        x = np.mean(xs, axis=0)
    acc = pr.client_accuracy(x, *test)
    return {"worst_client_accuracy": min(acc), "average_accuracy": float(np.mean(acc))}
