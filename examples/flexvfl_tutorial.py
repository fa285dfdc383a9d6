# %% [markdown]
# # Flex-VFL — a tutorial
#
# [FlexVFL] Timothy Castiglia, Shiqiang Wang, Stacy Patterson, *Flexible Vertical Federated
# Learning with Heterogeneous Parties*, IEEE TNNLS 2023.
#
# **Setting.** Four parties hold the four quadrants of each MNIST image (the same samples,
# different features); the server holds a fusion model. Each round every party runs as many
# local steps τ_k as it can before a timeout, on one shared mini-batch, against a stale snapshot
# of the others' embeddings — so slow parties never hold the round up.
#
# **Local optimizers as weights (8).** Whatever a party's optimizer, its update over a round is
# θ^τ − θ^0 = −η Σ_t w^t g^t; e.g. local momentum ρ gives w^t = (1 − ρ^{τ−t}) / (1 − ρ).
# Time is simulated (seeded step times per party), so results do not depend on this machine.
# `REFIMPL_TUTORIAL_QUICK=1` shortens it for tests.

# %%
import os

import numpy as np

from refimpl import vfl
from refimpl.vfl.local_optimizers import LocalMomentum, Proximal

QUICK = os.environ.get("REFIMPL_TUTORIAL_QUICK") == "1"
BUDGET = 40.0 if QUICK else 400.0
OUT = os.environ.get("REFIMPL_TUTORIAL_OUT", ".")

# %% [markdown]
# ## The weights of two local optimizers
#
# `weights(tau, eta)` returns w^0..w^{τ−1}; the proximal weights are below 1, against the paper's
# assumption w ≥ 1, and their exponent is τ − 1 − t (docs/flexvfl.md §6).

# %%
print("momentum 0.9, τ = 5:", np.round(LocalMomentum(0.9).weights(5, 0.05), 4))
print("proximal μ = 1, τ = 5:", np.round(Proximal(1.0).weights(5, 0.05), 4))

# %% [markdown]
# ## Flex-VFL against synchronous VFL on the same simulated clock
#
# Party step times are log-normal around means 0.2 (server), 1, 1, 2 and 8: party 4 is a
# straggler. Synchronous VFL waits for it every round; Flex-VFL does not.

# %%
NAMES = {"flexvfl": "Flex-VFL", "sync-vfl": "synchronous VFL"}
traces = {}
for method, name in NAMES.items():
    # synchronous VFL fits few rounds into the budget: evaluate it every round, so that its curve
    # is measured, not a straight line between two evaluations
    traces[name] = vfl.run(vfl.Config(method=method, time_budget=BUDGET, eval_every=5 if method == "flexvfl" else 1))
    tr = traces[name]
    print(f"{name:>15}: {len(tr.metrics['round'])} evaluations, final time {tr.metrics['time'][-1]:.1f}, "
          f"test accuracy {tr.metrics['test_accuracy'][-1]:.3f}")

# %% [markdown]
# A run stops at the first round that *ends* at or past the time budget: the round in progress
# finishes, so a curve can end a little after the budget (synchronous VFL's rounds are long —
# each waits for the straggler — so its overshoot is the larger).

# %% [markdown]
# ## A figure

# %%
from refimpl.core.plots import plot_vfl, show

last = max(tr.metrics["time"][-1] for tr in traces.values())
show(plot_vfl(traces, os.path.join(OUT, "flexvfl_tutorial.png"),
              f"Flex-VFL and synchronous VFL, embedded MNIST subset, seed 0, time budget {BUDGET:g} "
              f"(the last round in progress finishes: curves end by {last:.4g})"))

# %% [markdown]
# ## An identity of the paper, measured: the momentum weights (8)
#
# The check runs real local momentum steps on a party and compares θ^τ − θ^0 with
# −η Σ_t w^t g^t built from the recorded gradients; the difference must be at rounding level.

# %%
from refimpl.tools.verify import format_table, run_checks

record = run_checks(["vfl.weights_momentum"], quick=True)[0]
print(format_table([record]))
assert record.holds
