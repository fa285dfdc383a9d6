"""Run traces: per-round metrics, iterate snapshots, the batch schedule and the configuration.

Saved as ``trace.npz`` (arrays only, loaded with ``allow_pickle=False``) plus ``trace.json``
(configuration, status, metrics as lists, the first round's message ledger). Snapshots are stored
as ``W1_<round>`` / ``W2_<round>`` (round 0 is the initial point) in the authors' layout, so other
implementations can write the same file and be compared with :func:`crosscheck`.
"""
from __future__ import annotations

import contextlib
import json
import os
import zipfile
from dataclasses import asdict, dataclass, field

import numpy as np

METRICS = ("round", "train_cost", "test_accuracy", "comm_floats", "grad_evals")


@dataclass
class Trace:
    config: dict
    metrics: dict = field(default_factory=lambda: {k: [] for k in METRICS})
    snapshots: dict = field(default_factory=dict)     # round -> (W1, W2)
    batches: np.ndarray | None = None
    ledger_round1: list = field(default_factory=list)
    status: str = "running"
    extra: dict = field(default_factory=dict)          # in-memory only (e.g. the final state); not saved
    arrays: dict = field(default_factory=dict)         # per-round matrices (saved as array_<name>)

    def record(self, **values):
        for k, v in values.items():
            self.metrics.setdefault(k, []).append(float(v))

    def series(self, name):
        return np.asarray(self.metrics[name], dtype=np.float64)

    def iterate(self, round):
        """``(W1, W2)`` at ``round`` (0 is the initial point), from the snapshots the run kept."""
        if round not in self.snapshots:
            raise KeyError(f"round {round} was not kept; snapshots at rounds {sorted(self.snapshots)} "
                           "(choose them with Config.snapshots / --snapshots)")
        return self.snapshots[round]

    def plot(self, path, title=""):
        """The trace's figure as a PNG at ``path``: training cost and test accuracy per round (SSCA
        family), test accuracy against simulated time (VFL), or ||∇F(x̄_t)|| against samples and
        communication rounds (MFCGD). Returns the path, or None without matplotlib."""
        from refimpl.core.plots import plot_mfcgd, plot_trace, plot_vfl
        axis, name = self.figure_axis(), self.label()
        if axis == "samples":
            return plot_mfcgd({name: self}, path)
        if axis == "time":
            return plot_vfl({name: self}, path)
        return plot_trace(self, path, title or name)

    def figure_axis(self):
        """The x-axis of the figure :meth:`plot` draws: "samples" (||∇F(x̄_t)|| and samples recorded:
        the MFCGD family), "time" (a simulated time recorded: Flex-VFL) or "round" (SSCA)."""
        if "grad_norm" in self.metrics and "samples" in self.metrics:
            return "samples"
        return "time" if "time" in self.metrics else "round"

    def label(self):
        """The run's name in a figure: its algorithm, else its method, else "run"."""
        return self.config.get("algorithm") or self.config.get("method") or "run"

    # -- persistence ----------------------------------------------------------------------------
    def save(self, out_dir):
        os.makedirs(out_dir, exist_ok=True)
        arrays = {f"metric_{k}": np.asarray(v, dtype=np.float64) for k, v in self.metrics.items() if len(v)}
        for r, (W1, W2) in self.snapshots.items():
            arrays[f"W1_{r}"], arrays[f"W2_{r}"] = W1, W2
        if self.batches is not None:
            arrays["batches"] = self.batches
        from refimpl.core.dumps import is_dump_name, save_rounds
        for k, v in self.arrays.items():
            if not is_dump_name(k):                      # per-round dumps: dump/r<t>.npz and dump.mat
                arrays[f"array_{k}"] = np.asarray(v)
        doc = {"config": self.config, "status": self.status, "metrics": {k: v for k, v in self.metrics.items() if len(v)},
               "snapshot_rounds": sorted(self.snapshots), "ledger_round1": self.ledger_round1}
        # both files are written to temporaries before either replaces its predecessor: a failure
        # (a full disk) leaves the previous trace whole
        _atomic_all([(os.path.join(out_dir, "trace.npz"), lambda fh: np.savez_compressed(fh, **arrays)),
                     (os.path.join(out_dir, "trace.json"),
                      lambda fh: fh.write(json.dumps(doc, indent=1, default=_jsonable).encode()))])
        save_rounds(out_dir, self.arrays)

    @classmethod
    def load(cls, path):
        """Load from a directory holding trace.npz (trace.json optional) or from the .npz itself."""
        npz = os.path.join(path, "trace.npz") if os.path.isdir(path) else path
        js = os.path.join(os.path.dirname(npz), "trace.json")
        doc = _read_json(js) if os.path.exists(js) else {}
        tr = cls(config=doc.get("config", {}), status=doc.get("status", "unknown"),
                 ledger_round1=doc.get("ledger_round1", []))
        try:
            z = np.load(npz, allow_pickle=False)
        except (OSError, EOFError, ValueError, zipfile.BadZipFile) as exc:   # truncated, corrupt, pickled
            raise ValueError(f"{npz}: not a readable trace (.npz of arrays without pickled objects: {exc})")
        if not hasattr(z, "files"):
            raise ValueError(f"{npz}: a single array (.npy), not a trace (.npz with metric_<name>, W1_<round>, …)")
        with z:
            tr.metrics = {k[len("metric_"):]: z[k].tolist() for k in z.files if k.startswith("metric_")}
            for k in z.files:
                if k.startswith(("W1_", "W2_")):
                    if not k[3:].isdigit():
                        raise ValueError(f"{npz}: array {k!r}: an iterate snapshot is named W1_<round> / W2_<round> "
                                         "with a whole-number round, e.g. W1_0, W2_300")
                    r = int(k[3:])
                    other = f"W{3 - int(k[1])}_{r}"
                    if other not in z.files:
                        raise ValueError(f"{npz}: {k} has no {other} (iterate snapshots come in pairs W1_<round>, "
                                         "W2_<round>)")
                    if k.startswith("W1_"):
                        tr.snapshots[r] = (z[k], z[other])
            tr.batches = z["batches"] if "batches" in z.files else None
            tr.arrays = {k[len("array_"):]: z[k] for k in z.files if k.startswith("array_")}
        # the per-round dumps beside it (dump/r<t>.npz) are not loaded: they can outgrow memory;
        # refimpl.core.replay.read_dump reads them
        return tr


def write_csv(path, rows, fieldnames=None):
    """Rows (dicts with the same keys) as CSV, written atomically; with no rows, the header of
    ``fieldnames`` only."""
    import csv
    import io
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(fieldnames or rows[0]))
    w.writeheader()
    w.writerows(rows)
    _atomic(path, lambda fh: fh.write(buf.getvalue().encode()))


class DiskFull(RuntimeError):
    """The device holding --out has no room for a result file (ENOSPC)."""


def _atomic(path, write):
    """Write ``path`` through ``path.tmp`` and an atomic rename (see :func:`_atomic_all`)."""
    _atomic_all([(path, write)])


def _atomic_all(files):
    """Write every ``(path, write)`` through ``path.tmp``, then rename them all: each previous
    file stays intact until every new one is complete. A full disk (ENOSPC) removes the
    temporary files and raises :class:`DiskFull` saying how many bytes the files need."""
    import errno
    import io
    import shutil
    blobs = []
    for path, write in files:
        buf = io.BytesIO()
        write(buf)
        blobs.append((path, buf.getbuffer()))
    done = []
    try:
        for path, data in blobs:
            done.append(path + ".tmp")
            with open(path + ".tmp", "wb") as fh:
                fh.write(data)
    except OSError as exc:
        for tmp in done:
            # the last temporary may not exist (open itself failed); the others are always removed
            with contextlib.suppress(FileNotFoundError):
                os.remove(tmp)
        if exc.errno == errno.ENOSPC:
            where = os.path.dirname(os.path.abspath(blobs[0][0]))
            need = sum(len(d) for _, d in blobs)
            raise DiskFull(f"no space left on the device to write {', '.join(p for p, _ in blobs)}: they need "
                           f"{need / 1e6:.2f} MB, {shutil.disk_usage(where).free / 1e6:.2f} MB are free; nothing "
                           f"was replaced (free space, or choose another --out)") from None
        raise
    for path, _ in blobs:
        os.replace(path + ".tmp", path)


def _read_json(path):
    """A JSON file's content, or a one-line error naming the file (a corrupt trace or task file)."""
    try:
        with open(path) as fh:
            return json.load(fh)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not valid JSON ({exc}); the file is damaged — rerun what wrote it") from None


def _jsonable(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if hasattr(o, "__dataclass_fields__"):
        return asdict(o)
    return str(o)


def crosscheck(a: Trace, b: Trace):
    """Compare two traces: per common snapshot round, max |Δ| of W1 and W2 (absolute, and
    relative to max |W| of the first trace); per common metric, max |Δ| over common rounds.

    Nothing agrees that was not compared: a row's ``rounds`` counts the values compared; a value
    that is not finite (inf, or NaN on one side only) makes the row differ (``rel`` inf) and is
    named in ``nonfinite``; a round whose value is NaN on one side only (not evaluated there) is
    named in ``one_sided``, and the rounds where one trace has a value and the other holds no such
    round at all in ``unmatched`` (side, rounds) (the CLI counts both as not compared). A metric of
    one trace only is a row with ``only`` = the side that has it."""
    rows = []
    for r in sorted(set(a.snapshots) & set(b.snapshots)):
        for i, name in enumerate(("W1", "W2")):
            x, y = np.asarray(a.snapshots[r][i], dtype=float), np.asarray(b.snapshots[r][i], dtype=float)
            if x.shape != y.shape:
                rows.append({"what": f"{name}@{r}", "abs": np.inf, "rel": np.inf, "rounds": 0,
                             "note": f"shape {x.shape} vs {y.shape}"})
                continue
            if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
                rows.append({"what": f"{name}@{r}", "abs": np.inf, "rel": np.inf, "rounds": 1,
                             "note": "not finite (NaN or inf) in "
                                     + " and ".join(s for s, v in (("the first", x), ("the second", y))
                                                    if not np.all(np.isfinite(v)))})
                continue
            d = float(np.max(np.abs(x - y))) if x.size else 0.0
            rows.append({"what": f"{name}@{r}", "abs": d, "rel": d / max(float(np.max(np.abs(x))), 1e-300),
                         "rounds": 1})
    ra, rb = a.metrics.get("round", []), b.metrics.get("round", [])
    # a metric with no value (an empty series) is not recorded
    ma, mb = ({k for k, v in t.metrics.items() if len(v)} for t in (a, b))
    for k in sorted((ma ^ mb) - {"round"}):
        side, other, holder = ("first", mb, b) if k in ma else ("second", ma, a)
        # a trace of iterates only (a .mat of snapshots) records no metric: its absence is named, not
        # counted — only where that trace does hold iterates
        iterates_only = not (other - {"round"}) and bool(holder.snapshots)
        rows.append({"what": k, "abs": np.nan, "rel": np.nan, "skipped": True, "only": side,
                     "iterates_only": iterates_only,
                     "note": f"not compared: only the {side} trace records it"
                             + (" (the other holds iterates only)" if iterates_only else "")})
    for k in sorted(ma & mb - {"round"}):
        # a metric pairs with the round array only when it has one value per round (NaN where the
        # implementation did not evaluate it); a shorter series cannot be aligned and is named instead
        short = [(side, len(t.metrics[k]), len(r)) for side, t, r in (("first", a, ra), ("second", b, rb))
                 if len(t.metrics[k]) != len(r)]
        if short:
            side, n, m = short[0]
            rows.append({"what": k, "abs": np.nan, "rel": np.nan, "skipped": True,
                         "note": f"not compared: the {side} trace has {n} values for {m} rounds (write one value "
                                 "per metric_round entry, NaN where it was not evaluated)"})
            continue
        va = {r: float(v) for r, v in zip(ra, a.metrics[k])}
        vb = {r: float(v) for r, v in zip(rb, b.metrics[k])}
        common = sorted(set(va) & set(vb))
        both = [r for r in common if np.isfinite(va[r]) and np.isfinite(vb[r])]
        # NaN on both sides: evaluated by neither; NaN on one side: not evaluated there
        one_sided = [r for r in common if np.isnan(va[r]) != np.isnan(vb[r])]
        nonfinite = [r for r in common if np.isinf(va[r]) or np.isinf(vb[r])]
        # a value at a round the other trace does not hold at all (a shorter run: one stopped or diverged
        # early) has nothing to be compared with either
        unmatched = [(side, [r for r in sorted(set(v) - set(w)) if not np.isnan(v[r])])
                     for side, v, w in (("first", va, vb), ("second", vb, va))]
        row = {"what": k, "rounds": len(both), "one_sided": one_sided, "nonfinite": nonfinite,
               "unmatched": [(side, rs) for side, rs in unmatched if rs]}
        if nonfinite:
            row.update(abs=np.inf, rel=np.inf, note=f"infinite at round{'s' if len(nonfinite) > 1 else ''} "
                                                     f"{', '.join(str(int(r)) for r in nonfinite[:5])}")
        elif both:
            ds = [abs(va[r] - vb[r]) for r in both]
            scale = max(max(abs(va[r]) for r in both), 1e-300)
            row.update(abs=max(ds), rel=max(ds) / scale)
        else:
            row.update(abs=np.nan, rel=np.nan, skipped=True,
                       note="not compared: no round where both traces have a finite value")
        rows.append(row)
    return rows


def shifted_agreement(a: Trace, b: Trace, r, tol):
    """The shift s ∈ {−1, +1} for which a's snapshot at r equals b's at r + s within ``tol``
    (relative), or None: an off-by-one snapshot convention (their W_r is our W_{r−1})."""
    for s in (-1, 1):
        if r + s in b.snapshots:
            x, y = a.snapshots[r], b.snapshots[r + s]
            if all(u.shape == v.shape and (np.max(np.abs(u - v)) if u.size else 0.0)
                   <= tol * max(float(np.max(np.abs(u))) if u.size else 0.0, 1e-300) for u, v in zip(x, y)):
                return s
    return None
