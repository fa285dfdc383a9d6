"""Conformance vectors: one file of cases per equation family, generated deterministically from
refimpl's NumPy twins, that any implementation in any language can load into its own tests.

Each family (:func:`families`, one :class:`~refimpl.conformance.family.Family` record each, kept
per paper in :mod:`refimpl.conformance.families`) names the function an adapter provides (its inputs
and outputs in order), the paper's equation, and a list of cases ``{id, equation, comment, flags, inputs,
expected, tol}``; a flag names the edge or the known mistake the case probes. Arrays are written
as ``{"shape": [...], "data": [row-major values]}`` (exact: Python's float repr round-trips),
scalars as numbers, names as strings; ``tol`` is ``{"rel": r}`` (max |Δ| ≤ r · max(|expected|, tiny))
or ``{"ulps": n}``. ``export`` writes the files, a JSON Schema per file and a manifest of SHA-256
checksums; ``load`` refuses a directory whose files do not match it. docs/conformance.md is the
walk-through.
"""
from __future__ import annotations

import hashlib
import json
import os
import pathlib

import numpy as np

SCHEMA_VERSION = 1
CORE_FAMILIES = "refimpl.conformance.families.core"


def families():
    """{name: Family}: the core's families, then each registered paper's (its description's
    ``vectors_module``), in that order."""
    import importlib

    from refimpl import papers
    out = {}
    for mod in (CORE_FAMILIES,) + tuple(p.vectors_module for p in papers.papers() if p.vectors_module):
        for fam in importlib.import_module(mod).FAMILIES:
            if fam.name in out:
                raise ValueError(f"{mod}: conformance family {fam.name!r} is defined twice")
            out[fam.name] = fam
    return out


def paper_names():
    """``core`` and every registered paper's key: what a family's ``paper`` and ``--paper`` may be."""
    from refimpl import papers
    return ("core",) + papers.keys()


def __getattr__(name):          # FAMILIES and PAPERS, computed from the registry when asked
    if name == "FAMILIES":
        return families()
    if name == "PAPERS":
        return paper_names()
    raise AttributeError(name)


def reference(family, inputs):
    """refimpl's NumPy twin of a family on decoded inputs: the outputs as a dict."""
    return families()[family].evaluate(inputs)


# ----------------------------------------------------------------------------- encoding

def encode(v):
    if isinstance(v, (str, bool)):
        return v
    a = np.asarray(v)
    if a.ndim == 0 and a.dtype.kind in "fiu":
        return float(a) if a.dtype.kind == "f" else int(a)
    return {"shape": list(a.shape), "data": [float(x) if a.dtype.kind == "f" else int(x) for x in a.ravel()]}


def decode(v):
    if isinstance(v, dict) and "shape" in v:
        return np.asarray(v["data"], dtype=np.float64 if any(isinstance(x, float) for x in v["data"]) or not v["data"]
                          else np.int64).reshape(v["shape"])
    return v


# ----------------------------------------------------------------------------- the cases


def generate(papers=None):
    """{family: document} for the families of ``papers`` (default: all); each case's expected values
    from refimpl's NumPy twins. Deterministic: the same bits on every call (the seed is the family's
    name)."""
    papers = paper_names() if papers is None else papers
    docs = {}
    for fam, record in families().items():
        paper, eq, ins, outs, what = record.paper, record.equation, record.inputs, record.outputs, record.description
        if paper not in papers:
            continue
        rng = np.random.default_rng(int.from_bytes(hashlib.sha256(fam.encode()).digest()[:8], "little"))
        cases = []
        for case in record.cases(rng):
            exp = record.evaluate(case["inputs"])
            cases.append({"id": case["id"], "equation": eq, "comment": case["comment"], "flags": case["flags"],
                          "inputs": {k: encode(case["inputs"][k]) for k in ins},
                          "expected": {k: encode(exp[k]) for k in outs}, "tol": case["tol"]})
        docs[fam] = {"schema_version": SCHEMA_VERSION, "family": fam, "paper": paper, "equation": eq,
                     "function": fam, "inputs": list(ins), "outputs": list(outs), "description": what, "cases": cases}
    return docs


def schema(doc):
    """A JSON Schema (draft 2020-12) for one family's file."""
    array = {"type": "object", "required": ["shape", "data"], "additionalProperties": False,
             "properties": {"shape": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                            "data": {"type": "array", "items": {"type": "number"}}}}
    value = {"anyOf": [{"type": "number"}, {"type": "string"}, {"type": "boolean"}, array]}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": f"refimpl conformance vectors: {doc['family']} ({doc['equation']})",
            "type": "object", "required": ["schema_version", "family", "paper", "equation", "inputs", "outputs", "cases"],
            "properties": {
                "schema_version": {"const": SCHEMA_VERSION}, "family": {"const": doc["family"]},
                "paper": {"enum": list(paper_names())}, "equation": {"type": "string"}, "function": {"type": "string"},
                "inputs": {"type": "array", "items": {"type": "string"}},
                "outputs": {"type": "array", "items": {"type": "string"}}, "description": {"type": "string"},
                "cases": {"type": "array", "minItems": 1, "items": {
                    "type": "object", "required": ["id", "equation", "comment", "flags", "inputs", "expected", "tol"],
                    "properties": {
                        "id": {"type": "string"}, "equation": {"type": "string"}, "comment": {"type": "string"},
                        "flags": {"type": "array", "items": {"type": "string"}},
                        "inputs": {"type": "object", "required": doc["inputs"], "additionalProperties": value},
                        "expected": {"type": "object", "required": doc["outputs"], "additionalProperties": value},
                        "tol": {"type": "object", "minProperties": 1, "additionalProperties": False,
                                "properties": {"rel": {"type": "number", "minimum": 0},
                                               "ulps": {"type": "integer", "minimum": 0}}}}}}}}


def _dump(obj):
    return (json.dumps(obj, indent=1, sort_keys=False) + "\n").encode()


def export(directory, papers=None, fmt="json"):
    """Write ``<family>.json`` (or ``.npz`` / ``.mat``: one array per case quantity, the case
    metadata in ``<family>.meta.json``), ``<family>.schema.json`` and ``manifest.json``
    (SHA-256 of every file). Returns the manifest."""
    if fmt not in ("json", "npz", "mat"):
        raise ValueError(f"--format must be json, npz or mat, got {fmt!r}")
    os.makedirs(directory, exist_ok=True)
    files = {}

    def put(name, data):
        path = os.path.join(directory, name)
        with open(path, "wb") as fh:
            fh.write(data)
        files[name] = hashlib.sha256(data).hexdigest()

    for fam, doc in generate(papers).items():
        put(f"{fam}.schema.json", _dump(schema(doc)))
        if fmt == "json":
            put(f"{fam}.json", _dump(doc))
            continue
        arrays, meta = {}, dict(doc)
        meta["cases"] = []
        for j, case in enumerate(doc["cases"]):
            m = {k: case[k] for k in ("id", "equation", "comment", "flags", "tol")}
            m["arrays"] = {}
            for part in ("inputs", "expected"):
                for k, v in case[part].items():
                    if isinstance(v, str):
                        m.setdefault(part, {})[k] = v
                        continue
                    key = f"c{j}_{'in' if part == 'inputs' else 'out'}_{k}"
                    arrays[key] = decode(v) if isinstance(v, dict) else np.asarray(v)
                    m["arrays"][f"{part}.{k}"] = key
            meta["cases"].append(m)
        import io
        buf = io.BytesIO()
        if fmt == "npz":
            np.savez(buf, **arrays)
        else:
            from scipy.io import savemat
            savemat(buf, arrays)
        put(f"{fam}.{fmt}", buf.getvalue())
        put(f"{fam}.meta.json", _dump(meta))
    manifest = {"schema_version": SCHEMA_VERSION, "generator": "refimpl vectors export", "format": fmt,
                "files": files}
    with open(os.path.join(directory, "manifest.json"), "wb") as fh:
        fh.write(_dump(manifest))
    # an earlier export's files that this manifest does not list (another --paper or --format) go,
    # so that the directory holds exactly what the manifest names
    for name in stale_files(directory, files):
        os.remove(os.path.join(directory, name))
    return manifest


#: the kinds of file an export writes (only these are ever removed as stale)
EXPORT_SUFFIXES = (".json", ".npz", ".mat")


def stale_files(directory, listed):
    """Files of ``directory`` of the kinds an export writes that the manifest (``listed``) does not list."""
    return sorted(n for n in os.listdir(directory) if n.endswith(EXPORT_SUFFIXES) and n != "manifest.json"
                  and n not in listed and os.path.isfile(os.path.join(directory, n)))


def load(directory):
    """{family: document} from an exported JSON directory, after checking every file against the
    manifest (a missing or changed file is refused, naming it)."""
    mpath = os.path.join(directory, "manifest.json")
    if not os.path.isfile(mpath):
        raise ValueError(f"{directory}: no manifest.json (write the vectors with refimpl vectors export)")
    try:
        with open(mpath) as fh:
            manifest = json.load(fh)
        if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
            raise ValueError("expected an object with a 'files' table of name → SHA-256")
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{mpath}: a damaged manifest ({exc}); export the vectors again with refimpl vectors export")
    if manifest.get("format", "json") != "json":
        raise ValueError(f"{directory}: the harness reads the json format; this directory holds {manifest['format']}")
    extra = stale_files(directory, manifest["files"])
    if extra:
        raise ValueError(f"{directory}: {', '.join(extra[:5])}{' …' if len(extra) > 5 else ''} not listed in "
                         "manifest.json (vectors of another export, or added by hand); export again into an empty "
                         "directory or with --overwrite")
    for name, digest in manifest["files"].items():
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            raise ValueError(f"{path}: listed in the manifest but missing")
        if hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest() != digest:
            raise ValueError(f"{path}: its SHA-256 does not match the manifest (edited or damaged; vectors are "
                             "generated, never hand-edited)")
    return {n[:-len(".json")]: json.loads(pathlib.Path(directory, n).read_text()) for n in manifest["files"]
            if n.endswith(".json") and not n.endswith((".schema.json", ".meta.json"))}
