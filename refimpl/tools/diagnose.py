"""Where and why two implementations part: ``refimpl diagnose OURS THEIRS``.

Both sides are per-round dumps under the names of docs/guide.md ("Replay inputs and per-round
dumps"): a refimpl trace, or another implementation's ``.npz``/``.mat`` written in those names
(``--map`` renames theirs). The rounds are walked in order and each round's quantities in
data-flow order (inputs → gradients → statistics → step → iterate); the first (round, quantity)
beyond the tolerance is the divergence, reported with the quantities of that round that still
agree. Then, when OURS is a refimpl trace, refimpl is rerun from THEIR initial point and
schedule under each of its convention switches in turn, and the switch under which every dumped
round agrees is named.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field, replace

import numpy as np

from refimpl.core.replay import read_arrays, read_dump

# data-flow order of each paper's dump names (``<k>`` stands for a party index)
ORDER = {
    "ssca": ("batch", "omega", "client_count", "client_loss", "client_grad", "loss_hat", "grad_hat", "rho", "gamma",
             "A", "B", "C", "omega_bar", "multiplier", "slack", "eta", "velocity", "omega_next"),
    "vfl": ("batch", "H", "dh<k>", "tau", "eta", "theta<k>", "grad<k>", "momentum<k>", "w_bar", "W"),
    "mfcgd": ("zeta", "xi", "x", "h", "u", "v", "w", "y", "m", "x_bar", "w_bar", "communication", "A", "eta", "alpha",
              "beta", "varrho", "d", "x_next"),
}

# the convention switches a rerun tries, per paper: option → its values
SWITCHES = {
    "ssca": {"curvature": ("recursive", "fixed"), "activation": ("swish", "relu")},
    "vfl": {"momentum": ("reset", "persistent"), "adaptive_rule": ("paper", "authors"),
            "server_time_unit": ("step", "timeout-over-Q"), "protocol": ("refimpl", "authors")},
    "mfcgd": {"matrix": ("adam", "norm", "amsgrad")},
}


def paper_of(names):
    """Which paper's dump a set of quantity names is."""
    if {"omega", "omega_next"} & names:
        return "ssca"
    if any(re.fullmatch(r"theta\d+", n) for n in names):
        return "vfl"
    if {"x", "x_next"} & names:
        return "mfcgd"
    raise ValueError(f"cannot tell whose dump this is from its quantities {sorted(names)} "
                     "(expected refimpl's names: docs/guide.md)")


def ordered(paper, names):
    """``names`` in the paper's data-flow order (party-indexed names by party), unknown names last."""
    out = []
    for pattern in ORDER[paper]:
        if "<k>" in pattern:
            rx = re.compile("^" + re.escape(pattern).replace("<k>", r"(\d+)") + "$")
            out += sorted((n for n in names if rx.match(n)), key=lambda n: int(rx.match(n).group(1)))
        elif pattern in names:
            out.append(pattern)
    return out + sorted(set(names) - set(out))


def parse_map(text):
    """``OURS=THEIRS,…`` pairs: their quantity names for ours (a name without '=' is refused)."""
    out = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        ours, sep, theirs = item.partition("=")
        if not sep or not ours.strip() or not theirs.strip():
            raise ValueError(f"--map {text!r}: expected OURS=THEIRS pairs, e.g. omega=w,omega_bar=w_bar")
        out[theirs.strip()] = ours.strip()
    return out


def _rel(a, b):
    """Relative difference max|a − b| / max(max|a|, tiny); inf for NaN or a shape mismatch."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        if a.size == b.size:
            b = b.reshape(a.shape)
        else:
            return np.inf
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return 0.0 if np.array_equal(a, b, equal_nan=True) else np.inf
    if a.size == 0:
        return 0.0
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(a))), 1e-300))


@dataclass
class Divergence:
    round: int
    quantity: str
    ours: object
    theirs: object
    rel: float
    agreeing: list = field(default_factory=list)      # (name, rel) of that round's earlier quantities


@dataclass
class Comparison:
    paper: str
    rounds: list
    divergence: Divergence | None
    worst: float
    missing: dict = field(default_factory=dict)       # quantity -> side that lacks it
    per_round: dict = field(default_factory=dict)     # quantity -> [rel per round]


def compare_dumps(ours, theirs, tol):
    """Walk both dumps ({round: {name: array}}) in round and data-flow order."""
    if not ours:
        raise ValueError("OURS holds no per-round dump (run it with --dump-rounds)")
    if not theirs:
        raise ValueError("THEIRS holds no per-round dump (quantities named r<round>_<name>, docs/guide.md)")
    common = sorted(set(ours) & set(theirs))
    if not common:
        raise ValueError(f"no round is dumped on both sides (ours {sorted(ours)}, theirs {sorted(theirs)})")
    names_o = set().union(*(set(ours[r]) for r in common))
    names_t = set().union(*(set(theirs[r]) for r in common))
    paper = paper_of(names_o)
    missing = {n: "theirs" for n in names_o - names_t}
    missing.update({n: "ours" for n in names_t - names_o})
    names = ordered(paper, names_o & names_t)
    if not names:
        raise ValueError(f"the dumps share no quantity (ours: {sorted(names_o)}, theirs: {sorted(names_t)})")
    div, worst, per_round = None, 0.0, {n: [] for n in names}
    for r in common:
        agreeing = []
        for n in names:
            if n not in ours[r] or n not in theirs[r]:
                per_round[n].append(np.nan)
                continue
            d = _rel(ours[r][n], theirs[r][n])
            per_round[n].append(d)
            worst = max(worst, d)
            if div is None:
                if d > tol:
                    div = Divergence(r, n, np.asarray(ours[r][n]), np.asarray(theirs[r][n]), d, list(agreeing))
                else:
                    agreeing.append((n, d))
    return Comparison(paper, common, div, worst, missing, per_round)


def load_side(path, mapping=None):
    """A side's dump, with ``mapping`` {their name: our name} applied."""
    if not os.path.exists(path):
        raise ValueError(f"{path}: no such file or directory")
    dump = read_dump(path)
    if mapping:
        dump = {r: {mapping.get(k, k): v for k, v in q.items()} for r, q in dump.items()}
    return dump


def _trace_config(path):
    js = os.path.join(path if os.path.isdir(path) else os.path.dirname(path), "trace.json")
    if not os.path.exists(js):
        return None
    try:
        return json.load(open(js)).get("config")
    except (OSError, ValueError) as exc:
        raise ValueError(f"{js}: not a readable trace.json ({exc})")


def _family(cfg):
    if "algorithm" in cfg and "setting" in cfg:
        return "ssca"
    if "parties" in cfg:
        return "vfl"
    if "problem" in cfg:
        return "mfcgd"
    raise ValueError("trace.json's configuration is of no refimpl family")


def rerun(ours_path, theirs_path, paper, rounds, overrides):
    """refimpl rerun with OURS's configuration, THEIR initial point and schedule (the replay
    inputs THEIRS holds, refimpl's names) and ``overrides``; returns the rerun's dump."""
    from refimpl.mfcgd.experiment import MFCGDConfig
    from refimpl.ssca.experiment import RunConfig
    from refimpl.vfl.experiment import VFLConfig
    cfg_doc = _trace_config(ours_path)
    fam = _family(cfg_doc)
    cls = {"ssca": RunConfig, "vfl": VFLConfig, "mfcgd": MFCGDConfig}[fam]
    fields_ = cls.__dataclass_fields__
    cfg = cls(**{k: v for k, v in cfg_doc.items() if k in fields_})
    theirs = theirs_path if os.path.isfile(theirs_path) else os.path.join(theirs_path, "trace.npz")
    arrays = read_arrays(theirs, "THEIRS")
    dump_rounds = ",".join(str(r) for r in rounds)
    if fam == "vfl":
        kw = {"init": theirs if any(k.startswith(("theta0", "init_theta0")) for k in arrays) else None,
              "batches": theirs if "batches" in arrays else None, "taus": theirs if "tau" in arrays else None}
        if overrides.get("protocol") == "authors":
            # the protocol's step counts only: THEIR batches and initial point stay
            overrides = {**overrides, "batch_order": "independent", "init_scheme": "glorot",
                         "server_time_unit": "step"}
        cfg = replace(cfg, dump_rounds=dump_rounds, rounds=max(rounds), **kw, **overrides)
        from refimpl.vfl.experiment import run_vfl
        from refimpl.core.data import load_embedded_mnist
        tr = run_vfl(cfg, load_embedded_mnist())
    elif fam == "mfcgd":
        kw = {"init": theirs if ("x1" in arrays or "init_x1" in arrays) else None,
              "samples": theirs if any(k.startswith(("zeta", "samples_")) for k in arrays) else None}
        cfg = replace(cfg, dump_rounds=dump_rounds, steps=max(rounds), **kw, **overrides)
        from refimpl.mfcgd.experiment import run_mfcgd_config
        tr = run_mfcgd_config(cfg)
    else:
        from refimpl.ssca.experiment import run_experiment
        from refimpl.core.data import load_embedded_mnist
        init = None
        if "W1_0" in arrays and "W2_0" in arrays:
            init = (arrays["W1_0"], arrays["W2_0"])
        batches = arrays.get("batches")
        cfg = replace(cfg, dump_rounds=dump_rounds, rounds=max(rounds), snapshots=[], **overrides)
        tr = run_experiment(cfg, load_embedded_mnist(), init=init, batches=batches)
    from refimpl.core.replay import dump_arrays
    return dump_arrays(tr.arrays)


def try_switches(ours_path, theirs_path, theirs, paper, tol, takes, progress=None):
    """For each convention switch of the paper that the algorithm takes (``takes``: its option
    names) and each of its other values: rerun and compare with THEIRS. Returns rows {switch,
    value, agrees, worst, first} and the agreeing one (or None)."""
    cfg = _trace_config(ours_path) or {}
    rows, found = [], None
    for option, values in SWITCHES[paper].items():
        if option not in takes:
            continue
        current = cfg.get(option)
        if option in cfg and current is None:
            current = values[0]
        for v in values:
            if v == current or option not in cfg:
                continue
            try:
                dump = rerun(ours_path, theirs_path, paper, sorted(theirs), {option: v})
            except ValueError as exc:
                rows.append({"switch": option, "value": v, "agrees": False, "worst": None, "first": f"not run: {exc}"})
                continue
            cmp_ = compare_dumps(dump, theirs, tol)
            first = None if cmp_.divergence is None else f"round {cmp_.divergence.round}, {cmp_.divergence.quantity}"
            row = {"switch": option, "value": v, "agrees": cmp_.divergence is None, "worst": cmp_.worst, "first": first}
            rows.append(row)
            if progress:
                progress(f"--{option.replace('_', '-')} {v}: " + ("all rounds agree" if row["agrees"] else f"differs at {first}"))
            if row["agrees"] and found is None:
                found = row
    return rows, found


def describe(cmp_, tol, found=None):
    """The report's text lines."""
    lines = [f"{cmp_.paper} dumps, rounds {cmp_.rounds[0]}..{cmp_.rounds[-1]} ({len(cmp_.rounds)} compared), "
             f"tolerance {tol:g} (relative)"]
    for n, side in sorted(cmp_.missing.items()):
        lines.append(f"note: {n} is missing from {side}; the other quantities are compared without it")
    d = cmp_.divergence
    if d is None:
        lines.append(f"all rounds agree (worst relative difference {cmp_.worst:.2g})")
    else:
        entry = ""
        a, b = np.asarray(d.ours, dtype=float), np.asarray(d.theirs, dtype=float)
        if a.shape == b.shape and a.size > 1:
            i = int(np.nanargmax(np.abs(a - b))) if np.all(np.isfinite(a - b)) else int(np.argmax(~np.isfinite(a - b)))
            idx = np.unravel_index(i, a.shape)
            entry = f" at entry {tuple(int(j) for j in idx)}: {a[idx]:.6g} vs {b[idx]:.6g}"
        elif a.size == 1 and b.size == 1:
            entry = f": {a.reshape(()).item():.6g} vs {b.reshape(()).item():.6g}"
        else:
            entry = f": shapes {a.shape} vs {b.shape}"
        agree = ", ".join(f"{n} {r:.1g}" for n, r in d.agreeing) or "none before it"
        lines.append(f"round {d.round}, {d.quantity}{entry} (relative {d.rel:.3g}); agreeing before it: {agree}")
    if found is not None:
        lines.append(f"with --{found['switch'].replace('_', '-')} {found['value']} all rounds agree "
                     f"(worst {found['worst']:.2g})")
    return lines


def write_report(directory, cmp_, lines, rows):
    """``diagnose.md`` (the lines and the switch table) and ``diagnose.png`` (relative difference
    per quantity against round, the first divergence marked) in ``directory``."""
    os.makedirs(directory, exist_ok=True)
    md = ["# refimpl diagnose", ""] + [f"- {ln}" for ln in lines]
    if rows:
        md += ["", "| switch | value | agrees | worst | first divergence |", "|---|---|---|---|---|"]
        for r in rows:
            worst = "-" if r["worst"] is None else f"{r['worst']:.2g}"
            md.append(f"| {r['switch']} | {r['value']} | {r['agrees']} | {worst} | {r['first'] or '-'} |")
    with open(os.path.join(directory, "diagnose.md"), "w") as fh:
        fh.write("\n".join(md) + "\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    for n, vals in cmp_.per_round.items():
        v = np.asarray(vals, dtype=float)
        ax.semilogy(cmp_.rounds, np.maximum(np.where(np.isinf(v), 1e3, v), 1e-18), marker=".", label=n)
    if cmp_.divergence is not None:
        ax.axvline(cmp_.divergence.round, color="k", ls="--", lw=1)
        ax.annotate(f"first: {cmp_.divergence.quantity}", (cmp_.divergence.round, 1e-3), fontsize=8)
    ax.set_xlabel("round")
    ax.set_ylabel("relative difference")
    ax.set_title(f"{cmp_.paper}: ours vs theirs per quantity")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(directory, "diagnose.png"), dpi=110)
    plt.close(fig)
    return os.path.join(directory, "diagnose.png")
