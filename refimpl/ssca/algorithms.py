"""Algorithms 1 and 3 of [SSCA] (unconstrained mini-batch SSCA) and the Section VI baselines.

Each algorithm is an object with ``init(theta0) -> state`` and
``apply(state, t, batch) -> (state, messages, grad_evals)`` (FedJAX style): explicit state in,
explicit state out; the round's batch comes from a :class:`~refimpl.core.partition.BatchSchedule`.
:func:`train` drives any of them and fills a :class:`~refimpl.core.trace.Trace`.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, replace

import numpy as np

from refimpl.core import dumps as dump_files
from refimpl.core import validate as V
from refimpl.core.divergence import DivergenceRule
from refimpl.core.model import TwoLayerNet, objective
from refimpl.ssca.protocols import ALL_CLIENTS, SERVER, FeatureBasedProtocol, Message, SampleBasedProtocol, client, ledger_floats
from refimpl.core.schedules import PowerLaw
from refimpl.ssca.constrained import SolverError
from refimpl.ssca.kernels import SERVER_KERNELS
from refimpl.ssca.surrogate import SurrogateState, check_curvature, unconstrained_step


class DivergenceError(RuntimeError):
    """Raised inside a round when an iterate or estimate stops being finite."""


def _check_finite(t, **arrays):
    for name, a in arrays.items():
        if not np.all(np.isfinite(a)):
            raise DivergenceError(f"round {t}: {name} is not finite (NaN/inf)")


# ---------------------------------------------------------------------------------------- SSCA

@dataclass(frozen=True)
class SSCAState:
    omega: np.ndarray
    surrogate: SurrogateState
    loss_hat: float = np.nan


class SSCA:
    """Unconstrained mini-batch SSCA: Algorithm 1 (sample-based protocol) or Algorithm 3
    (feature-based protocol), [SSCA] Sections III-A and IV-A, docs/ssca.md steps 1–4.

    ``collect(omega, batch) -> (ℓ̂, ĝ, messages)`` is the protocol; ρ_t, γ_t are schedules; τ > 0
    the proximal weight of surrogate (7); λ ≥ 0 the regulariser of (32); ``curvature``
    "recursive" (the paper's A-recursion) or "fixed" (A^t = τ, the authors' code).
    """

    def __init__(self, protocol, rho, gamma, tau, lam=0.0, curvature="recursive"):
        self.protocol, self.rho, self.gamma = protocol, rho, gamma
        self.tau = V.positive("tau", tau)
        self.lam = V.positive("lambda", lam, allow_zero=True)
        self.fixed = check_curvature(curvature) == "fixed"
        self._round = SERVER_KERNELS[protocol.model.backend]

    def init(self, theta0):
        return SSCAState(theta0.copy(), SurrogateState.zeros(theta0.size))

    def apply(self, state, t, batch):
        """Steps 1–4 of one round. Steps 2–4 run as one fused pass over ω
        (:func:`refimpl.ssca.kernels.ssca_round_nb`), equal to :func:`~refimpl.ssca.surrogate.surrogate_update`,
        :func:`~refimpl.ssca.surrogate.unconstrained_step` and :func:`~refimpl.ssca.surrogate.move` in sequence."""
        loss_hat, grad_hat, msgs = self.protocol.collect(state.omega, batch)
        rho, gamma = V.unit_interval("rho_t", self.rho(t)), V.unit_interval("gamma_t", self.gamma(t))
        s = state.surrogate
        A, B, C, omega, sq = self._round(s.A, s.B, s.C, loss_hat, grad_hat, state.omega, rho, self.tau,
                                         gamma, self.lam, self.fixed)
        if not (np.isfinite(C) and np.isfinite(sq)):
            # C contains ℓ̂, ⟨ĝ, ω⟩, ||ω||²; sq = ||ω^{t+1}||²: any NaN/inf shows up in one of them
            _check_finite(t, mini_batch_loss=loss_hat, mini_batch_gradient=grad_hat, omega=omega)
            raise DivergenceError(f"round {t}: ||omega||^2 overflowed")
        return SSCAState(omega, SurrogateState(A, B, C), loss_hat), msgs, _n_samples(batch)

    def dump_round(self, state, t, batch, new):
        """Round t's intermediate quantities (docs/guide.md), in data-flow order: the estimates
        (per client, sample-based; aggregated), ρ_t, γ_t, the surrogate (A^t, B^t, C^t) the round
        produced, ω̄^t (the NumPy twin's (10) on that surrogate) and ω^{t+1}."""
        out = _estimates(self.protocol, state.omega, batch)
        s = new.surrogate
        out.update(rho=np.array(self.rho(t)), gamma=np.array(self.gamma(t)), A=np.array(s.A), B=s.B,
                   C=np.array(s.C), omega_bar=unconstrained_step(s, self.lam), omega_next=new.omega)
        return out


def _estimates(protocol, omega, batch):
    """ω^t, the batch, the aggregated (ℓ̂^t, ĝ^t) and, for the sample-based protocol, each client's
    own mini-batch means (ℓ̂_k, ĝ_k) (ĝ = Σ_k (N_k/N) ĝ_k; pooled sampling: the means over the ids
    client k holds, their counts in ``client_count``, ĝ = Σ_k count_k ĝ_k / (K B))."""
    loss_hat, grad_hat, _ = protocol.collect(omega, batch)
    out = {"omega": omega.copy(), "batch": np.asarray(batch)}
    if isinstance(protocol, SampleBasedProtocol):
        groups = protocol.pooled_groups(batch) if protocol.pooled else batch
        sums = [protocol.client_sums(omega, k, b) for k, b in enumerate(groups)]
        out["client_loss"] = np.array([ls / max(len(b), 1) for (ls, _), b in zip(sums, groups)])
        out["client_grad"] = np.array([gs / max(len(b), 1) for (_, gs), b in zip(sums, groups)])
        if protocol.pooled:
            out["client_count"] = np.array([len(b) for b in groups])
    out.update(loss_hat=np.array(loss_hat), grad_hat=grad_hat)
    return out


def _n_samples(batch):
    return int(np.asarray(batch).size)


# ----------------------------------------------------------------------------------- baselines

@dataclass(frozen=True)
class SGDState:
    omega: np.ndarray
    velocity: np.ndarray | None = None


class FedAvg:
    """Sample-based SGD / FedAvg / PR-SGD (docs/ssca.md): every client runs E local SGD steps from ω^t
    with batch B and η_t = η0 / t^β on ℓ + λ||ω||², the server averages models with weights
    N_k/N. E = 1 is FedSGD. With ``momentum`` m > 0 this is SGD-m: local steps
    v ← m v + (1 − m) g, ω ← ω − η v, and the server averages models and momentum buffers.

    Communication: for E = 1 every client starts from the same (ω, v), so the averages equal one
    server-side step with the averaged gradient and the clients send gradients (dim ω + 1 floats,
    as SSCA); for E > 1 they send their model (and buffer).
    """

    def __init__(self, protocol: SampleBasedProtocol, lr, lam=0.0, momentum=0.0, local_steps=1):
        self.protocol, self.lr = protocol, lr
        self.lam = V.positive("lambda", lam, allow_zero=True)
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"momentum must be in [0, 1), got {momentum}")
        self.m = float(momentum)
        self.E = V.positive_int("local_steps", local_steps)

    def init(self, theta0):
        return SGDState(theta0.copy(), np.zeros_like(theta0) if self.m > 0 else None)

    def apply(self, state, t, batches):
        eta = self.lr(t)
        if self.E == 1:
            _, g, msgs = self.protocol.collect(state.omega, batches)
            g = g + 2.0 * self.lam * state.omega
            _check_finite(t, mini_batch_gradient=g)
            omega, v = _sgd_step(state.omega, state.velocity, g, eta, self.m)
            _check_finite(t, omega=omega)
            return SGDState(omega, v), msgs, _n_samples(batches)
        P = state.omega.size
        msgs = [Message(SERVER, ALL_CLIENTS, "omega" + ("+velocity" if self.m else ""), P * (2 if self.m else 1))]
        omega = np.zeros_like(state.omega)
        vel = np.zeros_like(state.omega) if self.m else None
        pr = self.protocol
        for k, idx in enumerate(batches):
            B = len(idx) // self.E
            w, v = state.omega.copy(), None if state.velocity is None else state.velocity.copy()
            for e in range(self.E):
                sl = idx[e * B:(e + 1) * B]
                g = pr.model.loss_grad(w, pr.X[sl], pr.y[sl])[1] + 2.0 * self.lam * w
                w, v = _sgd_step(w, v, g, eta, self.m)
            omega += pr.client_weight[k] * w
            if self.m:
                vel += pr.client_weight[k] * v
            msgs.append(Message(client(k), SERVER, "omega_k" + ("+velocity_k" if self.m else ""), P * (2 if self.m else 1)))
        _check_finite(t, omega=omega)
        return SGDState(omega, vel), msgs, _n_samples(batches)

    def dump_round(self, state, t, batch, new):
        """ω^t, the estimates at ω^t (E = 1: the step's gradient before 2λω), η_t, ω^{t+1}."""
        out = _estimates(self.protocol, state.omega, batch)
        out.update(eta=np.array(self.lr(t)), omega_next=new.omega)
        if new.velocity is not None:
            out["velocity"] = new.velocity
        return out


class FeatureSGD:
    """Feature-based SGD and SGD-m (docs/ssca.md): one global step per round with the gradient
    collected by the feature-based protocol, ω ← ω − η_t (ĝ + 2λω) (momentum: through v)."""

    def __init__(self, protocol: FeatureBasedProtocol, lr, lam=0.0, momentum=0.0):
        self.protocol, self.lr = protocol, lr
        self.lam = V.positive("lambda", lam, allow_zero=True)
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"momentum must be in [0, 1), got {momentum}")
        self.m = float(momentum)

    def init(self, theta0):
        return SGDState(theta0.copy(), np.zeros_like(theta0) if self.m > 0 else None)

    def apply(self, state, t, batch):
        _, g, msgs = self.protocol.collect(state.omega, batch)
        g = g + 2.0 * self.lam * state.omega
        _check_finite(t, mini_batch_gradient=g)
        omega, v = _sgd_step(state.omega, state.velocity, g, self.lr(t), self.m)
        _check_finite(t, omega=omega)
        return SGDState(omega, v), msgs, _n_samples(batch)

    dump_round = FedAvg.dump_round


def _sgd_step(w, v, g, eta, m):
    if v is None:
        return w - eta * g, None
    v = m * v + (1.0 - m) * g
    return w - eta * v, v


class LearningRate(PowerLaw):
    """η_t = η0 / t^β; unlike ρ_t, γ_t a learning rate may exceed 1."""

    def __post_init__(self):
        if not (self.a > 0 and np.isfinite(self.a)):
            raise ValueError(f"learning rate eta0 = {self.a} must be finite and > 0")
        if not (self.alpha >= 0 and np.isfinite(self.alpha)):
            raise ValueError(f"learning-rate decay beta = {self.alpha} must be finite and >= 0")


# -------------------------------------------------------------------------------------- driver

@dataclass(frozen=True)
class Evaluator:
    """Metrics on the full training set (cost (32)) and the test set, every ``every`` rounds."""

    model: TwoLayerNet
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    lam: float = 0.0
    every: int = 1
    authors_cost: bool = False      # also the SSCA authors' recorded cost (TwoLayerNet.one_vs_all_cost)
    #: False: the test accuracy is recorded as NaN, not evaluated (a run that reads only the
    #: training cost, such as a rounds-to-target run, saves a forward pass over the test set)
    test_accuracy: bool = True

    def cost_shown_above(self, theta, level, rows=500):
        """A lower bound on the training cost (32) at θ that exceeds ``level``, read from the first
        training rows alone (every row's loss is ≥ 0: :meth:`TwoLayerNet.loss_sum`), or None when
        the bound stays at or below ``level`` up to the last chunk of rows (then evaluate in full).
        The bound must clear ``level`` by a relative 1e-9, far above the rounding that separates
        it from the full evaluation's sum, so a screened cost is above ``level`` in both."""
        m, X, y = self.model, self.X_train, self.y_train
        reg = self.lam * float(theta @ theta)
        N, total = X.shape[0], 0.0
        for s in range(0, N - rows, rows):             # the last chunk would complete the sum: evaluate in full
            total += m.loss_sum(theta, X[s:s + rows], y[s:s + rows])
            lower = total / N + reg
            if not lower <= level + 1e-9 * abs(level):  # above it, or not finite (the divergence rule's)
                return lower
        return None

    def __call__(self, theta, state=None):
        out = {"train_cost": objective(self.model, theta, self.X_train, self.y_train, self.lam),
               "test_accuracy": self.model.accuracy(theta, self.X_test, self.y_test) if self.test_accuracy else np.nan,
               "sq_norm": float(theta @ theta)}
        if self.authors_cost:
            out["authors_cost"] = self.model.one_vs_all_cost(theta, self.X_train, self.y_train)
        return out


#: (what the metrics depend on) -> (weak references to the data arrays, the metrics) of the last
#: few initial points evaluated in this process (:func:`initial_metrics`)
_INITIAL = OrderedDict()
_INITIAL_KEPT = 8


def initial_metrics(evaluator, theta, state=None):
    """``evaluator(theta)`` at a run's initial point ω^0, remembered for the last few: the runs of a
    tuning grid, or a reproduction's methods, start from one ω^0 on one data set, and each would
    evaluate it on the full data again (0.6 s on Fashion-MNIST) for the same numbers (an
    evaluation is deterministic). Remembered by the model, the data arrays (by identity, each held
    by a weak reference: a freed array is never mistaken for a new one at its address), λ, the
    options and ω^0's bytes; only the plain :class:`Evaluator` (a constrained one reads the state)."""
    if type(evaluator) is not Evaluator:
        return evaluator(theta, state)
    import hashlib
    import weakref
    arrays = (evaluator.X_train, evaluator.y_train, evaluator.X_test, evaluator.y_test)
    key = (evaluator.model, tuple(id(a) for a in arrays), evaluator.lam, evaluator.authors_cost, evaluator.test_accuracy,
           theta.dtype.str, theta.shape, hashlib.sha256(np.ascontiguousarray(theta).tobytes()).hexdigest())
    hit = _INITIAL.get(key)
    if hit is not None and all(r() is a for r, a in zip(hit[0], arrays)):
        _INITIAL.move_to_end(key)
        return dict(hit[1])
    out = evaluator(theta)
    _INITIAL[key] = (tuple(weakref.ref(a) for a in arrays), dict(out))      # NumPy arrays are weakly referable
    while len(_INITIAL) > _INITIAL_KEPT:
        _INITIAL.popitem(last=False)
    return out


class Trainer:
    """The round loop of :func:`train`, one round at a time, so that another engine (the Flower
    adapter) can drive it: ``start()``, then ``step(t, batch)`` for t = 1..rounds (False once the
    run has stopped), the final state in ``state``. Evaluation, snapshots, the communication
    ledger and the divergence rule are those of :func:`train`."""

    def __init__(self, algorithm, theta0, rounds, evaluator, trace, snapshots=(), progress=None, on_round=None,
                 divergence: DivergenceRule | None = None, stop_at_cost=None, dump_rounds=(), dump_writer=None,
                 screen=False):
        self.algorithm, self.theta0, self.rounds, self.evaluator, self.trace = algorithm, theta0, rounds, evaluator, trace
        self.dump_rounds, self.dump_writer = set(int(r) for r in dump_rounds), dump_writer
        if stop_at_cost is not None and not np.isfinite(stop_at_cost):
            raise ValueError(f"stop_at_cost must be a finite training cost, got {stop_at_cost}")
        if screen and (stop_at_cost is None or type(evaluator) is not Evaluator or evaluator.authors_cost):
            raise ValueError("screen applies to a run with stop_at_cost and the plain training-cost Evaluator "
                             "(no authors' cost, no constrained metrics)")
        self.stop_at_cost, self.screen = stop_at_cost, screen
        self.snaps = set(int(s) for s in snapshots)
        self.progress, self.on_round = progress, on_round
        self.rule = DivergenceRule() if divergence is None else divergence
        self.model = evaluator.model
        self.comm, self.evals = 0, 0
        self.state = None
        self.running = False

    def _snapshot(self, t, theta):
        if t in self.snaps:
            W1, W2 = self.model.unpack(theta)
            self.trace.snapshots[t] = (W1.copy(), W2.copy())

    def _screened(self, st):
        """With ``screen``: the metrics of an evaluation that the first training rows show to be
        above ``stop_at_cost``: the training cost and the test accuracy NaN (not evaluated), the
        lower bound in ``train_cost_lower_bound``; None when the evaluation must be full."""
        lower = self.evaluator.cost_shown_above(st.omega, self.stop_at_cost)
        if lower is None:
            return None
        return {"train_cost": np.nan, "test_accuracy": np.nan, "sq_norm": float(st.omega @ st.omega),
                "train_cost_lower_bound": lower}

    def _evaluate(self, t, st):
        trace = self.trace
        m = self._screened(st) if self.screen and trace.metrics["round"] else None
        if m is None:
            m = initial_metrics(self.evaluator, st.omega, st) if t == 0 else self.evaluator(st.omega, st)
            if self.screen:
                m["train_cost_lower_bound"] = m["train_cost"]
        if trace.metrics["round"]:        # a screened evaluation: the rule reads the lower bound
            reason = self.rule.cost("training cost", m["train_cost_lower_bound" if self.screen else "train_cost"],
                                    trace.metrics["train_cost"][0])
            if reason:
                return reason
        trace.record(round=t, comm_floats=self.comm, grad_evals=self.evals, **m)
        if self.progress is not None:
            self.progress(t, m)
        return None

    def _stop(self, t, what, last_good):
        trace = self.trace
        trace.status = f"{what}; trace holds rounds 0..{t - 1}"
        if t - 1 not in trace.snapshots:                 # the last good iterate, for replay and diagnosis
            W1, W2 = self.model.unpack(last_good.omega)
            trace.snapshots[t - 1] = (W1.copy(), W2.copy())
        if not trace.metrics["round"] or trace.metrics["round"][-1] != t - 1:
            self._evaluate(t - 1, last_good)
        self.state, self.running = last_good, False
        return False

    def start(self):
        self.state = self.algorithm.init(self.theta0)
        self._evaluate(0, self.state)
        self._snapshot(0, self.state.omega)
        self.trace.status = "running"
        self.running = True
        return self.state

    def step(self, t, batch):
        """Round t on ``batch``; returns True while the run goes on."""
        state = self.state
        try:
            new_state, msgs, n = self.algorithm.apply(state, t, batch)
        except (DivergenceError, SolverError) as exc:
            what = f"diverged: {exc}" if isinstance(exc, DivergenceError) else f"solver failed: round {t}: {exc}"
            return self._stop(t, what, state)
        except MemoryError:             # the rounds before it (and their dumps, on disk) are kept
            return self._stop(t, f"stopped: out of memory in round {t}", state)
        reason = self.rule.sq_norm("||omega||^2", float(new_state.omega @ new_state.omega))
        if reason:
            return self._stop(t, f"diverged: round {t}: {reason}", state)
        self.state, last_good = new_state, state
        if t in self.dump_rounds:
            try:
                quantities = self.algorithm.dump_round(state, t, batch, new_state)
            except MemoryError:
                return self._stop(t, f"stopped: out of memory dumping round {t}", state)
            dump_files.put(self.trace, t, quantities, self.dump_writer)
        if t == 1:
            self.trace.ledger_round1 = [m.__dict__ for m in msgs]
        self.comm += ledger_floats(msgs)
        self.evals += n
        if self.on_round is not None:
            self.on_round(t, new_state)
        evaluated = t % self.evaluator.every == 0 or t == self.rounds
        if evaluated:
            reason = self._evaluate(t, new_state)
            if reason:
                return self._stop(t, f"diverged: round {t}: {reason}", last_good)
        self._snapshot(t, new_state.omega)
        if t == self.rounds:
            self.trace.status = "finished"
            self.running = False
        elif evaluated and self.stop_at_cost is not None and self.trace.metrics["train_cost"][-1] <= self.stop_at_cost:
            self.trace.status = f"finished: reached training cost {self.stop_at_cost:g} at round {t}"
            self.running = False
        return self.running


def train(algorithm, theta0, schedule, rounds, evaluator: Evaluator, trace, snapshots=(),
          progress=None, on_round=None, divergence: DivergenceRule | None = None, stop_at_cost=None, dump_rounds=(),
          dump_writer=None, screen=False):
    """Run ``rounds`` rounds of ``algorithm`` with the schedule's batches; fill ``trace``.

    Round 0 (the initial point) and every ``evaluator.every``-th round and the last round are
    evaluated. A non-finite iterate stops the run: ``trace.status`` names the round and the
    quantity, the trace keeps everything up to the last good round, and the final state returned
    is the last good one. The same happens, before anything overflows, when ``divergence`` (a
    :class:`~refimpl.core.divergence.DivergenceRule`; default limits when None) finds ||ω||² or
    the training cost too large. ``progress(t, metrics)`` is called after each evaluation;
    ``on_round(t, state)`` after every round (used by the verification checks).
    ``stop_at_cost``: stop after the first evaluation whose training cost is ≤ this value (the
    trace up to that round is the same as without it; "rounds to a target" needs no more).
    ``screen`` (with ``stop_at_cost``): an evaluation that the first training rows show to be above
    the target stops there and records the cost as NaN beside its lower bound
    (``train_cost_lower_bound``; :meth:`Evaluator.cost_shown_above`), which the divergence rule
    reads: the round that meets the target and the rounds before it are those of the unscreened run,
    unless a cost beyond the rule's limit hides behind a lower bound within it (docs/guide.md).
    ``dump_rounds``: rounds whose intermediate quantities (the algorithm's ``dump_round``) go into
    the trace's arrays as ``r<t>_<name>``, or — given ``dump_writer`` (a
    :class:`~refimpl.core.dumps.DumpWriter`) — to disk as each round finishes.
    """
    tr = Trainer(algorithm, theta0, rounds, evaluator, trace, snapshots, progress, on_round, divergence, stop_at_cost,
                 dump_rounds, dump_writer, screen)
    tr.start()
    for t in range(1, rounds + 1):
        if not tr.step(t, schedule.indices[t - 1]):
            break
    if rounds == 0:
        trace.status = "finished"
    return tr.state
