"""A reader of normalized HLO text: computations, instructions, call sites (no jax).

Enough of the textual form (``as_hlo_text``) to follow values through a
module: each instruction's name, opcode, array dimensions, operands and
attributes, each computation's parameters, root and users, and which
computations an instruction calls (``call``, ``fusion``, ``while``,
``conditional``). Used by validation's input rules (``input_rules.py``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Instr", "Computation", "parse_module", "call_sites", "callees", "ints", "names"]


@dataclass
class Instr:
    name: str
    opcode: str
    dims: tuple[int, ...] | None  # None: a tuple or token
    operands: list[str]
    attrs: dict[str, str]
    literal: str = ""


@dataclass
class Computation:
    name: str
    instrs: dict[str, Instr] = field(default_factory=dict)
    root: str = ""
    params: dict[int, str] = field(default_factory=dict)
    users: dict[str, list[tuple[Instr, int]]] = field(default_factory=dict)


_HEADER = re.compile(r"^\s*(ENTRY\s+)?%?([\w.\-]+)\s*(\(.*\)\s*->\s*.*)?\{\s*$")
_INSTR = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_ARRAY = re.compile(r"^[a-z]\w*\[([^\]]*)\]")
_COMMENT = re.compile(r"/\*.*?\*/")


def closing(text: str, start: int) -> int:
    """The index just past the bracket that closes ``text[start]``."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] in "({[":
            depth += 1
        elif text[i] in ")}]":
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError(f"unbalanced brackets in {text[:80]!r}")


def split_commas(text: str) -> list[str]:
    """Split at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def parse_instruction(line: str) -> tuple[bool, Instr]:
    m = _INSTR.match(_COMMENT.sub("", line))
    if m is None:
        raise ValueError(f"not an instruction: {line[:80]!r}")
    rest = m[3].strip()
    if rest.startswith("("):
        end = closing(rest, 0)
        dims = None
    else:
        end = rest.index(" ")
        a = _ARRAY.match(rest)
        dims = tuple(int(d.lstrip("<=")) for d in a[1].split(",") if d) if a else None
    rest = rest[end:].strip()
    paren = rest.index("(")
    opcode = rest[:paren].strip()
    close = closing(rest, paren)
    inner = rest[paren + 1 : close - 1]
    attrs: dict[str, str] = {}
    for part in split_commas(rest[close:].lstrip(",")):
        key, _, value = part.partition("=")
        attrs[key.strip()] = value.strip()
    if opcode == "constant":
        return bool(m[1]), Instr(m[2], opcode, dims, [], attrs, literal=inner.strip())
    operands = [p.split()[-1].lstrip("%") for p in split_commas(inner)]
    return bool(m[1]), Instr(m[2], opcode, dims, operands, attrs)


def parse_module(text: str) -> tuple[dict[str, Computation], str]:
    """The module's computations by name, and the entry's name."""
    comps: dict[str, Computation] = {}
    entry, current = "", None
    for line in text.splitlines():
        stripped = line.strip()
        if current is None:
            header = _HEADER.match(line) if not stripped.startswith("HloModule") else None
            if header:
                current = comps.setdefault(header[2], Computation(header[2]))
                entry = header[2] if header[1] else entry
            continue
        if stripped == "}":
            current = None
            continue
        if not stripped:
            continue
        root, instr = parse_instruction(line)
        current.instrs[instr.name] = instr
        if root:
            current.root = instr.name
        if instr.opcode == "parameter":
            current.params[int(_COMMENT.sub("", line).split("parameter(")[1].split(")")[0])] = instr.name
    for comp in comps.values():
        comp.root = comp.root or next(reversed(comp.instrs), "")
        for instr in comp.instrs.values():
            for k, operand in enumerate(instr.operands):
                comp.users.setdefault(operand, []).append((instr, k))
    if entry not in comps:
        raise ValueError("no ENTRY computation")
    return comps, entry


def ints(value: str) -> list[int]:
    return [int(v) for v in re.findall(r"-?\d+", value)]


def names(value: str) -> list[str]:
    return [v.strip().lstrip("%") for v in value.strip("{}").split(",") if v.strip()]


def call_sites(comps: dict[str, Computation]) -> dict[str, list[tuple[str, Instr, str]]]:
    """For each called computation: ``(caller computation, call site, role)``."""
    found: dict[str, list[tuple[str, Instr, str]]] = {}
    for comp in comps.values():
        for instr in comp.instrs.values():
            for role, callee in callees(instr):
                found.setdefault(callee, []).append((comp.name, instr, role))
    return found


def callees(instr: Instr) -> list[tuple[str, str]]:
    """``(role, computation)`` whose parameters receive ``instr``'s operands."""
    a = instr.attrs
    if instr.opcode == "while":
        return [("body", a["body"].lstrip("%")), ("condition", a["condition"].lstrip("%"))]
    if instr.opcode in ("call", "fusion", "async-start"):
        key = "to_apply" if "to_apply" in a else "calls"
        return [("call", a[key].lstrip("%"))] if key in a else []
    if instr.opcode == "conditional":
        if "branch_computations" in a:
            return [(f"branch{i}", n) for i, n in enumerate(names(a["branch_computations"]))]
        return [("branch0", a["true_computation"].lstrip("%")), ("branch1", a["false_computation"].lstrip("%"))]
    return []

