"""The registry of papers: the one list every tool asks (:class:`refimpl.core.paper.Paper`).

``PAPERS`` holds the built-in descriptions (SSCA, Flex-VFL, MFCGD, in that order); a paper written
elsewhere is added with :func:`register` (or the ``REFIMPL_PAPERS`` environment variable: comma-
separated ``module`` or ``module:ATTRIBUTE`` names, read by every process, so worker processes of
a sweep or a mutation run see it too). Lookups:

- :func:`get` — by key (``"ssca"``); :func:`keys`;
- :func:`of_algorithm` — the paper that owns ``refimpl run ALGORITHM``;
- :func:`of_record` — the paper of a trace's recorded configuration;
- :func:`of_dump` — the paper of a set of dump quantity names;
- :func:`warm_kernels` — every Numba kernel compiled (or loaded from the on-disk cache) once.
"""
from __future__ import annotations

import importlib
import os

_BUILTIN = ("refimpl.ssca.paper", "refimpl.vfl.paper", "refimpl.mfcgd.paper")
_PAPERS = []
_LOADED_ENV = None


def _load(name):
    mod, _, attr = name.partition(":")
    obj = getattr(importlib.import_module(mod), attr or "PAPER")
    if not getattr(obj, "key", ""):
        raise ValueError(f"{name}: not a paper description (a refimpl.core.paper.Paper with a key)")
    return obj


def _ensure():
    global _LOADED_ENV
    if not _PAPERS:
        _PAPERS.extend(_load(n) for n in _BUILTIN)
    env = os.environ.get("REFIMPL_PAPERS", "")
    if env != _LOADED_ENV:
        _LOADED_ENV = env
        for name in (n.strip() for n in env.split(",")):
            if name:
                register(_load(name))
    return _PAPERS


def register(paper):
    """Add a paper description (its key and algorithm names must be new; registering the same
    object again does nothing). Returns it."""
    papers = _ensure()
    if any(p is paper for p in papers):
        return paper
    if any(p.key == paper.key for p in papers):
        raise ValueError(f"a paper with key {paper.key!r} is already registered")
    taken = sorted(set(paper.algorithms) & {a for p in papers for a in p.algorithms})
    if taken:
        raise ValueError(f"paper {paper.key!r}: algorithms {taken} belong to another paper")
    papers.append(paper)
    return paper


def forget():
    """Drop the loaded descriptions (built-in and ``REFIMPL_PAPERS``): the next call reads them
    anew. The mutation runner's zygote calls it after importing the checks, so that each child
    builds the descriptions from the modules it runs, mutated or not."""
    global _LOADED_ENV
    _PAPERS[:] = []
    _LOADED_ENV = None


def unregister(key):
    """Remove a registered paper (tests)."""
    _ensure()
    _PAPERS[:] = [p for p in _PAPERS if p.key != key]


def papers():
    """The registered papers, built-in first."""
    return tuple(_ensure())


def keys():
    return tuple(p.key for p in papers())


def get(key):
    for p in papers():
        if p.key == key:
            return p
    raise ValueError(f"unknown paper {key!r}; allowed: {', '.join(keys())}")


def algorithms():
    """Every algorithm of `refimpl run`, paper by paper."""
    return tuple(a for p in papers() for a in p.algorithms)


def of_algorithm(algorithm):
    for p in papers():
        if algorithm in p.algorithms:
            return p
    raise ValueError(f"unknown algorithm {algorithm!r}; allowed: {', '.join(algorithms())}")


def of_reproduction(name):
    """The paper that owns ``refimpl reproduce NAME``."""
    for p in papers():
        if name in p.reproductions:
            return p
    raise ValueError(f"unknown reproduction {name!r}; one of {tuple(n for p in papers() for n in p.reproductions)}")


def of_record(doc):
    """The paper of a trace's configuration (by the algorithm it records)."""
    for p in papers():
        if p.owns_record(doc):
            return p
    raise ValueError("trace.json's configuration is of no refimpl paper (no known algorithm or method: "
                     f"{', '.join(algorithms())})")


def of_dump(names):
    """The paper whose dump a set of quantity names is."""
    names = set(names)
    for p in papers():
        if p.owns_dump(names):
            return p
    raise ValueError(f"cannot tell whose dump this is from its quantities {sorted(names)} "
                     "(expected refimpl's names: docs/guide.md)")


def options_for(algorithm):
    """The options ``refimpl run ALGORITHM`` takes, with their resolved defaults."""
    return of_algorithm(algorithm).options_for(algorithm)


def owners(option_name):
    """The algorithms that take ``--option-name`` (for the message when another one is given)."""
    return [a for p in papers() for a in p.algorithms if any(o.name == option_name for o, _ in p.options_for(a))]


def kernel_modules():
    """The modules holding Numba kernels: the core's, then each registered paper's that names one
    (``Paper.kernels_module``)."""
    return ["refimpl.core.kernels"] + [p.kernels_module for p in papers() if p.kernels_module]


def warm_kernels(modules=None):
    """Compile every Numba kernel of ``modules`` (default: :func:`kernel_modules`) at the one
    signature refimpl calls it with, or load it from Numba's on-disk cache when it is there (each
    module's ``warm()``): a run then compiles nothing. Returns the dispatchers.
    (:func:`refimpl.tools.engine.ensure_kernel_cache` runs it over two processes.)"""
    out = []
    for name in kernel_modules() if modules is None else modules:
        out.extend(importlib.import_module(name).warm())
    return out
