"""What a paper is to refimpl's tools: one :class:`Paper` description per paper folder
(``refimpl/<paper>/paper.py``), registered in :mod:`refimpl.papers`.

A tool (run, sweep, reproduce, diagnose, crosscheck, verify, mutations, vectors, bench) never
asks "is this SSCA?": it asks the paper that owns an algorithm, a configuration or a dump for
what it needs — the Config class and its options, the data a configuration names, how to run
it, the replay inputs and dump quantities, the conventions. A new paper is a new folder and one
registration; a new convention is one row of its paper's description.

This module is part of the core: it knows no paper. The descriptions are cheap to import (no
NumPy kernels, no Numba): everything heavy is imported inside the methods that need it.
"""
from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import MISSING, asdict, dataclass, fields, replace

CONFIG_DEFAULT = object()      # the option's default is the Config field's


@dataclass(frozen=True)
class Opt:
    """One command-line option of a paper: the Config field it sets, its help line, the algorithms
    that take it (None: all of the paper's), and optionally choices, a command-line default and a
    boolean-flag marker."""
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


@dataclass(frozen=True)
class Convention:
    """A convention switch of a paper: an option whose values are the paper's reading and other
    implementations' readings. ``first``: the dump quantity it touches first (data-flow order);
    ``acts_on``: ``"arithmetic"`` (the same inputs give other numbers), ``"inputs"`` (it draws other
    batches or another initial point: a replay from THEIR inputs overrides it), ``"bundle"`` (it
    sets several conventions at once) or ``"record"`` (it only adds a recorded quantity).
    ``replay``: for a convention on the inputs, the replay input whose presence in THEIR dump
    decides what it would draw (then trying it explains nothing)."""
    option: str
    values: tuple
    default: object
    first: str
    acts_on: str
    help: str = ""
    replay: str = ""        # inputs conventions: the replay input (a name pattern) that fixes what it draws

    def __post_init__(self):
        if self.acts_on not in ("arithmetic", "inputs", "bundle", "record"):
            raise ValueError(f"convention {self.option}: acts_on must be arithmetic, inputs, bundle or record, "
                             f"got {self.acts_on!r}")


@dataclass(frozen=True)
class ReplayInput:
    """A replay input as it appears in a dump or a trace: a regular expression over array names and
    the word a verdict uses for it ("initial point", "batch schedule", …)."""
    pattern: str
    word: str

    def matches(self, name):
        return re.fullmatch(self.pattern, name) is not None


class Paper(ABC):
    """The description of one paper. Subclasses set the class attributes and implement the two
    abstract methods :meth:`config_class` and :meth:`run` (a description without them cannot be
    instantiated); the other methods have defaults that fit a paper whose
    Config validates itself in ``validate()`` and whose runs need no data set."""

    key: str = ""                   # "ssca": the name tools, traces and task identities use
    title: str = ""                 # the paper's title
    citation: str = ""              # authors, title, venue
    cite_key: str = ""              # "[SSCA]": how docstrings cite it
    short_name: str = ""            # "SSCA": how messages name it
    algorithms: dict = {}           # algorithm id → one-line help (the order `refimpl run` lists them)
    method_field: str = "method"    # the Config field that names the algorithm
    length_field: str = "rounds"    # the Config field of a run's length (rounds, steps)
    options: tuple = ()             # the Opt rows of `refimpl run`
    conventions: tuple = ()         # Convention rows
    dump_order: tuple = ()          # dump quantities in data-flow order (<k>: a party index)
    step_quantities: tuple = ()     # per-local-step dump quantities (row t: step t), in the order one step computes them
    dump_markers: tuple = ()        # regular expressions: a dump holding a name matching one is this paper's
    replay_inputs: tuple = ()       # ReplayInput rows
    id_names: tuple = ()            # dump quantities and replay arrays that hold sample ids (diagnose --index-base)
    checks_module: str = ""         # the module of its verification checks
    vectors_module: str = ""        # the module of its conformance families (a FAMILIES tuple of Family records)
    kernels_module: str = ""        # the module of its Numba kernels, with a warm() that compiles them
    mutation_prefixes: tuple = ()   # check-id prefixes a mutation of this paper is run against
    reproductions: tuple = ()       # names of `refimpl reproduce`
    reproduction_presets: tuple = ("paper",)   # the --preset values its reproductions take
    paper_settings_n_train: int = 0  # training samples --paper needs (0: any)
    data_note: str = ""             # when a run reads --data (shown in its help), if not always
    command_module: str = ""        # the module of its command-line hooks: run(args, ui), compare(args, ui), …
    replay_args: tuple = ()         # (flag, help) of `refimpl run`'s replay files that are not Config fields
    # replay inputs and dumps belong to one run, not to a comparison of several
    run_only: tuple = ("init", "batches", "index_base", "taus", "samples", "keep_samples", "dump_rounds")

    # ------------------------------------------------------------------ configuration

    @abstractmethod
    def config_class(self):
        """The paper's Config dataclass (every description names its own)."""

    def config_defaults(self):
        """Field → default of the Config class."""
        out = {}
        for f in fields(self.config_class()):
            out[f.name] = f.default if f.default is not MISSING else f.default_factory()
        return out

    def options_for(self, algorithm=None):
        """(option, default) pairs, restricted to what ``algorithm`` takes when given."""
        defaults = self.config_defaults()
        return [(o, defaults[o.field] if o.default is CONFIG_DEFAULT else o.default) for o in self.options
                if algorithm is None or o.algorithms is None or algorithm in o.algorithms]

    def command_line_defaults(self):
        """The defaults the command line sets where they differ from the Config's (every algorithm)."""
        return {o.field: o.default for o in self.options if o.default is not CONFIG_DEFAULT and o.default is not None}

    def make_config(self, algorithm, **values):
        """The Config of ``algorithm`` with ``values``, validated (:meth:`validated`)."""
        cls = self.config_class()
        try:
            cfg = cls(**{**values, self.method_field: algorithm})
        except TypeError as exc:
            raise ValueError(f"invalid settings for {algorithm}: {exc}")
        self.validated(cfg)
        return cfg

    def config_from_record(self, doc):
        """The Config a trace's ``config`` records (keys that are not fields are dropped)."""
        cls = self.config_class()
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in doc.items() if k in names})

    def validated(self, cfg):
        """The configuration a run executes (checked; a paper may fill in defaults here)."""
        return cfg.validate() if hasattr(cfg, "validate") else cfg

    def recorded(self, cfg):
        """The configuration a run records, as a plain dict."""
        return asdict(self.validated(cfg))

    def with_length(self, cfg, length, **changes):
        """``cfg`` run for ``length`` rounds/steps, with other ``changes``."""
        return replace(cfg, **{self.length_field: length}, **changes)

    def owns_record(self, doc):
        """Whether a trace's configuration is one of this paper's runs."""
        return doc.get(self.method_field) in self.algorithms

    def owns_dump(self, names):
        """Whether a set of dump quantity names is this paper's."""
        return any(re.fullmatch(m, n) for m in self.dump_markers for n in names)

    # ------------------------------------------------------------------ command line

    def command(self):
        """The module of the paper's command-line hooks (None: the generic ones)."""
        if not self.command_module:
            return None
        import importlib
        return importlib.import_module(self.command_module)

    def run_command(self, args, ui):
        """``refimpl run ALGORITHM``: the paper's own run command when it has one, else the generic
        one (the Config from the options, the data when needed, the run, the shared tail of ``ui``)."""
        mod = self.command()
        if mod is not None:
            return mod.run(args, ui)
        cfg = ui.config(args, self.key, getattr(args, "algorithm"))
        data = ui.load_data(args) if self.needs_data(cfg) else None
        length = getattr(cfg, self.length_field)
        with ui.progress(args, length, args.algorithm, self.length_field[:-1]) as bar:
            trace = self.run(self.validated(cfg), data,
                             progress=(lambda t, *_: bar("", n=t)) if bar.bar_mode else None)
        return ui.finish_run(args, trace, args.out, lambda path: self.plot({args.algorithm: trace}, path))

    def plot(self, traces, path):
        """A figure of ``{label: trace}`` at ``path`` (None: no figure)."""
        return None

    def entry_words(self, quantity, index, config, data=None):
        """Where a dumped array's entry ``index`` sits in the paper's terms (e.g. "W1[3, 17]",
        "client 2, coordinate 5"), from the run's recorded ``config`` and, where sizes need it, its
        ``data``; None when the paper has nothing to add."""
        return None

    def figure_caption(self, name, plan):
        """A line under reproduction ``name``'s figure saying what a reader needs to read it (a
        schedule outside the theorems' conditions, a rule a label hides), or None."""
        return None

    # ------------------------------------------------------------------ data and runs

    def needs_data(self, cfg):
        """Whether the run reads a data set (otherwise ``run`` gets ``data=None``)."""
        return True

    def load_data(self, record, where="the run's data"):
        """The data set a recorded configuration names (its ``data_source`` and ``data_digest``;
        a record of an earlier release that names the embedded subset loads it), or None when the
        run needs none; refused, naming ``where``, when it is not reachable here or has changed."""
        from refimpl.core.data import load_source
        source = record.get("data_source")
        if source is None and record.get("data") == "mnist-5k-embedded":
            source = {"kind": "embedded"}
        if source is None and not self.needs_data(self.config_from_record(record)):
            return None
        return load_source(source, where, record.get("data_digest"))

    @abstractmethod
    def run(self, cfg, data=None, replay=None, progress=None):
        """One run of ``cfg`` on ``data`` with the replay inputs ``replay`` (paper-specific keys);
        returns the Trace (every description runs its own)."""

    def replay_from(self, arrays, path):
        """From THEIR dump (its arrays, and the file they came from): (config changes, replay
        inputs) that make a rerun start from THEIR initial point and schedule."""
        return {}, {}

    def pinning_argv(self, trace_dir, algorithm, config):
        """The ``refimpl run ALGORITHM`` flags that replay every random draw of a finished run
        from its own trace (``trace_dir``, the run's --out; ``config`` its recorded configuration):
        with them, a rerun under another --seed reproduces every array of the trace bit for bit.
        The run must have kept what they read (a paper says which flag keeps it). Default: none —
        a description whose runs draw nothing at random."""
        return []

    def replay_from_dump(self, dump):
        """Replay inputs rebuilt from a per-round dump ({round: {name: array}}) in the documented
        names, for a dump that does not hold them as arrays of their own: {array name: array}
        (read by :meth:`replay_from` like THEIR own arrays). Default: none."""
        return {}

    def rerun_changes(self, changes):
        """The configuration changes a rerun under the convention switches ``changes`` makes (a
        bundle may set more than its own option)."""
        return dict(changes)

    def cost(self, cfg):
        """A rough relative cost of a run (for scheduling the longest first), not a prediction."""
        return float(getattr(cfg, self.length_field)) * 1e-3

    def preflight(self, label, cfg, ds):
        """Refuse, before the first run of a plan, a run that cannot start on ``ds``."""

    def horizon(self, cfgs):
        """A run's length for a figure title."""
        n = sorted({getattr(self.validated(c), self.length_field) for c in cfgs})
        return f"{'/'.join(str(t) for t in n)} {self.length_field}"

    def plan(self, name, quick=True, rounds=None, paper=False, n_train=4000, preset="paper"):
        """The labelled runs ``[(label, paper key, Config)]`` of reproduction ``name`` and its
        ``(axis, metrics)``."""
        raise ValueError(f"paper {self.key} has no reproduction {name!r}")

    def tune_grids(self, name, batch, rounds, every, n_train=None):
        """``reproduce NAME --tune``: per method, its grid of Configs (None: not tunable), for
        ``n_train`` training samples (None: the grid's defaults)."""
        return None

    def tuned_settings(self, cfg):
        """The settings a tuning grid varies, as a dict."""
        return {}

    def __repr__(self):
        return f"<Paper {self.key}: {len(self.algorithms)} algorithms>"
