"""Figures say what was run and hide nothing: titles, labels and legends read from the figure
objects (matplotlib's ``close`` is replaced by a recorder, so every figure a function saves can
be inspected after it returns)."""
import json

import numpy as np
import pytest

from refimpl.core.trace import Trace

plt = pytest.importorskip("matplotlib.pyplot")


@pytest.fixture
def figures(monkeypatch):
    """The figures saved during the test, in order."""
    import matplotlib
    matplotlib.use("Agg")
    seen = []
    real_close = plt.close

    def record(fig=None):
        if fig is not None and hasattr(fig, "axes"):
            seen.append(fig)
        else:
            real_close(fig)
    monkeypatch.setattr(plt, "close", record)
    yield seen
    for f in seen:
        real_close(f)


def _legend_texts(fig):
    assert all(a.get_legend() is None for a in fig.axes), "a legend sits inside a panel"
    assert len(fig.legends) == 1
    return [t.get_text() for t in fig.legends[0].get_texts()]


def _legend_clear_of_panels(fig):
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    box = fig.legends[0].get_window_extent(r)
    for a in fig.axes:
        ab = a.get_window_extent(r)
        assert box.y1 <= ab.y0 + 1 or not box.overlaps(ab), "the legend covers a panel"


def _trace(metrics, **config):
    tr = Trace(config=dict(config))
    for k, v in metrics.items():
        tr.metrics[k] = list(map(float, v))
    return tr


def test_a_curve_under_another_is_named_with_its_difference(figures, tmp_path):
    from refimpl.core.plots import plot_mfcgd
    s = np.arange(1, 40) * 100.0
    g = 1 / np.sqrt(s)
    a = _trace({"samples": s, "rounds": s / 10, "grad_norm": g})
    b = _trace({"samples": s, "rounds": s / 10, "grad_norm": g * (1 + 3e-5)})
    c = _trace({"samples": s, "rounds": s / 10, "grad_norm": 2 * g})
    plot_mfcgd({"MFCGD": a, "AdaMFCGD": b, "ComFedL": c}, str(tmp_path / "m.png"))
    texts = _legend_texts(figures[-1])
    assert len(texts) == 3
    assert texts[0].startswith("MFCGD (under AdaMFCGD in samples: median rel. diff. 3e-05")
    assert texts[1] == "AdaMFCGD" and texts[2] == "ComFedL"
    lines = figures[-1].axes[0].get_lines()
    assert len({(ln.get_linestyle(), ln.get_marker()) for ln in lines}) == 3     # each curve its own style
    _legend_clear_of_panels(figures[-1])


def test_constrained_trace_panels_are_labelled_and_not_repeated(figures, tmp_path):
    from refimpl.core.plots import plot_trace
    r = np.arange(0, 31, 5)
    loss = 1 / (1 + r)
    tr = _trace({"round": r, "train_cost": loss, "constraint_value": loss, "slack": 0 * r, "sq_norm": 1 + r,
                 "test_accuracy": 0.5 + r / 100}, algorithm="ssca-constrained", U=0.1)
    plot_trace(tr, str(tmp_path / "c.png"), "constrained")
    fig = figures[-1]
    ylabels = [a.get_ylabel() for a in fig.axes]
    assert len(ylabels) == 3 and all(ylabels), ylabels
    assert not any("training cost" in y for y in ylabels)        # the data loss is shown once
    texts = _legend_texts(fig)
    assert "U = 0.1" in texts and any("slack" in t for t in texts)
    for a in fig.axes:
        assert all(float(t).is_integer() for t in a.get_xticks())


def test_few_evaluations_are_drawn_as_points_and_the_target_is_labelled(figures, tmp_path):
    from refimpl.core.plots import plot_vfl, plot_vfl_regimes
    fast = _trace({"time": np.linspace(0, 10, 30), "test_accuracy": np.linspace(0.1, 0.9, 30)})
    slow = _trace({"time": [0.0, 400.0], "test_accuracy": [0.1, 0.85]})
    plot_vfl({"flexvfl": fast, "sync-vfl": slow}, str(tmp_path / "v.png"), "a title")
    ax = figures[-1].axes[0]
    sync = next(ln for ln in ax.get_lines() if ln.get_gid() == "sync-vfl")
    assert sync.get_marker() not in (None, "None", "") and sync.get_markevery() == 1
    plot_vfl_regimes({1.0: {"flexvfl": fast, "sync-vfl": slow}}, str(tmp_path / "r.png"), target=0.8)
    fig = figures[-1]
    assert "target accuracy 0.8" in _legend_texts(fig)
    assert fig.axes[0].get_title() == "server round trip S = 1"    # 1.5 × 400 > 400: nothing cut


def test_a_slow_method_does_not_squeeze_the_others(figures, tmp_path):
    from refimpl.core.plots import plot_vfl_regimes
    fast = _trace({"time": np.linspace(0, 10, 30), "test_accuracy": np.linspace(0.1, 0.9, 30)})
    slow = _trace({"time": np.linspace(0, 1000, 30), "test_accuracy": np.linspace(0.1, 0.5, 30)})
    plot_vfl_regimes({2.0: {"flexvfl": fast, "async-vfl": slow}}, str(tmp_path / "r.png"), target=0.8)
    ax = figures[-1].axes[0]
    t80 = float(fast.series("time")[np.flatnonzero(fast.series("test_accuracy") >= 0.8)[0]])
    assert ax.get_xlim()[1] == pytest.approx(1.5 * t80)
    assert "time axis cut at" in ax.get_title() and "of 1000" in ax.get_title()


def test_reproduction_titles_state_data_settings_seeds_and_length():
    from refimpl.ssca.experiment import RunConfig
    from refimpl.tools.reproduce import figure_title, plan_for
    plan, _ = plan_for("ssca-sample", quick=True, rounds=7)
    base = {"data": "fashion-mnist", "seeds": [0, 1, 2]}
    assert figure_title("ssca-sample", dict(base, paper_settings=True), plan) == \
        "ssca-sample — fashion-mnist, paper settings, 3 seeds, 7 rounds"
    assert "tuned per method" in figure_title("x", dict(base, tuned=True, paper_settings=False), plan)
    assert "paper" not in figure_title("x", dict(base, tuned=True), plan)
    t = figure_title("x", dict(base, quick=True, seeds=[0]), plan)
    assert "--quick" in t and "1 seed," in t and "paper settings" not in t
    assert "authors' preset" in figure_title("x", dict(base, preset="authors"), plan)
    vplan, _ = plan_for("vfl-time", quick=True)
    assert "time budget 300" in figure_title("vfl-time", base, vplan)
    mplan, _ = plan_for("mfcgd-rates", quick=True, rounds=50)
    assert figure_title("mfcgd-rates", base, mplan).endswith("50 steps")
    assert isinstance(plan[0][2], RunConfig)


def test_tradeoff_reproduction_figures(figures, tmp_path):
    from refimpl.tools.reproduce import reproduce
    out = tmp_path / "t"
    reproduce("ssca-tradeoff", str(out), seeds=1, quick=True, rounds=3, workers=1)
    main_fig = next(f for f in figures if f._suptitle and f._suptitle.get_text().startswith("ssca-tradeoff — "))
    assert "1 seed, 3 rounds" in main_fig._suptitle.get_text() and "--quick" in main_fig._suptitle.get_text()
    assert "paper settings" not in main_fig._suptitle.get_text()
    texts = _legend_texts(main_fig)
    assert len(texts) == 10 and any(t.startswith("SSCA B=400") for t in texts)
    _legend_clear_of_panels(main_fig)
    fig4 = next(f for f in figures if f.axes[0].get_ylabel() == "||ω||²" and f.axes[0].texts)
    notes = {t.get_text() for t in fig4.axes[0].texts}
    assert {"U=0.1", "U=0.5", "λ=0.0001", "λ=0.01"} <= notes
    assert "3 rounds" in fig4.axes[0].get_title()


def test_sweep_best_legend_names_cells_not_json(figures, tmp_path):
    from refimpl.cli import main
    spec = tmp_path / "s.toml"
    spec.write_text('runner = "ssca"\nseeds = 1\n[fixed]\nrounds = 2\nhidden = 8\nbatch = 10\neval_every = 1\n'
                    '[grid]\ntau = [0.1, 0.2]\n')
    assert main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--workers", "1", "--quiet"]) == 0
    assert main(["sweep-summary", str(tmp_path / "o")]) == 0
    fig = figures[-1]
    texts = _legend_texts(fig)
    assert texts and all(t.startswith("tau=0.") and "{" not in t and "(1 seed)" in t for t in texts), texts
    assert all(float(t).is_integer() for t in fig.axes[0].get_xticks())
    json.dumps(texts)


def test_reproduction_figures_explain_themselves():
    """ssca-sample's caption gives SSCA's schedule with its verdict against (4) and (6) and
    FedAvg's local-step rule; a schedule meeting both says so; accuracy panels zoom on the curves."""
    import numpy as np
    from refimpl import papers
    from refimpl.ssca.experiment import RunConfig
    from refimpl.tools.reproduce import zoom_accuracy
    ssca = papers.get("ssca")
    plan, _ = ssca.plan("ssca-sample", quick=True)
    cap = ssca.figure_caption("ssca-sample", plan)
    assert "SSCA B=10, SSCA B=100: ρ_t = 1/t^0.1" in cap and "outside the theorems' conditions" in cap
    assert "sum_rho_sq_finite" in cap and "FedAvg E = min(5, ⌊N_k / B⌋)" in cap
    good = [("SSCA", "ssca", RunConfig("ssca", rho_alpha=0.55, gamma_a=0.5, gamma_alpha=0.6, rounds=10))]
    assert ssca.figure_caption("ssca-sample", good) == "SSCA: ρ_t = 1/t^0.55, γ_t = 0.5/t^0.6 meets (4) and (6)"
    assert ssca.figure_caption("ssca-tradeoff", plan) is None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    rows = [{"round": t, "test_accuracy_mean": 0.1 + 0.8 * (1 - np.exp(-t / 3))} for t in range(60)]
    lo, hi = zoom_accuracy(ax, rows, "round", "test_accuracy")
    assert 0.85 < lo < hi <= 0.9 and ax.get_ylim()[0] < lo and ax.get_ylim()[1] > hi - 1e-12
    plt.close(fig)
