"""A suite's ``manifest.json``: written (sorted keys, no timestamps, so
reproducible) and read back by ``generate.py``, and summarized as a table of
the generated suites (``generate.py --summary``).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from xla_gym_datasets.build import suite_name

from xla_service.catalog.schema import OP_COUNT_RULE

__all__ = ["MANIFEST", "load_manifest", "write_manifest", "summarize"]

MANIFEST = "manifest.json"


def load_manifest(path: Path) -> dict[str, Any] | None:
    if path.exists():
        with open(path) as f:
            return json.load(f)
    return None


def write_manifest(path: Path, family: str, entries: list[dict], failures: list[dict]) -> None:
    from xla_gym_datasets import splits

    counts = {s: 0 for s in splits.SPLITS}
    for e in entries:
        counts[e["split"]] += 1
    if family in splits.HELD_OUT_FAMILIES:
        split_rule: dict[str, Any] = {"axis": "family", "heldout": "every configuration"}
    else:
        axis, validation, test = splits.RULES[family]
        split_rule = {"axis": axis, "validation": list(validation), "test": list(test)}
    manifest = {
        "suite": suite_name(family),
        "family": family,
        "generator": "datasets/generate.py",
        "op_count_rule": OP_COUNT_RULE,
        "split_rule": {**split_rule, "doc": "datasets/splits.py"},
        "counts": counts,
        "benchmarks": sorted(entries, key=lambda e: e["name"]),
        "failures": sorted(failures, key=lambda e: e["name"]),
    }
    tmp = path.with_suffix(".json.tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def summarize(out: Path, families: list[str]) -> None:
    """Print a table of the generated suites from their manifests."""
    print(
        "suite            graphs  train  valid   test  h.out  failed  ops min/median/max   "
        "default ops median  size on disk"
    )
    total_graphs = total_bytes = 0
    for family in families:
        suite = out / suite_name(family)
        manifest = load_manifest(suite / MANIFEST)
        if manifest is None:
            print(f"{suite_name(family):<16} (not generated)")
            continue
        b = manifest["benchmarks"]
        ops = sorted(e["initial_op_count"] for e in b) or [0]
        dops = sorted(e["default_op_count"] for e in b) or [0]
        size = sum(p.stat().st_size for p in suite.iterdir() if p.is_file())
        c = manifest["counts"]
        print(
            f"{suite_name(family):<16} {len(b):>6} {c['train']:>6} {c['validation']:>6} {c['test']:>6} {c.get('heldout', 0):>6}"
            f" {len(manifest['failures']):>7}  {ops[0]:>5}/{ops[len(ops) // 2]:>5}/{ops[-1]:>5}"
            f"   {dops[len(dops) // 2]:>17}  {size / 1e6:>8.2f} MB"
        )
        total_graphs += len(b)
        total_bytes += size
    print(f"{'total':<16} {total_graphs:>6}{'':>65}{total_bytes / 1e6:>8.2f} MB")

