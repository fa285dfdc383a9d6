"""``refimpl bound mfcgd``: the conditions and right-hand side of [MFCGD] Theorems 1–2 for given constants, and whether the bound says anything (its verdict)."""
from __future__ import annotations

import json
from dataclasses import asdict

from refimpl.cli.common import EpilogFormatter


def add_parser(sub):
    bd = sub.add_parser("bound", help="Theorem 1/2 conditions and right-hand side for given constants",
                        formatter_class=EpilogFormatter, epilog=BOUND_CONSTANTS)
    bd.add_argument("what", choices=["mfcgd"])
    bd.add_argument("--constants", required=True, help="JSON with C_f, C_g, L_f, L_g, sigma, delta_f, delta_g, F_gap "
                                                       "(defined below)")
    bd.add_argument("--params", help="JSON with k, n, c1, c2, c3, gamma, q, B (default: the parameters meeting every "
                                     "condition with the smallest G, searched)")
    bd.add_argument("--theorem", type=int, choices=[1, 2], default=2,
                    help="1: AdaMFCGD, right side (14); 2: MFCGD (A_t = I), right side (16)")
    bd.add_argument("--T", type=int, default=10000, help="number of steps")
    bd.add_argument("--q", type=int, default=None, help="communication period (default 10, or the q of --params; "
                                                        "giving both with different values is an error)")
    bd.add_argument("--rho", type=float, default=None, help="Theorem 1: ρ of Assumption 5, A_t ⪰ ρI (default 0.5)")
    bd.add_argument("--A-rms", type=float, default=None, help="Theorem 1: sqrt((1/T) Σ E||A_t||²) (default 1)")
    bd.set_defaults(fn=run)


BOUND_CONSTANTS = """constants (the assumptions of [MFCGD], docs/mfcgd.md §3):
  C_f, C_g   Lipschitz constants of the outer map f and the inner map g: ||∇f|| ≤ C_f, ||∇g|| ≤ C_g
             (so every ||∇F(x)|| ≤ C_f·C_g, the cap a right side must be below to say anything)
  L_f, L_g   smoothness constants of f and g (their gradients are L_f-, L_g-Lipschitz)
  sigma      bound on the standard deviation of the stochastic values and gradients of f and g
  delta_f    heterogeneity of the clients' outer maps: how far their gradients ∇f^m differ
  delta_g    heterogeneity of the clients' inner maps: how far the g^m differ (e.g. max ||b_m − b_j||
             on the synthetic problem)
  F_gap      F(x̄_1) − F*, the initial optimality gap
the output ends with the verdict: vacuous or informative, the smallest T at which the right side
drops below the cap with these parameters, and the tightest condition"""


def run(args):
    from refimpl.mfcgd.bounds import Constants
    c = Constants.from_json(args.constants)
    try:
        return _bound_report(args, c)
    except (OverflowError, ZeroDivisionError) as exc:
        big = max(asdict(c).items(), key=lambda kv: abs(float(kv[1])))
        raise ValueError(f"--constants {args.constants}: the theorem's constants overflow the float range "
                         f"(±1.8e308) with these values ({exc}; largest: {big[0]} = {big[1]:g}); "
                         "give constants whose squares and products stay below about 1e150")


def _bound_report(args, c):
    from refimpl.mfcgd.bounds import (bound_verdict, check_run, find_theorem_parameters, theorem_conditions,
                                      TheoremParams)
    if args.theorem == 2 and (args.rho is not None or args.A_rms is not None):
        raise ValueError("--rho and --A-rms belong to Theorem 1 (AdaMFCGD); Theorem 2 has A_t = I, ρ = 1")
    rho = 1.0 if args.theorem == 2 else (0.5 if args.rho is None else args.rho)
    A_rms = None if args.theorem == 2 else (1.0 if args.A_rms is None else args.A_rms)
    q = 10 if args.q is None else args.q
    if args.params:
        from refimpl.tools.sweep import read_document
        doc = read_document(args.params)
        try:
            p = TheoremParams(**doc)
        except TypeError:
            raise ValueError(f"--params {args.params}: expected exactly the keys k, n, c1, c2, c3, gamma, q, B; "
                             f"got {sorted(doc) if isinstance(doc, dict) else type(doc).__name__}")
        if args.q is not None and int(args.q) != int(p.q):
            raise ValueError(f"q given twice: --q {args.q} and q = {p.q} in --params {args.params}; give one")
        q = int(p.q)
    check_run(args.T, q, rho, A_rms)
    if not args.params:
        p, info = find_theorem_parameters(c, args.T, q, rho)
        if p is None:
            print(json.dumps({"found": False, **info}, indent=1, default=str))
            return 1
    conds = theorem_conditions(c, p, rho)
    for r in conds:
        print(f"{'met    ' if r['met'] else 'NOT MET'}  {r['name']}:  {r['lhs']:.6g} {r['relation']} {r['rhs']:.6g}")
    report = bound_verdict(c, p, args.T, args.theorem, rho, A_rms, conds)
    print(json.dumps({"theorem": args.theorem, "T": args.T, "params": {k: float(v) for k, v in asdict(p).items()},
                      **report}, indent=1, ensure_ascii=False))
    print(f"verdict: {report['verdict']}")
    return 0 if all(r["met"] for r in conds) else 1
