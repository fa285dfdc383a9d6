"""Party speeds and the simulated clock of Flex-VFL, docs/flexvfl.md

A speed model draws, up front and from a seeded Generator, the compute time of one local step
for every party (server = party 0) in every round: ``sample(R, rng) -> (R, K+1)`` seconds of
simulated time. Nothing here reads the wall clock.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def _times(name, v, n):
    a = np.broadcast_to(np.asarray(v, dtype=np.float64), (n,)).copy()
    bad = np.flatnonzero(~np.isfinite(a) | (a <= 0))
    if bad.size:
        raise ValueError(f"{name} of party {bad[0]} is {a[bad[0]]}; step times must be finite and > 0")
    return a


@dataclass(frozen=True)
class ConstantSpeed:
    """Party k always needs ``times[k]`` per local step (``note``: why these times, when refimpl
    chose them; the run's trace keeps it as ``speeds_note``)."""

    times: tuple
    note: str | None = None

    def sample(self, R, rng):
        t = _times("step time", self.times, len(self.times))
        return np.tile(t, (R, 1))

    def mean(self):
        return np.asarray(self.times, dtype=np.float64)


@dataclass(frozen=True)
class LogNormalSpeed:
    """i.i.d. per round: means[k] · exp(σ Z − σ²/2), Z ~ N(0, 1) (mean ``means[k]``)."""

    means: tuple
    sigma: float = 0.5

    def sample(self, R, rng):
        m = _times("mean step time", self.means, len(self.means))
        if not (np.isfinite(self.sigma) and self.sigma >= 0):
            raise ValueError(f"log-normal σ must be finite and >= 0, got {self.sigma}")
        return m * np.exp(self.sigma * rng.standard_normal((R, m.size)) - self.sigma ** 2 / 2)

    def mean(self):
        return np.asarray(self.means, dtype=np.float64)


@dataclass(frozen=True)
class MarkovSpeed:
    """Each party switches between a fast and a slow state (co-located jobs): from fast to slow
    with probability ``p_slow``, back with ``p_fast``, per round; starts fast."""

    fast: tuple
    slow: tuple
    p_slow: float = 0.1
    p_fast: float = 0.3

    def sample(self, R, rng):
        n = len(self.fast)
        f, s = _times("fast step time", self.fast, n), _times("slow step time", self.slow, n)
        for p in (self.p_slow, self.p_fast):
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"switching probabilities must be in [0, 1], got {p}")
        state = np.zeros(n, dtype=bool)
        out = np.empty((R, n))
        u = rng.random((R, n))
        for r in range(R):
            state = np.where(state, u[r] >= self.p_fast, u[r] < self.p_slow)
            out[r] = np.where(state, s, f)
        return out

    def mean(self):
        ps = self.p_slow / max(self.p_slow + self.p_fast, 1e-300)
        return (1 - ps) * np.asarray(self.fast) + ps * np.asarray(self.slow)


@dataclass(frozen=True)
class TraceSpeed:
    """From a CPU-availability trace a ∈ [0, 1] (rows: rounds, cycled; columns: parties, or one
    column for all): step time = base / (a + 0.1), so that τ = floor(timeout / step) with
    timeout = 10·base reproduces the authors' τ = floor(10(1 − cpu) + 1) for cpu = 1 − a."""

    availability: np.ndarray
    base: tuple

    @classmethod
    def from_file(cls, path, base):
        if str(path).endswith(".npy"):
            arr = np.load(path, allow_pickle=False)
        else:
            arr = np.loadtxt(path, delimiter=",", ndmin=1)
        return cls(np.asarray(arr, dtype=np.float64), tuple(np.atleast_1d(base)))

    def sample(self, R, rng):
        a = np.asarray(self.availability, dtype=np.float64)
        if a.ndim == 1:
            a = a[:, None]
        bad = np.argwhere(~np.isfinite(a) | (a < 0) | (a > 1))
        if bad.size:
            i, j = bad[0]
            raise ValueError(f"CPU trace entry (row {i}, column {j}) is {a[i, j]}; availability must be in [0, 1]")
        n = len(self.base)
        if a.shape[1] not in (1, n):
            raise ValueError(f"CPU trace has {a.shape[1]} columns; expected 1 or {n} (one per party)")
        rows = a[np.arange(R) % a.shape[0]]
        return _times("base step time", self.base, n) / (np.broadcast_to(rows, (R, n)) + 0.1)

    def mean(self):
        a = np.asarray(self.availability, dtype=np.float64)
        return np.asarray(self.base) / (a.mean(axis=0) + 0.1)


def authors_taus(cpu):
    """The authors' rule for the local steps of a party at utilisation ``cpu`` ∈ [0, 1]:
    τ = floor(10 (1 − cpu) + 1) ∈ [1, 11] (every use of the CPU traces goes through here)."""
    return np.floor(10.0 * (1.0 - np.asarray(cpu, dtype=np.float64)) + 1.0).astype(int)


@dataclass(frozen=True)
class CPUTraceSpeed:
    """The authors' CPU traces: a utilisation matrix ``cpu`` (rows: machines, columns: time), values
    clipped to [0, 1]. Machines are assigned to the K + 1 parties by a draw from the run's generator
    (without replacement), column r (cycled) is round r, and the number of local steps follows the
    authors' formula τ_k^r = floor(10 (1 − cpu) + 1) ∈ [1, 11]. As a step time for the clock:
    s = timeout / τ · (1 − 1e-12), so that floor(timeout / s) gives τ back exactly in floating point
    and every method (sync, async, P-BCD) sees the same speeds."""

    cpu: np.ndarray
    timeout: float
    source: str = "array"

    @classmethod
    def from_file(cls, path, timeout):
        path = str(path)
        try:
            if path.endswith(".npy"):
                arr = np.load(path, allow_pickle=False)
            else:
                arr = np.loadtxt(path, delimiter=",", ndmin=2)
        except (OSError, ValueError) as exc:
            raise ValueError(f"CPU trace {path}: cannot read it as a CSV or NPY utilisation matrix ({exc})")
        return cls(np.asarray(arr, dtype=np.float64), timeout, path)

    def _checked(self):
        a = np.asarray(self.cpu, dtype=np.float64)
        if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 1:
            raise ValueError(f"CPU trace {self.source}: expected a matrix (rows: machines, columns: time), "
                             f"got shape {a.shape}")
        bad = np.argwhere(~np.isfinite(a))
        if bad.size:
            i, j = bad[0]
            raise ValueError(f"CPU trace {self.source}: entry (machine {i}, time {j}) is {a[i, j]}; "
                             "utilisation must be a finite number")
        if not (np.isfinite(self.timeout) and self.timeout > 0):
            raise ValueError(f"CPU trace speeds need a timeout > 0, got {self.timeout}")
        return a

    @property
    def note(self):
        """A one-line note when values outside [0, 1] were clipped (None otherwise)."""
        a = self._checked()
        out = int(np.sum((a < 0) | (a > 1)))
        if not out:
            return None
        return (f"CPU trace {self.source}: {out} of {a.size} values outside [0, 1] clipped "
                f"(range {a.min():.3g}..{a.max():.3g})")

    def taus(self, R, rng, n_parties):
        a = np.clip(self._checked(), 0.0, 1.0)
        if a.shape[0] < n_parties:
            raise ValueError(f"CPU trace {self.source} has {a.shape[0]} machines for {n_parties} parties "
                             "(server + K); each party needs its own machine")
        machines = rng.choice(a.shape[0], n_parties, replace=False)
        cpu = a[machines][:, np.arange(R) % a.shape[1]].T              # (R, parties)
        return authors_taus(cpu), machines

    def sample(self, R, rng, n_parties=None):
        return self.draw(R, rng, n_parties)[0]

    def draw(self, R, rng, n_parties=None):
        """The step times (R, parties), as :meth:`sample` returns them, and the machines drawn."""
        n = n_parties if n_parties is not None else self._n_parties
        if n < 1:
            raise ValueError("CPU trace speeds need the number of parties (server + K): pass n_parties, or "
                             "build the model with parse_speeds('cputrace:FILE', n_parties, timeout)")
        tau, machines = self.taus(R, rng, n)
        return self.timeout / tau * (1.0 - 1e-12), machines

    def lr_denominators(self, machines):
        """The authors' adaptive rule's d_k = 10·max_t(1 − cpu_k,t) + 1 over the whole utilisation row
        of each party's machine (``main_flex_MVCNNadapt.py``: ``lr/(10*np.max(1-cpus[client])+1)``)."""
        a = np.clip(self._checked(), 0.0, 1.0)
        return 10.0 * np.max(1.0 - a[np.asarray(machines)], axis=1) + 1.0

    def mean(self):
        a = np.clip(self._checked(), 0.0, 1.0)
        return np.full(self._n_parties, self.timeout / np.mean(authors_taus(a)))

    _n_parties: int = 0


@dataclass(frozen=True, eq=False)
class StepTimes:
    """Recorded step times replayed as they are: ``times`` (R, K+1), row i the step time of every
    party in round i (async: in each party's i-th cycle), server first; ``means`` the speed model's
    mean per party (the unit of ``--server-time``). A run's trace stores the matrix it drew as
    array ``step_times`` and its model's mean as ``step_time_means``, so ``--speeds steptimes:TRACE``
    pins the simulated clock — and the asynchronous event order that follows it — whatever the
    seed. A run needs its ``rounds + 1`` rows; fewer are refused, extra rows are not used."""

    times: np.ndarray
    means: np.ndarray
    source: str = ""

    @classmethod
    def from_file(cls, path, n_parties):
        from refimpl.core.replay import numeric, pick_one, read_arrays
        what = f"--speeds steptimes:{path}"
        arrays = read_arrays(path, what)
        times = numeric(pick_one(arrays, ("step_times",), what, path), what, "step_times")
        if times.ndim != 2 or times.shape[1] != n_parties:
            raise ValueError(f"{what}: step_times has shape {times.shape}; expected (rounds, {n_parties}): one "
                             "column per party, server first")
        bad = np.argwhere(times <= 0)
        if bad.size:
            i, k = bad[0]
            raise ValueError(f"{what}: step time of party {k} in row {i} is {times[i, k]}; step times must be > 0")
        if "step_time_means" in arrays:
            means = numeric(arrays["step_time_means"], what, "step_time_means")
            if means.shape != (n_parties,) or np.any(means <= 0):
                raise ValueError(f"{what}: step_time_means must hold {n_parties} positive means, got "
                                 f"{means.tolist()}")
        else:
            means = times.mean(axis=0)          # a bare matrix: its own column means
        return cls(times, means, str(path))

    def sample(self, R, rng):
        if len(self.times) < R:
            raise ValueError(f"--speeds steptimes:{self.source}: {len(self.times)} rows of step times, but the run "
                             f"needs {R} (rounds + 1: row 0 is the dummy round of Adaptive Flex-VFL and the async "
                             "clock's first cycle); give a trace of a run at least as long, or fewer --rounds")
        return self.times[:R].copy()

    def mean(self):
        return self.means


@dataclass(frozen=True)
class Network:
    """Message time = latency + 8 · floats / bandwidth (bytes per second), and ``server_time``: the
    fixed cost of one round trip with the server, paid once per round by every round-based method
    and once per event by asynchronous VFL (the axis of the paper's experiments, where it is 1, 10
    and 50 local-step units)."""

    bandwidth: float = 1e8
    latency: float = 0.01
    server_time: float = 0.0

    def __post_init__(self):
        for name in ("bandwidth", "latency", "server_time"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float, np.floating)) and np.isfinite(v)) or v < 0 or \
                    (name == "bandwidth" and v == 0):
                rel = "> 0" if name == "bandwidth" else ">= 0"
                raise ValueError(f"network {name.replace('_', ' ')} must be finite and {rel}, got {v!r}")

    def time(self, floats):
        return self.latency + 8.0 * floats / self.bandwidth


def parse_speeds(spec, n_parties, timeout=10.0):
    """CLI speed models: 'constant:T0,T1,…', 'lognormal:M0,M1,…[:sigma]',
    'markov:F0,F1,…:S0,S1,…[:p_slow[:p_fast]]', 'trace:FILE[:BASE]' (availability per round),
    'cputrace:FILE' (the authors' utilisation matrix, machines × time; needs the timeout),
    'steptimes:FILE' (a trace's recorded step times, replayed). One value broadcasts."""
    kind, _, rest = spec.partition(":")
    parts = rest.split(":") if rest else []

    def num(s):
        try:
            return float(s)
        except ValueError:
            raise ValueError(f"--speeds {spec!r}: {s!r} is not a number; e.g. lognormal:0.2,1,1,2,8:0.3")

    def vec(s):
        v = [num(x) for x in s.split(",")]
        if len(v) == 1:
            v = v * n_parties
        if len(v) != n_parties:
            raise ValueError(f"speed model {spec!r}: {len(v)} values for {n_parties} parties (server + K); give "
                             f"--speeds with {n_parties} values, server first, or one value for all")
        return tuple(v)
    if kind == "constant" and len(parts) == 1:
        return ConstantSpeed(vec(parts[0]))
    if kind == "lognormal" and len(parts) in (1, 2):
        return LogNormalSpeed(vec(parts[0]), num(parts[1]) if len(parts) == 2 else 0.5)
    if kind == "markov" and 2 <= len(parts) <= 4:
        extra = [num(p) for p in parts[2:]]
        return MarkovSpeed(vec(parts[0]), vec(parts[1]), *extra)
    if kind == "cputrace" and len(parts) == 1:
        from dataclasses import replace
        return replace(CPUTraceSpeed.from_file(parts[0], timeout), _n_parties=n_parties)
    if kind == "steptimes" and rest:
        return StepTimes.from_file(rest, n_parties)
    if kind == "trace" and len(parts) in (1, 2):
        return TraceSpeed.from_file(parts[0], vec(parts[1]) if len(parts) == 2 else (1.0,) * n_parties)
    raise ValueError(f"unknown speed model {spec!r}; use constant:…, lognormal:…[:σ], markov:FAST:SLOW[:p_slow[:p_fast]], "
                     "trace:FILE[:BASE], cputrace:FILE or steptimes:FILE")
