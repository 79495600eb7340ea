"""The ``HloGraph`` observation: an HLO module as a node-link graph (no jax).

The worker (``observe.py``) reads each instruction's name, opcode, operands
and text from jaxlib's ``HloModule``; this module turns them into a JSON
node-link graph that CompilerGym's client decodes into a
``networkx.MultiDiGraph`` (format ``json://networkx/MultiDiGraph``).

Schema (also in the README):

- one node per instruction, in module order, ``id`` = position; attributes
  ``name``, ``opcode``, ``opcode_index`` (in ``xla_service.catalog.opcodes.OPCODES``),
  ``dtype`` (HLO element type, ``tuple`` or ``token``), ``shape`` (list of
  dimensions; ``[]`` for scalars and tuples), ``elements`` (product of the
  dimensions; 0 for tuples and tokens), ``computation`` (name),
  ``computation_index``, ``entry`` (in the entry computation), ``root`` (is
  its computation's root), ``parameter_number`` (-1 unless a parameter);
- edges with ``flow`` one of ``schema.EDGE_FLOWS`` and ``position``:
  ``operand`` from each operand to its user, ``position`` the operand index;
  ``call`` from an instruction to each parameter of a computation it calls,
  ``position`` the parameter number; ``return`` from the root of a called
  computation to the caller, ``position`` the computation's index among the
  caller's called computations. Call and return edges carry ``via``, the
  attribute that names the computation (``to_apply``, ``body``, ...).
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from xla_service.catalog.opcodes import OPCODE_INDEX
from xla_service.catalog.schema import (
    DTYPES,
    EDGE_FLOWS,
    GRAPH_ARRAYS_MAGIC,
    GRAPH_EDGE_COLUMNS,
    GRAPH_NODE_COLUMNS,
)

__all__ = ["InstructionRecord", "build_graph", "entry_and_roots", "parse_shape", "pack"]

_CALL_KEYS = (
    "to_apply|calls|body|condition|true_computation|false_computation"
    "|branch_computations|called_computations"
)
_CALL = re.compile(r"\b(" + _CALL_KEYS + r")=(\{[^}]*\}|%?[^\s,{}()]+)")
_PARAMETER = re.compile(r"\bparameter\((\d+)\)")
_ARRAY = re.compile(r"^([a-z][a-z0-9]*)\[([^\]]*)\]")
_ENTRY = re.compile(r"^ENTRY %?([^\s{(]+)", re.M)
_ROOT = re.compile(r"^\s*ROOT %?([^\s=]+)\s*=", re.M)


@dataclass(frozen=True)
class InstructionRecord:
    """What the worker reads of one instruction."""

    computation: str
    name: str
    opcode: str
    text: str
    operands: tuple[str, ...]


def parse_shape(shape: str) -> tuple[str, list[int]]:
    """``("f32", [8, 16])`` from ``f32[8,16]{1,0}``; tuples and tokens have no dims."""
    shape = shape.strip()
    if shape.startswith("("):
        return "tuple", []
    m = _ARRAY.match(shape)
    if m is None:
        return "other", []
    dims = [int(d.strip().lstrip("<=")) for d in m[2].split(",") if d.strip()]
    return m[1], dims


def entry_and_roots(text: str) -> tuple[str | None, set[str]]:
    """The entry computation's name and the root instructions' names, from HLO text."""
    m = _ENTRY.search(text)
    return (m[1] if m else None), set(_ROOT.findall(text))


def _shape_text(record: InstructionRecord) -> str:
    body = record.text.partition(" = ")[2]
    end = body.find(f" {record.opcode}(")
    return body[:end] if end >= 0 else body.split(" ", 1)[0]


def _called(text: str) -> list[tuple[str, str]]:
    """``(attribute, computation name)`` for each computation ``text`` names."""
    out: list[tuple[str, str]] = []
    for m in _CALL.finditer(text.partition(" = ")[2]):
        value = m[2]
        names = value[1:-1].split(",") if value.startswith("{") else [value]
        out.extend((m[1], n.strip().lstrip("%")) for n in names if n.strip())
    return out


def build_graph(
    records: Sequence[InstructionRecord], entry: str | None, roots: set[str]
) -> dict[str, Any]:
    """The node-link dict (networkx's ``node_link_data`` layout) of a module."""
    ids = {r.name: i for i, r in enumerate(records)}
    computations: dict[str, int] = {}
    parameters: dict[str, dict[int, int]] = {}
    root_of: dict[str, int] = {}
    nodes = []
    for i, r in enumerate(records):
        index = computations.setdefault(r.computation, len(computations))
        dtype, dims = parse_shape(_shape_text(r))
        elements = 0 if dtype in ("tuple", "token") else _product(dims)
        number = -1
        if r.opcode == "parameter":
            m = _PARAMETER.search(r.text)
            number = int(m[1]) if m else -1
            parameters.setdefault(r.computation, {})[number] = i
        if r.name in roots:
            root_of[r.computation] = i
        nodes.append(
            {
                "id": i,
                "name": r.name,
                "opcode": r.opcode,
                "opcode_index": OPCODE_INDEX.get(r.opcode, -1),
                "dtype": dtype,
                "shape": dims,
                "elements": elements,
                "computation": r.computation,
                "computation_index": index,
                "entry": r.computation == entry,
                "root": r.name in roots,
                "parameter_number": number,
            }
        )
    edges: list[dict[str, Any]] = []
    keys: dict[tuple[int, int], int] = {}

    def edge(source: int, target: int, **attributes: Any) -> None:
        key = keys.get((source, target), 0)
        keys[(source, target)] = key + 1
        edges.append({"source": source, "target": target, "key": key, **attributes})

    for i, r in enumerate(records):
        for position, operand in enumerate(r.operands):
            if operand in ids:
                edge(ids[operand], i, flow="operand", position=position)
        for position, (via, callee) in enumerate(_called(r.text)):
            for number, parameter in sorted(parameters.get(callee, {}).items()):
                edge(i, parameter, flow="call", position=number, via=via)
            if callee in root_of:
                edge(root_of[callee], i, flow="return", position=position, via=via)
    return {
        "directed": True,
        "multigraph": True,
        "graph": {"computations": list(computations), "entry": entry},
        "nodes": nodes,
        "edges": edges,
    }


def _product(dims: Sequence[int]) -> int:
    total = 1
    for d in dims:
        total *= d
    return total


_DTYPE_INDEX = {name: i for i, name in enumerate(DTYPES)}
_FLOW_INDEX = {name: i for i, name in enumerate(EDGE_FLOWS)}


def pack(graph: dict[str, Any]) -> bytes:
    """A node-link graph of :func:`build_graph` as ``HloGraphArrays`` bytes: the magic,
    the node and edge counts, then int64 tables of ``schema.GRAPH_NODE_COLUMNS`` and
    ``schema.GRAPH_EDGE_COLUMNS`` (decoded without JSON by ``env/graph.unpack``)."""
    nodes = np.array(
        [
            (
                n["opcode_index"],
                _DTYPE_INDEX.get(n["dtype"], _DTYPE_INDEX["other"]),
                len(n["shape"]),
                n["elements"],
                n["entry"],
                n["root"],
                n["parameter_number"],
                n["computation_index"],
            )
            for n in graph["nodes"]
        ],
        dtype="<i8",
    ).reshape(-1, len(GRAPH_NODE_COLUMNS))
    edges = np.array(
        [(e["source"], e["target"], _FLOW_INDEX[e["flow"]], e["position"]) for e in graph["edges"]],
        dtype="<i8",
    ).reshape(-1, len(GRAPH_EDGE_COLUMNS))
    header = GRAPH_ARRAYS_MAGIC + np.array([len(nodes), len(edges)], dtype="<i8").tobytes()
    return header + nodes.tobytes() + edges.tobytes()
