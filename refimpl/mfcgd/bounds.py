"""Theorems 1 and 2 of [MFCGD]: their conditions, the right-hand sides (14) and (16), and a
search for parameters that meet every condition (docs/mfcgd.md).

Theorem 2 (MFCGD, A_t = I) is Theorem 1 with ρ = 1 and without the factor
sqrt((1/T) Σ E||A_t||²) ([MFCGD], Remark 3); both are evaluated by the same functions.
Notation: C_fg² = max(C_f², C_g²), L_fg² = L_f² C_g² + L_g², L = sqrt(2 C_f² L_g² + 2 C_g⁴ L_f²) (Lemma 1).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np

from refimpl.core import validate as V

FIELDS = ("C_f", "C_g", "L_f", "L_g", "sigma", "delta_f", "delta_g", "F_gap")


@dataclass(frozen=True)
class Constants:
    """Assumption constants and F(x̄_1) − F* (``F_gap``)."""

    C_f: float
    C_g: float
    L_f: float
    L_g: float
    sigma: float
    delta_f: float
    delta_g: float
    F_gap: float

    def __post_init__(self):
        for f in FIELDS:
            v = getattr(self, f)
            if not np.isfinite(v) or v < 0:
                raise ValueError(f"constant {f} must be finite and >= 0, got {v}")
        for f in ("C_f", "C_g"):
            if getattr(self, f) <= 0:
                raise ValueError(f"constant {f} must be > 0, got {getattr(self, f)}")
        if self.L_f == 0 and self.L_g == 0:
            raise ValueError("L_f and L_g cannot both be 0 (then L_fg = 0 and the conditions divide by it)")

    @classmethod
    def from_json(cls, path):
        try:
            with open(path) as fh:
                doc = json.load(fh)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON ({exc})")
        if not isinstance(doc, dict):
            raise ValueError(f"{path}: expected a JSON object with {list(FIELDS)}")
        missing = [f for f in FIELDS if f not in doc]
        if missing:
            raise ValueError(f"{path}: missing constants {missing}; need {list(FIELDS)}")
        unknown = sorted(set(doc) - set(FIELDS))
        if unknown:
            raise ValueError(f"{path}: unknown keys {unknown}; allowed {list(FIELDS)}")
        bad = [f for f in FIELDS if not isinstance(doc[f], (int, float)) or isinstance(doc[f], bool)]
        if bad:
            raise ValueError(f"{path}: constants {bad} must be numbers")
        return cls(**{f: float(doc[f]) for f in FIELDS})

    # computed once per instance (the parameter search reads them some 10⁵ times); the fields are frozen
    @cached_property
    def C_fg(self):
        return max(self.C_f, self.C_g)

    @cached_property
    def L_fg(self):
        return float(np.sqrt(self.L_f ** 2 * self.C_g ** 2 + self.L_g ** 2))

    @cached_property
    def L(self):
        return float(np.sqrt(2 * self.C_f ** 2 * self.L_g ** 2 + 2 * self.C_g ** 4 * self.L_f ** 2))


@dataclass(frozen=True)
class TheoremParams:
    """Parameters of Theorems 1–2: η_t = k/(n+t)^{1/3}, α, β, ϱ = c1, c2, c3 · η_t², step γ,
    communication period q, and the constant B of the conditions on c1."""
    k: float
    n: float
    c1: float
    c2: float
    c3: float
    gamma: float
    q: int
    B: float

    def __post_init__(self):
        for f in ("k", "n", "c1", "c2", "c3", "gamma", "B"):
            v = getattr(self, f)
            if not isinstance(v, (int, float, np.floating, np.integer)) or not np.isfinite(v) or v < 0 or \
                    (v == 0 and f != "B"):
                rel = ">= 0" if f == "B" else "> 0 (the theorems divide by it or take its roots)"
                raise ValueError(f"parameter {f} must be a finite number {rel}, got {v!r}")
        if not float(self.q).is_integer() or self.q < 1:
            raise ValueError(f"parameter q (communication period) must be an integer >= 1, got {self.q!r}")


def check_run(T, q=1, rho=1.0, A_rms=None):
    """The horizon and the Theorem-1 quantities of a bound evaluation: T and q integers >= 1,
    ρ > 0 (Assumption 5: A_t ⪰ ρI) and A_rms >= ρ (which A_t ⪰ ρI implies)."""
    for name, v in (("T", T), ("q", q)):
        if not float(v).is_integer() or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        if v > 2 ** 53:
            raise ValueError(f"{name} = {v} is beyond 2^53 ≈ 9.0e15, the largest integer a float holds "
                             "exactly; give at most 9007199254740992")
    if not (np.isfinite(rho) and rho > 0):
        raise ValueError(f"rho must be finite and > 0 (A_t ⪰ ρI, Assumption 5), got {rho!r}")
    if A_rms is not None and not (np.isfinite(A_rms) and A_rms >= rho):
        raise ValueError(f"A-rms = sqrt((1/T) Σ E||A_t||²) must be finite and >= rho = {rho:g} "
                         f"(A_t ⪰ ρI), got {A_rms!r}")


class _FixedPoint(NamedTuple):
    """The parameters B's lower bound reads (:func:`_B_lower`), during the search's fixed-point
    iteration on B: the same numbers as a :class:`TheoremParams`, without its checks (every
    candidate the search keeps is a checked TheoremParams)."""
    c1: float
    c2: float
    c3: float
    gamma: float
    q: int


def _theta(c: Constants, p: TheoremParams, rho):
    LC = c.L_fg * c.C_fg
    S = c.C_g ** 2 + c.L_g ** 2 + 2 * c.L_f ** 2 * c.C_g ** 2
    return ((5 * c.C_f ** 2 * c.L_g ** 2 + p.c2 ** 2 * c.C_g ** 2 * c.L_f ** 2 / (864 * p.q ** 3 * p.gamma ** 3 * LC ** 3))
            * rho ** 2 / (24 ** 2 * LC ** 2) + p.gamma * rho / (6 * p.q * LC) * S)


def _B_lower(c, p, rho):
    LC = c.L_fg * c.C_fg
    return (20 * c.C_g ** 2 * c.L_f ** 2 + p.c2 ** 2 * c.C_g ** 2 * c.L_f ** 2 / (216 * p.q ** 3 * p.gamma ** 3 * LC ** 3)
            + _theta(c, p, rho) * rho ** 2 * (p.c1 ** 2 + p.c3 ** 2)
            / (30 * p.q ** 2 * p.gamma ** 4 * c.C_fg ** 2 * c.L_fg ** 2 * c.C_g ** 2))


def theorem_conditions(c: Constants, p: TheoremParams, rho=1.0):
    """Every condition of Theorem 1 (ρ from Assumption 5) or Theorem 2 (ρ = 1), as a list of
    dicts {name, lhs, rhs, relation, met}."""
    LC = c.L_fg * c.C_fg
    S = c.C_g ** 2 + c.L_g ** 2 + 2 * c.L_f ** 2 * c.C_g ** 2
    k3 = 2.0 / (3.0 * p.k ** 3)
    th = _theta(c, p, rho)
    B_low = _B_lower(c, p, rho)
    n_low = max(2.0, p.k ** 3, (p.c1 * p.k) ** 3, (p.c2 * p.k) ** 3, (p.c3 * p.k) ** 3,
                (24 * p.k * p.gamma * p.q * LC) ** 3 / rho ** 3)
    rows = [
        ("n >= max(2, k³, (c1k)³, (c2k)³, (c3k)³, (24kγqL_fgC_fg)³/ρ³)", p.n, n_low, ">="),
        ("k > 0", p.k, 0.0, ">"),
        ("c1 >= 2/(3k³) + B", p.c1, k3 + p.B, ">="),
        ("c2 >= 2/(3k³) + 5C_f²", p.c2, k3 + 5 * c.C_f ** 2, ">="),
        ("c1² + c2² <= 24⁴q²γ⁴L_fg⁴C_fg⁴/(9ρ⁴)", p.c1 ** 2 + p.c2 ** 2,
         24 ** 4 * p.q ** 2 * p.gamma ** 4 * LC ** 4 / (9 * rho ** 4), "<="),
        ("c3 >= 2/(3k³) + 5C_g²", p.c3, k3 + 5 * c.C_g ** 2, ">="),
        ("γ >= ρ(c1² + c3²)^{1/4}/(12 sqrt(5q) L_fg C_fg)", p.gamma,
         rho * (p.c1 ** 2 + p.c3 ** 2) ** 0.25 / (12 * np.sqrt(5 * p.q) * LC), ">="),
        ("γ <= 3ρqL_fgC_fg/(4(C_g² + L_g² + 2L_f²C_g²))", p.gamma, 3 * rho * p.q * LC / (4 * S), "<="),
        ("γ <= n^{1/3}ρ/(2Lk)", p.gamma, p.n ** (1 / 3) * rho / (2 * c.L * p.k) if c.L > 0 else np.inf, "<="),
        ("B >= 20C_g²L_f² + … (Θ term)", p.B, B_low, ">="),
        ("Θ + BC_g²ρ²/(24²L_fg²C_fg²) <= 5ρ²/48", th + p.B * c.C_g ** 2 * rho ** 2 / (24 ** 2 * c.L_fg ** 2 * c.C_fg ** 2),
         5 * rho ** 2 / 48, "<="),
    ]
    out = []
    for name, lhs, rhs, rel in rows:
        met = lhs >= rhs * (1 - 1e-12) if rel == ">=" else lhs > rhs if rel == ">" else lhs <= rhs * (1 + 1e-12)
        out.append({"name": name, "lhs": float(lhs), "rhs": float(rhs), "relation": rel, "met": bool(met)})
    return out


def theorem1_conditions(c, p, rho):
    return theorem_conditions(c, p, rho)


def theorem2_conditions(c, p):
    return theorem_conditions(c, p, 1.0)


def G_value(c: Constants, p: TheoremParams, T, rho=1.0):
    """G of Theorems 1–2 (ρ = 1 for Theorem 2)."""
    s2 = c.sigma ** 2
    dhat2 = (2 * p.c1 ** 2 * c.L_f ** 2 * s2 + p.c3 ** 2 * s2 + 4 * p.c3 ** 2 * c.delta_f ** 2
             + 4 * p.c3 ** 2 * c.L_f ** 2 * c.delta_g ** 2 + p.c2 ** 2 * s2 + 3 * p.c2 ** 2 * c.delta_g ** 2)
    LC = c.L_fg * c.C_fg
    return (4 * c.F_gap / (p.k * rho * p.gamma) + 12 * p.n ** (1 / 3) * s2 / (p.q * p.k ** 2 * rho ** 2)
            + 4 * p.k ** 2 * (dhat2 / (4 * p.gamma ** 2 * c.L_fg ** 2)
                              + (p.c1 ** 2 + p.c2 ** 2 + p.c3 ** 2) * s2 / (3 * rho * p.gamma * p.q * LC)) * np.log(p.n + T))


def theorem1_bound(c, p, T, rho, A_rms):
    """Right side of (14): (sqrt(2G) n^{1/6}/T^{1/2} + sqrt(2G)/T^{1/3}) sqrt((1/T) Σ E||A_t||²)."""
    G = G_value(c, p, T, rho)
    return float((np.sqrt(2 * G) * p.n ** (1 / 6) / np.sqrt(T) + np.sqrt(2 * G) / T ** (1 / 3)) * A_rms)


def theorem2_bound(c, p, T):
    """Right side of (16)."""
    G = G_value(c, p, T, 1.0)
    return float(np.sqrt(2 * G) * p.n ** (1 / 6) / np.sqrt(T) + np.sqrt(2 * G) / T ** (1 / 3))


def find_theorem_parameters(c: Constants, T, q, rho=1.0, ks=(0.25, 0.5, 1.0, 2.0, 4.0), n_gamma=200):
    """Parameters meeting every condition, minimising G, or (None, reason).

    For each k and γ on a log grid: c2, c3 at their lower bounds; B and c1 by fixed-point
    iteration of B's lower bound and c1 = 2/(3k³) + B; n at its smallest admissible value
    (also n ≥ (2Lkγ/ρ)³ from γ ≤ n^{1/3}ρ/(2Lk)); then every condition is checked."""
    q = V.positive_int("q (communication period)", q)
    LC = c.L_fg * c.C_fg
    S = c.C_g ** 2 + c.L_g ** 2 + 2 * c.L_f ** 2 * c.C_g ** 2
    gmax = 3 * rho * q * LC / (4 * S)
    best, reasons = None, {}
    for k in ks:
        k3 = 2.0 / (3.0 * k ** 3)
        c2, c3 = k3 + 5 * c.C_f ** 2, k3 + 5 * c.C_g ** 2
        for gamma in np.geomspace(gmax * 1e-4, gmax, n_gamma):
            B = 20 * c.C_g ** 2 * c.L_f ** 2
            for _ in range(100):
                c1 = k3 + B
                B_new = _B_lower(c, _FixedPoint(c1, c2, c3, gamma, q), rho)
                if B_new > 1e12 or abs(B_new - B) <= 1e-12 * B_new:
                    B = B_new
                    break
                B = B_new
            if B > 1e12:
                reasons["B fixed point diverges (γ too small)"] = reasons.get("B fixed point diverges (γ too small)", 0) + 1
                continue
            c1 = k3 + B
            n = max(2.0, k ** 3, (c1 * k) ** 3, (c2 * k) ** 3, (c3 * k) ** 3, (24 * k * gamma * q * LC / rho) ** 3,
                    (2 * c.L * k * gamma / rho) ** 3 if c.L > 0 else 0.0) * (1 + 1e-9)
            p = TheoremParams(k, n, c1, c2, c3, gamma, q, B)
            conds = theorem_conditions(c, p, rho)
            failed = [r["name"] for r in conds if not r["met"]]
            if failed:
                for f in failed:
                    reasons[f] = reasons.get(f, 0) + 1
                continue
            G = G_value(c, p, T, rho)
            if best is None or G < best[1]:
                best = (p, G)
    if best is None:
        return None, {"failed_conditions_counts": reasons, "searched": {"k": list(ks), "gamma_range": [gmax * 1e-4, gmax]}}
    return best[0], {"G": best[1]}


def params_to_dict(p):
    return asdict(p)


def a_priori_cap(c: Constants):
    """C_f·C_g: every ‖∇F(x)‖ = ‖∇g(x)ᵀ∇f(g(x))‖ ≤ C_g·C_f (Remark 1), so a right side of (14) or
    (16) at or above it cannot be violated by any trajectory: the bound is vacuous."""
    return float(c.C_f * c.C_g)


def bound_verdict(c: Constants, p: TheoremParams, T, theorem, rho, A_rms, conds):
    """What a right side says (``refimpl bound``): its value against :func:`a_priori_cap`,
    ``vacuous`` when it reaches the cap, the tightest condition of ``conds`` (the one whose two
    sides are closest, lhs/rhs for ≤ and rhs/lhs for ≥), and the smallest T at which, with the
    same parameters, the right side is below the cap (None when not below 2^53)."""
    def rhs(t):
        return theorem2_bound(c, p, t) if theorem == 2 else theorem1_bound(c, p, t, rho, A_rms)
    bound, cap = rhs(T), a_priori_cap(c)
    ratios = [((r["lhs"] / r["rhs"]) if r["relation"] == "<=" else (r["rhs"] / r["lhs"]), r["name"])
              for r in conds if r["lhs"] > 0 and r["rhs"] > 0]
    tight = max(ratios)[1] if ratios else None
    lo, hi = 1, T
    while rhs(hi) >= cap and hi < 2 ** 53:         # the right side falls with T (as T^{-1/3}, up to ln(n + T))
        lo, hi = hi + 1, hi * 2
    informative_from = smallest_T_below(rhs, cap, lo, hi) if rhs(hi) < cap else None
    vacuous = bound >= cap
    verdict = (f"vacuous: the right side {bound:.4g} is at or above the cap C_f·C_g = {cap:.4g} that bounds every "
               "gradient norm, so no run could violate it" if vacuous else
               f"informative: the right side {bound:.4g} is below the cap C_f·C_g = {cap:.4g}")
    verdict += (f"; with these parameters it is below the cap from T = {informative_from:,}" if informative_from
                else "; with these parameters it stays at or above the cap for every T up to 2^53")
    if tight:
        verdict += f"; tightest condition: {tight}"
    return {"right_hand_side": bound, "cap": cap, "cap_source": "C_f·C_g", "vacuous": bool(vacuous),
            "informative_from_T": informative_from, "tight_condition": tight,
            "all_conditions_met": all(r["met"] for r in conds), "verdict": verdict}


def smallest_T_below(rhs, cap, lo, hi):
    """The smallest T in [lo, hi] with rhs(T) < cap, given rhs(hi) < cap, by bisection (the right
    side falls with T; ``mfcgd.theorem_statement_literal`` checks the answer and the T before it).
    The interval halves at every step, so bit_length(hi − lo) + 1 steps close it; a bisection that
    needs more is a defect, raised (RuntimeError) rather than left to loop."""
    limit = int(hi - lo).bit_length() + 1
    for _ in range(limit + 1):
        if not lo < hi:
            return lo
        mid = (lo + hi) // 2
        if rhs(mid) < cap:
            hi = mid
        else:
            lo = mid + 1
    raise RuntimeError(f"smallest_T_below: [{lo}, {hi}] still open after {limit} halvings")
