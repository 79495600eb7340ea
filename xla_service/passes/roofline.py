"""A roofline over an optimized HLO module: what each kernel costs, and the sum.

Pure Python over the module's text (as ``HloModule.to_string()`` prints the
module XLA's CPU backend optimized), no jax. A *kernel* is an instruction of a
control computation (the entry, a ``while`` body or condition, a
``conditional`` branch, a ``call``ed computation) that does work: not a
parameter, constant, tuple, get-tuple-element, bitcast or control-flow
instruction. Its cost:

- **bytes**: its output and its operands, in full, but what a fusion only
  slices of a parameter (``slice``, ``dynamic-slice``, ``gather``) counts as
  the slice, and an in-place update (``dynamic-update-slice``, ``scatter``
  as the root) counts the update, not the buffer it updates in place;
- **flops** and **transcendentals**: those of the instruction, or of every
  instruction of a fusion's computation (``dot``: 2 x output x contracted
  size; ``convolution``: 2 x output x kernel window and input features;
  ``reduce``: its input; ``sort``: n log2 n; elementwise: the output);
- **time**: ``overhead + max(flops / F + transcendentals / T, bytes / B)``
  (``catalog.backend.Roofline``).

A ``while`` body counts as often as XLA's ``known_trip_count`` says (once if
XLA does not know it); the branches of a ``conditional`` count at their mean.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from xla_service.catalog.backend import Roofline

__all__ = ["Instruction", "Kernel", "Costs", "parse_module", "kernels", "module_costs", "estimate"]

_BITS = {
    "pred": 8, "s4": 4, "u4": 4, "s8": 8, "u8": 8, "s16": 16, "u16": 16, "f16": 16, "bf16": 16,
    "s32": 32, "u32": 32, "f32": 32, "s64": 64, "u64": 64, "f64": 64, "c64": 64, "c128": 128,
    "f8e4m3fn": 8, "f8e5m2": 8, "f8e4m3fnuz": 8, "f8e5m2fnuz": 8, "f8e4m3b11fnuz": 8,
}
_ARRAY = re.compile(r"\b([a-z]\w*)\[([0-9,]*)\]")
_HEADER = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s")
_DEFINITION = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*")
_NAME = re.compile(r"%([\w.\-]+)")
_CALLED = re.compile(
    r"\b(calls|to_apply|condition|body|true_computation|false_computation|branch_computations)=(\{[^}]*\}|%[\w.\-]+)"
)
#: Instructions that move no data and run no code of their own.
FREE = frozenset({
    "parameter", "constant", "tuple", "get-tuple-element", "bitcast", "after-all", "add-dependency",
    "opt-barrier", "partition-id", "replica-id", "domain", "while", "conditional", "call",
})
TRANSCENDENTAL = frozenset({
    "exponential", "exponential-minus-one", "log", "log-plus-one", "tanh", "logistic", "sqrt", "rsqrt",
    "cbrt", "power", "sine", "cosine", "tan", "atan2", "erf", "acos", "acosh", "asin", "asinh", "atanh",
    "cosh", "sinh",
})
#: Instructions that only move data (no arithmetic).
MOVES = frozenset({
    "broadcast", "reshape", "transpose", "slice", "dynamic-slice", "dynamic-update-slice", "concatenate",
    "pad", "copy", "gather", "reverse", "iota", "convert", "bitcast-convert", "copy-start", "copy-done",
    "custom-call", "fusion", "reduce-precision",
})
_SLICING = frozenset({"slice", "dynamic-slice", "gather"})
_IN_PLACE = frozenset({"dynamic-update-slice", "scatter"})


@dataclass
class Instruction:
    name: str
    opcode: str
    shape: str
    operands: list[str]
    attributes: str
    called: dict[str, list[str]] = field(default_factory=dict)
    root: bool = False
    #: What stands between the opcode's parentheses (a parameter's number, a literal).
    argument_text: str = ""

    @property
    def arrays(self) -> list[tuple[str, tuple[int, ...]]]:
        return [(t, tuple(int(d) for d in dims.split(",") if d)) for t, dims in _ARRAY.findall(self.shape)]

    @property
    def elements(self) -> int:
        return sum(math.prod(dims) for _, dims in self.arrays)

    @property
    def bytes(self) -> float:
        return sum(math.prod(dims) * _BITS.get(t, 0) / 8 for t, dims in self.arrays)

    def dims(self) -> tuple[int, ...]:
        arrays = self.arrays
        return arrays[0][1] if arrays else ()


def _balanced(text: str, start: int) -> int:
    """The index just past the bracket group that opens at ``text[start]``."""
    depth = 0
    pairs = {"(": ")", "{": "}", "[": "]"}
    closing = set(pairs.values())
    for i in range(start, len(text)):
        c = text[i]
        if c in pairs:
            depth += 1
        elif c in closing:
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError(f"Unbalanced brackets in HLO text: {text[start:start + 80]!r}")


def _instruction(line: str) -> Instruction | None:
    match = _DEFINITION.match(line)
    if not match:
        return None
    rest = line[match.end():]
    if rest.startswith("("):
        end = _balanced(rest, 0)
    else:
        end = rest.index(" ")
    shape, rest = rest[:end], rest[end:].lstrip()
    paren = rest.index("(")
    opcode = rest[:paren]
    close = _balanced(rest, paren)
    arguments = rest[paren + 1:close - 1]
    attributes = rest[close:]
    called = {key: _NAME.findall(value) for key, value in _CALLED.findall(attributes)}
    return Instruction(match.group(2), opcode, shape, _NAME.findall(arguments), attributes, called,
                       root=bool(match.group(1)), argument_text=arguments)


def parse_module(text: str) -> tuple[str, dict[str, list[Instruction]]]:
    """``(entry name, {computation name: instructions})`` of a printed HLO module."""
    computations: dict[str, list[Instruction]] = {}
    entry, current = "", None
    for line in text.splitlines():
        if not line.strip() or line.startswith(("HloModule", "}", "//")):
            continue
        if not line[0].isspace():
            header = _HEADER.match(line)
            if header:
                current = computations.setdefault(header.group(2), [])
                if header.group(1):
                    entry = header.group(2)
            continue
        instruction = _instruction(line) if current is not None else None
        if instruction is not None and current is not None:
            current.append(instruction)
    if not entry:
        raise ValueError("The HLO text has no ENTRY computation")
    return entry, computations


@dataclass
class Costs:
    """A module's roofline totals (loops counted as often as they run)."""

    seconds: float = 0.0
    flops: float = 0.0
    transcendentals: float = 0.0
    bytes: float = 0.0
    kernels: int = 0
    fusions: int = 0


def _trip_count(instruction: Instruction) -> int:
    match = re.search(r"backend_config=(\{.*\})\s*$", instruction.attributes)
    if match:
        try:
            config = json.loads(match.group(1))
            return max(int(config["known_trip_count"]["n"]), 0)
        except (ValueError, KeyError, TypeError):
            pass
    return 1


class _Module:
    def __init__(self, text: str) -> None:
        self.entry, self.computations = parse_module(text)
        self.by_name = {
            name: {i.name: i for i in instructions} for name, instructions in self.computations.items()
        }

    def operand(self, computation: str, name: str) -> Instruction | None:
        return self.by_name[computation].get(name)

    def arithmetic(self, computation: str) -> tuple[float, float]:
        """(flops, transcendentals) of every instruction of a (fused) computation."""
        flops = transcendentals = 0.0
        for instruction in self.computations.get(computation, []):
            f, t = self.instruction_arithmetic(computation, instruction)
            flops, transcendentals = flops + f, transcendentals + t
        return flops, transcendentals

    def instruction_arithmetic(self, computation: str, i: Instruction) -> tuple[float, float]:
        if i.opcode == "fusion":
            return self.arithmetic(i.called.get("calls", [""])[0])
        if i.opcode in FREE or i.opcode in MOVES:
            return 0.0, 0.0
        if i.opcode in TRANSCENDENTAL:
            return 0.0, float(i.elements)
        operands = [self.operand(computation, o) for o in i.operands]
        first = operands[0] if operands and operands[0] is not None else None
        if i.opcode == "dot":
            match = re.search(r"lhs_contracting_dims=\{([0-9,]*)\}", i.attributes)
            dims = first.dims() if first else ()
            contracted = math.prod(dims[int(d)] for d in match.group(1).split(",") if d) if match and dims else 1
            return 2.0 * i.elements * contracted, 0.0
        if i.opcode == "convolution":
            kernel = operands[1] if len(operands) > 1 else None
            labels = re.search(r"dim_labels=\w+_(\w+)->", i.attributes)
            if kernel is not None and labels and "o" in labels.group(1):
                out_features = kernel.dims()[labels.group(1).index("o")]
                return 2.0 * i.elements * kernel.elements / max(out_features, 1), 0.0
            return 2.0 * i.elements, 0.0
        if i.opcode in ("reduce", "reduce-window", "select-and-scatter", "scatter"):
            inputs = (
                operands[: max(len(operands) // 2, 1)] if i.opcode == "reduce"
                else operands[-1:] if i.opcode == "scatter"  # its updates
                else operands[:1]
            )
            size = sum(o.elements for o in inputs if o is not None)
            if i.opcode == "reduce-window":
                window = re.search(r"window=\{size=([0-9x]+)", i.attributes)
                size = i.elements * (math.prod(int(d) for d in window.group(1).split("x")) if window else 1)
            return float(size), 0.0
        if i.opcode == "sort":
            n = first.elements if first else i.elements
            return float(n) * max(math.log2(max(first.dims()[-1] if first and first.dims() else 2, 2)), 1.0), 0.0
        return float(i.elements), 0.0

    def kernel_bytes(self, computation: str, i: Instruction) -> float:
        operands = [self.operand(computation, o) for o in i.operands]
        sizes = [o.bytes if o is not None else 0.0 for o in operands]
        output = i.bytes
        fused = i.called.get("calls", [""])[0] if i.opcode == "fusion" else ""
        if fused:
            body = self.computations.get(fused, [])
            params = {p.name: int(p.argument_text) for p in body if p.opcode == "parameter"}
            users: dict[str, list[Instruction]] = {}
            for instruction in body:
                for o in instruction.operands:
                    users.setdefault(o, []).append(instruction)
            for name, index in params.items():
                uses = users.get(name, [])
                if uses and index < len(sizes) and all(u.opcode in _SLICING and u.operands[0] == name for u in uses):
                    sizes[index] = sum(u.bytes for u in uses)
            root = next((x for x in body if x.root), None)
            if root is not None and root.opcode in _IN_PLACE and root.operands and root.operands[0] in params:
                index = params[root.operands[0]]
                update = self.operand(fused, root.operands[-1] if root.opcode == "scatter" else root.operands[1])
                if index < len(sizes):
                    sizes[index] = 0.0
                output = update.bytes if update is not None else output
        elif i.opcode in _IN_PLACE and sizes:
            update = operands[-1] if i.opcode == "scatter" else (operands[1] if len(operands) > 1 else None)
            sizes[0], output = 0.0, update.bytes if update is not None else output
        return output + sum(sizes)

    def walk(self, computation: str, times: float) -> Iterator[tuple[str, Instruction, float]]:
        """Every kernel reachable from ``computation``: (its computation, it, how often it runs)."""
        for i in self.computations.get(computation, []):
            if i.opcode == "while":
                trips = _trip_count(i)
                yield from self.walk(i.called.get("body", [""])[0], times * trips)
                yield from self.walk(i.called.get("condition", [""])[0], times * (trips + 1))
            elif i.opcode == "conditional":
                branches = (
                    i.called.get("branch_computations")
                    or i.called.get("true_computation", []) + i.called.get("false_computation", [])
                )
                for branch in branches:
                    yield from self.walk(branch, times / max(len(branches), 1))
            elif i.opcode == "call":
                for callee in i.called.get("to_apply", []):
                    yield from self.walk(callee, times)
            elif i.opcode not in FREE:
                yield computation, i, times


@dataclass(frozen=True)
class Kernel:
    """One kernel's work, and how often it runs in one execution of the module."""

    opcode: str
    flops: float
    transcendentals: float
    bytes: float
    times: float

    def seconds(self, roofline: Roofline) -> float:
        """Its roofline time, once."""
        return roofline.overhead + max(
            self.flops / roofline.flops_per_second + self.transcendentals / roofline.transcendentals_per_second,
            self.bytes / roofline.bytes_per_second,
        )


def kernels(text: str) -> list[Kernel]:
    """Every kernel of a printed, optimized HLO module, in order."""
    module = _Module(text)
    out = []
    for computation, instruction, times in module.walk(module.entry, 1.0):
        flops, transcendentals = module.instruction_arithmetic(computation, instruction)
        out.append(Kernel(instruction.opcode, flops, transcendentals, module.kernel_bytes(computation, instruction), times))
    return out


def estimate(kernels: list[Kernel], roofline: Roofline) -> float:
    """The estimated seconds of one execution: every kernel's time, as often as it runs."""
    return sum(k.seconds(roofline) * k.times for k in kernels)


def module_costs(text: str, roofline: Roofline) -> Costs:
    """The roofline totals of a printed, optimized HLO module."""
    found = kernels(text)
    return Costs(
        seconds=estimate(found, roofline),
        flops=sum(k.flops * k.times for k in found),
        transcendentals=sum(k.transcendentals * k.times for k in found),
        bytes=sum(k.bytes * k.times for k in found),
        kernels=len(found),
        fusions=sum(k.opcode == "fusion" for k in found),
    )
