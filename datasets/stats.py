"""What each dataset holds: modules, op counts, opcodes covered, control flow.

``python -m xla_gym_datasets.stats [--generator N] [--json FILE] [--figure FILE]``

One row per bundled suite (the model families and the real-program datasets)
and one for ``N`` programs of the generator: modules; the op count as loaded
(the manifests' ``initial_op_count``), median and range, and how many exceed
20,000; XLA's default pipeline against it (geomean of default / initial ops);
the distinct opcodes, and those no model family has; the share of modules with
a ``while``, a ``conditional``, a ``scatter``, a ``gather``, a ``sort``.
Opcodes are read from the stored HLO text (every computation's instructions),
so nothing here needs XLA; the generator row does (it lowers with JAX).
"""
from __future__ import annotations

import argparse
import gzip
import json
import math
import re
import statistics
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from xla_gym_datasets.manifest import MANIFEST, load_manifest

__all__ = ["Row", "main", "opcodes_of", "rows"]

HERE = Path(__file__).parent
#: The opcodes whose presence in a module the table counts.
CONTROL = ("while", "conditional", "scatter", "gather", "sort")
LARGE = 20_000
# `%name = TYPE opcode(`: the first lower-case word after `=` that opens a parenthesis
# (a tuple type opens its own parenthesis without a word before it).
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*[^=]*?\s([a-z][a-z0-9\-]*)\(", re.MULTILINE)


def opcodes_of(text: str) -> set[str]:
    """The opcodes of every instruction of an HLO module's text."""
    return set(_INSTRUCTION.findall(text))


@dataclass
class Row:
    dataset: str
    collection: str
    modules: int
    ops_median: float
    ops_min: int
    ops_max: int
    large: int
    #: Geomean of XLA's default pipeline's op count over the initial one (None: not in the manifests).
    default_ratio: float | None
    opcodes: list[str]
    control: dict[str, float] = field(default_factory=dict)


def _row(dataset: str, collection: str, ops: list[int], defaults: list[float], texts: Iterable[str]) -> Row:
    seen: set[str] = set()
    has = dict.fromkeys(CONTROL, 0)
    n = 0
    for text in texts:
        found = opcodes_of(text)
        seen |= found
        n += 1
        for op in CONTROL:
            has[op] += op in found
    ratio = math.exp(statistics.fmean(math.log(d) for d in defaults)) if defaults else None
    return Row(dataset, collection, n, statistics.median(ops), min(ops), max(ops), sum(o > LARGE for o in ops),
               ratio, sorted(seen), {op: has[op] / n for op in CONTROL})


def suite_rows(folder: Path = HERE) -> list[Row]:
    """A row for every suite folder with a manifest below ``folder``."""
    table = []
    for manifest_path in sorted(folder.glob(f"xla-*-v0/{MANIFEST}")):
        manifest = load_manifest(manifest_path)
        if not manifest or not manifest.get("benchmarks"):
            continue
        entries = manifest["benchmarks"]
        ops = [int(e["initial_op_count"]) for e in entries]
        defaults = [e["default_op_count"] / e["initial_op_count"] for e in entries
                    if e.get("default_op_count") and e.get("initial_op_count")]
        texts = (gzip.decompress((manifest_path.parent / e["file"]).read_bytes()).decode() for e in entries)
        table.append(_row(manifest["suite"], manifest.get("collection", "families"), ops, defaults, texts))
    return table


def generator_row(n: int) -> Row:
    """``n`` programs of the generator, seeds 0..n-1 (lowered with JAX, or read from its disk cache)."""
    from xla_gym_datasets.generator import DATASET, generate

    made = [generate(seed) for seed in range(n)]
    ops = [int(m.metadata["op_count"]) for m in made]
    return _row(f"{DATASET} (seeds 0-{n - 1})", "generator", ops, [], (m.text for m in made))


def rows(generator: int = 0, folder: Path = HERE) -> list[Row]:
    table = suite_rows(folder)
    return table + [generator_row(generator)] if generator > 0 else table


def markdown(table: list[Row]) -> str:
    families = set().union(*(r.opcodes for r in table if r.collection == "families"))
    lines = [
        "| dataset | modules | ops as loaded: median [min, max] | > 20k | XLA default / initial | opcodes "
        "(not in the model families) | " + " | ".join(CONTROL) + " |",
        "|---|---|---|---|---|---|" + "---|" * len(CONTROL),
    ]
    for r in table:
        new = len(set(r.opcodes) - families)
        ratio = "-" if r.default_ratio is None else f"{r.default_ratio:.3f}"
        control = " | ".join(f"{r.control[op]:.0%}" for op in CONTROL)
        lines.append(f"| {r.dataset} | {r.modules} | {r.ops_median:g} [{r.ops_min}, {r.ops_max}] | {r.large} | "
                     f"{ratio} | {len(r.opcodes)} ({new}) | {control} |")
    return "\n".join(lines)


def figure(table: list[Row], path: Path, folder: Path = HERE) -> None:
    """Op counts as loaded, one strip per suite, log scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    suites = [r for r in table if r.collection != "generator"]
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(suites) + 1.2))
    for i, r in enumerate(suites):
        entries = load_manifest(folder / r.dataset / MANIFEST)["benchmarks"]  # type: ignore[index]
        ops = [e["initial_op_count"] for e in entries]
        ax.scatter(ops, [i] * len(ops), s=8, alpha=0.5, color="C1" if r.collection == "realworld" else "C0")
    ax.set_yticks(range(len(suites)), [r.dataset for r in suites], fontsize=8)
    ax.set_xscale("log")
    ax.axvline(LARGE, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("ops as loaded (log scale); blue: model families, orange: real programs; dotted: 20,000")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m xla_gym_datasets.stats", description=__doc__.split("\n")[0])
    p.add_argument("--generator", type=int, default=0,
                   help="also N generator programs, seeds 0..N-1 (imports jax; default: %(default)s, none)")
    p.add_argument("--json", type=Path, default=None, help="also write the rows to this file (default: none)")
    p.add_argument("--figure", type=Path, default=None,
                   help="also draw the op counts per suite to this PNG (needs matplotlib; default: none)")
    args = p.parse_args(argv)
    if args.generator < 0:
        p.error(f"--generator: expected a count >= 0, got {args.generator}")
    table = rows(args.generator)
    print(markdown(table))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps([asdict(r) for r in table], indent=1) + "\n")
    if args.figure is not None:
        figure(table, args.figure)
    return 0


if __name__ == "__main__":
    sys.exit(main())
