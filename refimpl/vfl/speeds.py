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
    """Party k always needs ``times[k]`` per local step."""

    times: tuple

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


@dataclass(frozen=True)
class Network:
    """Message time = latency + 8 · floats / bandwidth (bytes per second)."""

    bandwidth: float = 1e8
    latency: float = 0.01

    def time(self, floats):
        return self.latency + 8.0 * floats / self.bandwidth


def parse_speeds(spec, n_parties):
    """CLI speed models: 'constant:T0,T1,…', 'lognormal:M0,M1,…[:sigma]',
    'markov:F0,F1,…:S0,S1,…[:p_slow[:p_fast]]', 'trace:FILE[:BASE]'. One value broadcasts."""
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
            raise ValueError(f"speed model {spec!r}: {len(v)} values for {n_parties} parties (server + K)")
        return tuple(v)
    if kind == "constant" and len(parts) == 1:
        return ConstantSpeed(vec(parts[0]))
    if kind == "lognormal" and len(parts) in (1, 2):
        return LogNormalSpeed(vec(parts[0]), num(parts[1]) if len(parts) == 2 else 0.5)
    if kind == "markov" and 2 <= len(parts) <= 4:
        extra = [num(p) for p in parts[2:]]
        return MarkovSpeed(vec(parts[0]), vec(parts[1]), *extra)
    if kind == "trace" and len(parts) in (1, 2):
        return TraceSpeed.from_file(parts[0], vec(parts[1]) if len(parts) == 2 else (1.0,) * n_parties)
    raise ValueError(f"unknown speed model {spec!r}; use constant:…, lognormal:…[:σ], markov:FAST:SLOW[:p_slow[:p_fast]] "
                     "or trace:FILE[:BASE]")
