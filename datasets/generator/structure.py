"""What a module is made of, from its HLO text alone (jax-free): opcodes and a structural hash.

:func:`structural_hash` defines when two modules are *structurally distinct*
(the generator's variety figure, ``benchmarks/measure_generator.py``): a
Weisfeiler-Lehman hash of the dataflow graph of every computation, nodes
labelled by opcode and element type only (no dimensions, names or literal
values), refined ``ROUNDS`` times along operand edges, an instruction that
calls computations (``to_apply``, ``body``, branches...) labelled with their
hashes too; the module's hash is that of its entry computation. So two
programs that differ only in sizes (widths, sequence lengths, batch) or
constants hash the same; a different block, order, dtype or wiring does not.
"""
from __future__ import annotations

import hashlib
import re
from collections import Counter

__all__ = ["opcode_histogram", "structural_hash", "ROUNDS"]

ROUNDS = 3
_COMMENT = re.compile(r"/\*.*?\*/")
_HEADER = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s*(?:\(.*\)\s*->\s*.*)?\{\s*$")
_INSTR = re.compile(
    r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(\((?:[^()]|\([^()]*\))*\)|[^\s(]+)\s+([a-z][\w\-]*)\((.*)$"
)
_CALLED = re.compile(
    r"\b(?:to_apply|calls|body|condition|true_computation|false_computation|select|scatter"
    r"|branch_computations|called_computations)=(\{[^}]*\}|%?[\w.\-]+)"
)
_DTYPE = re.compile(r"^([a-z]+[0-9]*)\[")


def _operands(rest: str) -> list[str]:
    """Operand names of an instruction: the text up to its call's closing parenthesis."""
    depth, end = 1, len(rest)
    for i, ch in enumerate(rest):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                end = i
                break
    names = []
    for part in rest[:end].split(","):
        token = part.strip().split(" ")[-1].lstrip("%") if part.strip() else ""
        if token and not token[0].isdigit() and token not in ("true", "false"):
            names.append(token)
    return names


def _computations(text: str) -> list[tuple[str, bool, list[tuple[str, str, list[str], list[str]]]]]:
    """``(name, is_entry, [(instruction, label, operands, called), ...])`` in text order."""
    found: list[tuple[str, bool, list[tuple[str, str, list[str], list[str]]]]] = []
    current: list[tuple[str, str, list[str], list[str]]] | None = None
    for raw in _COMMENT.sub("", text).splitlines():
        line = raw.strip()
        if current is None:
            m = _HEADER.match(line)
            if m and not line.startswith("HloModule"):
                current = []
                found.append((m[2], bool(m[1]), current))
            continue
        if line == "}":
            current = None
            continue
        m = _INSTR.match(raw)
        if m is None:
            continue
        dtype = _DTYPE.match(m[2])
        label = f"{m[3]}|{dtype[1] if dtype else 'tuple'}"
        called = [c.strip().lstrip("%") for g in _CALLED.findall(m[4]) for c in g.strip("{}").split(",") if c.strip()]
        current.append((m[1], label, _operands(m[4]), called))
    return found


def opcode_histogram(text: str) -> Counter[str]:
    """Instructions per opcode over every computation of the module text (calls not inlined)."""
    return Counter(label.split("|")[0] for _, _, body in _computations(text) for _, label, _, _ in body)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:16]


def structural_hash(text: str) -> str:
    """The module's structural hash (module docstring)."""
    hashes: dict[str, str] = {}
    entry = ""
    for name, is_entry, body in _computations(text):
        labels = {
            instr: _digest(label, *sorted(hashes.get(c, c) for c in called))
            for instr, label, _, called in body
        }
        operands = {instr: ops for instr, _, ops, _ in body}
        for _ in range(ROUNDS):
            labels = {
                instr: _digest(labels[instr], *(labels.get(o, "?") for o in operands[instr]))
                for instr in labels
            }
        hashes[name] = _digest(*sorted(labels.values()))
        entry = name if is_entry else entry
    return hashes.get(entry, _digest(*sorted(hashes.values())))
