"""PNG figures (matplotlib is the optional ``plot`` extra; without it no figure is written)."""
from __future__ import annotations


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        return None


# Curves drawn later cover earlier ones: each curve gets its own line style and marker rhythm,
# and a curve another one hides is named so in the legend (see :func:`mark_hidden`).
STYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "v", "D", "x", "P", "*")
HIDDEN_REL = 1e-2      # median relative difference under which two curves read as one


def style(i, n_points):
    """Line style of the i-th curve of a panel: a cycled dash pattern, and markers (every
    ~n/12-th point) so that curves on top of each other stay distinguishable; a curve of a few
    points is drawn with a marker at every point, so it is not read as a measured straight line."""
    every = 1 if n_points <= 12 else max(1, n_points // 12)
    return {"ls": STYLES[i % len(STYLES)], "marker": MARKERS[i % len(MARKERS)], "markevery": every,
            "markersize": 3.5 if n_points > 12 else 4.5}


def mark_hidden(curves, where=""):
    """{label: (x, y)} of one panel, drawn in that order → {label: legend text}. A curve whose
    values lie within ``HIDDEN_REL`` (median relative difference, at the x both share) of a curve
    drawn after it is named as hidden under that curve, with the difference (and ``where``, the
    panel, in a figure of several)."""
    import numpy as np
    names = list(curves)
    out = {n: n for n in names}
    for i, a in enumerate(names):
        xa, ya = (np.asarray(v, dtype=float) for v in curves[a])
        for b in names[i + 1:]:
            xb, yb = (np.asarray(v, dtype=float) for v in curves[b])
            common, ia, ib = np.intersect1d(xa, xb, return_indices=True)
            ok = np.isfinite(ya[ia]) & np.isfinite(yb[ib]) if common.size else np.zeros(0, bool)
            if ok.sum() < 2:
                continue
            rel = np.abs(ya[ia][ok] - yb[ib][ok]) / np.maximum(np.abs(yb[ib][ok]), 1e-300)
            med = float(np.median(rel))
            if med < HIDDEN_REL:
                out[a] = f"{a} (under {b}{' in ' + where if where else ''}: median rel. diff. {med:.1g})"
                break
    return out


def integer_ticks(ax, axis="x"):
    """Rounds and steps are whole numbers: no 2.5 on their axis."""
    from matplotlib.ticker import MaxNLocator
    (ax.xaxis if axis == "x" else ax.yaxis).set_major_locator(MaxNLocator(integer=True))


def draw(ax, curves, log=None, where=""):
    """Draw {label: (x, y)} on ``ax`` with :func:`style` and :func:`mark_hidden` labels."""
    labels = mark_hidden(curves, where)
    for i, (name, (x, y)) in enumerate(curves.items()):
        plot = {"x": ax.semilogx, "y": ax.semilogy, "xy": ax.loglog}.get(log, ax.plot)
        plot(x, y, label=labels[name], gid=name, **style(i, len(x)))


def legend_layout(labels, width):
    """(columns, inches below the panels) of the legend of ``labels`` under a figure ``width``
    inches wide: as many columns as the longest text allows at 7 pt (4.3 pt a character and 40
    pt for the line and gaps), at least one and at most one a label; 0.1 in plus 0.16 in a row."""
    longest = max(len(t) for t in labels)
    ncol = max(1, min(len(labels), int(width * 72 / (4.3 * longest + 40))))
    rows = -(-len(labels) // ncol)
    return ncol, 0.1 + 0.16 * rows


def _finish(fig, axes, path, legend=True):
    """Grid, one legend outside the panels (below them, so it covers no curve), save, close."""
    entries = {}                 # one entry per curve: its base name (gid) → (handle, text)
    for a in axes:
        a.grid(alpha=0.3)
        for h, lab in zip(*a.get_legend_handles_labels()):
            if lab.startswith("_"):
                continue
            key = (h.get_gid() if hasattr(h, "get_gid") else None) or lab
            if key not in entries or (entries[key][1] == key and lab != key):   # keep a hidden-curve note
                entries[key] = (h, lab)
    handles = [h for h, _ in entries.values()]
    labels = [t for _, t in entries.values()]
    if legend and labels:
        ncol, room = legend_layout(labels, fig.get_figwidth())
        fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=7, frameon=False)
        fig.set_figheight(fig.get_figheight() + room)
        fig.tight_layout(rect=(0, room / fig.get_figheight(), 1, 1))
    else:
        fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt
    plt.close(fig)
    return path


def band(ax, pts, axis, metric, label, i=0, hidden=None):
    """Mean curve of ``metric`` with a ±1 standard-deviation band from rows holding
    ``<metric>_mean`` and ``<metric>_std`` (curves.csv of sweeps and reproductions); ``i`` picks
    the curve's :func:`style`, ``hidden`` the legend text :func:`mark_hidden` gave it."""
    import numpy as np
    x = np.array([p[axis] for p in pts])
    mu = np.array([p[f"{metric}_mean"] for p in pts])
    sd = np.array([p[f"{metric}_std"] for p in pts])
    line, = ax.plot(x, mu, label=hidden or label, gid=label, **style(i, len(x)))
    ax.fill_between(x, mu - sd, mu + sd, alpha=0.15, color=line.get_color())


def bands(ax, groups, axis, metric, where=""):
    """Several :func:`band` curves on one panel ({label: rows}), hidden curves named."""
    curves = {lab: ([p[axis] for p in pts], [p[f"{metric}_mean"] for p in pts]) for lab, pts in groups.items() if pts}
    names = mark_hidden(curves, where)
    for i, lab in enumerate(curves):
        band(ax, groups[lab], axis, metric, lab, i, names[lab])


def plot_trace(trace, path, title=""):
    """Training cost (log scale) and test accuracy per round; for constrained runs, whose training
    cost is the constraint's data loss, the test accuracy, ||ω||² and the constraint value against
    U with the slack instead. Returns the path, or None."""
    return plot_traces({trace.config.get("algorithm") or "run": trace}, path, title)


def plot_traces(traces, path, title=""):
    """:func:`plot_trace` for several traces of the SSCA family on shared panels ({label: trace})."""
    plt = _pyplot()
    if plt is None:
        return None
    constrained = all("constraint_value" in tr.metrics for tr in traces.values())
    panels = ([("test_accuracy", "test accuracy", None), ("sq_norm", "||ω||², objective of (40)", None),
               ("constraint_value", "data loss (constraint of (40)), slack s", None)] if constrained else
              [("train_cost", "training cost (32)", "y"), ("test_accuracy", "test accuracy", None)])
    fig, ax = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4.2), squeeze=False)
    ax = list(ax[0])
    for a, (metric, ylabel, log) in zip(ax, panels):
        curves = {name: (tr.series("round"), tr.series(metric)) for name, tr in traces.items()}
        if metric == "constraint_value":
            curves = {f"{name}: data loss": c for name, c in curves.items()}
            curves.update({f"{name}: slack s": (tr.series("round"), tr.series("slack")) for name, tr in traces.items()})
        draw(a, curves, log, metric if len(panels) > 1 else "")
        a.set_xlabel("round")
        a.set_ylabel(ylabel)
        integer_ticks(a)
        if metric == "constraint_value":
            for U in sorted({tr.config["U"] for tr in traces.values() if "U" in tr.config}):
                a.axhline(U, color="k", ls="--", lw=1, label=f"U = {U:g}")
    fig.suptitle(title)
    return _finish(fig, ax, path, legend=len(traces) > 1 or constrained)


def plot_tradeoff(rows, name, path):
    """||ω||² against the training data loss over a list of U or λ values ([SSCA], Fig. 4)."""
    plt = _pyplot()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(5, 4))
    x = [r["data_loss"] for r in rows]
    y = [r["sq_norm"] for r in rows]
    ax.plot(x, y, "o-", label="constrained (40), varying U" if name == "U" else "regularised (32), varying λ")
    for r in rows:
        ax.annotate(f"{name}={r[name]:g}", (r["data_loss"], r["sq_norm"]), fontsize=7)
    ax.set_xlabel("training cost (1/N) Σ ℓ")
    ax.set_ylabel("||ω||²")
    return _finish(fig, [ax], path)


def plot_vfl(traces, path, title=""):
    """Test accuracy against simulated time, one curve per method (a marker at every evaluation
    when a method has few, so that two evaluations do not read as a measured straight line)."""
    plt = _pyplot()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(6, 4.4))
    draw(ax, {name: (tr.series("time"), tr.series("test_accuracy")) for name, tr in traces.items()})
    ax.set_xlabel("simulated time")
    ax.set_ylabel("test accuracy")
    if title:
        ax.set_title(title, fontsize=9)
    return _finish(fig, [ax], path)


def first_time_at(tr, target):
    """The simulated time of a trace's first evaluation at or above ``target`` accuracy (None)."""
    import numpy as np
    acc = np.asarray(tr.series("test_accuracy"), dtype=float)
    hit = np.flatnonzero(acc >= target)
    return float(tr.series("time")[hit[0]]) if hit.size else None


def plot_vfl_regimes(traces_by_regime, path, target=None):
    """One panel per server round trip S: test accuracy against simulated time, one curve per method
    (``traces_by_regime``: {S: {method: trace}}), the target as a labelled dotted line. A panel's
    time axis ends at 1.5 × the latest time any method reaches the target (the panel's title says
    so), so that one slow method does not squeeze the others into a corner."""
    plt = _pyplot()
    if plt is None:
        return None
    keys = list(traces_by_regime)
    fig, axes = plt.subplots(1, len(keys), figsize=(4.4 * len(keys), 4.2), squeeze=False)
    axes = list(axes[0])
    for ax, S in zip(axes, keys):
        runs = {name: tr for name, tr in traces_by_regime[S].items() if tr is not None}
        draw(ax, {name: (tr.series("time"), tr.series("test_accuracy")) for name, tr in runs.items()},
             where=f"S = {S:g}")
        title = f"server round trip S = {S:g}"
        if target is not None:
            ax.axhline(target, color="0.5", ls=":", lw=1, label=f"target accuracy {target:g}")
            hits = [t for t in (first_time_at(tr, target) for tr in runs.values()) if t is not None]
            end = max(float(tr.series("time")[-1]) for tr in runs.values()) if runs else 0.0
            if hits and 1.5 * max(hits) < end:
                ax.set_xlim(0, 1.5 * max(hits))
                title += f"\n(time axis cut at {1.5 * max(hits):.4g} of {end:.4g})"
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("simulated time")
    axes[0].set_ylabel("test accuracy")
    return _finish(fig, axes, path)


def plot_mfcgd(traces, path, title=""):
    """||∇F(x̄_t)|| against samples drawn and against communication rounds (curves that coincide
    are named so in the legend, with their median relative difference)."""
    plt = _pyplot()
    if plt is None:
        return None
    import numpy as np
    fig, ax = plt.subplots(1, 2, figsize=(10, 4.2))
    ok = {name: np.isfinite(tr.series("grad_norm")) for name, tr in traces.items()}
    draw(ax[0], {n: (tr.series("samples")[ok[n]], tr.series("grad_norm")[ok[n]]) for n, tr in traces.items()}, "xy",
         "samples")
    draw(ax[1], {n: (np.maximum(tr.series("rounds")[ok[n]], 1), tr.series("grad_norm")[ok[n]])
                 for n, tr in traces.items()}, "xy", "rounds")
    ax[0].set_xlabel("samples drawn")
    ax[1].set_xlabel("communication rounds")
    for a in ax:
        a.set_ylabel("||∇F(x̄_t)||")
    if title:
        fig.suptitle(title)
    return _finish(fig, ax, path)


def plot_partition(label_counts, path, title=""):
    """Client × label heat map of a partition's sample counts."""
    plt = _pyplot()
    if plt is None:
        return None
    import numpy as np
    counts = np.asarray(label_counts)
    fig, ax = plt.subplots(figsize=(1.0 + 0.5 * counts.shape[1], 1.0 + 0.35 * counts.shape[0]))
    im = ax.imshow(counts, aspect="auto", cmap="viridis")
    fig.colorbar(im, ax=ax, label="samples")
    ax.set_xlabel("label")
    ax.set_ylabel("client")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def show(path, what="figure"):
    """A tutorial's figure: printed as its path and, inside a notebook (an IPython kernel), shown
    inline; without matplotlib (the ``plot`` extra) one line says how to get it instead of a bare
    None. Returns ``path``."""
    if path is None:
        print(f"{what}: not drawn — matplotlib is not installed (pip install -e '.[plot]', the plot extra)")
        return None
    print(f"{what}: {path}")
    try:
        from IPython import get_ipython
        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is not None and getattr(shell, "kernel", None) is not None:
        from IPython.display import Image, display
        display(Image(filename=str(path)))
    return path
