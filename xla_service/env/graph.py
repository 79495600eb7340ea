"""``HloGraph`` observations as the arrays a GNN library takes (NumPy only, no jax).

>>> graph = env.observation["HloGraph"]          # a networkx.MultiDiGraph
>>> arrays = graph_to_arrays(graph)
>>> arrays.node_features.shape, arrays.edge_index.shape
((N, NODE_FEATURES), (2, E))

E.g. PyTorch Geometric: ``Data(x=torch.from_numpy(arrays.node_features),
edge_index=torch.from_numpy(arrays.edge_index),
edge_type=torch.from_numpy(arrays.edge_type))``. The graph schema is in
``xla_service/passes/hlo_graph.py`` and the README.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from xla_service.catalog.opcodes import OPCODES
from xla_service.catalog.schema import (
    DTYPES,
    EDGE_FLOWS,
    GRAPH_ARRAYS_MAGIC,
    GRAPH_EDGE_COLUMNS,
    GRAPH_NODE_COLUMNS,
)

__all__ = ["GraphArrays", "graph_to_arrays", "unpack", "NODE_FEATURES", "NODE_FEATURE_NAMES"]

_DTYPE_INDEX = {name: i for i, name in enumerate(DTYPES)}
_FLOW_INDEX = {name: i for i, name in enumerate(EDGE_FLOWS)}

#: Column names of ``GraphArrays.node_features``, in order.
NODE_FEATURE_NAMES: tuple[str, ...] = (
    *(f"opcode={name}" for name in OPCODES),
    *(f"dtype={name}" for name in DTYPES),
    "rank",
    "log1p_elements",
    "entry",
    "root",
    "parameter",
)
NODE_FEATURES = len(NODE_FEATURE_NAMES)


@dataclass(frozen=True)
class GraphArrays:
    """A graph as arrays: nodes in ``id`` order."""

    #: float32 [N, NODE_FEATURES]: one-hot opcode, one-hot dtype, rank,
    #: log(1 + elements), and 0/1 for entry computation, root, parameter.
    node_features: np.ndarray
    #: int64 [2, E]: source and target node of each edge.
    edge_index: np.ndarray
    #: int64 [E]: index of the edge's ``flow`` in ``schema.EDGE_FLOWS``.
    edge_type: np.ndarray
    #: int64 [E]: the edge's ``position`` (operand index, parameter number, ...).
    edge_position: np.ndarray


NodeLink = dict[str, Any]


def _node_link(graph: Any | NodeLink | str | bytes) -> tuple[list[NodeLink], list[NodeLink]]:
    """(nodes, edges) of a networkx graph, a node-link dict or its JSON."""
    if isinstance(graph, (str, bytes)):
        graph = json.loads(graph)
    if isinstance(graph, Mapping):
        return list(graph["nodes"]), list(graph.get("edges") or graph.get("links") or [])
    if not callable(getattr(graph, "nodes", None)):
        raise TypeError(
            f"Expected a networkx graph, a node-link dict or JSON, got {type(graph).__name__}"
        )
    nodes = [{"id": n, **data} for n, data in graph.nodes(data=True)]
    edges = [{"source": u, "target": v, **data} for u, v, data in graph.edges(data=True)]
    return nodes, edges


def _column(values: Iterable[float]) -> np.ndarray:
    return np.fromiter(values, dtype=np.float32)


def graph_to_arrays(graph: Any | NodeLink | str | bytes) -> GraphArrays:
    """Node features, ``edge_index`` and edge types of an ``HloGraph`` observation."""
    nodes, edges = _node_link(graph)
    nodes.sort(key=lambda n: n["id"])
    position = {n["id"]: i for i, n in enumerate(nodes)}
    count = len(nodes)
    features = np.zeros((count, NODE_FEATURES), dtype=np.float32)
    rows = np.arange(count)
    opcodes = [int(n["opcode_index"]) for n in nodes]
    if any(not 0 <= o < len(OPCODES) for o in opcodes):
        raise ValueError(f"Expected opcode indices in [0, {len(OPCODES)}), got {opcodes}")
    features[rows, opcodes] = 1.0
    dtypes = [_DTYPE_INDEX.get(n["dtype"], _DTYPE_INDEX["other"]) for n in nodes]
    features[rows, len(OPCODES) + np.asarray(dtypes, dtype=np.int64)] = 1.0
    base = len(OPCODES) + len(DTYPES)
    features[:, base] = _column(len(n["shape"]) for n in nodes)
    features[:, base + 1] = np.log1p(_column(n["elements"] for n in nodes))
    features[:, base + 2] = _column(bool(n["entry"]) for n in nodes)
    features[:, base + 3] = _column(bool(n["root"]) for n in nodes)
    features[:, base + 4] = _column(n["opcode"] == "parameter" for n in nodes)
    edge_index = np.array(
        [[position[e["source"]] for e in edges], [position[e["target"]] for e in edges]],
        dtype=np.int64,
    ).reshape(2, len(edges))
    edge_type = np.array([_FLOW_INDEX[e["flow"]] for e in edges], dtype=np.int64)
    edge_position = np.array([int(e["position"]) for e in edges], dtype=np.int64)
    return GraphArrays(features, edge_index, edge_type, edge_position)


def unpack(data: bytes | np.ndarray) -> GraphArrays:
    """The ``HloGraphArrays`` observation (packed by the worker) as :class:`GraphArrays`:
    the same arrays as :func:`graph_to_arrays` of ``HloGraph``, without JSON or networkx."""
    raw = data.tobytes() if isinstance(data, np.ndarray) else bytes(data)
    magic = len(GRAPH_ARRAYS_MAGIC)
    if raw[:magic] != GRAPH_ARRAYS_MAGIC:
        raise ValueError(f"Expected HloGraphArrays bytes (starting {GRAPH_ARRAYS_MAGIC!r}), got {raw[:magic]!r}")
    count, edge_count = np.frombuffer(raw, dtype="<i8", count=2, offset=magic)
    nodes = np.frombuffer(raw, dtype="<i8", count=int(count) * len(GRAPH_NODE_COLUMNS), offset=magic + 16)
    nodes = nodes.reshape(int(count), len(GRAPH_NODE_COLUMNS))
    edges = np.frombuffer(
        raw, dtype="<i8", count=int(edge_count) * len(GRAPH_EDGE_COLUMNS), offset=magic + 16 + nodes.nbytes
    ).reshape(int(edge_count), len(GRAPH_EDGE_COLUMNS))
    column = {name: i for i, name in enumerate(GRAPH_NODE_COLUMNS)}
    features = np.zeros((int(count), NODE_FEATURES), dtype=np.float32)
    rows = np.arange(int(count))
    features[rows, nodes[:, column["opcode_index"]]] = 1.0
    features[rows, len(OPCODES) + nodes[:, column["dtype_index"]]] = 1.0
    base = len(OPCODES) + len(DTYPES)
    features[:, base] = nodes[:, column["rank"]]
    features[:, base + 1] = np.log1p(nodes[:, column["elements"]].astype(np.float64))
    features[:, base + 2] = nodes[:, column["entry"]]
    features[:, base + 3] = nodes[:, column["root"]]
    features[:, base + 4] = nodes[:, column["parameter_number"]] >= 0
    return GraphArrays(
        features,
        np.ascontiguousarray(edges[:, :2].T),
        np.ascontiguousarray(edges[:, 2]),
        np.ascontiguousarray(edges[:, 3]),
    )
