"""Flex-VFL (Algorithm 1), Adaptive Flex-VFL (Algorithm 2) and the synchronous, asynchronous and
P-BCD baselines of [FlexVFL], on a simulated clock (docs/flexvfl.md–§7).

One global round r of Flex-VFL:
  1. parties agree on a mini-batch B^r (here: drawn from the run's Generator);
  2. party k ≥ 1 sends h_k(θ_k^{r,0}; X_k^B) to the server, which sends θ_0^{r,0} and the snapshot
     Φ^r = {θ_0^{r,0}, h_1, …, h_K} back;
  3. every party (server included) runs τ_k^r local steps on B^r, updating only θ_k and using the
     stale Φ_{-k}^r:  θ_k^{r,t+1} = θ_k^{r,t} − η_k^r D_k(…)   (6);
  4. Θ^{r+1,0} collects the last local iterates.
τ_k^r = max(1, floor(timeout / step_time_k^r)) for Flex-VFL, Q for synchronous VFL, 1 for P-BCD.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np

from refimpl.core import dumps as dump_files
from refimpl.core import validate as V
from refimpl.core.divergence import DivergenceRule
from refimpl.core.data import Dataset
from refimpl.vfl.local_optimizers import SGD, LocalMomentum, Proximal, weight_summary
from refimpl.vfl.speeds import Network
from refimpl.core.trace import Trace
from refimpl.vfl.models import LinearEncoder
from refimpl.vfl.policies import AsyncServerQueue, compose, padded_schedule, validate_batches, validate_taus
# the Numba party loop lives in its own file (an edit here leaves its compilation cache valid)
from refimpl.vfl.kernels import linear_party_phase_nb

from refimpl.vfl.conventions import ROUND_METHODS as METHODS  # noqa: E402  (the one list)


def quadrant_blocks(side=28):
    """Feature blocks of the four image quadrants (row-major pixels), top-left first."""
    idx = np.arange(side * side).reshape(side, side)
    h = side // 2
    return [idx[:h, :h].ravel(), idx[:h, h:].ravel(), idx[h:, :h].ravel(), idx[h:, h:].ravel()]


#: id(dataset) -> (a weak reference to it, the blocks, the split): VerticalData.from_dataset's
_SPLITS = {}


@dataclass(frozen=True)
class VerticalData:
    """Aligned feature blocks of the K parties (rows are the same samples for every party)."""

    Xs_train: tuple
    y_train: np.ndarray
    Xs_test: tuple
    y_test: np.ndarray

    def __post_init__(self):
        for name, Xs, y in (("training", self.Xs_train, self.y_train), ("test", self.Xs_test, self.y_test)):
            for k, X in enumerate(Xs):
                if X.shape[0] != len(y):
                    raise ValueError(f"party {k + 1}'s {name} features have {X.shape[0]} rows but there are "
                                     f"{len(y)} labels: the parties' rows must be aligned")

    @classmethod
    def from_dataset(cls, ds: Dataset, blocks):
        """The parties' columns of ``ds`` (``blocks``: one index list per party). The last split of
        each dataset is kept while the dataset lives, its feature arrays read-only, and given again
        for the same blocks of the same arrays: the checks run dozens of short runs on one dataset,
        and each split of the embedded data cost 22 ms, more than a run's rounds."""
        key = tuple(tuple(int(i) for i in b) for b in blocks)
        hit = _SPLITS.get(id(ds))
        if hit is not None and hit[0]() is ds and hit[1] == key:     # a frozen Dataset: its arrays are its own
            return hit[2]
        # np.take(X, b, axis=1) copies the same columns as X[:, b], twice as fast on 28×28 quadrants
        split = cls(tuple(np.ascontiguousarray(np.take(ds.X_train, b, axis=1)) for b in blocks), ds.y_train,
                    tuple(np.ascontiguousarray(np.take(ds.X_test, b, axis=1)) for b in blocks), ds.y_test)
        for X in (*split.Xs_train, *split.Xs_test):
            X.flags.writeable = False
        # the dataset by identity, never by address: its entry leaves with it
        _SPLITS[id(ds)] = (weakref.ref(ds, lambda r, i=id(ds): _SPLITS.pop(i) if _SPLITS.get(i, (None,))[0] is r
                                       else None), key, split)
        return split

    @property
    def n(self):
        return len(self.y_train)


# ----------------------------------------------------------------------------- local phases

def server_local_phase(model, theta0, H, yb, opt, eta, tau, record=False, state=None, dump=None):
    """Party 0: τ steps on θ_0 with every embedding stale (Φ^r). ``state``: the optimizer state to
    start from (None: ``opt.init``, a reset); returns (θ_0^{r,τ}, gradients if ``record``, final
    state). ``dump``: a list that receives (θ^{r,t}, g^{r,t}, optimizer state after step t) per step."""
    th, start = theta0.copy(), theta0
    state, grads = (opt.init(th) if state is None else state), []
    for t in range(tau):
        g = model.fusion.loss_grads(th, H, yb)[1]
        if record:
            grads.append(g)
        th_t = th
        th, state = opt.update(g, state, th, start, eta, t)
        if dump is not None:
            dump.append((th_t, g, state))
    return th, grads, state


def party_local_phase(model, k, theta_k, theta0_snap, H, Xb, yb, opt, eta, tau, dh_stale=None, record=False,
                      state=None, dump=None):
    """Party k ≥ 1: τ steps on θ_k with θ_0 and the other embeddings from the snapshot.
    ``dh_stale``: labels only at the server — the party uses the ∂l/∂h_k it received.
    ``state`` / ``dump`` and the returned triple as for :func:`server_local_phase`."""
    enc = model.encoders[k - 1]
    o0, o1 = model.offsets[k - 1], model.offsets[k]
    th, start = theta_k.copy(), theta_k
    state, grads = (opt.init(th) if state is None else state), []
    Ht = H.copy()
    for t in range(tau):
        h, cache = enc.forward(th, Xb)
        if dh_stale is None:
            Ht[:, o0:o1] = h
            dh = model.fusion.loss_grads(theta0_snap, Ht, yb)[2][:, o0:o1]
        else:
            dh = dh_stale
        g = enc.backward(th, cache, dh)
        if record:
            grads.append(g)
        th_t = th
        th, state = opt.update(g, state, th, start, eta, t)
        if dump is not None:
            dump.append((th_t, g, state))
    return th, grads, state


def local_round(m, thetas, Xb, yb, opts, tau, eta, labels="all", use_numba=True, record=False, states=None,
                steps=None):
    """The local phases of one round on the batch rows ``Xb`` (per party), ``yb``: H from Θ^{r,0},
    the server's τ_0 steps with H fixed, each party's τ_k steps against the round-start head and
    embeddings (labels "all") or along the ∂l/∂h_k sent at the round start ("server"); a linear
    party's loop runs in its Numba kernel when ``use_numba`` allows. ``states``: optimizer states
    to start from (None entries: reset); ``steps``: per-party lists that receive each step (dumps).
    Returns (H, the sent ∂l/∂h_k or None, Θ^{r+1,0}, gradients if ``record``, final states)."""
    hs = m.embeddings(thetas, Xb)
    H = np.hstack(hs)
    dh_stale = None
    if labels == "server":
        dH = m.fusion.loss_grads(thetas[0], H, yb)[2]
        dh_stale = [dH[:, m.offsets[k - 1]:m.offsets[k]] for k in range(1, m.K + 1)]
    elif labels != "all":
        raise ValueError(f"labels must be 'all' or 'server', got {labels!r}")
    states = [None] * (m.K + 1) if states is None else states
    new, grads, out_states = [None] * (m.K + 1), [None] * (m.K + 1), [None] * (m.K + 1)
    new[0], grads[0], out_states[0] = server_local_phase(m, thetas[0], H, yb, opts[0], eta[0], int(tau[0]),
                                                         record, states[0], None if steps is None else steps[0])
    for k in range(1, m.K + 1):
        if use_numba and not record and numba_applies(m, k, opts[k], labels):
            new[k], out_states[k] = linear_party_phase_nb(m, k, thetas[k], thetas[0], H, Xb[k - 1], yb,
                                                          opts[k], eta[k], int(tau[k]), states[k],
                                                          None if steps is None else steps[k])
        else:
            new[k], grads[k], out_states[k] = party_local_phase(
                m, k, thetas[k], thetas[0], H, Xb[k - 1], yb, opts[k], eta[k], int(tau[k]),
                None if dh_stale is None else dh_stale[k - 1], record, states[k],
                None if steps is None else steps[k])
    return H, dh_stale, new, grads, out_states


def numba_applies(model, k, opt, labels):
    return (k >= 1 and labels == "all" and isinstance(model.encoders[k - 1], LinearEncoder)
            and type(opt) in (SGD, LocalMomentum, Proximal))


# ----------------------------------------------------------------------------- per-round dumps

# The names a dumped round r stores (as ``r<r>_<name>`` in trace.npz's arrays, saved with the
# prefix ``array_``), in data-flow order; docs/guide.md has the same table with the equations.
DUMP_QUANTITIES = (
    ("batch", "(B,)", "B^r, the round's 0-based sample indices"),
    ("H", "(B, ΣO_k)", "the exchanged embeddings h_k(θ_k^{r,0}; X_k^B), parties side by side"),
    ("dh{k}", "(B, O_k)", "∂l/∂h_k sent to party k (labels at the server only)"),
    ("tau", "(K+1,)", "τ_k^r"),
    ("eta", "(K+1,)", "η_k^r"),
    ("theta{k}", "(τ_k+1, n_k)", "θ_k^{r,t}, t = 0..τ_k (row τ_k: the round's result θ_k^{r+1,0})"),
    ("grad{k}", "(τ_k, n_k)", "g_k^{r,t}, the local gradient of step t (6)"),
    ("momentum{k}", "(τ_k, n_k)", "the local momentum buffer u^t after step t (momentum optimizers)"),
    ("w_bar", "(K+1,)", "w̄_k^r = max_t w_k^{r,t} (8)"),
    ("W", "(K+1,)", "W_k^r = Σ_t w_k^{r,t} (8)"),
)


def round_dump(model, batch_idx, H, dh_stale, thetas, steps, new, tau, eta):
    """The intermediate quantities of one round under :data:`DUMP_QUANTITIES`' names."""
    out = {"batch": np.asarray(batch_idx, dtype=np.int64), "H": H, "tau": np.asarray(tau), "eta": np.asarray(eta)}
    for k in range(model.K + 1):
        if dh_stale is not None and k >= 1:
            out[f"dh{k}"] = dh_stale[k - 1]
        rec = steps[k]
        out[f"theta{k}"] = np.array([x[0] for x in rec] + [new[k]])
        out[f"grad{k}"] = np.array([x[1] for x in rec]).reshape(len(rec), -1)
        if rec and isinstance(rec[0][2], np.ndarray):
            out[f"momentum{k}"] = np.array([x[2] for x in rec])
    return out


# ----------------------------------------------------------------------------- rounds

@dataclass
class RoundRecord:
    tau: np.ndarray
    eta: np.ndarray
    w_bar: np.ndarray
    W: np.ndarray
    duration: float
    work: float
    overrun: np.ndarray


def _replay_schedules(taus, tau0, batches, K1, n):
    """The replay schedules checked: τ table (R, K+1), the dummy round's τ^0 (K+1,), batches (R, B)."""
    if taus is not None:
        taus = validate_taus(taus, 1, K1)
    if tau0 is not None:
        tau0 = validate_taus(np.asarray(tau0).reshape(1, -1), 1, K1, "tau0 (the dummy round's τ)")[0]
    if batches is not None:
        batches = validate_batches(batches, 1, n)
    return taus, tau0, batches


class FlexVFL:
    """Flex-VFL and its round-based relatives on the simulated clock, for a given
    :class:`~refimpl.vfl.policies.Policy`: who takes how many local steps, with which learning
    rate, whether optimizer state survives a round, which samples a round uses and how long it
    lasts. Below this class no method or convention is named; :meth:`from_method` is the boundary
    that turns the names ("flex", "adaptive", "sync", "pbcd"; ``momentum``, ``batch_order``,
    ``adaptive_rule``, replay schedules) into a Policy.
    ``optimizers``: K + 1 local optimizers (index 0: server); ``speeds``: (R, K+1) step times;
    ``labels``: "all" (every party computes ∂l/∂h_k itself) or "server" (parties use the ∂l/∂h_k
    sent by the server). ``smoothness``: optional (L, [L_0 … L_K]) for condition (14).
    """

    def __init__(self, model, data: VerticalData, policy, optimizers, batch, speeds, labels="all", smoothness=None,
                 use_numba=True):
        K1 = model.K + 1
        if len(optimizers) != K1:
            raise ValueError(f"need {K1} local optimizers (server + {model.K} parties), got {len(optimizers)}")
        if len(data.Xs_train) != model.K:
            raise ValueError(f"the data have {len(data.Xs_train)} feature blocks for {model.K} parties")
        for k, (enc, X) in enumerate(zip(model.encoders, data.Xs_train)):
            if X.shape[1] != enc.n_inputs:
                raise ValueError(f"party {k + 1} holds {X.shape[1]} features but its encoder takes {enc.n_inputs}")
        if labels not in ("all", "server"):
            raise ValueError(f"labels must be 'all' or 'server', got {labels!r}")
        self.speeds = np.asarray(speeds, dtype=np.float64)
        if self.speeds.ndim != 2 or self.speeds.shape[1] != K1:
            raise ValueError(f"speeds must have shape (R, {K1}), got {self.speeds.shape}")
        self.model, self.data, self.policy, self.opts = model, data, policy, list(optimizers)
        self.batch, self.labels, self.net = _batch_size(batch, data.n), labels, policy.clock.network
        self.smoothness, self.use_numba = smoothness, use_numba

    @classmethod
    def from_method(cls, model, data: VerticalData, method, optimizers, eta, batch, speeds, timeout=None, Q=10,
                    network=Network(), labels="all", A=None, smoothness=None, use_numba=True, server_steps=None,
                    momentum="reset", batch_order="independent", adaptive_rule="paper", taus=None, batches=None,
                    tau0=None, lr_denominator=None):
        """The boundary: a method and its conventions by name → a :class:`Policy`
        (:func:`~refimpl.vfl.policies.compose`, every name and value checked here), then the run.
        ``eta``: K + 1 learning rates (the paper's adaptive rule ignores them and uses ``A``; the
        authors' rule takes ``A`` as its lr, and ``lr_denominator``); ``taus`` (R, K+1) / ``batches``
        (R, B): replay schedules."""
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        K1 = model.K + 1
        eta = np.broadcast_to(np.asarray(eta, dtype=np.float64), (K1,)).copy()
        if method != "adaptive":
            bad = np.flatnonzero(~np.isfinite(eta) | (eta <= 0))
            if bad.size:
                raise ValueError(f"learning rate η of party {bad[0]} is {eta[bad[0]]}; must be > 0")
        if method == "adaptive":
            if A is None:
                raise ValueError("adaptive Flex-VFL needs the constants A_k")
            A = np.broadcast_to(np.asarray(A, dtype=np.float64), (K1,)).copy()
            if np.any(A <= 0):
                raise ValueError(f"A_k must be > 0, got {A.tolist()}")
        else:
            A = None
        step_times = np.asarray(speeds, dtype=np.float64)
        if method in ("flex", "adaptive"):
            if timeout is None or not timeout > 0:
                raise ValueError(f"Flex-VFL needs a timeout > 0, got {timeout}")
            if step_times.ndim == 2 and step_times.shape[1] == K1:
                mean = step_times.mean(axis=0)
                slow = int(np.argmax(mean))
                if taus is None and timeout < mean[slow]:
                    raise ValueError(f"timeout {timeout:g} is shorter than one local step of party {slow} "
                                     f"(mean step time {mean[slow]:.3g}); τ must be ≥ 1 for every party")
        if method == "sync":
            V.positive_int("Q (synchronous VFL's local steps)", Q)
        if server_steps is not None and (int(server_steps) != server_steps or server_steps < 1):
            raise ValueError(f"server steps must be an integer >= 1 (or None: from the timeout), got {server_steps!r}")
        taus, tau0, batches = _replay_schedules(taus, tau0, batches, K1, data.n)
        policy = compose(method, eta=eta, timeout=timeout, Q=int(Q), network=network, A=A,
                         server_steps=None if server_steps is None else int(server_steps), momentum=momentum,
                         batch_order=batch_order, adaptive_rule=adaptive_rule, taus=taus, batches=batches, tau0=tau0,
                         lr_denominator=lr_denominator)
        return cls(model, data, policy, optimizers, batch, speeds, labels, smoothness, use_numba)

    def _initial_rates(self, trace, sched, rounds):
        """The step-size rule's first rates and state; the paper-adaptive rule's dummy-round τ^0
        goes into the trace (a replay input, read back from ``--taus``)."""
        pol = self.policy
        eta, state = pol.step_size.init(self.opts, self.speeds if pol.step_size.speed_rows else sched[:rounds],
                                        pol.steps)
        if hasattr(pol.step_size, "round0_taus"):
            trace.arrays["tau0"] = pol.step_size.round0_taus(self.speeds)
        return eta, state

    # -- τ and the clock of a round (the policy's) -------------------------------------------------
    def taus(self, step_times, r=1):
        return self.policy.steps.taus(r, step_times)

    def round_duration(self, step_times, tau, floats_up, floats_down):
        """See :class:`~refimpl.vfl.policies.RoundClock`."""
        return self.policy.clock.duration(step_times, tau, floats_up, floats_down)

    def overruns(self, step_times):
        return self.policy.clock.overruns(step_times)

    def messages(self, B=None):
        """Floats per round: K (|θ_0| + B Σ O_k) down (docs/flexvfl.md), B Σ O_k up (embeddings), plus
        B O_k to each party when labels are only at the server."""
        K, B = self.model.K, self.batch if B is None else B
        sum_o = int(self.model.offsets[-1])
        down = K * (self.model.fusion.n_params + B * sum_o) + (B * sum_o if self.labels == "server" else 0)
        return B * sum_o, down

    def condition14(self, eta, tau, w_bar):
        """η_k^r ≤ 1 / (16 max{L, L_k} τ_k^r w̄_k^r) per party, or None without constants."""
        if self.smoothness is None:
            return None
        L, Lk = self.smoothness
        return condition14(eta, tau, w_bar, L, Lk)

    # -- one round -------------------------------------------------------------------------------
    def round(self, thetas, batch_idx, tau, eta, record=False, states=None, dump=None):
        """One global round from Θ^{r,0}; returns (Θ^{r+1,0}, per-party gradients if ``record``,
        per-party optimizer states). ``states``: the states to start from (None entries: reset).
        ``dump``: a dict that receives the round's intermediate quantities (docs/guide.md)."""
        m, d = self.model, self.data
        Xb = [X[batch_idx] for X in d.Xs_train]
        yb = d.y_train[batch_idx]
        steps = None if dump is None else [[] for _ in range(m.K + 1)]
        H, dh_stale, new, grads, out_states = local_round(m, thetas, Xb, yb, self.opts, tau, eta, self.labels,
                                                          self.use_numba, record, states, steps)
        if dump is not None:
            dump.update(round_dump(m, batch_idx, H, dh_stale, thetas, steps, new, tau, eta))
        return new, grads, out_states

    def run(self, thetas, rounds, rng, eval_every=1, time_budget=None, progress=None, theory_every=0,
            stop_at_accuracy=None, divergence=None, dump_rounds=(), loss_every=1, accuracy_every=1, dump_writer=None):
        """Run up to ``rounds`` rounds (or until ``time_budget`` of simulated time); returns a Trace
        with metrics round, time, test_accuracy, train_loss, comm_floats (and, every
        ``theory_every`` rounds, grad_sq = Σ_k ||∇_k F(Θ^{r,0})||² on the training set) and
        arrays tau, eta, w_bar, W, cond14, S (cumulative Σ η W), round_time and round_work (a round's
        duration with and without the server round trip S), init_theta<k> / final_theta<k>
        (Θ^{1,0} and the last Θ), and the batch schedule (R, B) as ``trace.batches``
        (a replay input). ``stop_at_accuracy``: stop after
        the first evaluation whose test accuracy reaches it (time-to-target runs). ``divergence``
        (a :class:`~refimpl.core.divergence.DivergenceRule`, default limits when None) stops the run
        with status "diverged: …" at the first round whose parameters or training loss it flags;
        the trace then holds the rounds before it. ``dump_rounds``: rounds whose intermediate
        quantities go into the trace's arrays as ``r{r}_<name>`` (docs/guide.md), or to disk as
        each round finishes through ``dump_writer`` (:class:`~refimpl.core.dumps.DumpWriter`). ``loss_every``:
        the training loss (and the divergence rule's loss test) at every ``loss_every``-th
        evaluation, round 0 and the last; the other evaluations record NaN for it (time-to-target
        runs need the test accuracy only; the parameter-norm test still runs every round).
        ``accuracy_every``: likewise for the test accuracy (a run that reads only grad_sq, such as
        the rate check of Corollary 1, skips it); time-to-target runs need every one."""
        d, pol = self.data, self.policy
        loss_every, accuracy_every = self._check_run(rounds, stop_at_accuracy, loss_every, accuracy_every)
        rule = DivergenceRule() if divergence is None else divergence
        dump_rounds = set(int(r) for r in dump_rounds)
        thetas = [t.copy() for t in thetas]
        initial = [t.copy() for t in thetas]
        trace = Trace(config={"method": pol.name, "batch": self.batch, "timeout": pol.timeout, "Q": pol.Q,
                              "labels": self.labels, "optimizers": [o.name for o in self.opts],
                              "policy": pol.describe()})
        recs, used = [], []
        sched = self.speeds[pol.step_size.speed_rows:]
        eta, eta_state = self._initial_rates(trace, sched, rounds)
        batch_state = pol.batches.init(rng, d.n, self.batch)
        states = None
        clock, floats = 0.0, 0
        self._theory_on = theory_every > 0
        self._evaluate(trace, 0, clock, floats, thetas, theory_every > 0)
        if progress:
            progress(0, trace)
        for r in range(1, rounds + 1):
            st = sched[r - 1]
            tau = pol.steps.taus(r, st)
            batch_idx, batch_state = pol.batches.draw(r, batch_state, rng, d.n, self.batch)
            dump = {} if r in dump_rounds else None
            thetas, _, out_states = self.round(thetas, batch_idx, tau, eta, states=states, dump=dump)
            states = pol.momentum.carry(states, out_states)
            wb, W = np.array([weight_summary(o, int(t), e) for o, t, e in zip(self.opts, tau, eta)]).T
            up, down = self.messages(len(batch_idx))
            work = pol.clock.work(st, tau, up, down)
            dur = pol.clock.with_round_trip(work)
            clock += dur
            floats += up + down
            recs.append(RoundRecord(tau, eta.copy(), wb, W, dur, work, pol.clock.overruns(st)))
            used.append(batch_idx)
            if dump is not None:
                dump.update(w_bar=wb, W=W)
                dump_files.put(trace, r, dump, dump_writer)
            reason = rule.sq_norm("sum_k ||theta_k||^2", sum(float(np.vdot(t, t)) for t in thetas))
            last = r == rounds or (time_budget is not None and clock >= time_budget)
            if reason is None and (r % eval_every == 0 or last):
                with_loss = last or (r // eval_every) % loss_every == 0
                with_accuracy = last or (r // eval_every) % accuracy_every == 0
                reason = self._evaluate(trace, r, clock, floats, thetas, theory_every > 0 and r % theory_every == 0,
                                        rule, with_loss, with_accuracy)
            if reason:
                trace.status = f"diverged: round {r}: {reason}; trace holds rounds 0..{r - 1}"
                recs.pop()
                used.pop()
                break
            eta, eta_state = pol.step_size.update(eta, eta_state, tau, wb)
            if r % eval_every == 0 or last:
                if progress:
                    progress(r, trace)
                if stop_at_accuracy is not None and trace.metrics["test_accuracy"][-1] >= stop_at_accuracy:
                    trace.status = f"finished: reached test accuracy {stop_at_accuracy:g}"
                    break
            if last:
                break
        return self._finish(trace, initial, thetas, recs, used)

    def _check_run(self, rounds, stop_at_accuracy, loss_every, accuracy_every):
        """The run's inputs against the policy's schedules; returns the checked (loss_every,
        accuracy_every)."""
        pol = self.policy
        loss_every = V.positive_int("loss_every", loss_every)
        accuracy_every = V.positive_int("accuracy_every", accuracy_every)
        if stop_at_accuracy is not None and accuracy_every != 1:
            raise ValueError(f"stop_at_accuracy reads the test accuracy of every evaluation: accuracy_every must be 1, "
                             f"got {accuracy_every}")
        need = rounds + pol.step_size.speed_rows          # paper-adaptive: row 0 is the dummy round
        if need > self.speeds.shape[0]:
            raise ValueError(f"speed schedule holds {self.speeds.shape[0]} rounds, the run needs {need}")
        for name, obj in (("τ table", pol.steps), ("batch schedule", pol.batches)):
            table = getattr(obj, "table", None)          # GivenSteps / GivenBatches hold one row a round
            if table is not None and table.shape[0] < rounds:
                raise ValueError(f"the {name} holds {table.shape[0]} rounds, the run needs {rounds}")
        return loss_every, accuracy_every

    def _finish(self, trace, initial, thetas, recs, used):
        """The trace's per-round arrays (τ, η, w̄, W, the clock, condition (14)), the first and last
        iterates and the batch schedule, once the rounds are over."""
        if trace.status == "running":
            trace.status = "finished"
        trace.extra["thetas"] = thetas
        for k, (a, b) in enumerate(zip(initial, thetas)):
            trace.arrays[f"init_theta{k}"], trace.arrays[f"final_theta{k}"] = a, b
        if recs:
            trace.arrays.update({"tau": np.array([x.tau for x in recs]), "eta": np.array([x.eta for x in recs]),
                                 "w_bar": np.array([x.w_bar for x in recs]), "W": np.array([x.W for x in recs]),
                                 "round_time": np.array([x.duration for x in recs]),
                                 "round_work": np.array([x.work for x in recs]),
                                 "overrun": np.array([x.overrun for x in recs]),
                                 "S": np.cumsum([np.sum(x.eta * x.W) for x in recs])})
            trace.batches = padded_schedule(used)       # a shorter batch (an epoch's last) padded with −1
            if self.policy.clock.timeout is not None:
                trace.config["overrun_fraction"] = trace.arrays["overrun"].mean(axis=0).tolist()
            c14 = [self.condition14(x.eta, x.tau, x.w_bar) for x in recs]
            if c14[0] is not None:
                trace.arrays["cond14"] = np.array(c14)
        return trace

    def _evaluate(self, trace, r, clock, floats, thetas, theory, rule=None, with_loss=True, with_accuracy=True):
        """Record the round's metrics; returns the reason the training loss counts as diverged
        under ``rule`` (nothing is recorded then), or None. ``with_loss=False`` /
        ``with_accuracy=False``: the training loss / test accuracy is recorded as NaN (not evaluated)."""
        d, m = self.data, self.model
        vals = dict(round=r, time=clock, comm_floats=floats,
                    test_accuracy=m.accuracy(thetas, d.Xs_test, d.y_test) if with_accuracy else np.nan,
                    train_loss=m.loss(thetas, d.Xs_train, d.y_train) if with_loss else np.nan)
        if with_loss and rule is not None and trace.metrics.get("train_loss"):
            reason = rule.cost("training loss", vals["train_loss"], trace.metrics["train_loss"][0])
            if reason:
                return reason
        if theory:
            vals["grad_sq"] = sum(float(g @ g) for g in m.block_gradients(thetas, d.Xs_train, d.y_train)[1])
        elif getattr(self, "_theory_on", False):
            vals["grad_sq"] = np.nan        # keeps every series aligned with "round"
        trace.record(**vals)


# ----------------------------------------------------------------------------- asynchronous VFL

def _batch_size(batch, n):
    """A mini-batch size as an int: a whole number of rows in 1..n (2.5 or 0.6 refused, not truncated)."""
    B = V.positive_int("batch", batch)
    if B > n:
        raise ValueError(f"batch must be at most the {n} samples, got {B}")
    return B


def run_async(model, data: VerticalData, thetas, eta, batch, speeds, rng, time_budget, network=Network(),
              eval_every_time=None, progress=None, stop_at_accuracy=None, divergence=None, server_free=False,
              batches=None, loss_every=1):
    """Asynchronous VFL (VAFL-style, docs/flexvfl.md) as an event queue on the simulated clock.

    The server keeps a table of every party's latest embedding of every training sample
    (filled once from the initial models). Party k, at its own pace: draws a mini-batch, computes
    h_k(θ_k) (one step of its step time), sends it; the server writes it into the table, takes one
    SGD step on θ_0 with the table's rows of the other parties (possibly stale), and returns
    ∂l/∂h_k; the party takes one SGD step on θ_k with it. The server is one resource: embeddings
    are served in order of arrival, each for the server's step time, and wait while it is busy.
    A party's cycle: its step time, the upload, the wait and the server's step, the reply, then the
    next cycle. ``speeds`` (R, K+1): row i is used for each party's i-th cycle (cycled). An
    evaluation (every ``eval_every_time``) at time s sees the events before s, not one at s.
    Staleness = simulated-time age of the other parties' rows used, averaged per event.
    ``eta``: K + 1 SGD learning rates. Every event also pays the network's ``server_time`` (the
    round trip, before the reply); ``server_free``: the server's step takes no time (the authors'
    protocol), so only ``server_time`` separates consecutive events of the server.
    ``batches`` (E, B): the mini-batch of each event in event order (a replay; the run ends when
    they are used up); the trace keeps the batches it used as ``trace.batches`` either way, the
    party of each event as array ``event_party``, the time the server starts on it as
    ``event_time`` (:class:`~refimpl.vfl.policies.AsyncServerQueue`) and the initial and final
    parameters as arrays ``init_theta<k>`` / ``final_theta<k>``. ``loss_every``: as for :meth:`FlexVFL.run` (the
    training loss at every ``loss_every``-th evaluation, the first and the last; NaN between).
    """
    loss_every = V.positive_int("loss_every", loss_every)
    m, d = model, data
    K, B = m.K, _batch_size(batch, d.n)
    eta, speeds = _async_inputs(K, eta, speeds)
    eval_dt = eval_every_time or time_budget / 50
    thetas = [t.copy() for t in thetas]
    st = _AsyncState(thetas, [t.copy() for t in thetas], np.hstack(m.embeddings(thetas, d.Xs_train)),
                     np.zeros((d.n, K)))
    trace = Trace(config={"method": "async", "batch": B})
    trace.status = "running"
    off = m.offsets
    msg = [0.0] + [network.time(B * (off[k] - off[k - 1])) for k in range(1, K + 1)]
    clock = AsyncServerQueue(speeds, msg, network.server_time, server_free)
    rule = DivergenceRule() if divergence is None else divergence

    def evaluate(now, last=False):
        return _async_evaluate(m, d, st, trace, rule, loss_every, progress, now, last)

    evaluate(0.0)
    next_eval = eval_dt
    while True:
        nxt = clock.next()
        if nxt is None:
            break
        now, k = nxt
        if now > time_budget:
            break
        reason = None
        while now >= next_eval and reason is None:
            reason = evaluate(next_eval)
            next_eval += eval_dt
        events = st.events
        if reason:
            trace.status = f"diverged: event {events}: {reason}; trace holds events 0..{events - 1}"
            break
        if stop_at_accuracy is not None and trace.metrics["test_accuracy"][-1] >= stop_at_accuracy:
            trace.status = f"finished: reached test accuracy {stop_at_accuracy:g}"
            break
        if batches is not None and events >= len(batches):
            trace.status = f"finished: the batch schedule's {len(batches)} events are used up"
            break
        idx = rng.choice(d.n, B, replace=False) if batches is None else batches[events]
        _async_event(m, d, st, eta, B, now, k, idx)
        clock.served(now, k)
        reason = rule.sq_norm("sum_k ||theta_k||^2", sum(float(np.vdot(x, x)) for x in st.thetas))
        if reason:
            trace.status = (f"diverged: event {st.events} (party {k}): {reason}; trace holds events "
                            f"0..{st.events - 1}")
            break
    if trace.status == "running":
        reason = evaluate(min(time_budget, next_eval), last=True)
        reached = stop_at_accuracy is not None and not reason and trace.metrics["test_accuracy"][-1] >= stop_at_accuracy
        trace.status = (f"diverged: event {st.events}: {reason}; trace holds events 0..{st.events - 1}" if reason
                        else f"finished: reached test accuracy {stop_at_accuracy:g}" if reached else "finished")
    return _async_finish(trace, st)


def _async_inputs(K, eta, speeds):
    """The K + 1 learning rates (each > 0) and the (R, K+1) step times, checked."""
    eta = np.broadcast_to(np.asarray(eta, dtype=np.float64), (K + 1,))
    bad = np.flatnonzero(~np.isfinite(eta) | (eta <= 0))
    if bad.size:
        raise ValueError(f"learning rate η of party {bad[0]} is {eta[bad[0]]}; must be > 0")
    speeds = np.asarray(speeds, dtype=np.float64)
    if speeds.ndim != 2 or speeds.shape[1] != K + 1:
        raise ValueError(f"speeds must have shape (R, {K + 1}), got {speeds.shape}")
    return eta, speeds


@dataclass
class _AsyncState:
    """The asynchronous run between events: the parameters, the server's table of embeddings and
    the time each party's rows were written, the traffic, the events served, the staleness sum,
    and what each event used (batch, party, start time)."""
    thetas: list
    initial: list
    table: np.ndarray
    stamp: np.ndarray
    floats: int = 0
    events: int = 0
    stale_sum: float = 0.0
    used: list = field(default_factory=list)
    order: list = field(default_factory=list)
    times: list = field(default_factory=list)
    seen: dict = field(default_factory=dict)     # {"events": n, "loss", "accuracy"}: the state after n events
    #: party k's embedding of the test rows under its current θ_k (None: θ_k changed since it was
    #: computed); an event changes θ_0 and one party's θ_k, so an evaluation recomputes only the
    #: embeddings of the parties that moved since the last one — the same numbers, bit for bit
    test_embeddings: dict = field(default_factory=dict)


def _async_event(m, d, st, eta, B, now, k, idx):
    """One event: party k's fresh embedding of the batch ``idx`` written into the server's table;
    the server's SGD step on θ_0 with the table's rows (the other parties' possibly stale), and
    party k's SGD step with the ∂l/∂h_k it returns."""
    off = m.offsets
    st.used.append(idx)
    st.order.append(k)
    st.times.append(now)
    enc = m.encoders[k - 1]
    h, cache = enc.forward(st.thetas[k], d.Xs_train[k - 1][idx])
    st.table[idx, off[k - 1]:off[k]] = h
    others = np.delete(st.stamp[idx], k - 1, axis=1)
    st.stale_sum += float(np.mean(now - others)) if others.size else 0.0
    st.stamp[idx, k - 1] = now
    _, g0, dH = m.fusion.loss_grads(st.thetas[0], st.table[idx], d.y_train[idx])
    st.thetas[0] = st.thetas[0] - eta[0] * g0
    st.thetas[k] = st.thetas[k] - eta[k] * enc.backward(st.thetas[k], cache, dH[:, off[k - 1]:off[k]])
    st.test_embeddings.pop(k, None)
    st.floats += 2 * B * (off[k] - off[k - 1])
    st.events += 1


def _async_evaluate(m, d, st, trace, rule, loss_every, progress, now, last=False):
    """Record an evaluation at simulated time ``now``; returns the reason the training loss counts
    as diverged (nothing recorded then), or None."""
    n_eval = len(trace.metrics.get("round", ()))
    with_loss = last or n_eval % loss_every == 0
    # between two events the parameters do not change: an evaluation of the same state (clock
    # ticks with no event between them) reuses the values computed for it, bit for bit
    seen = st.seen if st.seen.get("events") == st.events else {"events": st.events}
    st.seen = seen
    if with_loss and "loss" not in seen:
        seen["loss"] = m.loss(st.thetas, d.Xs_train, d.y_train)
    if "accuracy" not in seen:
        hs = st.test_embeddings
        for k, (enc, X) in enumerate(zip(m.encoders, d.Xs_test), start=1):
            if k not in hs:
                hs[k] = enc.forward(st.thetas[k], X)[0]
        seen["accuracy"] = m.accuracy_of_embeddings(st.thetas[0], [hs[k] for k in range(1, m.K + 1)], d.y_test)
    loss = seen["loss"] if with_loss else np.nan
    if with_loss and trace.metrics.get("train_loss"):
        reason = rule.cost("training loss", loss, trace.metrics["train_loss"][0])
        if reason:
            return reason
    trace.record(round=st.events, time=now, comm_floats=st.floats,
                 test_accuracy=seen["accuracy"], train_loss=loss,
                 staleness=st.stale_sum / max(st.events, 1))
    if progress:
        progress(st.events, trace)
    return None


def _async_finish(trace, st):
    trace.extra["thetas"] = st.thetas
    for k, (a, b) in enumerate(zip(st.initial, st.thetas)):
        trace.arrays[f"init_theta{k}"], trace.arrays[f"final_theta{k}"] = a, b
    if st.used:
        events = st.events
        trace.batches = np.array(st.used[:events], dtype=np.int64)
        trace.arrays["event_party"] = np.array(st.order[:events], dtype=np.int64)
        trace.arrays["event_time"] = np.array(st.times[:events], dtype=np.float64)
    return trace


# ----------------------------------------------------------------------------- theory quantities

def estimate_smoothness(model, thetas, Xs, y, rng, iters=30, eps=1e-5):
    """(L, [L_0 … L_K]): largest |eigenvalue| of the Hessian of F (full) and of each diagonal
    block ∇²_kk F at Θ, by power iteration on central-difference Hessian-vector products of the
    block gradients. A local estimate at Θ (the theorem's L, L_k bound them everywhere)."""
    sizes = [t.size for t in thetas]
    cuts = np.cumsum(sizes)[:-1]
    flat = np.concatenate(thetas)

    def grad(x):
        return np.concatenate(model.block_gradients(np.split(x, cuts), Xs, y)[1])

    def power(mask):
        v = rng.standard_normal(flat.size) * mask
        v /= np.linalg.norm(v)
        lam = 0.0
        for _ in range(iters):
            hv = (grad(flat + eps * v) - grad(flat - eps * v)) / (2 * eps) * mask
            lam = float(np.linalg.norm(hv))
            if lam == 0.0:
                break
            v = hv / lam
        return lam
    L = power(np.ones(flat.size))
    Lk = []
    for k in range(len(thetas)):
        mask = np.zeros(flat.size)
        start = 0 if k == 0 else cuts[k - 1]
        mask[start:start + sizes[k]] = 1.0
        Lk.append(power(mask))
    return L, np.array(Lk)


def condition14(eta, tau, w_bar, L, Lk):
    """Condition (14) per party: η_k ≤ 1 / (16 max{L, L_k} τ_k w̄_k)."""
    return eta <= 1.0 / (16.0 * np.maximum(L, np.asarray(Lk)) * tau * w_bar)


def condition20(A, L, Lk, alpha):
    """Adaptive condition (20): A_k ≤ 1 / (16 max{L, L_k} α) keeps (14) true in every round when
    τ w̄ changes by at most a factor α between rounds. Returns the per-party verdicts."""
    return np.asarray(A) <= 1.0 / (16.0 * np.maximum(L, np.asarray(Lk)) * alpha)


def max_change_factor(tau, w_bar):
    """α = max over rounds and parties of (τ w̄)^{r+1} / (τ w̄)^r and its inverse."""
    x = np.asarray(tau) * np.asarray(w_bar)
    if x.shape[0] < 2:
        return 1.0
    ratio = x[1:] / x[:-1]
    return float(np.max(np.maximum(ratio, 1.0 / ratio)))


def time_to_target(trace, target):
    """First simulated time at which the test accuracy reaches ``target`` (None if never)."""
    t, a = trace.series("time"), trace.series("test_accuracy")
    hit = np.flatnonzero(a >= target)
    return float(t[hit[0]]) if hit.size else None
