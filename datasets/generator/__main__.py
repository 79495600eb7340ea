"""The generator's command line: one seed's module and metadata, or the grammar's table.

    .venv/bin/python -m xla_gym_datasets.generator 42                 # metadata of seed 42 (JSON)
    .venv/bin/python -m xla_gym_datasets.generator 42 --hlo out.hlo   # and its HLO text
    .venv/bin/python -m xla_gym_datasets.generator --blocks           # the blocks (markdown)
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from xla_service.catalog.generator import DEFAULT_OPS, Recipe, parse_ops, parse_seed


def blocks_table() -> str:
    """The grammar's blocks as a markdown table (datasets/README.md quotes it)."""
    from xla_gym_datasets.generator import blocks

    rows = ["| block | kind | file | opcodes it exercises | what |", "|---|---|---|---|---|"]
    for b in blocks().values():
        where = b.fn.__module__.rsplit(".", 1)[-1] + ".py"
        flags = "" if b.train else " (inference only)"
        rows.append(f"| `{b.name}` | {b.kind} | {where} | {', '.join(b.opcodes)} | {b.doc}{flags} |")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("seed", nargs="?", default="", help="a seed in [0, 2**32)")
    parser.add_argument("--ops", default=f"{DEFAULT_OPS[0]}-{DEFAULT_OPS[1]}", help="op count range MIN-MAX")
    parser.add_argument("--hlo", default="", help="write the module's HLO text to this file")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the disk cache")
    parser.add_argument("--blocks", action="store_true", help="print the table of building blocks")
    args = parser.parse_args(argv)
    if args.blocks:
        print(blocks_table())
        return 0
    if not args.seed:
        parser.error("expected a seed, or --blocks")
    try:
        recipe = Recipe(parse_seed(args.seed), parse_ops(args.ops))
    except ValueError as e:
        parser.error(str(e))
    from xla_gym_datasets.generator import generate

    made = generate(recipe, use_cache=not args.no_cache)
    if args.hlo:
        Path(args.hlo).write_text(made.text)
    json.dump(made.metadata, sys.stdout, indent=1, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
