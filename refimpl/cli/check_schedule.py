"""``refimpl check-schedule``: which conditions of [SSCA] (4) and (6) the step sizes ρ_t and γ_t meet (power laws or the user's own sequences)."""
from __future__ import annotations

import os

from refimpl.cli.common import Formatter, np_load


def add_parser(sub):
    s = sub.add_parser("check-schedule", help="which conditions of (4) and (6) the step sizes ρ_t and γ_t meet",
                       formatter_class=Formatter,
                       description="Each of ρ_t (surrogate weights, (4)) and γ_t (iterate steps, (6)) is a power "
                                   "law a/t^alpha or any sequence of your own (a .npy of values, or an expression in "
                                   "t). A finite sequence's decay is estimated from its second half (a log-log fit).")
    s.add_argument("--rho-a", type=float, default=1.0, help="ρ_t = a / t^alpha: the scale a")
    s.add_argument("--rho-alpha", type=float, default=None, help="ρ_t = a / t^alpha: the exponent alpha")
    s.add_argument("--rho", default=None, help="ρ_t instead as FILE.npy (values ρ_1, ρ_2, …) or an expression in t, "
                                               "e.g. 'np.minimum(1, 2 / t**0.6)'")
    s.add_argument("--gamma-a", type=float, default=0.3, help="γ_t = a / t^alpha: the scale a")
    s.add_argument("--gamma-alpha", type=float, default=None, help="γ_t = a / t^alpha: the exponent alpha")
    s.add_argument("--gamma", default=None, help="γ_t instead as FILE.npy or an expression in t, e.g. '0.9 * t**-0.9'")
    s.add_argument("--T", type=int, default=100000, help="the length at which an expression is evaluated")
    s.set_defaults(fn=run)


def run(args):
    from refimpl.core.schedules import PowerLaw, check_step_sizes
    made = []
    for sym, given, a, alpha in (("rho", args.rho, args.rho_a, args.rho_alpha),
                                 ("gamma", args.gamma, args.gamma_a, args.gamma_alpha)):
        if given is not None:
            if alpha is not None:
                raise ValueError(f"--{sym} {given} and --{sym}-alpha {alpha:g} both give {sym}_t: give one")
            made.append(_user_sequence(sym, given, args.T))
            continue
        if alpha is None:
            raise ValueError(f"give {sym}_t as a power law (--{sym}-alpha, with --{sym}-a) or as --{sym} FILE.npy|EXPR")
        try:
            made.append(PowerLaw(a, alpha))
        except ValueError as exc:
            raise ValueError(f"--{sym}-a {a:g} / --{sym}-alpha {alpha:g} (the schedule {sym}_t = a / t^alpha): {exc}")
    rho, gamma = made
    print(f"rho_t: {rho.describe()}; gamma_t: {gamma.describe()}")
    conds = check_step_sizes(rho, gamma)
    for c in conds:
        print(f"{c.equation} {c.name:<22} {'met' if c.met else 'NOT MET'}  {c.reason}")
    failed = [c.name for c in conds if not c.met]
    print("verdict: " + ("every condition of (4) and (6) is met" if not failed
                         else f"not met: {', '.join(failed)}"))
    return 0 if not failed else 1


def _user_sequence(sym, given, T):
    """--rho / --gamma: a .npy of values s_1, s_2, … or a Python expression in t (NumPy as np),
    evaluated at t = 1..T."""
    import numpy as np
    from refimpl.core.schedules import Sequence
    if str(given).endswith(".npy"):
        if not os.path.isfile(given):
            raise ValueError(f"--{sym} {given}: no such file (a .npy of step sizes, or an expression in t)")
        vals = np_load(sym, given)
        if vals.dtype.kind not in "iuf":
            raise ValueError(f"--{sym} {given}: holds {vals.dtype}; expected real step sizes")
    else:
        t = np.arange(1, T + 1, dtype=np.float64)
        try:
            vals = eval(given, {"__builtins__": {}}, {"t": t, "np": np, "log": np.log, "sqrt": np.sqrt,  # noqa: S307
                                                       "exp": np.exp, "minimum": np.minimum, "maximum": np.maximum})
        except Exception as exc:      # the user's own expression: any error is theirs to see, in one line
            raise ValueError(f"--{sym} {given!r}: not an expression in t ({type(exc).__name__}: {exc}); "
                             "e.g. '0.9 * t**-0.9' or 'np.minimum(1, 2 / t)'")
        vals = np.broadcast_to(np.asarray(vals, dtype=np.float64), t.shape)
    try:
        return Sequence(vals, check_range=False, label=given)
    except ValueError as exc:
        raise ValueError(f"--{sym} {given}: {exc}")
