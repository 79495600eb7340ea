"""Helper of ``measure_validation.py``: single-instruction mutants of normalized HLO text.

``mutants_of(module, text)`` yields every mutant of every operator
(``OPERATORS``) that applies to the module; ``sample_mutants`` draws a
seeded sample of them, spread over the operators.
"""
from __future__ import annotations

import math
import random
import re
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

__all__ = ["Mutant", "OPERATORS", "mutants_of", "sample_mutants"]

#: opcode -> its replacement (``opcode`` mutants)
SWAPS = {
    "add": "subtract", "subtract": "add", "multiply": "divide", "divide": "multiply",
    "maximum": "minimum", "minimum": "maximum", "tanh": "logistic", "logistic": "tanh",
    "exponential": "log", "log": "exponential",
}
#: Binary ops whose operands cannot be swapped freely (``swap-operands`` mutants).
NON_COMMUTATIVE = ("subtract", "divide", "power", "atan2", "remainder", "compare", "shift-left",
                   "shift-right-logical", "shift-right-arithmetic")
DIRECTIONS = {"LT": "LE", "LE": "LT", "GT": "GE", "GE": "GT", "EQ": "NE", "NE": "EQ"}
OPERATORS = ("opcode", "constant", "swap-operands", "select-branches", "reduce-init",
             "broadcast-dims", "compare-direction", "slice-offset", "transpose-perm")

_LINE = re.compile(
    r"^(?P<indent>\s*)(?P<root>ROOT )?(?P<name>[\w.\-]+) = (?P<shape>\w+\[[^\]]*\](?:\{[^}]*\})?|\(.*?\)) "
    r"(?P<op>[\w\-]+)\((?P<args>[^)]*)\)(?P<attrs>.*)$"
)
_DIMS = re.compile(r"^\w+\[([^\]]*)\]")


@dataclass
class Mutant:
    module: str
    operator: str
    line: int
    what: str
    text: str


def _dims(shape: str) -> tuple[int, ...] | None:
    m = _DIMS.match(shape)
    return tuple(int(d) for d in m[1].split(",") if d) if m else None


def mutants_of(module: str, text: str) -> Iterator[Mutant]:
    """Every single-instruction mutant of ``text`` this script makes."""
    lines = text.splitlines()
    shapes: dict[str, str] = {}
    for number, line in enumerate(lines):
        m = _LINE.match(line)
        if m is None:
            continue
        shapes[m["name"]] = m["shape"]
        op, args, name, attrs = m["op"], m["args"], m["name"], m["attrs"]
        operands = [a.strip() for a in args.split(",") if a.strip()]

        def edit(operator: str, what: str, new: str, extra: Sequence[str] = (), at: int = number, name: str = name) -> Mutant:
            out = lines[:at] + list(extra) + [new] + lines[at + 1:]
            return Mutant(module, operator, at + 1, f"{name}: {what}", "\n".join(out) + "\n")

        head = line[: m.start("op")]
        if op in SWAPS and not m["shape"].startswith("pred"):
            yield edit("opcode", f"{op} -> {SWAPS[op]}", head + SWAPS[op] + line[m.end("op"):])
        if op == "constant" and m["shape"].split("[")[0] in ("f32", "bf16", "f16", "f64", "s32") and "[]" in m["shape"]:
            try:
                value = float(args)
            except ValueError:
                value = math.nan
            if math.isfinite(value):
                integer = m["shape"].startswith("s")
                new = str(int(value) + 1) if integer else repr(value * 1.5 if value else 1.0)
                yield edit("constant", f"{args} -> {new}", line.replace(f"constant({args})", f"constant({new})"))
        if op in NON_COMMUTATIVE and len(operands) == 2 and operands[0] != operands[1]:
            swapped = f"{op}({operands[1]}, {operands[0]})"
            yield edit("swap-operands", f"{op} operands swapped", line.replace(f"{op}({args})", swapped))
        if op == "select" and len(operands) == 3 and operands[1] != operands[2]:
            swapped = f"select({operands[0]}, {operands[2]}, {operands[1]})"
            yield edit("select-branches", "select branches swapped", line.replace(f"select({args})", swapped))
        if op == "compare":
            d = re.search(r"direction=(\w+)", attrs)
            if d and d[1] in DIRECTIONS:
                yield edit("compare-direction", f"{d[1]} -> {DIRECTIONS[d[1]]}",
                           line.replace(f"direction={d[1]}", f"direction={DIRECTIONS[d[1]]}"))
        if op == "reduce" and len(operands) >= 2:
            init = operands[len(operands) // 2]
            init_line = next((ln for ln in lines[:number] if re.match(rf"^\s*{re.escape(init)} = ", ln)), "")
            c = re.search(r"= (\w+)\[\] constant\(([^)]*)\)", init_line)
            if c:
                init_value = {"-inf": 0.0, "inf": 0.0, "0": 1.0, "false": 1.0, "true": 0.0}.get(c[2])
                if init_value is None:
                    try:
                        init_value = float(c[2]) * 2 + 1
                    except ValueError:
                        init_value = None
                if init_value is not None:
                    literal = ("true" if init_value else "false") if c[1] == "pred" else (
                        str(int(init_value)) if c[1][0] in "su" else repr(init_value))
                    fresh = f"mutant_init.{number}"
                    new_operands = list(operands)
                    new_operands[len(operands) // 2] = fresh
                    new = line.replace(f"reduce({args})", f"reduce({', '.join(new_operands)})")
                    extra = [f"{m['indent']}{fresh} = {c[1]}[] constant({literal})"]
                    yield edit("reduce-init", f"init {c[2]} -> {literal}", new, extra)
        if op == "broadcast":
            b = re.search(r"dimensions=\{([\d,]*)\}", attrs)
            out = _dims(m["shape"])
            if b and b[1] and out:
                old = tuple(int(x) for x in b[1].split(","))
                want = tuple(out[d] for d in old)
                choices = [c for c in _increasing(len(out), len(old)) if c != old and tuple(out[d] for d in c) == want]
                if choices:
                    new_dims = ",".join(map(str, choices[0]))
                    yield edit("broadcast-dims", f"dimensions {{{b[1]}}} -> {{{new_dims}}}",
                               line.replace(f"dimensions={{{b[1]}}}", f"dimensions={{{new_dims}}}"))
        if op == "slice" and operands and operands[0] in shapes:
            size = _dims(shapes[operands[0]])
            s = re.search(r"slice=\{(.*)\}", attrs)
            if s and size:
                ranges = re.findall(r"\[(\d+):(\d+)(?::(\d+))?\]", s[1])
                for dim, (a, b, stride) in enumerate(ranges):
                    lo, hi = int(a), int(b)
                    if hi - lo == size[dim]:
                        continue
                    shift = 1 if hi + 1 <= size[dim] else -1
                    new_ranges = list(ranges)
                    new_ranges[dim] = (str(lo + shift), str(hi + shift), stride)
                    text_ranges = ", ".join(f"[{x}:{y}{':' + z if z else ''}]" for x, y, z in new_ranges)
                    yield edit("slice-offset", f"dimension {dim} shifted by {shift}",
                               line.replace(f"slice={{{s[1]}}}", f"slice={{{text_ranges}}}"))
                    break
        if op == "transpose" and operands and operands[0] in shapes:
            size = _dims(shapes[operands[0]])
            p = re.search(r"dimensions=\{([\d,]*)\}", attrs)
            if p and size:
                perm = [int(x) for x in p[1].split(",")]
                pairs = [(i, j) for i in range(len(perm)) for j in range(i + 1, len(perm))
                         if size[perm[i]] == size[perm[j]]]
                if pairs:
                    i, j = pairs[0]
                    perm[i], perm[j] = perm[j], perm[i]
                    yield edit("transpose-perm", f"dimensions {{{p[1]}}} -> {{{','.join(map(str, perm))}}}",
                               line.replace(f"dimensions={{{p[1]}}}", f"dimensions={{{','.join(map(str, perm))}}}"))


def _increasing(n: int, k: int) -> Iterator[tuple[int, ...]]:
    """Strictly increasing k-tuples of range(n)."""
    from itertools import combinations

    return combinations(range(n), k)


def sample_mutants(module: str, text: str, count: int, seed: int) -> list[Mutant]:
    """Up to ``count`` mutants, spread over the operators (round robin, seeded)."""
    by_operator: dict[str, list[Mutant]] = defaultdict(list)
    for mutant in mutants_of(module, text):
        by_operator[mutant.operator].append(mutant)
    rng = random.Random(f"{seed}:{module}")
    for found in by_operator.values():
        rng.shuffle(found)
    chosen: list[Mutant] = []
    while len(chosen) < count and any(by_operator.values()):
        for operator in OPERATORS:
            if by_operator.get(operator) and len(chosen) < count:
                chosen.append(by_operator[operator].pop())
    return chosen
