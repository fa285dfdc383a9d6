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


def _finish(fig, axes, path, legend=True):
    for a in axes:
        a.grid(alpha=0.3)
        if legend:
            a.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt
    plt.close(fig)
    return path


def band(ax, pts, axis, metric, label):
    """Mean curve of ``metric`` with a ±1 standard-deviation band from rows holding
    ``<metric>_mean`` and ``<metric>_std`` (curves.csv of sweeps and reproductions)."""
    import numpy as np
    x = np.array([p[axis] for p in pts])
    mu = np.array([p[f"{metric}_mean"] for p in pts])
    sd = np.array([p[f"{metric}_std"] for p in pts])
    ax.plot(x, mu, label=label)
    ax.fill_between(x, mu - sd, mu + sd, alpha=0.15)


def plot_trace(trace, path, title=""):
    """Training cost (log scale) and test accuracy per round; for constrained runs also ||ω||²,
    the constraint value against U and the slack. Returns the path, or None."""
    plt = _pyplot()
    if plt is None:
        return None
    r = trace.series("round")
    constrained = "constraint_value" in trace.metrics
    fig, ax = plt.subplots(1, 4 if constrained else 2, figsize=(18 if constrained else 10, 3.8))
    ax[0].semilogy(r, trace.series("train_cost"))
    ax[0].set_xlabel("round")
    ax[0].set_ylabel("training cost (32)")
    ax[1].plot(r, trace.series("test_accuracy"))
    ax[1].set_xlabel("round")
    ax[1].set_ylabel("test accuracy")
    if constrained:
        ax[2].plot(r, trace.series("sq_norm"))
        ax[2].set_xlabel("round")
        ax[2].set_ylabel("||ω||², objective of (40)")
        ax[3].plot(r, trace.series("constraint_value"), label="data loss (constraint of (40))")
        if "U" in trace.config:
            ax[3].axhline(trace.config["U"], color="k", ls="--", lw=1, label=f"U = {trace.config['U']:g}")
        ax[3].plot(r, trace.series("slack"), label="slack s")
        ax[3].set_xlabel("round")
        ax[3].legend(fontsize=7)
    fig.suptitle(title)
    return _finish(fig, ax, path, legend=False)


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


def plot_vfl(traces, path):
    """Test accuracy against simulated time, one curve per method."""
    plt = _pyplot()
    if plt is None:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, tr in traces.items():
        ax.plot(tr.series("time"), tr.series("test_accuracy"), label=name)
    ax.set_xlabel("simulated time")
    ax.set_ylabel("test accuracy")
    return _finish(fig, [ax], path)


def plot_vfl_regimes(traces_by_regime, path, target=None):
    """One panel per server round trip S: test accuracy against simulated time, one curve per method
    (``traces_by_regime``: {S: {method: trace}}), the target as a dotted line."""
    plt = _pyplot()
    if plt is None:
        return None
    keys = list(traces_by_regime)
    fig, axes = plt.subplots(1, len(keys), figsize=(4.2 * len(keys), 3.8), squeeze=False)
    axes = list(axes[0])
    for ax, S in zip(axes, keys):
        for name, tr in traces_by_regime[S].items():
            if tr is not None:
                ax.plot(tr.series("time"), tr.series("test_accuracy"), label=name)
        if target is not None:
            ax.axhline(target, color="0.5", ls=":", lw=1)
        ax.set_title(f"server round trip S = {S:g}")
        ax.set_xlabel("simulated time")
    axes[0].set_ylabel("test accuracy")
    return _finish(fig, axes, path)


def plot_mfcgd(traces, path):
    """||∇F(x̄_t)|| against samples drawn and against communication rounds."""
    plt = _pyplot()
    if plt is None:
        return None
    import numpy as np
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
    for name, tr in traces.items():
        g = tr.series("grad_norm")
        ok = np.isfinite(g)
        ax[0].loglog(tr.series("samples")[ok], g[ok], label=name)
        ax[1].loglog(np.maximum(tr.series("rounds")[ok], 1), g[ok], label=name)
    ax[0].set_xlabel("samples drawn")
    ax[1].set_xlabel("communication rounds")
    for a in ax:
        a.set_ylabel("||∇F(x̄_t)||")
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
