"""What the commands share: console output, option tables, configuration and data loading,
output directories (one module, imported by every command module of :mod:`refimpl.cli`)."""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from refimpl.core.identity import run_finished


def say(msg):
    print(msg, file=sys.stderr, flush=True)


def progress(args, total=None, desc="", unit="it"):
    """The progress display of a long command: a bar on a terminal, the plain lines elsewhere,
    nothing with --quiet (refimpl.core.progress)."""
    from refimpl.core.progress import Progress
    return Progress(total, desc, unit, quiet=getattr(args, "quiet", False))


def info(args, msg):
    """A progress or where-it-went line; ``--quiet`` silences it (errors and warnings still print)."""
    if not getattr(args, "quiet", False):
        say(msg)


class Formatter(argparse.ArgumentDefaultsHelpFormatter):
    def __init__(self, prog):
        super().__init__(prog, max_help_position=37, width=130)

    def _get_help_string(self, action):
        text = action.help or ""
        d = action.default
        if d is None or d is False or (isinstance(d, str) and d == "") or d is argparse.SUPPRESS or "default" in text:
            return text
        return text + " (default: %(default)s)"


class EpilogFormatter(Formatter):
    """Defaults shown, and the epilog's lines kept as written (a table of definitions)."""

    def _fill_text(self, text, width, indent):
        return "".join(indent + line for line in text.splitlines(keepends=True))


COMMON = (("out", "directory for trace.npz, trace.json, trace.png"),
           ("config", "TOML/JSON of option values (a sweep spec's [fixed] keys); flags override it"),
           ("data", "FILE.npz with X_train, y_train, X_test, y_test (default: embedded MNIST)"),
           ("data_dir", "directory with MNIST-format IDX files"))


def add_option(p, opt, default, shown=True):
    """One option of a config field; ``shown=False`` leaves the default to the Config (None here)."""
    kw = {"help": opt.help, "dest": opt.field, "default": default if shown else None}
    if opt.flag:
        p.add_argument(opt.name, action="store_true", **kw)
        return
    if opt.choices:
        kw["choices"] = opt.choices
        if opt.kind is not None:
            kw["type"] = opt.kind
        if opt.metavar:
            kw["metavar"] = opt.metavar
    elif not opt.text:
        kw["type"] = opt.kind or (float if default is None else type(default))
        kw["metavar"] = opt.field.upper() if len(opt.field) <= 12 else "X"
    else:
        kw["metavar"] = opt.field.upper() if len(opt.field) <= 12 else "X"
    p.add_argument(opt.name, **kw)


def add_compare_args(g, family, skip):
    """Every option of a paper for ``refimpl compare`` (unset options keep the Config's defaults;
    replay inputs and dumps belong to one run, not to a comparison of several)."""
    from refimpl import papers
    paper = papers.get(family)
    for opt, default in paper.options_for():
        if opt.field not in skip and opt.field not in paper.run_only:
            add_option(g, opt, default, shown=False)


def load_run_config(path, algorithm):
    """Option values from a TOML/JSON file whose keys are config field names."""
    from refimpl import papers
    from refimpl.tools.sweep import read_document
    paper = papers.of_algorithm(algorithm)
    doc = read_document(path)
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: expected a table of option values")
    if "fixed" in doc and set(doc) <= {"fixed", "runner", "seeds", "grid", "description"}:
        # a sweep spec: its [fixed] table is a set of run options; the rest would be dropped
        dropped = sorted(set(doc) - {"fixed", "description"} - ({"runner"} if doc.get("runner") == algorithm else set()))
        if dropped:
            raise ValueError(f"{path} is a sweep spec: {dropped} are not options of one run (a run has one "
                             f"runner, one seed and no grid); run it with `refimpl sweep {path}`, or give --config "
                             f"a file of run options (a spec with only [fixed] is read as one)")
        doc = doc["fixed"]
        if not isinstance(doc, dict):
            raise ValueError(f"{path}: [fixed] must be a table of option values")
    allowed = {o.field: o for o, _ in paper.options_for(algorithm)}
    # replay files that are not Config fields (SSCA's --init / --batches); the others' are options
    allowed_extra = {"data", "data_dir", "out"} | {flag for flag, _ in paper.replay_args}
    bad = sorted(set(doc) - set(allowed) - allowed_extra)
    if bad:
        raise ValueError(f"{path}: {bad} do not apply to {algorithm}; allowed keys: {sorted(set(allowed) | allowed_extra)}")
    vals = {}
    from dataclasses import fields as _fields
    from refimpl.tools.sweep import typed_value
    cls = paper.config_class()
    typed = {f.name for f in _fields(cls)}
    for k, v in doc.items():
        o = allowed.get(k)
        if isinstance(v, list) and o is not None and o.text:
            v = ",".join(str(x) for x in v)
        elif k in typed and not isinstance(v, list):
            try:
                v = typed_value(cls, k, v)
            except ValueError as exc:
                raise ValueError(f"{path}: {exc}")
        if k == "seed" and isinstance(v, int) and v < 0:
            raise ValueError(f"{path}: seed must be a whole number >= 0, got {v}")
        vals[k] = v
    return vals


def load_data(args):
    from refimpl.core.data import load_embedded_mnist, load_idx_dir, load_npz_dataset
    if args.data and args.data_dir:
        raise ValueError("give --data or --data-dir, not both")
    if getattr(args, "label_base", 0) and not args.data:
        raise ValueError("--label-base applies to --data FILE.npz only")
    if args.data:
        ds = load_npz_dataset(args.data, label_base=getattr(args, "label_base", 0))
        info(args, f"note: --data {args.data}: {ds.n_train} training and {len(ds.y_test)} test samples, "
                    f"{ds.n_features} features, {ds.n_classes} classes")
        return ds
    if args.data_dir:
        return load_idx_dir(args.data_dir)
    return load_embedded_mnist()


def floats(name, text):
    try:
        vals = [float(v) for v in str(text).split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"--{name} takes a number or a comma-separated list of numbers, got {text!r}")
    if not vals:
        raise ValueError(f"--{name} is empty")
    return vals


def config(args, family, algorithm, **fixed):
    """The family's Config from the parsed options (fields the algorithm does not take keep their
    defaults)."""
    from dataclasses import fields
    from refimpl import papers
    paper = papers.get(family)
    cls = paper.config_class()
    # the command line's own defaults hold for every algorithm of the paper, offered or not
    vals = paper.command_line_defaults()
    vals.update({f.name: getattr(args, f.name) for f in fields(cls) if getattr(args, f.name, None) is not None})
    vals.update(fixed)
    vals[paper.method_field] = algorithm
    return cls(**vals)


def ints(name, text):
    try:
        return [int(s) for s in str(text).split(",") if s.strip()]
    except ValueError:
        raise ValueError(f"--{name} takes a comma-separated list of integers, got {text!r}")


def dump_writer(args, cfg, out_dir=None):
    """The :class:`~refimpl.core.dumps.DumpWriter` of a run of ``cfg`` that dumps rounds into
    ``out_dir`` (default --out; a λ/U study's run: its own directory), kept on ``args`` for
    :func:`finish_run`; None without --dump-rounds or --out. The dumped rounds then go to disk as
    they finish."""
    out_dir = out_dir or getattr(args, "out", None)
    if not (getattr(args, "dump_rounds", None) and out_dir):
        return None
    writers = args.__dict__.setdefault("dump_writers_", {})
    if out_dir not in writers:
        from refimpl import papers
        from refimpl.core.dumps import DumpWriter
        from refimpl.core.replay import parse_dump_rounds
        rounds = parse_dump_rounds(cfg.dump_rounds, getattr(cfg, papers.of_algorithm(args.algorithm).length_field))
        writers[out_dir] = DumpWriter(out_dir, len(rounds), max_dump_gb(args) * 1e9, say=None if args.quiet else say)
    return writers[out_dir]


def max_dump_gb(args):
    """``--max-dump-gb`` (default 4), checked: a size in GB > 0."""
    limit = getattr(args, "max_dump_gb", None)
    limit = 4.0 if limit is None else limit
    if not (np.isfinite(limit) and limit > 0):
        raise ValueError(f"--max-dump-gb must be a size in GB > 0, got {limit}")
    return limit


def prepare_out(out, overwrite, holds=("trace.json", "trace.npz", "tradeoff.csv"), flag="--out"):
    """Check (and create) an output directory before any work is done: a run that cannot be
    saved, or would silently replace an earlier one, is refused up front."""
    from refimpl.tools.sweep import make_out_dir
    make_out_dir(out, flag=flag)
    found = [h for h in holds if os.path.exists(os.path.join(out, h))]
    if found and not overwrite:
        raise ValueError(f"{flag} {out} already holds a result ({', '.join(found)}); "
                         "pass --overwrite to replace it, or choose another directory")


#: what a run or a λ/U study writes into --out (--overwrite removes these, and only these)
RESULT_FILES = ("trace.json", "trace.npz", "trace.png", "dump.mat", "tradeoff.csv", "tradeoff.png")


def clear_stale_result(out, since):
    """After an --overwrite run has written its result: remove what is left of the previous
    result refimpl wrote into ``out`` and this run did not rewrite (modified before ``since``) —
    a run's files and a λ/U study's ``lam=*`` / ``U=*`` run directories — so that the directory
    holds only the new result. Until then the old result stays whole (a failed run replaces
    nothing); files refimpl did not write are left alone."""
    import shutil
    for name in os.listdir(out):
        path = os.path.join(out, name)
        if name in RESULT_FILES and os.path.isfile(path) and os.path.getmtime(path) < since:
            os.remove(path)
        elif name == "dump" and os.path.isdir(path):          # an earlier run's streamed rounds
            from refimpl.core.dumps import is_round_file
            for f in os.listdir(path):
                if is_round_file(f) and os.path.getmtime(os.path.join(path, f)) < since:
                    os.remove(os.path.join(path, f))
            if not os.listdir(path):
                os.rmdir(path)
        elif (name.startswith(("lam=", "U=")) and os.path.isdir(path)
              and os.path.exists(os.path.join(path, "trace.json"))
              and os.path.getmtime(os.path.join(path, "trace.json")) < since):
            shutil.rmtree(path)


def np_load(flag, path):
    """np.load of --init / --batches, or a one-line error naming the flag and the file."""
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise
    except (ValueError, OSError, EOFError) as exc:
        raise ValueError(f"--{flag} {path}: not a NumPy .npy/.npz file without pickled objects ({exc})")


def engine_options(p, workers_help="worker processes; default: the number of cores"):
    """--executor, --workers, --scheduler of the task engine (refimpl.tools.engine)."""
    p.add_argument("--executor", choices=["local", "dask"], default="local",
                   help="local process pool, or Dask (a LocalCluster, or --scheduler)")
    p.add_argument("--workers", type=int, default=None, help=workers_help)
    p.add_argument("--scheduler", default=None, help="Dask scheduler address (tcp://host:8786)")


class Parser(argparse.ArgumentParser):
    """No prefix matching of long options (``--ta`` is not ``--tau``): an abbreviation is an
    error, never a silent guess; the subcommands' parsers inherit the class."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


RUN_PARSERS = {}


def name_the_flag(message, args):
    """A ``refimpl run`` error that begins with a Config field's name (as the library's checks
    word them: ``lr (η0 …) must be …``), prefixed with the flag that sets that field; a message
    that already names a flag, or begins otherwise, is returned as it is."""
    import re
    parser = RUN_PARSERS.get(getattr(args, "algorithm", None)) if getattr(args, "command", None) == "run" else None
    m = re.match(r"([a-z][a-z0-9_]*)\b", message)
    if parser is None or m is None or re.search(r"(^|\s)--[a-z]", message):
        return message
    flags = {a.dest: a.option_strings[0] for a in parser._actions if a.option_strings}
    flag = flags.get(m.group(1))
    return f"{flag}: {message}" if flag else message


def finish_run(args, trace, out_dir, plot):
    """The tail every run shares: the trace (and per-round dumps held in memory) saved into
    ``out_dir`` with its figure (``plot(path)``, None when matplotlib is missing), where it went
    said; exit 3 when the run stopped before its end, 0 otherwise."""
    if out_dir:
        writer = getattr(args, "dump_writers_", {}).get(out_dir)
        if writer is not None:
            writer.record(trace)
        trace.save(out_dir)
        png = plot(os.path.join(out_dir, "trace.png"))
        info(args, f"trace written to {out_dir}" + ("" if png else " (no PNG: matplotlib not installed)"))
    if not run_finished(trace.status):
        say(f"refimpl: run stopped: {trace.status}")
        return 3
    if trace.config.get("dump_stopped"):
        say(f"refimpl: the dump stopped at {trace.config['dump_stopped']}; the run finished and its trace is whole")
        return 3
    return 0


def foreign_option(argv):
    """``refimpl run ALGORITHM --option`` where the option belongs to other algorithms: say whose it is."""
    from refimpl import papers
    if len(argv) < 2 or argv[0] != "run" or argv[1] not in papers.algorithms():
        return 0
    paper = papers.of_algorithm(argv[1])
    own = {o.name for o, _ in paper.options_for(argv[1])} | {"--" + d.replace("_", "-") for d, _ in COMMON}
    own |= {"--" + f.replace("_", "-") for f, _ in paper.replay_args} | {"--quiet", "--help", "--overwrite"}
    for tok in argv[2:]:
        name = tok.split("=", 1)[0]
        if name.startswith("--") and name not in own:
            who = papers.owners(name)
            if who:
                say(f"refimpl: error: {name} does not apply to {argv[1]}; it is an option of {', '.join(who)} "
                     f"(see refimpl run {argv[1]} --help)")
                return 2
    return 0
