"""Module features for the cost model, from observations the env already gives.

A module's feature vector is ``log1p`` of its ``OpcodeCounts`` (133 opcodes),
of its ``CostAnalysis`` (flops, transcendentals, bytes accessed, optimal
seconds) and of its ``OpCount``. The cost model sees it relative to the
benchmark as loaded (``features(module) - features(initial)``): it predicts a
runtime relative to the initial runtime, so the features say what the passes
changed. ``graph=True`` appends four features of the ``HloGraphArrays``
observation: ``log1p`` of the operand edges, of the longest chain of operand
edges (the critical path, which bounds how much of the module can run in
parallel), of all nodes' elements and of the largest node's.
"""
from __future__ import annotations

import numpy as np
from compiler_gym.envs import CompilerEnv

from xla_service.catalog.opcodes import OPCODES

__all__ = ["FEATURE_NAMES", "GRAPH_FEATURE_NAMES", "critical_path", "graph_features", "module_features", "relative_features"]

FEATURE_NAMES: tuple[str, ...] = (
    *(f"opcode:{name}" for name in OPCODES),
    "cost:flops",
    "cost:transcendentals",
    "cost:bytes_accessed",
    "cost:optimal_seconds",
    "op_count",
)
GRAPH_FEATURE_NAMES: tuple[str, ...] = ("graph:operand_edges", "graph:critical_path", "graph:elements", "graph:max_elements")


def module_features(env: CompilerEnv, graph: bool = False) -> np.ndarray:
    """The feature vector of the env's current module (float64, ``len(FEATURE_NAMES)``,
    plus ``len(GRAPH_FEATURE_NAMES)`` with ``graph``)."""
    counts = np.asarray(env.observation["OpcodeCounts"], dtype=np.float64)
    cost = np.asarray(env.observation["CostAnalysis"], dtype=np.float64)
    op_count = float(env.observation["OpCount"])
    raw = np.concatenate([counts, np.maximum(cost, 0.0), [op_count]])
    if raw.shape != (len(FEATURE_NAMES),):
        raise ValueError(f"expected {len(FEATURE_NAMES)} features, got {raw.shape}")
    return np.concatenate([np.log1p(raw), graph_features(env)]) if graph else np.log1p(raw)


def graph_features(env: CompilerEnv) -> np.ndarray:
    """``log1p`` of the ``GRAPH_FEATURE_NAMES`` of the env's current module."""
    from xla_service.env.graph import NODE_FEATURE_NAMES, unpack

    arrays = unpack(np.asarray(env.observation["HloGraphArrays"]))
    operand = arrays.edge_index[:, arrays.edge_type == 0]  # schema.EDGE_FLOWS[0] == "operand"
    elements = np.expm1(arrays.node_features[:, NODE_FEATURE_NAMES.index("log1p_elements")].astype(np.float64))
    n = arrays.node_features.shape[0]
    raw = [operand.shape[1], critical_path(operand, n), elements.sum(), elements.max(initial=0.0)]
    return np.log1p(np.asarray(raw, dtype=np.float64))


def critical_path(edges: np.ndarray, n: int) -> int:
    """Edges on the longest path of a DAG with nodes ``0..n-1`` and edges ``edges`` (2 x E)."""
    edges = np.asarray(edges, dtype=np.int64).reshape(2, -1)
    if edges.size and (edges.min() < 0 or edges.max() >= n):
        raise ValueError(f"edge endpoints must be in [0, {n})")
    users: list[list[int]] = [[] for _ in range(n)]
    indegree = np.zeros(n, dtype=np.int64)
    for src, dst in edges.T.tolist():
        users[src].append(dst)
        indegree[dst] += 1
    depth = np.zeros(n, dtype=np.int64)
    ready = [int(i) for i in np.flatnonzero(indegree == 0)]
    done = 0
    while ready:  # Kahn's order: a node's depth is final when it is ready
        node = ready.pop()
        done += 1
        for user in users[node]:
            depth[user] = max(depth[user], depth[node] + 1)
            indegree[user] -= 1
            if indegree[user] == 0:
                ready.append(user)
    if done < n:
        raise ValueError("the graph has a cycle")
    return int(depth.max(initial=0))


def relative_features(features: np.ndarray, initial: np.ndarray) -> np.ndarray:
    """Features of one module (or rows of modules) against the benchmark as loaded."""
    features = np.asarray(features, dtype=np.float64)
    initial = np.asarray(initial, dtype=np.float64)
    if features.shape[-1] != initial.shape[-1]:
        raise ValueError(f"feature widths differ: {features.shape} vs {initial.shape}")
    return features - initial
