"""Build the datasets lowered from public JAX libraries.

``python -m xla_gym_datasets.realworld [--libraries flax,haiku] [--match REGEX] [--out DIR]``

Needs the optional extra ``realworld`` (``pip install -e .[realworld]``,
pinned in ``requirements-realworld.txt``). For each module of each library
file: lower with ``jax.jit(fn).lower(*args)`` (parameters as arguments),
normalize exactly as ``build.py`` does, count, run XLA's default pipeline,
execute twice on the example arguments when the module is small enough
(``--verify-max-ops``), and write ``xla-<library>-v0/<name>.hlo.gz`` and the
dataset's ``manifest.json`` (sorted keys, no timestamps: a rebuild with the
same versions is byte for byte identical).
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.metadata
import json
import os
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["LIBRARIES", "build_one", "build_library", "summary", "main"]

#: library file (module of this package) per dataset, in build order.
LIBRARIES = ("flax_models", "haiku_models", "equinox_models", "optax_models", "keras_models",
             "diffrax_models", "jaxmd_models", "gymnax_models", "pgx_models")

#: Modules larger than this are never written (issue 61: every file under 1 MB).
MAX_GZ_BYTES = 1_000_000
#: Constants larger than this many elements mean a parameter was baked in.
MAX_CONSTANT_ELEMENTS = 65_536


def _library(module: str):
    return importlib.import_module(f"xla_gym_datasets.realworld.{module}")


def build_one(info, spec, out: Path, verify_max_ops: int) -> dict[str, Any]:
    """Lower, normalize, check and write one module; returns its manifest entry."""
    import jax
    import jaxlib
    from xla_gym_datasets import engine
    from xla_gym_datasets.build import _verify, benchmark_uri, gzip_bytes, suite_name
    from xla_gym_datasets.realworld.spec import argument_summary, lower, max_constant_elements

    from xla_service.catalog.schema import OP_COUNT_RULE

    jax.clear_caches()  # no state shared between modules (jax-md's neighbor lists trip on it)
    raw, args = lower(spec)
    text = engine.normalize(raw)
    biggest = max_constant_elements(text)
    if biggest > MAX_CONSTANT_ELEMENTS:
        raise ValueError(f"a constant of {biggest} elements: expected parameters as arguments")
    initial = engine.op_count(text)
    verification = None
    if initial <= verify_max_ops and spec.execute:
        exe, default_text = engine.compile_with_default(text)
        verification = _verify(text, args, exe)
    else:
        default_text = engine.default_pipeline(text)
    data = gzip_bytes(text)
    if len(data) > MAX_GZ_BYTES:
        raise ValueError(f"{len(data)} bytes compressed: expected at most {MAX_GZ_BYTES}")
    folder = out / suite_name(info.name)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{spec.name}.hlo.gz.tmp"
    tmp.write_bytes(data)
    os.replace(tmp, folder / f"{spec.name}.hlo.gz")
    return {
        "name": spec.name,
        "uri": benchmark_uri(info.name, spec.name),
        "file": f"{spec.name}.hlo.gz",
        "family": info.name,
        "model": spec.model,
        "mode": spec.mode,
        "config": spec.config,
        "split": info.split(spec.model),
        "provenance": {
            "library": info.name,
            "distributions": {d: importlib.metadata.version(d) for d in info.distributions},
            "function": spec.function,
            "license": info.license,
            "homepage": info.homepage,
            "lowered_with": "jax.jit(fn).lower(*args).compiler_ir('hlo')",
        },
        "arguments": argument_summary(args),
        "jax_version": jax.__version__,
        "jaxlib_version": jaxlib.__version__,
        "op_count_rule": OP_COUNT_RULE,
        "raw_op_count": engine.op_count(raw),
        "initial_op_count": initial,
        "default_op_count": engine.op_count(default_text),
        "max_constant_elements": biggest,
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "text_bytes": len(text.encode("utf-8")),
        "gz_bytes": len(data),
        "verification": verification,
    }


def build_library(module: str, out: Path, match: str, verify_max_ops: int, keep: bool) -> tuple[int, int]:
    """Build every module of one library file; writes its manifest. (built, failed).

    XLA aborts the process on a few modules (a failed CHECK in its CPU
    compiler): the module being built is named in ``.building`` in the
    dataset's folder, so that a rerun with ``keep`` records it as a failure
    and goes on (``make``-style: rerun until it exits)."""
    from xla_gym_datasets.build import suite_name

    lib = _library(module)
    info = lib.INFO
    folder = out / suite_name(info.name)
    manifest_path = folder / "manifest.json"
    old: dict[str, Any] = {}
    if keep and manifest_path.exists():
        old = {e["name"]: e for e in json.loads(manifest_path.read_text())["benchmarks"]}
    entries, failures = dict(old), {}
    if keep and manifest_path.exists():
        failures = {f["name"]: f for f in json.loads(manifest_path.read_text())["failures"]}
    building = folder / ".building"
    if keep and building.exists():
        crashed = building.read_text().strip()
        failures[crashed] = {"name": crashed, "error": "XLA aborted the process (a failed CHECK) building it"}
    specs = lib.specs()
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"{module}: duplicate module names")
    for i, spec in enumerate(specs, 1):
        aborted = spec.name in failures and failures[spec.name]["error"].startswith("XLA aborted")
        if not re.search(match, spec.name) or (keep and (spec.name in old or aborted)):
            continue
        t0 = time.time()
        folder.mkdir(parents=True, exist_ok=True)
        building.write_text(spec.name)
        failures.pop(spec.name, None)
        try:
            entries[spec.name] = build_one(info, spec, out, verify_max_ops)
            note = f"{entries[spec.name]['initial_op_count']} ops"
        except Exception as e:  # recorded in the manifest, the build goes on
            failures[spec.name] = {"name": spec.name, "error": f"{type(e).__name__}: {e}"[:1000]}
            note = "FAILED " + failures[spec.name]["error"][:200]
        # after every module, so that a stopped build keeps what it made
        _write_manifest(info, manifest_path, list(entries.values()), list(failures.values()))
        print(f"[{info.name} {i}/{len(specs)}] {spec.name}: {note} ({time.time() - t0:.1f}s)", flush=True)
    _write_manifest(info, manifest_path, list(entries.values()), list(failures.values()))
    building.unlink(missing_ok=True)
    return len(entries), len(failures)


def _write_manifest(info, path: Path, entries: list[dict], failures: list[dict]) -> None:
    from xla_gym_datasets.build import suite_name

    from xla_service.catalog.schema import OP_COUNT_RULE

    counts = {s: 0 for s in ("train", "validation", "test", "heldout")}
    for e in entries:
        counts[e["split"]] += 1
    manifest = {
        "suite": suite_name(info.name),
        "family": info.name,
        "collection": "realworld",
        "description": info.description,
        "license": info.license,
        "generator": "python -m xla_gym_datasets.realworld",
        "op_count_rule": OP_COUNT_RULE,
        "split_rule": {"axis": "model", "validation": list(info.validation), "test": list(info.test),
                       "doc": "datasets/realworld/spec.py (LibraryInfo.split)"},
        "counts": counts,
        "benchmarks": sorted(entries, key=lambda e: e["name"]),
        "failures": sorted(failures, key=lambda e: e["name"]),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def summary(out: Path) -> str:
    """A Markdown table of the realworld datasets under ``out``, from their manifests."""
    rows = ["| dataset | library (version) | modules | train / validation / test | ops min / median / max "
            "| modules > 20,000 ops | `while` / `conditional` / `scatter` / `sort` modules | license |",
            "|---|---|---|---|---|---|---|---|"]
    total = 0
    for path in sorted(out.glob("xla-*-v0/manifest.json")):
        m = json.loads(path.read_text())
        if m.get("collection") != "realworld" or not m["benchmarks"]:
            continue
        b = m["benchmarks"]
        ops = sorted(e["initial_op_count"] for e in b)
        dists = b[0]["provenance"]["distributions"]
        lib = next(iter(dists))
        c = m["counts"]
        import gzip

        has = {k: 0 for k in ("while", "conditional", "scatter", "sort")}
        for e in b:
            text = gzip.decompress((path.parent / e["file"]).read_bytes()).decode()
            for k in has:
                has[k] += f" {k}(" in text
        rows.append(
            f"| `{m['suite']}` | {lib} {dists[lib]} | {len(b)} | {c['train']} / {c['validation']} / {c['test']} "
            f"| {ops[0]:,} / {ops[len(ops) // 2]:,} / {ops[-1]:,} | {sum(o > 20000 for o in ops)} "
            f"| {has['while']} / {has['conditional']} / {has['scatter']} / {has['sort']} | {m['license']} |"
        )
        total += len(b)
    rows.append(f"\n{total} modules.")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--libraries", default="", help="comma-separated library files, e.g. flax_models (default: all)")
    parser.add_argument("--match", default="", help="only modules whose name matches this regex")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent.parent), help="folder of the suites")
    parser.add_argument("--verify-max-ops", type=int, default=6000, help="execute modules of at most this many ops")
    parser.add_argument("--keep", action="store_true", help="keep modules already in the manifest")
    parser.add_argument("--summary", action="store_true", help="print the README table of the built datasets and exit")
    args = parser.parse_args(argv)
    if args.summary:
        print(summary(Path(args.out)))
        return 0
    os.environ.setdefault("KERAS_BACKEND", "jax")
    modules = [m for m in args.libraries.split(",") if m] or list(LIBRARIES)
    unknown = sorted(set(modules) - set(LIBRARIES))
    if unknown:
        parser.error(f"unknown library files {unknown}: expected some of {list(LIBRARIES)}")
    failed = 0
    for module in modules:
        built, bad = build_library(module, Path(args.out), args.match, args.verify_max_ops, args.keep)
        print(f"{module}: {built} modules, {bad} failures", flush=True)
        failed += bad
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
