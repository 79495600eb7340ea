"""Validation inputs: seeded draws that keep a module's activations sensitive.

NumPy only (no jax): ``observe.validate`` passes the entry parameters' NumPy
dtypes and dimensions. One *draw* is one argument per entry parameter;
``draws(text, shapes, seed)`` makes ``DRAWS`` of them, with seeds ``seed``,
``seed + 1``, ... A draw is a function of its seed alone: parameter ``i``
comes from ``numpy.random.default_rng([seed, i])``, so the same seed gives
byte-identical inputs and a parameter's values do not depend on the others'.
The seed modulo 3 picks the draw's regime (``REGIMES``), so that the 3 draws
of a validation see each: *sensitive* (the rules below), *accumulators zero*
(the same, with accumulators other than second moments zero) and
*saturating* (floating point uniform in [0, 1), as validation drew before:
activations large, saturated, reaching overflow and underflow guards;
integers and booleans by their rules).

Each parameter gets a :class:`Rule` read from its uses in the HLO text
(:func:`rules`), followed forward from the entry ``parameter`` through
instructions that keep its meaning, into and out of ``call``, ``while`` and
``conditional`` computations (tuple elements followed by index):

- floating point (and complex): normal, mean 0, standard deviation ``scale``.
  A parameter that reaches an operand of a ``dot`` (through shape changes,
  converts, slices) gets ``scale = fan_in ** -1/2``, ``fan_in`` being the
  product of that operand's contracting dimensions, so that the dot's output
  has unit scale when its other operand has; ``fan_in ** -1/4`` when the
  other operand also comes from a parameter (``x @ w``: the product again has
  unit scale). The kernel of a ``convolution``: ``fan_in`` = every kernel
  dimension but the output features. Several dots (a training step's forward
  and backward products): the smallest scale, so that none saturates.
  Otherwise ``scale`` = 1: layer-norm gains, biases, embedding tables, images.
- a floating point parameter that reaches the operand of ``sqrt``, ``rsqrt``,
  ``log`` or ``power``'s base through sums, scalings by a scalar, reductions
  and shape changes (Adam's second moment, batch norm's running variance) is
  drawn as ``|normal|``: the function stays in its domain.
- an *accumulator*, a floating point parameter that no ``dot`` or
  ``convolution`` depends on (an optimizer's moments, training's running
  statistics: what a training step only adds to), is zero in *accumulators
  zero* draws, so that what the step adds to it shows in full instead of
  within tolerance of the accumulator's own value. Not one drawn as
  ``|normal|`` (Adam's second moment): zero, the update ``m / sqrt(v)``
  becomes the sign of each gradient element, rounding noise where a
  gradient element is near zero (measured: a false alarm on a BERT step).
- integers: uniform in ``[0, bound)`` when the value (through reshapes,
  converts, slices, selects, adds: JAX's wrapping of negative indices) is
  the start index of a ``gather``, ``scatter``, ``dynamic-slice`` or
  ``dynamic-update-slice``: ``bound`` = the indexed dimension of the operand
  minus the slice size plus one (embedding ids below the table size,
  positions inside the sequence), the smallest over every such use. Else,
  compared with an ``iota`` of extent ``n`` (one-hot labels, lengths): uniform
  in ``[0, n)`` for ``EQ``/``NE``, ``[0, n]`` for ordering comparisons. Else,
  compared with a constant ``c``: uniform over ``{c - 1, c, c + 1}`` (every
  direction sees both outcomes). Else uniform in ``[0, schema.INPUT_INT_HIGH)``.
  An array of two elements or more holds both ends of its range (at
  positions drawn from the same generator), except in *accumulators zero*
  draws.
- booleans: a fair coin, with both values present (one element flipped if a
  draw came out all equal); a single boolean alternates with the seed.

A module whose text cannot be read gets the plain rules (normal, scale 1;
integers in ``[0, INPUT_INT_HIGH)``; booleans both ways). Documented in
``docs/validation.md``.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from xla_service.catalog.schema import INPUT_INT_HIGH

__all__ = ["DRAWS", "REGIMES", "Rule", "rules", "draw", "draws", "plain_rule"]

#: Draws per validation by default: seeds ``seed``, ``seed + 1``, ``seed + 2``.
DRAWS = 3

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


# --------------------------------------------------------------------- HLO text


@dataclass
class _Instr:
    name: str
    opcode: str
    dims: tuple[int, ...] | None  # None: a tuple or token
    operands: list[str]
    attrs: dict[str, str]
    literal: str = ""


@dataclass
class _Comp:
    name: str
    instrs: dict[str, _Instr] = field(default_factory=dict)
    root: str = ""
    params: dict[int, str] = field(default_factory=dict)
    users: dict[str, list[tuple[_Instr, int]]] = field(default_factory=dict)


_HEADER = re.compile(r"^\s*(ENTRY\s+)?%?([\w.\-]+)\s*(\(.*\)\s*->\s*.*)?\{\s*$")
_INSTR = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_ARRAY = re.compile(r"^[a-z]\w*\[([^\]]*)\]")
_COMMENT = re.compile(r"/\*.*?\*/")


def _closing(text: str, start: int) -> int:
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


def _split(text: str) -> list[str]:
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


def _parse_instr(line: str) -> tuple[bool, _Instr]:
    m = _INSTR.match(_COMMENT.sub("", line))
    if m is None:
        raise ValueError(f"not an instruction: {line[:80]!r}")
    rest = m[3].strip()
    if rest.startswith("("):
        end = _closing(rest, 0)
        dims = None
    else:
        end = rest.index(" ")
        a = _ARRAY.match(rest)
        dims = tuple(int(d.lstrip("<=")) for d in a[1].split(",") if d) if a else None
    rest = rest[end:].strip()
    paren = rest.index("(")
    opcode = rest[:paren].strip()
    close = _closing(rest, paren)
    inner = rest[paren + 1 : close - 1]
    attrs: dict[str, str] = {}
    for part in _split(rest[close:].lstrip(",")):
        key, _, value = part.partition("=")
        attrs[key.strip()] = value.strip()
    if opcode == "constant":
        return bool(m[1]), _Instr(m[2], opcode, dims, [], attrs, literal=inner.strip())
    operands = [p.split()[-1].lstrip("%") for p in _split(inner)]
    return bool(m[1]), _Instr(m[2], opcode, dims, operands, attrs)


def _parse(text: str) -> tuple[dict[str, _Comp], str]:
    """The module's computations by name, and the entry's name."""
    comps: dict[str, _Comp] = {}
    entry, current = "", None
    for line in text.splitlines():
        stripped = line.strip()
        if current is None:
            header = _HEADER.match(line) if not stripped.startswith("HloModule") else None
            if header:
                current = comps.setdefault(header[2], _Comp(header[2]))
                entry = header[2] if header[1] else entry
            continue
        if stripped == "}":
            current = None
            continue
        if not stripped:
            continue
        root, instr = _parse_instr(line)
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


def _ints(value: str) -> list[int]:
    return [int(v) for v in re.findall(r"-?\d+", value)]


def _names(value: str) -> list[str]:
    return [v.strip().lstrip("%") for v in value.strip("{}").split(",") if v.strip()]


# ---------------------------------------------------------------- following uses

#: ``(computation, value, tuple index or None)``: where a parameter's value is.
_Place = tuple[str, str, int | None]
#: Whether the value keeps its meaning through ``user`` at operand position ``k``.
_Through = Callable[[_Comp, _Instr, int], bool]


def _callers(comps: dict[str, _Comp]) -> dict[str, list[tuple[str, _Instr, str]]]:
    """For each called computation: ``(caller computation, call site, role)``."""
    found: dict[str, list[tuple[str, _Instr, str]]] = {}
    for comp in comps.values():
        for instr in comp.instrs.values():
            for role, callee in _callees(instr):
                found.setdefault(callee, []).append((comp.name, instr, role))
    return found


def _callees(instr: _Instr) -> list[tuple[str, str]]:
    """``(role, computation)`` whose parameters receive ``instr``'s operands."""
    a = instr.attrs
    if instr.opcode == "while":
        return [("body", a["body"].lstrip("%")), ("condition", a["condition"].lstrip("%"))]
    if instr.opcode in ("call", "fusion", "async-start"):
        key = "to_apply" if "to_apply" in a else "calls"
        return [("call", a[key].lstrip("%"))] if key in a else []
    if instr.opcode == "conditional":
        if "branch_computations" in a:
            return [(f"branch{i}", n) for i, n in enumerate(_names(a["branch_computations"]))]
        return [("branch0", a["true_computation"].lstrip("%")), ("branch1", a["false_computation"].lstrip("%"))]
    return []


def _param_targets(comps: dict[str, _Comp], user: _Instr, k: int) -> list[tuple[str, str]]:
    """Where operand ``k`` of a call site arrives: ``(computation, parameter)``."""
    targets = []
    for role, callee in _callees(user):
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
    comps: dict[str, _Comp], callers: dict[str, list[tuple[str, _Instr, str]]],
    start: _Place, through: _Through,
) -> Iterator[tuple[str, _Instr, int]]:
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
                if user.opcode == "get-tuple-element" and _ints(user.attrs.get("index", ""))[:1] == [index]:
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


def _feeding(comps: dict[str, _Comp], callers: dict[str, list[tuple[str, _Instr, str]]]) -> set[tuple[str, str]]:
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
        todo += [(c, comps[c].root) for role, c in _callees(instr) if c in comps and role != "condition"]
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


def _shape_through(comp: _Comp, user: _Instr, k: int) -> bool:
    """Float values keep their scale: shape changes, converts, slices."""
    return user.opcode in _SHAPE_OPS or (user.opcode in ("dynamic-slice", "pad") and k == 0)


def _scalar(comp: _Comp, name: str) -> bool:
    """Whether ``name`` is a scalar, or a scalar broadcast (a scale factor)."""
    instr = comp.instrs.get(name)
    while instr is not None and instr.opcode in ("broadcast", "reshape", "convert", "copy", "bitcast"):
        instr = comp.instrs.get(instr.operands[0])
    return instr is not None and instr.dims == ()


def _positive_through(comp: _Comp, user: _Instr, k: int) -> bool:
    """Nonnegative values stay nonnegative: sums, scalings, reductions, shapes
    (not products of two arrays, which a gradient squared as ``(g * c) * g`` is)."""
    if user.opcode in ("multiply", "divide"):
        return k < 2 and _scalar(comp, user.operands[1 - k])
    if user.opcode == "reduce":
        return k < len(user.operands) // 2
    if user.opcode == "select":
        return k > 0
    return user.opcode == "add" or _shape_through(comp, user, k)


def _index_through(comp: _Comp, user: _Instr, k: int) -> bool:
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


def _dims(comp: _Comp, name: str) -> tuple[int, ...]:
    instr = comp.instrs.get(name)
    return instr.dims if instr is not None and instr.dims is not None else ()


def _fan_in(comp: _Comp, user: _Instr, k: int) -> int:
    """The fan-in of operand ``k`` of a dot or convolution (0: not a weight)."""
    dims = _dims(comp, user.operands[k])
    if user.opcode == "dot" and k < 2:
        contracting = _ints(user.attrs.get(("lhs" if k == 0 else "rhs") + "_contracting_dims", ""))
        return math.prod(dims[d] for d in contracting if d < len(dims))
    if user.opcode == "convolution" and k == 1 and "dim_labels" in user.attrs:
        kernel = user.attrs["dim_labels"].split("_")[1].split("->")[0]
        return math.prod(d for d, label in zip(dims, kernel) if label != "o")
    return 0


def _index_bound(comp: _Comp, user: _Instr, k: int) -> int:
    """How many start positions the indexed dimensions allow (0: not an index)."""
    a, op = user.attrs, user.opcode
    operand = _dims(comp, user.operands[0])
    if op == "gather" and k == 1:
        sizes = _ints(a.get("slice_sizes", ""))
        mapped = _ints(a.get("start_index_map", ""))
        return min((operand[d] - sizes[d] + 1 for d in mapped if d < min(len(operand), len(sizes))), default=0)
    if op == "scatter" and k == len(user.operands) // 2:
        update = _dims(comp, user.operands[-1])
        skipped = set(_ints(a.get("inserted_window_dims", ""))) | set(_ints(a.get("input_batching_dims", "")))
        window = [d for d in range(len(operand)) if d not in skipped]
        update_dims = _ints(a.get("update_window_dims", ""))
        bounds = []
        for d in _ints(a.get("scatter_dims_to_operand_dims", "")):
            size = 1
            if d in window and window.index(d) < len(update_dims) and update_dims[window.index(d)] < len(update):
                size = update[update_dims[window.index(d)]]
            if d < len(operand):
                bounds.append(operand[d] - size + 1)
        return min(bounds, default=0)
    if op == "dynamic-slice" and k >= 1:
        sizes = _ints(a.get("dynamic_slice_sizes", ""))
        d = k - 1
        return operand[d] - sizes[d] + 1 if d < min(len(operand), len(sizes)) else 0
    if op == "dynamic-update-slice" and k >= 2:
        update, d = _dims(comp, user.operands[1]), k - 2
        return operand[d] - update[d] + 1 if d < min(len(operand), len(update)) else 0
    return 0


def _source(comp: _Comp, name: str) -> _Instr | None:
    """The constant or iota behind broadcasts, reshapes and converts, if any."""
    instr = comp.instrs.get(name)
    while instr is not None and instr.opcode in ("broadcast", "reshape", "convert", "copy", "bitcast", "transpose"):
        instr = comp.instrs.get(instr.operands[0])
    return instr if instr is not None and instr.opcode in ("constant", "iota") else None


def _compared(comp: _Comp, user: _Instr, k: int) -> tuple[int | None, int | None]:
    """``(iota bound, constant)`` of a comparison of the value with an iota or a
    scalar integer constant (None where not)."""
    if user.opcode != "compare" or len(user.operands) != 2:
        return None, None
    other = _source(comp, user.operands[1 - k])
    if other is None:
        return None, None
    if other.opcode == "iota":
        axis = _ints(other.attrs.get("iota_dimension", "0"))[0]
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
    comps, entry = _parse(text)
    params = comps[entry].params
    if sorted(params) != list(range(len(shapes))):
        return plain
    callers = _callers(comps)

    def uses(i: int, through: _Through) -> list[tuple[_Comp, _Instr, int]]:
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


def _integer_rule(dtype: np.dtype, found: list[tuple[_Comp, _Instr, int]]) -> Rule:
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


# ----------------------------------------------------------------------- draws


#: What a draw's seed modulo 3 makes of it (``REGIMES[seed % 3]``): so that
#: every validation's 3 consecutive seeds see each once.
REGIMES = ("sensitive", "accumulators zero", "saturating")


def draw(parameter_rules: Sequence[Rule], shapes: Sequence[Shape], seed: int) -> list[np.ndarray]:
    """One argument per parameter, from ``rng([seed, i])`` for parameter ``i``.

    The seed's regime (``REGIMES[seed % 3]``): *sensitive* draws follow the
    rules; *accumulators zero* draws too, with accumulators zero (but the
    ``positive`` ones); *saturating* draws make floating point values uniform
    in [0, 1) (what validation drew before: activations grow, saturate, reach
    overflow and underflow guards), integers and booleans by their rules. Integer arrays of two elements or
    more hold both ends of their range (at positions drawn too), except in
    *accumulators zero* draws.
    """
    regime = REGIMES[seed % 3]
    arrays = []
    for i, (rule, (dtype, dims)) in enumerate(zip(parameter_rules, shapes)):
        dtype, dims = np.dtype(dtype), tuple(dims)
        rng = np.random.default_rng([seed, i])
        if rule.kind == "bool":
            value = rng.integers(0, 2, dims).astype(np.bool_)
            if value.size == 1:
                value[...] = (seed + i) % 2 == 1
            elif value.size > 1 and (value.all() or not value.any()):
                value.flat[int(rng.integers(value.size))] ^= True
            arrays.append(value)
        elif rule.kind in ("integers", "values"):
            if rule.kind == "values":
                ints = np.asarray(rng.choice(np.array(rule.values, np.int64), dims))
                ends = (rule.values[0], rule.values[-1])
            else:
                ints = np.asarray(rng.integers(rule.low, rule.high, dims, dtype=np.int64))
                ends = (rule.low, rule.high - 1)
            if regime != "accumulators zero" and ints.size > 1:
                first, last = rng.choice(ints.size, 2, replace=False)
                ints.flat[first], ints.flat[last] = ends
            arrays.append(ints.astype(dtype))
        elif regime == "accumulators zero" and rule.accumulator and rule.kind != "positive":
            arrays.append(np.zeros(dims, dtype))
        elif regime == "saturating":
            if np.issubdtype(dtype, np.complexfloating):
                arrays.append((rng.random(dims) + 1j * rng.random(dims)).astype(dtype))
            else:
                arrays.append(rng.random(dims).astype(dtype))
        elif np.issubdtype(dtype, np.complexfloating):
            parts = rng.standard_normal((2, *dims)) * (rule.scale / math.sqrt(2))
            arrays.append((parts[0] + 1j * parts[1]).astype(dtype))
        else:
            normal = rng.standard_normal(dims) * rule.scale
            arrays.append((np.abs(normal) if rule.kind == "positive" else normal).astype(dtype))
    return arrays


def draws(text: str, shapes: Sequence[Shape], seed: int, count: int = DRAWS) -> list[list[np.ndarray]]:
    """``count`` draws for the module ``text``: seeds ``seed`` .. ``seed + count - 1``."""
    parameter_rules = rules(text, shapes)
    return [draw(parameter_rules, shapes, seed + k) for k in range(count)]
