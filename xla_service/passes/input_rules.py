"""Validation's input rules: how each entry parameter of a module is drawn.

Each parameter's :class:`Rule` is read from its uses in the HLO text
(:func:`rules`), as ``inputs.py``'s docstring describes; NumPy only.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from xla_service.catalog.schema import INPUT_INT_HIGH
from xla_service.passes.hlo_text import (
    Computation,
    Instr,
    call_sites,
    callees,
    ints,
    parse_module,
)

__all__ = ["Rule", "Shape", "rules", "plain_rule"]

Shape = tuple[np.dtype, tuple[int, ...]]


@dataclass(frozen=True)
class Rule:
    """How one parameter is drawn: ``kind`` is ``normal``, ``positive``
    (``|normal|``), ``integers`` (uniform in ``[low, high)``), ``values``
    (uniform over ``values``) or ``bool``; ``why`` says which use set it."""

    kind: str
    scale: float = 1.0
    low: int = 0
    high: int = INPUT_INT_HIGH
    values: tuple[int, ...] = ()
    why: str = "no use read"
    #: Feeds no dot or convolution (an optimizer's moments, running statistics):
    #: zero in *accumulators zero* draws (unless ``positive``), so that what is
    #: added to it shows in full.
    accumulator: bool = False


#: ``(computation, value, tuple index or None)``: where a parameter's value is.
_Place = tuple[str, str, int | None]
#: Whether the value keeps its meaning through ``user`` at operand position ``k``.
_Through = Callable[[Computation, Instr, int], bool]


def _param_targets(comps: dict[str, Computation], user: Instr, k: int) -> list[tuple[str, str]]:
    """Where operand ``k`` of a call site arrives: ``(computation, parameter)``."""
    targets = []
    for role, callee in callees(user):
        comp = comps.get(callee)
        if comp is None:
            continue
        if role.startswith("branch"):
            number = 0 if k == int(role[6:]) + 1 else None
        elif role in ("body", "condition"):
            number = 0
        else:
            number = k
        if number is not None and number in comp.params:
            targets.append((callee, comp.params[number]))
    return targets


def _follow(
    comps: dict[str, Computation], callers: dict[str, list[tuple[str, Instr, str]]],
    start: _Place, through: _Through,
) -> Iterator[tuple[str, Instr, int]]:
    """Every ``(computation, user, operand position)`` the value reaches."""
    todo, seen = [start], set()
    while todo:
        place = todo.pop()
        if place in seen:
            continue
        seen.add(place)
        name, value, index = place
        comp = comps[name]
        for user, k in comp.users.get(value, ()):
            if user.opcode in ("while", "call", "fusion", "conditional", "async-start"):
                todo += [(c, p, index) for c, p in _param_targets(comps, user, k)]
                if user.opcode == "while":
                    todo.append((name, user.name, index))
            elif index is not None:
                if user.opcode == "get-tuple-element" and ints(user.attrs.get("index", ""))[:1] == [index]:
                    todo.append((name, user.name, None))
            elif user.opcode == "tuple":
                todo.append((name, user.name, k))
            else:
                yield name, user, k
                if through(comp, user, k):
                    todo.append((name, user.name, None))
        if value == comp.root:
            for caller, site, role in callers.get(name, ()):
                if role == "body":
                    todo.append((name, comp.params.get(0, ""), index))
                if role != "condition":
                    todo.append((caller, site.name, index))


def _feeding(comps: dict[str, Computation], callers: dict[str, list[tuple[str, Instr, str]]]) -> set[tuple[str, str]]:
    """Every value that some dot or convolution depends on (tuples taken whole)."""
    todo = [
        (comp.name, operand)
        for comp in comps.values()
        for instr in comp.instrs.values()
        if instr.opcode in ("dot", "convolution")
        for operand in instr.operands
    ]
    seen: set[tuple[str, str]] = set()
    while todo:
        place = todo.pop()
        if place in seen:
            continue
        seen.add(place)
        name, value = place
        instr = comps[name].instrs.get(value)
        if instr is None:
            continue
        todo += [(name, operand) for operand in instr.operands]
        todo += [(c, comps[c].root) for role, c in callees(instr) if c in comps and role != "condition"]
        if instr.opcode == "parameter":
            k = next(k for k, p in comps[name].params.items() if p == value)
            for caller, site, role in callers.get(name, ()):
                if role == "body":  # carried around the loop
                    todo.append((name, comps[name].root))
                arriving = int(role[6:]) + 1 if role.startswith("branch") else (0 if role in ("body", "condition") else k)
                if arriving < len(site.operands):
                    todo.append((caller, site.operands[arriving]))
    return seen


_SHAPE_OPS = {"reshape", "bitcast", "copy", "transpose", "broadcast", "convert", "slice", "concatenate", "reverse"}


def _shape_through(comp: Computation, user: Instr, k: int) -> bool:
    """Float values keep their scale: shape changes, converts, slices."""
    return user.opcode in _SHAPE_OPS or (user.opcode in ("dynamic-slice", "pad") and k == 0)


def _scalar(comp: Computation, name: str) -> bool:
    """Whether ``name`` is a scalar, or a scalar broadcast (a scale factor)."""
    instr = comp.instrs.get(name)
    while instr is not None and instr.opcode in ("broadcast", "reshape", "convert", "copy", "bitcast"):
        instr = comp.instrs.get(instr.operands[0])
    return instr is not None and instr.dims == ()


def _positive_through(comp: Computation, user: Instr, k: int) -> bool:
    """Nonnegative values stay nonnegative: sums, scalings, reductions, shapes
    (not products of two arrays, which a gradient squared as ``(g * c) * g`` is)."""
    if user.opcode in ("multiply", "divide"):
        return k < 2 and _scalar(comp, user.operands[1 - k])
    if user.opcode == "reduce":
        return k < len(user.operands) // 2
    if user.opcode == "select":
        return k > 0
    return user.opcode == "add" or _shape_through(comp, user, k)


def _index_through(comp: Computation, user: Instr, k: int) -> bool:
    """Integer values keep their meaning as indices: shapes, selects, offsets, buffers."""
    op = user.opcode
    return (
        _shape_through(comp, user, k)
        or op in ("add", "subtract")
        or (op == "select" and k > 0)
        or (op == "clamp" and k == 1)
        or (op == "gather" and k == 0)
        or (op == "dynamic-update-slice" and k < 2)
    )


# ----------------------------------------------------------------------- rules


def _dims(comp: Computation, name: str) -> tuple[int, ...]:
    instr = comp.instrs.get(name)
    return instr.dims if instr is not None and instr.dims is not None else ()


def _fan_in(comp: Computation, user: Instr, k: int) -> int:
    """The fan-in of operand ``k`` of a dot or convolution (0: not a weight)."""
    dims = _dims(comp, user.operands[k])
    if user.opcode == "dot" and k < 2:
        contracting = ints(user.attrs.get(("lhs" if k == 0 else "rhs") + "_contracting_dims", ""))
        return math.prod(dims[d] for d in contracting if d < len(dims))
    if user.opcode == "convolution" and k == 1 and "dim_labels" in user.attrs:
        kernel = user.attrs["dim_labels"].split("_")[1].split("->")[0]
        return math.prod(d for d, label in zip(dims, kernel) if label != "o")
    return 0


def _index_bound(comp: Computation, user: Instr, k: int) -> int:
    """How many start positions the indexed dimensions allow (0: not an index)."""
    a, op = user.attrs, user.opcode
    operand = _dims(comp, user.operands[0])
    if op == "gather" and k == 1:
        sizes = ints(a.get("slice_sizes", ""))
        mapped = ints(a.get("start_index_map", ""))
        return min((operand[d] - sizes[d] + 1 for d in mapped if d < min(len(operand), len(sizes))), default=0)
    if op == "scatter" and k == len(user.operands) // 2:
        update = _dims(comp, user.operands[-1])
        skipped = set(ints(a.get("inserted_window_dims", ""))) | set(ints(a.get("input_batching_dims", "")))
        window = [d for d in range(len(operand)) if d not in skipped]
        update_dims = ints(a.get("update_window_dims", ""))
        bounds = []
        for d in ints(a.get("scatter_dims_to_operand_dims", "")):
            size = 1
            if d in window and window.index(d) < len(update_dims) and update_dims[window.index(d)] < len(update):
                size = update[update_dims[window.index(d)]]
            if d < len(operand):
                bounds.append(operand[d] - size + 1)
        return min(bounds, default=0)
    if op == "dynamic-slice" and k >= 1:
        sizes = ints(a.get("dynamic_slice_sizes", ""))
        d = k - 1
        return operand[d] - sizes[d] + 1 if d < min(len(operand), len(sizes)) else 0
    if op == "dynamic-update-slice" and k >= 2:
        update, d = _dims(comp, user.operands[1]), k - 2
        return operand[d] - update[d] + 1 if d < min(len(operand), len(update)) else 0
    return 0


def _source(comp: Computation, name: str) -> Instr | None:
    """The constant or iota behind broadcasts, reshapes and converts, if any."""
    instr = comp.instrs.get(name)
    while instr is not None and instr.opcode in ("broadcast", "reshape", "convert", "copy", "bitcast", "transpose"):
        instr = comp.instrs.get(instr.operands[0])
    return instr if instr is not None and instr.opcode in ("constant", "iota") else None


def _compared(comp: Computation, user: Instr, k: int) -> tuple[int | None, int | None]:
    """``(iota bound, constant)`` of a comparison of the value with an iota or a
    scalar integer constant (None where not)."""
    if user.opcode != "compare" or len(user.operands) != 2:
        return None, None
    other = _source(comp, user.operands[1 - k])
    if other is None:
        return None, None
    if other.opcode == "iota":
        axis = ints(other.attrs.get("iota_dimension", "0"))[0]
        n = other.dims[axis] if other.dims and axis < len(other.dims) else 0
        ordering = user.attrs.get("direction", "") not in ("EQ", "NE")
        return (n + 1 if ordering else n) or None, None
    literal = other.literal.strip()
    return None, (int(literal) if re.fullmatch(r"-?\d+", literal) else None)


def plain_rule(dtype: np.dtype) -> Rule:
    """The rule of a parameter whose use is not read."""
    if dtype == np.bool_:
        return Rule("bool", why="boolean")
    if _is_integer(dtype):
        return Rule("integers")
    return Rule("normal")


def _is_integer(dtype: np.dtype) -> bool:
    return np.issubdtype(dtype, np.integer)


def rules(text: str, shapes: Sequence[Shape]) -> list[Rule]:
    """One :class:`Rule` per entry parameter of the module ``text``; the plain
    rules where the text cannot be read (reading uses never fails validation)."""
    plain = [plain_rule(np.dtype(dtype)) for dtype, _ in shapes]
    try:
        return _rules(text, shapes, plain)
    except (ValueError, IndexError, KeyError, StopIteration, AttributeError, TypeError):
        return plain


def _rules(text: str, shapes: Sequence[Shape], plain: list[Rule]) -> list[Rule]:
    comps, entry = parse_module(text)
    params = comps[entry].params
    if sorted(params) != list(range(len(shapes))):
        return plain
    callers = call_sites(comps)

    def uses(i: int, through: _Through) -> list[tuple[Computation, Instr, int]]:
        found = _follow(comps, callers, (entry, params[i], None), through)
        return [(comps[c], user, k) for c, user, k in found]

    floats = [i for i, (dtype, _) in enumerate(shapes) if plain[i].kind == "normal"]
    feeding = _feeding(comps, callers)
    weights: dict[int, list[tuple[str, str, int, int]]] = {}
    for i in floats:
        weights[i] = [(c.name, u.name, k, f) for c, u, k in uses(i, _shape_through) if (f := _fan_in(c, u, k)) > 1]
    reached: set[tuple[str, str, int]] = {(c, u, k) for hits in weights.values() for c, u, k, _ in hits}
    result = list(plain)
    for i in floats:
        scales = [(f ** (-0.25 if (c, u, 1 - k) in reached else -0.5), f) for c, u, k, f in weights[i]]
        scale, fan = min(scales, default=(1.0, 0))
        positive = any(
            u.opcode in ("sqrt", "rsqrt", "log", "power") and k == 0 for _, u, k in uses(i, _positive_through)
        )
        accumulator = (entry, params[i]) not in feeding
        why = f"dot/convolution fan-in {fan}" if fan else "no dot or convolution"
        why += ("; domain >= 0" if positive else "") + ("; feeds no dot or convolution" if accumulator else "")
        result[i] = Rule("positive" if positive else "normal", scale, why=why, accumulator=accumulator)
    for i, (dtype, _) in enumerate(shapes):
        if plain[i].kind == "integers":
            result[i] = _integer_rule(np.dtype(dtype), uses(i, _index_through))
    return result


def _integer_rule(dtype: np.dtype, found: list[tuple[Computation, Instr, int]]) -> Rule:
    info = np.iinfo(dtype)
    bounds = [b for c, u, k in found if (b := _index_bound(c, u, k)) > 0]
    compared = [_compared(c, u, k) for c, u, k in found]
    iotas = [n for n, _ in compared if n]
    constants = sorted({c for _, c in compared if c is not None})
    if bounds:
        return Rule("integers", low=0, high=min(min(bounds), int(info.max) + 1), why=f"index below {min(bounds)}")
    if iotas:
        return Rule("integers", low=0, high=min(min(iotas), int(info.max) + 1), why=f"compared with an iota, below {min(iotas)}")
    if constants:
        values = sorted({v for c in constants for v in (c - 1, c, c + 1) if info.min <= v <= info.max})
        return Rule("values", values=tuple(values), why=f"compared with {constants}")
    return Rule("integers", low=0, high=min(INPUT_INT_HIGH, int(info.max) + 1))
