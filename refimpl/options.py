"""The options of ``refimpl run ALGORITHM``: one table per paper, named after the fields of that
paper's ``Config`` (the same names a sweep spec's ``[fixed]`` table and ``--config run.toml`` use).

Each row says which algorithms of the family take the option, so ``refimpl run ALGORITHM --help``
lists only what applies and an option of another algorithm is an error, not silently ignored.
Defaults come from the family's ``Config`` dataclass, except where the row overrides them for the
command line (shown in ``--help``).
"""
from __future__ import annotations

from dataclasses import MISSING, dataclass, fields

SSCA_ALGORITHMS = ("ssca", "ssca-constrained", "sgd", "sgdm")
VFL_ALGORITHMS = ("flexvfl", "adaptive-flexvfl", "sync-vfl", "async-vfl", "pbcd")
MFCGD_ALGORITHMS = ("mfcgd", "adamfcgd", "comfedl", "local-scgdm", "scgd", "storm")
FAMILIES = {"ssca": SSCA_ALGORITHMS, "vfl": VFL_ALGORITHMS, "mfcgd": MFCGD_ALGORITHMS}


def family_of(algorithm):
    for fam, algs in FAMILIES.items():
        if algorithm in algs:
            return fam
    raise ValueError(f"unknown algorithm {algorithm!r}; allowed: {', '.join(a for v in FAMILIES.values() for a in v)}")


CONFIG_DEFAULT = object()      # the option's default is the Config field's


@dataclass(frozen=True)
class Opt:
    """One option: the config field it sets, its help line, the algorithms that take it (None: the
    whole family), and optionally choices, a command-line default and a boolean-flag marker."""
    field: str
    help: str
    algorithms: tuple | None = None
    choices: tuple | None = None
    default: object = CONFIG_DEFAULT
    flag: bool = False
    text: bool = False          # parsed later from text (comma lists, specs); type str on the command line
    kind: type | None = None    # the value's type where the default (None) does not tell it
    metavar: str | None = None  # shown instead of a long list of choices (the help names them)

    @property
    def name(self):
        return "--" + self.field.replace("_", "-")


_BASELINES = ("sgd", "sgdm")
_SSCA_STEP = ("ssca", "ssca-constrained")

SSCA_OPTIONS = (
    Opt("setting", "sample- or feature-based FL", choices=("sample", "feature")),
    Opt("preset", "the paper's table, or the authors' scripts (ReLU, bias, a1/a2/α/τ, A = τ)",
        choices=("paper", "authors")),
    Opt("batch", "mini-batch size, per client (sample) or per round (feature)"),
    Opt("rounds", "communication rounds T"),
    Opt("clients", "number of clients K (default: 10, or the number of --feature-blocks)", kind=int),
    Opt("hidden", "hidden width J of the two-layer network"),
    Opt("activation", "hidden activation", choices=("swish", "relu")),
    Opt("bias", "bias as column 0 of W1 and W2 (the authors' MATLAB layout)", flag=True),
    Opt("lam", "λ of problem (32); a comma list runs the λ trade-off study", ("ssca",) + _BASELINES, text=True),
    Opt("U", "loss bound U of problem (40); a comma list runs the U trade-off study", ("ssca-constrained",), text=True),
    Opt("penalty", "slack penalty c of (41)", ("ssca-constrained",)),
    Opt("solver", "Lemma 1's closed form or cvxpy", ("ssca-constrained",),
        choices=("closed-form", "cvxpy")),
    Opt("per_client", "one loss constraint per client (needs --solver cvxpy)", ("ssca-constrained",), flag=True),
    Opt("ball_radius", "extra constraint ||ω|| <= r (needs --solver cvxpy)", ("ssca-constrained",)),
    Opt("cvxpy_solver", "cvxpy solver name", ("ssca-constrained",)),
    Opt("tau", "τ of surrogate (7) (default: the paper's for setting and batch)", _SSCA_STEP),
    Opt("curvature", "the paper's A-recursion, or A^t = τ (authors' code)", _SSCA_STEP,
        choices=("recursive", "fixed")),
    Opt("rho_a", "a1 of ρ_t = a1 / t^α", _SSCA_STEP),
    Opt("rho_alpha", "α of ρ_t (default: the paper's for setting and batch)", _SSCA_STEP),
    Opt("gamma_a", "a2 of γ_t = a2 / t^(α+0.05)", _SSCA_STEP),
    Opt("gamma_alpha", "exponent of γ_t (default: α + 0.05)", _SSCA_STEP),
    Opt("lr", "η0 of the learning rate η_t = η0 / t^β", _BASELINES),
    Opt("lr_decay", "β of η_t", _BASELINES),
    Opt("momentum", "momentum m of SGD-m", ("sgdm",)),
    Opt("local_steps", "local steps E per round (sample-based; E > 1 is FedAvg)", _BASELINES),
    Opt("partition", "contiguous | iid | label_skew | dirichlet:α[:MIN] | quantity:σ", text=True),
    Opt("sampling", "B per client from its shard, or K·B pooled from all (authors' SSCA)",
        choices=("per-client", "pooled")),
    Opt("partition_file", "sample-based: JSON file, one list of sample ids per client", text=True),
    Opt("feature_blocks", "feature-based: JSON file, one list of feature indices per client", text=True),
    Opt("collection", "feature-based: three-step (Algorithm 3) or one-step (Remark 4)",
        choices=("three-step", "one-step"), metavar="MODE"),
    Opt("eval_every", "rounds between evaluations of the full training cost"),
    Opt("snapshots", "rounds whose iterates the trace keeps, e.g. 0,10,100", default="", text=True),
    Opt("dump_rounds", "rounds whose intermediate quantities the trace keeps: 1,2,10 | all", default="", text=True),
    Opt("authors_cost", "also record the authors' cost J (docs/ssca.md; on under --preset authors)", flag=True),
    Opt("backend", "kernels", choices=("numba", "numpy")),
    Opt("engine", "refimpl, or Flower's simulation engine (extra flower)",
        choices=("refimpl", "flower")),
    Opt("seed", "seed of the run's numpy.random.Generator"),
    Opt("diverge_cost_factor", "diverged when the training cost exceeds this × its initial value"),
    Opt("diverge_sq_norm", "diverged when ||ω||² exceeds this"),
)

_ROUND_VFL = ("flexvfl", "adaptive-flexvfl", "sync-vfl", "pbcd")

VFL_OPTIONS = (
    Opt("parties", "number of parties K (4: image quadrants of 28×28 data)"),
    Opt("encoder", "party encoder: linear | swish, or a comma list, one per party", text=True),
    Opt("embed_dim", "embedding size O_k"),
    Opt("hidden", "hidden width of swish encoders"),
    Opt("optimizer", "sgd | momentum[:ρ] | proximal[:μ] | time-varying-lr[:d], or a server,parties list",
        text=True),
    Opt("eta", "learning rate(s) η_k, server first (adaptive: the dummy round's)", text=True),
    Opt("A", "Adaptive Flex-VFL constants A_k of η_k = A_k / (τ_k w̄_k)", ("adaptive-flexvfl",), text=True),
    Opt("batch", "mini-batch size"),
    Opt("rounds", "cap on global rounds (async: events)", default=1000),
    Opt("time_budget", "stop at this simulated time"),
    Opt("timeout", "round timeout in simulated time", ("flexvfl", "adaptive-flexvfl")),
    Opt("Q", "local steps per round of synchronous VFL", ("sync-vfl",)),
    Opt("speeds", "step times: constant | lognormal | markov | trace | cputrace (docs/flexvfl.md)", text=True),
    Opt("bandwidth", "bytes per simulated second"),
    Opt("latency", "simulated seconds per message"),
    Opt("server_time", "server round trip S per round (async: per event), see --server-time-unit"),
    Opt("protocol", "authors: the authors' code's conventions (docs/flexvfl.md)",
        choices=("refimpl", "authors")),
    Opt("labels", "who holds the labels", choices=("all", "server")),
    Opt("target", "stop when the test accuracy reaches this value"),
    Opt("eval_every", "rounds between test-accuracy evaluations"),
    Opt("loss_every", "training loss at every n-th evaluation only (NaN between; time-to-target runs)"),
    Opt("theory_every", "rounds between evaluations of Σ_k ||∇_k F||² (0: never)"),
    Opt("smoothness", "condition (14): none | estimate | L,L_0,...,L_K", text=True),
    Opt("momentum", "local optimizer state: reset every round (paper) or persistent (default: the protocol's)",
        _ROUND_VFL, choices=("reset", "persistent")),
    Opt("batch_order", "mini-batches: independent draws (paper) or one permutation per epoch (authors)",
        _ROUND_VFL, choices=("independent", "epoch")),
    Opt("adaptive_rule", "η^{r+1} = A/(τ w̄) (paper) or lr τ_prev/τ (authors' code)", ("adaptive-flexvfl",),
        choices=("paper", "authors")),
    Opt("server_time_unit", "unit of S: step (the fastest party's mean step) or timeout-over-Q (authors' plots)",
        choices=("step", "timeout-over-Q"), metavar="UNIT"),
    Opt("init_scheme", "initial point: Glorot-uniform (refimpl) or torch's defaults + N(0, 0.01) head (authors)",
        choices=("glorot", "torch")),
    Opt("init", "FILE.npz/.mat with theta0 (server head) … thetaK, or a trace.npz (docs/guide.md)", text=True),
    Opt("batches", "FILE.npy (rounds, B) of 0-based sample ids (async-vfl: one row per event), or a trace.npz",
        text=True),
    Opt("taus", "FILE.npy (rounds, K+1) of local steps per round, server first, or a trace.npz", _ROUND_VFL,
        text=True),
    Opt("dump_rounds", "rounds whose intermediate quantities the trace stores: 1,2,10 | all", _ROUND_VFL,
        default="", text=True),
    Opt("seed", "seed of the run's numpy.random.Generator"),
    Opt("diverge_cost_factor", "diverged when the training loss exceeds this × its initial value"),
    Opt("diverge_sq_norm", "diverged when Σ_k ||θ_k||² exceeds this"),
)

_STORM_LIKE = ("mfcgd", "adamfcgd", "storm")
_SCGD_LIKE = ("comfedl", "local-scgdm", "scgd")

MFCGD_OPTIONS = (
    Opt("problem", "problem class", choices=("synthetic", "nonlinear", "drfl", "maml")),
    Opt("clients", "number of clients M", ("mfcgd", "adamfcgd", "comfedl", "local-scgdm")),
    Opt("dim", "dimension d (synthetic, maml)"),
    Opt("steps", "steps T"),
    Opt("q", "communication period q", ("mfcgd", "adamfcgd", "comfedl", "local-scgdm")),
    Opt("k", "k of η_t = k / (n + t)^(1/3)", _STORM_LIKE),
    Opt("n", "n of η_t", _STORM_LIKE),
    Opt("c", "c1 = c2 = c3 of α, β, ϱ = c η_t²", _STORM_LIKE),
    Opt("gamma", "γ of the step γ η_t A_t^{-1} w", _STORM_LIKE),
    Opt("matrix", "adaptive matrix A_t", ("adamfcgd",), choices=("adam", "norm", "amsgrad")),
    Opt("rho", "ρ of A_t ⪰ ρI", ("adamfcgd",)),
    Opt("theta", "ϑ of the moving average a_t", ("adamfcgd",)),
    Opt("eta", "step size η of the baselines", _SCGD_LIKE, default=0.05),
    Opt("beta", "tracking weight β of the baselines", _SCGD_LIKE),
    Opt("alpha", "momentum weight α of Local-SCGDM", ("local-scgdm",)),
    Opt("heterogeneity", "client heterogeneity of the synthetic problem"),
    Opt("eval_every", "steps between evaluations of ||∇F|| (default: T/100)", default=None, kind=int),
    Opt("seed", "seed of the run's numpy.random.Generator"),
    Opt("problem_seed", "seed of the problem instance (default: --seed)", kind=int, default=None),
    Opt("backend", "numba kernel (synthetic problem) or plain NumPy", choices=("numba", "numpy")),
    Opt("diverge_cost_factor", "diverged when ||∇F(x̄_t)|| exceeds this × its value at step 1"),
    Opt("diverge_sq_norm", "diverged when ||x̄_t||² exceeds this (or is not finite)"),
    Opt("init", "FILE.npz/.mat with x1 (and h1, u1, v1 for the STORM-type methods), or a trace.npz", text=True),
    Opt("samples", "FILE.npz of the samples in the order the method consumes them (docs/guide.md), or a trace",
        text=True),
    Opt("keep_samples", "store the samples in the trace (a replay input)", flag=True),
    Opt("dump_rounds", "steps whose intermediate quantities the trace stores: 1,2,10 | all", default="", text=True),
)

OPTIONS = {"ssca": SSCA_OPTIONS, "vfl": VFL_OPTIONS, "mfcgd": MFCGD_OPTIONS}


def config_class(family):
    from refimpl.mfcgd.experiment import MFCGDConfig
    from refimpl.ssca.experiment import RunConfig
    from refimpl.vfl.experiment import VFLConfig
    return {"ssca": RunConfig, "vfl": VFLConfig, "mfcgd": MFCGDConfig}[family]


def family_options(family, algorithm=None):
    """(option, default) pairs of a family, restricted to what ``algorithm`` takes when given."""
    defaults = {}
    for f in fields(config_class(family)):
        defaults[f.name] = f.default if f.default is not MISSING else f.default_factory()
    return [(o, defaults[o.field] if o.default is CONFIG_DEFAULT else o.default) for o in OPTIONS[family]
            if algorithm is None or o.algorithms is None or algorithm in o.algorithms]


def options_for(algorithm):
    """The options ``refimpl run ALGORITHM`` takes, with their resolved defaults."""
    return family_options(family_of(algorithm), algorithm)


def owners(option_name):
    """The algorithms that take ``--option-name`` (for the message when another one is given)."""
    return [a for algs in FAMILIES.values() for a in algs if any(o.name == option_name for o, _ in options_for(a))]
