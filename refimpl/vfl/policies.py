"""Flex-VFL's round-based methods as compositions of conventions, one small object per concern.

A method of [FlexVFL] is a :class:`Policy`: who takes how many local steps (``steps``), with which
learning rate (``step_size``), whether a party's optimizer state survives the round
(``momentum``), which samples a round uses (``batches``) and how long a round lasts on the
simulated clock (``clock``). ``sync``, ``pbcd``, ``flex`` and ``adaptive`` are named compositions
(:func:`compose`); every convention of another implementation is one more object here, never a
branch inside the round loop. The trace records :meth:`Policy.describe`.

Each object is small and stateless; where a convention needs memory across rounds (the authors'
adaptive rule, an epoch's permutation) it returns its state and is handed it back, as optax's
``init``/``update`` pairs do. docs/flexvfl.md ("Conventions") gives the evidence for each.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from refimpl.core.replay import index_table
from refimpl.vfl.conventions import ADAPTIVE_RULES, BATCH_ORDERS, MOMENTUM, ROUND_METHODS  # noqa: F401
from refimpl.vfl.local_optimizers import weight_summary
from refimpl.vfl.speeds import Network



# ----------------------------------------------------------------------------- local steps τ_k^r

@dataclass(frozen=True)
class StepsFromTimeout:
    """Flex-VFL, [FlexVFL] Algorithm 1: τ_k^r = max(1, ⌊timeout / s_k^r⌋), the whole local steps
    of party k's step time s_k^r that fit in the round's timeout (at least one)."""

    timeout: float
    name = "timeout"

    def taus(self, r, step_times):
        return np.maximum(1, np.floor(self.timeout / step_times).astype(int))

    def describe(self):
        return {"rule": self.name, "timeout": self.timeout}


@dataclass(frozen=True)
class FixedSteps:
    """Every party takes Q local steps: synchronous VFL (Q), P-BCD (Q = 1)."""

    Q: int
    name = "fixed"

    def taus(self, r, step_times):
        return np.full(step_times.size, self.Q)

    def describe(self):
        return {"rule": self.name, "Q": self.Q}


@dataclass(frozen=True, eq=False)
class GivenSteps:
    """τ_k^r read from a table (R, K+1), column 0 the server: another implementation's step
    counts replayed exactly (no floating-point timeout/step-time division)."""

    table: np.ndarray
    name = "given"

    def taus(self, r, step_times):
        return np.array(self.table[r - 1], dtype=np.int64)

    def describe(self):
        return {"rule": self.name, "rounds": int(self.table.shape[0])}


@dataclass(frozen=True)
class ServerSteps:
    """The authors' protocol: the server (party 0) takes ``steps`` local steps whatever its speed
    (Q under their sync/flex modes, 1 under P-BCD: ``main_flex.py`` sets every party's count,
    the server's included); the parties' counts come from ``inner``."""

    inner: object
    steps: int
    name = "server-fixed"

    def taus(self, r, step_times):
        tau = self.inner.taus(r, step_times)
        tau[0] = self.steps
        return tau

    def describe(self):
        return {**self.inner.describe(), "server_steps": self.steps}


def validate_taus(table, rounds, parties, source="--taus"):
    """A τ table (R, K+1) of whole numbers >= 1, at least ``rounds`` rows; returns it as int64."""
    arr = np.asarray(table)
    if arr.ndim != 2 or arr.shape[1] != parties:
        raise ValueError(f"{source}: τ table must have shape (rounds, {parties}) (server first), got {arr.shape}")
    if arr.shape[0] < rounds:
        raise ValueError(f"{source}: τ table holds {arr.shape[0]} rounds, the run needs {rounds}")
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"{source}: τ entries must be whole numbers >= 1, got dtype {arr.dtype}")
    bad = np.argwhere(~np.isfinite(arr) | (arr != np.round(arr)) | (arr < 1)) if arr.dtype.kind == "f" else \
        np.argwhere(arr < 1)
    if bad.size:
        r, k = bad[0]
        raise ValueError(f"{source}: τ[{r}, {k}] = {arr[r, k].item()!r}: local steps must be whole numbers >= 1")
    return arr.astype(np.int64)


# ----------------------------------------------------------------------------- step sizes η_k^r

@dataclass(frozen=True, eq=False)
class FixedStepSize:
    """η_k^r = η_k in every round."""

    eta: np.ndarray
    name = "fixed"
    speed_rows = 0          # rows of the speed schedule consumed before round 1

    def init(self, opts, speeds, steps):
        return self.eta.copy(), None

    def update(self, eta, state, tau, w_bar):
        return eta, state

    def describe(self):
        return {"rule": self.name}


@dataclass(frozen=True, eq=False)
class PaperAdaptive:
    """Adaptive Flex-VFL, [FlexVFL] Algorithm 2: η_k^{r+1} = A_k / (τ_k^r w̄_k^r). Round 1's
    rate comes from a dummy round 0 on the first row of the speed schedule:
    τ_k^0 = max(1, ⌊timeout / s_k^0⌋) and w̄_k^0 of the optimizer at η = A_k/τ_k^0."""

    A: np.ndarray
    timeout: float
    tau0: np.ndarray | None = None     # the dummy round's τ^0 given (a replay), not drawn from speed row 0
    name = "paper-adaptive"
    speed_rows = 1

    def round0_taus(self, speeds):
        """τ^0 of the dummy round: the given one, else max(1, ⌊timeout / s^0⌋) on speed row 0."""
        if self.tau0 is not None:
            return np.asarray(self.tau0, dtype=np.int64)
        return np.maximum(1, np.floor(self.timeout / speeds[0]).astype(int))

    def init(self, opts, speeds, steps):
        tau0 = self.round0_taus(speeds)
        wb0 = np.array([weight_summary(o, int(t), a / t)[0] for o, t, a in zip(opts, tau0, self.A)])
        return self.A / (tau0 * wb0), None

    def update(self, eta, state, tau, w_bar):
        return self.A / (tau * w_bar), state

    def describe(self):
        return {"rule": self.name, "A": self.A.tolist()}


@dataclass(frozen=True, eq=False)
class AuthorsAdaptive:
    """The authors' adaptive code (``main_flex_MVCNNadapt.py``): before round 1 each party's rate is
    lr_k / d_k and its previous step count ⌊d_k⌋, where d_k = 10·max_t(1 − cpu_k,t) + 1 is taken
    over the whole utilisation row of its machine (a real number); after each round
    η_k ← η_k τ_k^{prev} / τ_k^r, so η_k^{r+1} = lr_k ⌊d_k⌋ / (d_k τ_k^r): no w̄ (momentum ignored).
    ``denominator`` None: d_k = τ_k^max, the largest τ_k^r over the run's schedule (rule
    ``authors-taumax``, for runs without a utilisation trace: η_k^1 = lr_k / τ_k^max)."""

    lr: np.ndarray
    denominator: np.ndarray | None = None
    speed_rows = 0

    @property
    def name(self):
        return "authors-adaptive" if self.denominator is not None else "authors-taumax-adaptive"

    def init(self, opts, speeds, steps):
        if self.denominator is None:
            d = np.max([steps.taus(r + 1, row) for r, row in enumerate(speeds)], axis=0)
            return self.lr / d, d
        d = np.asarray(self.denominator, dtype=np.float64)
        return self.lr / d, np.floor(d).astype(int)

    def update(self, eta, prev, tau, w_bar):
        return eta * prev / tau, np.array(tau)

    def describe(self):
        out = {"rule": self.name, "lr": self.lr.tolist()}
        if self.denominator is not None:
            out["denominator"] = np.asarray(self.denominator, dtype=np.float64).tolist()
        return out


# ----------------------------------------------------------------------------- optimizer state

@dataclass(frozen=True)
class ResetMomentum:
    """Every round starts the local optimizers afresh (u^{−1} = 0): [FlexVFL] (6)–(8), and the
    authors' ImageNet/ModelNet loops, which build a new ``torch.optim.SGD`` each round."""

    name = "reset"

    def carry(self, previous, after_round):
        """The optimizer states the next round starts from: none (a fresh optimizer)."""
        return None


@dataclass(frozen=True)
class PersistentMomentum:
    """A party's optimizer state (the momentum buffer) carries over from round to round: the
    authors' MOSEI solver (``solver_VFL_Q.py``) builds its optimizers once. (8)'s weights w̄, W
    are still those of a reset buffer; the carried buffer adds ρ^{t+1} u^{r−1} to each step."""

    name = "persistent"

    def carry(self, previous, after_round):
        """The optimizer states the next round starts from: this round's final ones."""
        return after_round


# ----------------------------------------------------------------------------- mini-batches B^r

@dataclass(frozen=True)
class IndependentBatches:
    """B^r: B samples without replacement, drawn afresh every round from the run's Generator."""

    name = "independent"

    def init(self, rng, n, B):
        return None

    def draw(self, r, state, rng, n, B):
        return rng.choice(n, B, replace=False), state


@dataclass(frozen=True)
class EpochBatches:
    """One permutation of the training set per epoch, cut into consecutive batches of B; the
    epoch's last batch keeps the n mod B samples left (a PyTorch ``DataLoader`` with
    ``shuffle=True``, ``drop_last=False``, as the authors' code uses)."""

    name = "epoch"

    def init(self, rng, n, B):
        return [None, n]

    def draw(self, r, state, rng, n, B):
        perm, pos = state
        if pos >= n:
            perm, pos = rng.permutation(n), 0
        idx = perm[pos:min(pos + B, n)]
        return idx, [perm, pos + B]


@dataclass(frozen=True, eq=False)
class GivenBatches:
    """B^r read from a table (R, B) of 0-based sample indices: a replay. A row ending in −1
    entries is a shorter batch (the epoch's last under :class:`EpochBatches` when B does not
    divide n): the −1 are padding."""

    table: np.ndarray
    name = "given"

    def init(self, rng, n, B):
        return None

    def draw(self, r, state, rng, n, B):
        row = np.array(self.table[r - 1], dtype=np.int64)
        return row[row >= 0], state


#: the padding of a shorter batch in a batch schedule (R, B)
PAD = -1


def padded_schedule(rows):
    """Batches of possibly different sizes as one (R, B_max) int64 table, shorter rows padded
    at their end with :data:`PAD` (no padding when every batch has the same size)."""
    width = max(len(b) for b in rows)
    table = np.full((len(rows), width), PAD, dtype=np.int64)
    for i, b in enumerate(rows):
        table[i, :len(b)] = b
    return table


def validate_batches(table, rounds, n, source="--batches"):
    """A batch schedule (R, B) of distinct 0-based indices in 0..n−1 per row, at least ``rounds``
    rows, a shorter batch padded at its end with −1; returns it as int64."""
    arr = np.asarray(table)
    if arr.ndim != 2:
        raise ValueError(f"{source}: batch schedule must have shape (rounds, B), got {arr.shape}")
    from refimpl.core.replay import sample_ids
    ids = sample_ids(arr, source, "(rounds, B)")
    pad = ids == PAD
    if not pad.any():
        return index_table(ids, source, "(rounds, B)", rounds, n, distinct_axis=1)
    inner = np.argwhere(pad[:, :-1] & ~pad[:, 1:])
    if inner.size:
        raise ValueError(f"{source}: row {inner[0][0]} has a −1 before a sample id at position {inner[0][1] + 1}; "
                         "−1 pads a shorter batch at its end only")
    empty = np.flatnonzero(pad.all(axis=1))
    if empty.size:
        raise ValueError(f"{source}: row {empty[0]} holds no sample id (only −1 padding); every batch needs one")
    index_table(np.where(pad, 0, ids), source, "(rounds, B)", rounds, n)        # the range of the real ids
    for i, row in enumerate(ids):
        real = row[row != PAD]
        if len(np.unique(real)) != len(real):
            raise ValueError(f"{source}: a mini-batch repeats a sample id (at ({i},)): batches draw without "
                             "replacement")
    return ids


# ----------------------------------------------------------------------------- the clock

@dataclass(frozen=True)
class RoundClock:
    """A round lasts: the slowest party's compute max_k τ_k s_k (Flex-VFL: at least the timeout;
    ``server_free``: the server's share costs nothing, the authors' protocol) + the upload and
    the download (the network's bandwidth and latency) + the network's server round trip S."""

    network: Network = Network()
    timeout: float | None = None
    server_free: bool = False

    def work(self, step_times, tau, floats_up, floats_down):
        """The round's duration without the server round trip S: compute, upload, download."""
        work = tau * step_times
        if self.server_free:
            work = work[1:]
        compute = float(np.max(work))
        if self.timeout is not None:
            compute = max(self.timeout, compute)
        return compute + self.network.time(floats_up) + self.network.time(floats_down)

    def with_round_trip(self, work):
        """A round's duration from its :meth:`work`: (compute + up + down) + S, the same additions in
        the same order as written out in one sum."""
        return work + self.network.server_time

    def duration(self, step_times, tau, floats_up, floats_down):
        return self.with_round_trip(self.work(step_times, tau, floats_up, floats_down))

    def overruns(self, step_times):
        """Per party, whether one local step takes longer than the timeout (the party cannot finish
        the step Flex-VFL's analysis assumes it completes; refimpl still lets it take one)."""
        if self.timeout is None:
            return np.zeros(step_times.size, dtype=bool)
        return step_times > self.timeout

    def describe(self):
        return {"timeout_floor": self.timeout, "server_free": self.server_free,
                "server_time": self.network.server_time}


class AsyncServerQueue:
    """The asynchronous baseline's clock: parties send embeddings at their own pace and the server,
    one resource, serves them in order of arrival, waiting while it is busy.

    ``speeds`` (R, K+1): row i holds each participant's step time for its i-th cycle (cycled);
    ``msg`` (K+1): party k's one-way message time (entry 0 unused). Party k's first embedding
    arrives at s_k + msg_k. Serving an embedding that arrives at a while the server is free from f
    starts at now = max(a, f), takes the server's step time (0 when ``server_free``: the authors'
    protocol), then the round trip ``server_time``, the reply msg_k, the party's next step and its
    next upload msg_k: the party's next arrival. :meth:`next` gives (now, k) of the next event."""

    def __init__(self, speeds, msg, server_time=0.0, server_free=False):
        self.speeds, self.msg = np.asarray(speeds, dtype=np.float64), [float(m) for m in msg]
        self.server_time, self.server_free = float(server_time), bool(server_free)
        K = self.speeds.shape[1] - 1
        self.count = np.zeros(K + 1, dtype=int)
        self.queue = []
        for k in range(1, K + 1):
            heapq.heappush(self.queue, (self.speeds[0, k] + self.msg[k], k))   # party k's first embedding
            self.count[k] = 1
        self.server_next = 0.0

    def next(self):
        """(now, k): when the server starts on the next embedding and whose it is; None when empty."""
        if not self.queue:
            return None
        arrival, k = heapq.heappop(self.queue)
        return max(arrival, self.server_next), k            # FIFO: wait while the server is busy

    def served(self, now, k):
        """The server started party k's embedding at ``now``: schedule the party's next arrival."""
        row = self.speeds[self.count[k] % self.speeds.shape[0]]
        self.count[k] += 1
        server_done = now + (0.0 if self.server_free else row[0])
        heapq.heappush(self.queue, (server_done + self.server_time + self.msg[k] + row[k] + self.msg[k], k))
        self.server_next = server_done


# ----------------------------------------------------------------------------- a method

@dataclass(frozen=True)
class Policy:
    """A round-based method: one object per convention (see the module docstring)."""

    name: str
    steps: object
    step_size: object
    momentum: object = ResetMomentum()
    batches: object = IndependentBatches()
    clock: RoundClock = field(default_factory=RoundClock)
    timeout: float | None = None    # the options it was composed from, as the trace records them
    Q: int | None = None

    def describe(self):
        return {"method": self.name, "steps": self.steps.describe(), "step_size": self.step_size.describe(),
                "momentum": self.momentum.name, "batches": self.batches.name, "clock": self.clock.describe()}


def authors_denominator(d, n_parties):
    """The authors' rule's d_k (K + 1 values, server first), each finite and ≥ 1, or an error
    saying where to take them from."""
    if d is None:
        raise ValueError("--adaptive-rule authors starts each party at lr/(10·max(1 − cpu) + 1) over its machine's "
                         "utilisation row: give --speeds cputrace:FILE, or a --taus file holding array "
                         f"'lr_denominator' ({n_parties} values: the server's, then one per party); --adaptive-rule "
                         "authors-taumax starts at lr/τ^max of the run's τ table instead")
    d = np.asarray(d, dtype=np.float64).reshape(-1)
    if d.shape != (n_parties,):
        raise ValueError(f"lr_denominator has {d.size} values; expected {n_parties} (server + parties)")
    bad = np.flatnonzero(~np.isfinite(d) | (d < 1))
    if bad.size:
        raise ValueError(f"lr_denominator entry {bad[0]} is {d[bad[0]]}; the authors' 10·max(1 − cpu) + 1 is "
                         "in [1, 11]")
    return d


def compose(method, *, eta, timeout=None, Q=10, network=Network(), A=None, server_steps=None, momentum="reset",
            batch_order="independent", adaptive_rule="paper", taus=None, batches=None, tau0=None,
            lr_denominator=None):
    """The named compositions: ``flex`` (τ from the timeout, fixed η), ``adaptive`` (τ from the
    timeout, η from ``adaptive_rule``), ``sync`` (Q steps), ``pbcd`` (one step). ``server_steps``:
    the server takes that many steps and its compute is free (the authors' protocol). ``taus``
    (R, K+1) / ``batches`` (R, B): given schedules replace the drawn ones; ``tau0`` (K+1,): the
    paper-adaptive rule's dummy-round τ^0, given instead of drawn from speed row 0;
    ``lr_denominator`` (K+1,): the authors' rule's d_k = 10·max(1 − cpu_k) + 1 (see
    :class:`AuthorsAdaptive`), needed by ``adaptive_rule="authors"``."""
    if method not in ROUND_METHODS:
        raise ValueError(f"method must be one of {ROUND_METHODS}, got {method!r}")
    for name, value, allowed in (("momentum", momentum, MOMENTUM), ("batch order", batch_order, BATCH_ORDERS),
                                 ("adaptive rule", adaptive_rule, ADAPTIVE_RULES)):
        if value not in allowed:
            raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    timed = method in ("flex", "adaptive")
    if taus is not None:
        steps = GivenSteps(taus)
    else:
        steps = {"flex": lambda: StepsFromTimeout(timeout), "adaptive": lambda: StepsFromTimeout(timeout),
                 "sync": lambda: FixedSteps(int(Q)), "pbcd": lambda: FixedSteps(1)}[method]()
        if server_steps is not None:
            steps = ServerSteps(steps, int(server_steps))
    if method == "adaptive":
        step_size = (PaperAdaptive(A, timeout, tau0) if adaptive_rule == "paper"
                     else AuthorsAdaptive(A, authors_denominator(lr_denominator, len(A)))
                     if adaptive_rule == "authors" else AuthorsAdaptive(A))
    else:
        step_size = FixedStepSize(eta)
    return Policy(method, steps, step_size,
                  PersistentMomentum() if momentum == "persistent" else ResetMomentum(),
                  GivenBatches(batches) if batches is not None
                  else EpochBatches() if batch_order == "epoch" else IndependentBatches(),
                  RoundClock(network, timeout if timed else None, server_steps is not None), timeout, int(Q))
