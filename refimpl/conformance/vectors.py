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


def families(modules=None):
    """{name: Family}: the core's families, then each registered paper's (its description's
    ``vectors_module``), in that order; ``modules``: other module names to read instead (a family
    defined twice among them is refused)."""
    import importlib

    from refimpl import papers
    out = {}
    if modules is None:
        modules = (CORE_FAMILIES,) + tuple(p.vectors_module for p in papers.papers() if p.vectors_module)
    for mod in modules:
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
    return {fam: document(record) for fam, record in families().items() if record.paper in papers}


def document(record):
    """One family's document (its cases drawn from the generator seeded by its name)."""
    fam, ins, outs = record.name, record.inputs, record.outputs
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(fam.encode()).digest()[:8], "little"))
    cases = []
    for case in record.cases(rng):
        exp = record.evaluate(case["inputs"])
        cases.append({"id": case["id"], "equation": record.equation, "comment": case["comment"],
                      "flags": case["flags"], "inputs": {k: encode(case["inputs"][k]) for k in ins},
                      "expected": {k: encode(exp[k]) for k in outs}, "tol": case["tol"]})
    return {"schema_version": SCHEMA_VERSION, "family": fam, "paper": record.paper, "equation": record.equation,
            "function": fam, "inputs": list(ins), "outputs": list(outs), "description": record.description,
            "cases": cases}


def flag_problems(docs=None, records=None):
    """What is wrong with the cases' flags, as sentences (none: a case carries exactly the flags its
    family's witnesses hold on): a flag without a witness in its family, a witness that does not
    hold on a case carrying its flag, a witness that holds on a case without its flag (so a witness
    made looser, or a case that stops showing an edge, is a difference), and NaN or inf in a case
    none of whose flags is one of ``NON_FINITE_FLAGS``. ``docs``: generated
    documents (default: :func:`generate`), read back as an adapter reads them; ``records``: the
    families (default: :func:`families`)."""
    from refimpl.conformance.family import NON_FINITE_FLAGS
    docs = generate() if docs is None else docs
    records = families() if records is None else records
    out = []
    for fam, doc in docs.items():
        witnesses = records[fam].witnesses
        cases = [{"id": c["id"], "flags": c["flags"], "tol": c["tol"],
                  "inputs": {k: decode(v) for k, v in c["inputs"].items()},
                  "expected": {k: decode(v) for k, v in c["expected"].items()}} for c in doc["cases"]]
        for c in cases:
            values = [v for part in ("inputs", "expected") for v in c[part].values() if not isinstance(v, str)]
            if not set(c["flags"]) & set(NON_FINITE_FLAGS) and not all(np.all(np.isfinite(v)) for v in values):
                out.append(f"{c['id']}: NaN or inf, and none of its flags {c['flags']} allows it")
        for flag in sorted({f for c in cases for f in c["flags"]} | set(witnesses)):
            if flag not in witnesses:
                out.append(f"{fam}: flag {flag!r} has no witness")
                continue
            shown = {c["id"]: _witness(witnesses[flag], c) for c in cases}
            out += [f"{c['id']}: flag {flag!r} is not shown ({shown[c['id']]})" for c in cases
                    if flag in c["flags"] and shown[c["id"]] is not True]
            out += [f"{c['id']}: the witness of {flag!r} holds, but the case does not carry the flag" for c in cases
                    if flag not in c["flags"] and shown[c["id"]] is True]
    return out


#: the pinned digests of the published cases (:func:`case_digests`), one per family of refimpl's
#: own papers (a paper registered from outside pins its own, if it wants to)
DIGESTS_FILE = pathlib.Path(__file__).with_name("digests.json")
PINNED_PAPERS = ("core", "ssca", "vfl", "mfcgd")


def case_digests(docs=None):
    """{family: SHA-256} of what a family publishes besides its expected values: its words (the
    equation, function, input and output names and description) and each case's id, equation,
    comment, flags, tolerance and inputs, floats written with 12 significant digits (so a last-bit
    difference of another machine's libm or BLAS does not count, and a changed generator or a
    changed word does). The expected values are left out: ``tools.conformance`` checks them
    against an independent transcription."""
    docs = generate() if docs is None else docs

    def canon(v):
        if isinstance(v, dict):
            return {k: canon(x) for k, x in v.items()}
        if isinstance(v, list):
            return [canon(x) for x in v]
        return f"{v:.12g}" if isinstance(v, float) else v
    out = {}
    for fam, doc in docs.items():
        words = {k: doc.get(k) for k in ("equation", "function", "inputs", "outputs", "description")}
        cases = [{"id": c["id"], "equation": c.get("equation"), "comment": c.get("comment"), "flags": c["flags"],
                  "tol": c["tol"], "inputs": canon(c["inputs"])} for c in doc["cases"]]
        out[fam] = hashlib.sha256(json.dumps({"words": words, "cases": cases}, sort_keys=True).encode()).hexdigest()
    return out


def digest_problems(docs=None, pinned=None):
    """Sentences naming each family whose cases differ from the pinned ones (none: the generator
    still publishes the same cases). A deliberate change of the cases updates ``digests.json``
    (``refimpl vectors digests --update``) in the same commit, where a reviewer sees it."""
    docs = generate() if docs is None else docs
    got = case_digests({f: d for f, d in docs.items() if d["paper"] in PINNED_PAPERS})
    pinned = json.loads(DIGESTS_FILE.read_text()) if pinned is None else pinned
    out = [f"{fam}: what it publishes (its words; its cases' ids, comments, flags, tolerances, inputs) differs from "
           f"the pinned (digest {got[fam][:12]}…, pinned {pinned[fam][:12]}…)"
           for fam in got if fam in pinned and pinned[fam] != got[fam]]
    out += [f"{fam}: no pinned digest" for fam in got if fam not in pinned]
    out += [f"{fam}: pinned, but no such family" for fam in pinned if fam not in got]
    return out


def _witness(fn, case):
    """True, False, or the error the witness raised (a witness that cannot be evaluated shows nothing)."""
    try:
        return bool(fn(case))
    except Exception as err:            # noqa: BLE001 - reported as the witness's answer
        return f"{type(err).__name__}: {err}"


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


def vector_files(manifest):
    """The vector files a manifest lists: not the schemas, not the metadata beside an array file."""
    return [f for f in manifest["files"] if not f.endswith((".schema.json", ".meta.json"))]


def export(directory, papers=None, fmt="json", overwrite=False):
    """Write ``<family>.json`` (or ``.npz`` / ``.mat``: one array per case quantity, the case
    metadata in ``<family>.meta.json``), ``<family>.schema.json`` and ``manifest.json``
    (SHA-256 of every file). Returns the manifest. A directory that is not empty is refused
    unless ``overwrite``."""
    if fmt not in ("json", "npz", "mat"):
        raise ValueError(f"--format must be json, npz or mat, got {fmt!r}")
    if os.path.exists(directory) and os.listdir(directory) and not overwrite:
        raise ValueError(f"{directory} is not empty; give --overwrite to replace its vectors")
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
