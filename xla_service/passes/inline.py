"""Inline every ``call`` of a normalized HLO module, as text (no jax).

The op count rule (``schema.OP_COUNT_RULE``) counts a module as XLA's own
``flatten-call-graph`` and ``call-inliner`` leave it: every call site with its
own copy of the callee. Running those passes costs a partial compile per
state; :func:`inline_calls` produces the same module up to names and the
folding that normalization does anyway (a ``get-tuple-element`` of an inlined
``tuple``, a ``reshape`` of a ``reshape``), so one HLO -> StableHLO -> HLO trip
of its result counts the same (``tests/passes/test_op_count_rule.py`` holds
it against XLA's passes on every bundled family).

Only the textual form of normalized modules is understood (``as_hlo_text``:
``[ROOT] name = shape opcode(operands), attributes``); anything else raises
:class:`InlineError`, and the caller falls back on XLA's passes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

__all__ = ["InlineError", "inline_calls", "inlinable"]

_HEADER = re.compile(r"^(ENTRY )?(\S+)(?: .*)? \{$")
_TO_APPLY = re.compile(r"\bto_apply=([^\s,{}()]+)")
_CONTROL = re.compile(r"\bcontrol-predecessors=\{([^}]*)\}")
_PARAMETER_NUMBER = re.compile(r"^\s*(\d+)\s*$")
#: Calls that XLA's call-inliner leaves alone (composites, explicit no-inline):
#: a module holding one is counted through XLA's passes instead.
_NOT_INLINED = re.compile(r'is_composite|composite\.|inlineable="?false')


class InlineError(ValueError):
    """Text that :func:`inline_calls` does not understand."""


@dataclass(frozen=True)
class _Instruction:
    root: bool
    name: str
    shape: str
    opcode: str
    operands: tuple[str, ...]
    #: The operand text of an instruction whose operands are not names (constant, parameter).
    literal: str | None
    attributes: str

    def text(self) -> str:
        inside = self.literal if self.literal is not None else ", ".join(self.operands)
        root = "ROOT " if self.root else ""
        return f"  {root}{self.name} = {self.shape} {self.opcode}({inside}){self.attributes}"


def _closing(text: str, start: int) -> int:
    """The index of the parenthesis closing the one opened just before ``start``."""
    depth = 1
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    raise InlineError(f"unbalanced parentheses in {text[:80]!r}")


def _instruction(line: str) -> _Instruction:
    body = line.strip()
    root = body.startswith("ROOT ")
    body = body[5:] if root else body
    name, sep, rest = body.partition(" = ")
    if not sep or " " in name:
        raise InlineError(f"not an instruction: {line[:80]!r}")
    if rest.startswith("("):
        end = _closing(rest, 1)
        shape, rest = rest[: end + 1], rest[end + 2 :]
    else:
        shape, _, rest = rest.partition(" ")
    opcode, paren, rest = rest.partition("(")
    if not paren or not opcode:
        raise InlineError(f"no opcode in {line[:80]!r}")
    end = _closing(rest, 0)
    inside, attributes = rest[:end], rest[end + 1 :]
    if opcode in ("constant", "parameter", "iota", "rng-get-and-update-state"):
        return _Instruction(root, name, shape, opcode, (), inside, attributes)
    operands = tuple(o.strip() for o in inside.split(",")) if inside.strip() else ()
    return _Instruction(root, name, shape, opcode, operands, None, attributes)


def _parse(text: str) -> tuple[list[str], dict[str, list[_Instruction]], list[str], str, list[str]]:
    """(module header lines, computations by name, their order, the entry, their header lines)."""
    lines = text.splitlines()
    head: list[str] = []
    computations: dict[str, list[_Instruction]] = {}
    order: list[str] = []
    headers: list[str] = []
    entry = ""
    current: str | None = None
    for line in lines:
        if not line.strip():
            continue
        m = _HEADER.match(line)
        if m:
            current = m.group(2)
            computations[current] = []
            order.append(current)
            headers.append(line)
            entry = current if m.group(1) else entry
        elif line.strip() == "}":
            current = None
        elif current is None:
            head.append(line)
        else:
            computations[current].append(_instruction(line))
    if not entry:
        raise InlineError("no ENTRY computation")
    return head, computations, order, entry, headers


def inlinable(text: str) -> bool:
    """Whether every ``call`` of ``text`` is one that XLA's call-inliner inlines."""
    return not any(
        " call(" in line and _NOT_INLINED.search(line) for line in text.splitlines()
    )


def inline_calls(text: str) -> str:
    """``text`` with every ``call`` replaced by a copy of its callee's body.

    Parameters of an inlined copy become the call's operands, its root takes
    the call's name; callees that nothing else references are dropped.
    Raises :class:`InlineError` on text it does not understand.
    """
    head, computations, order, entry, headers = _parse(text)
    inlined: dict[str, list[_Instruction]] = {}
    call_targets: set[str] = set()
    other_targets: set[str] = set()
    for instructions in computations.values():
        for ins in instructions:
            targets = _TO_APPLY.findall(ins.attributes)
            (call_targets if ins.opcode == "call" else other_targets).update(targets)

    def body(name: str, path: tuple[str, ...] = ()) -> list[_Instruction]:
        if name in inlined:
            return inlined[name]
        if name not in computations:
            raise InlineError(f"call of an unknown computation {name!r}")
        if name in path:
            raise InlineError(f"recursive call of {name!r}")
        out: list[_Instruction] = []
        alias: dict[str, str] = {}
        for ins in computations[name]:
            ins = _renamed(ins, alias)
            if ins.opcode != "call":
                out.append(ins)
                continue
            (callee,) = _TO_APPLY.findall(ins.attributes) or (None,)
            if callee is None:
                raise InlineError(f"call without to_apply: {ins.name}")
            copy, result = _copy(body(callee, path + (name,)), ins)
            out.extend(copy)
            if result != ins.name:  # the callee returns one of its parameters
                alias[ins.name] = result
                if ins.root:
                    out.append(_Instruction(True, ins.name, ins.shape, "copy", (result,), None, ""))
        inlined[name] = out
        return out

    lines = list(head)
    for name, header in zip(order, headers):
        if name in call_targets and name not in other_targets and name != entry:
            continue
        lines.append(header)
        lines.extend(ins.text() for ins in body(name))
        lines.append("}")
        lines.append("")
    return "\n".join(lines)


def _renamed(ins: _Instruction, mapping: dict[str, str]) -> _Instruction:
    """``ins`` with its operand (and control predecessor) names mapped."""
    if not mapping:
        return ins
    operands = tuple(mapping.get(o, o) for o in ins.operands)
    attributes = ins.attributes
    if "control-predecessors=" in attributes:
        attributes = _CONTROL.sub(
            lambda m: "control-predecessors={"
            + ", ".join(mapping.get(n.strip(), n.strip()) for n in m.group(1).split(",") if n.strip())
            + "}",
            attributes,
        )
    return replace(ins, operands=operands, attributes=attributes)


def _copy(callee: list[_Instruction], call: _Instruction) -> tuple[list[_Instruction], str]:
    """A renamed copy of ``callee`` for ``call``, and the name that holds its result."""
    mapping: dict[str, str] = {}
    copy: list[_Instruction] = []
    result = ""
    for ins in callee:
        if ins.opcode == "parameter":
            m = _PARAMETER_NUMBER.match(ins.literal or "")
            if m is None or int(m.group(1)) >= len(call.operands):
                raise InlineError(f"parameter {ins.literal!r} of a call with {len(call.operands)} operands")
            mapping[ins.name] = call.operands[int(m.group(1))]
            if ins.root:
                result = mapping[ins.name]
            continue
        mapping[ins.name] = call.name if ins.root else f"{call.name}.inlined.{ins.name}"
        copy.append(replace(_renamed(ins, mapping), root=ins.root and call.root, name=mapping[ins.name]))
        if ins.root:
            result = call.name
    if not result:
        raise InlineError(f"callee of {call.name} has no ROOT")
    return copy, result
