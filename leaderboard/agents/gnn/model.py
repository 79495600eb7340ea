"""The graph agent's network: GATv2 layers over ``HloGraph``, an attention readout, two heads.

X-RLflow's agent on HLO: node embeddings are updated through the edges by
several GATv2 layers, a global attention layer pools them into one graph
embedding, and a policy head (the 64 passes and a stop action, X-RLflow's
No-Op) and a value head read it.

- **Nodes** (:func:`to_data`, from ``xla_service.env.graph.GraphArrays``):
  an opcode embedding (133 opcodes), a dtype embedding, and a linear map of
  the shape and position features ``rank / 4``, ``log1p(elements) / 10``,
  ``entry``, ``root``, ``parameter``.
- **Edges**: an embedding of the flow (``operand``, ``call``, ``return``;
  with ``bidirectional``, each edge also runs backwards as a 4th-6th type,
  so information flows from users to operands too) plus an embedding of the
  position (operand index, parameter number, ...; clipped to
  ``max_position - 1``), fed to GATv2's attention as edge features.
- **Layers**: ``layers`` x (GATv2, ``heads`` heads, residual, LayerNorm, ELU).
- **Readout**: ``AttentionalAggregation`` (a gate scores each node, a
  softmax over the graph's nodes weighs them), with ``log1p`` of the node
  count appended (the weighted mean cannot see size).
- **Heads**: two-layer MLPs to ``actions`` logits and to one value.

Large graphs: ``to_data(..., max_nodes=N)`` keeps at most N nodes (the
entry computation first, nearest the root first; then the called
computations, the same way) and the edges between them. 0 keeps every node:
the largest bundled test graph (ResNet-50, 7,348 nodes) fits
(``benchmarks/measure_gnn.py``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch_geometric.data import Batch, Data
from torch_geometric.nn import GATv2Conv
from torch_geometric.nn.aggr import AttentionalAggregation

from xla_service.catalog.opcodes import OPCODES
from xla_service.catalog.passes import PASS_NAMES
from xla_service.catalog.schema import DTYPES, EDGE_FLOWS
from xla_service.env.graph import GraphArrays

__all__ = ["ACTIONS", "GnnConfig", "GnnActorCritic", "batch", "masked_logits", "to_data"]

#: The 64 passes and the stop action (the Gymnasium env's ``stop_action=True``).
ACTIONS = len(PASS_NAMES) + 1
_OPS, _DTYPES = len(OPCODES), len(DTYPES)
#: Scale of the numeric node features (rank, log1p elements, entry, root, parameter).
_NUMERIC_SCALE = (0.25, 0.1, 1.0, 1.0, 1.0)


def to_data(arrays: GraphArrays, max_nodes: int = 0) -> Data:
    """A compact PyG ``Data`` of one graph: index columns instead of one-hot (``max_nodes``: the cap)."""
    if max_nodes < 0:
        raise ValueError(f"Expected max_nodes >= 0, got {max_nodes}")
    features = arrays.node_features
    count = features.shape[0]
    edge_index, edge_type, edge_position = arrays.edge_index, arrays.edge_type, arrays.edge_position
    if max_nodes and count > max_nodes:
        outside_entry = features[:, _OPS + _DTYPES + 2] == 0
        order = np.lexsort((-np.arange(count), outside_entry))  # entry first, then by id, last first
        keep = np.sort(order[:max_nodes])
        new_id = np.full(count, -1, dtype=np.int64)
        new_id[keep] = np.arange(len(keep))
        inside = (new_id[edge_index[0]] >= 0) & (new_id[edge_index[1]] >= 0)
        edge_index = new_id[edge_index[:, inside]]
        edge_type, edge_position = edge_type[inside], edge_position[inside]
        features, count = features[keep], len(keep)
    numeric = features[:, _OPS + _DTYPES :] * np.asarray(_NUMERIC_SCALE, dtype=np.float32)
    return Data(
        opcode=torch.from_numpy(features[:, :_OPS].argmax(axis=1)),
        dtype=torch.from_numpy(features[:, _OPS : _OPS + _DTYPES].argmax(axis=1)),
        numeric=torch.from_numpy(np.ascontiguousarray(numeric, dtype=np.float32)),
        edge_index=torch.from_numpy(np.ascontiguousarray(edge_index, dtype=np.int64)),
        edge_type=torch.from_numpy(np.ascontiguousarray(edge_type, dtype=np.int64)),
        edge_position=torch.from_numpy(np.ascontiguousarray(edge_position, dtype=np.int64)),
        num_nodes=count,
    )


def batch(graphs: list[Data]) -> Batch:
    """Graphs as one disjoint PyG ``Batch`` (``batch.batch`` maps nodes to graphs)."""
    return Batch.from_data_list(graphs)


def masked_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``logits`` with the actions whose ``mask`` is 0 made (practically) impossible."""
    return logits.masked_fill(mask == 0, -1e8)


@dataclass(frozen=True)
class GnnConfig:
    """The network's shape (saved with every checkpoint)."""

    hidden: int = 64
    layers: int = 3
    heads: int = 4
    max_position: int = 8
    bidirectional: bool = True
    actions: int = ACTIONS


def _mlp(inputs: int, hidden: int, outputs: int, gain: float | None = None) -> nn.Sequential:
    """Linear, tanh, linear; ``gain``: orthogonal init of the last layer with zero bias."""
    last = nn.Linear(hidden, outputs)
    if gain is not None:
        nn.init.orthogonal_(last.weight, gain=gain)
        nn.init.zeros_(last.bias)
    return nn.Sequential(nn.Linear(inputs, hidden), nn.Tanh(), last)


class GnnActorCritic(nn.Module):
    """``forward(batch) -> (logits [B, actions], value [B])`` (see the module docstring)."""

    def __init__(self, config: GnnConfig = GnnConfig()) -> None:
        super().__init__()
        if config.hidden % config.heads:
            raise ValueError(f"Expected hidden ({config.hidden}) divisible by heads ({config.heads})")
        self.config = h = config
        self.opcode = nn.Embedding(_OPS, h.hidden)
        self.dtype = nn.Embedding(_DTYPES, h.hidden)
        self.numeric = nn.Linear(len(_NUMERIC_SCALE), h.hidden)
        self.edge_type = nn.Embedding(2 * len(EDGE_FLOWS), h.hidden)
        self.edge_position = nn.Embedding(h.max_position, h.hidden)
        self.convs = nn.ModuleList(
            GATv2Conv(h.hidden, h.hidden // h.heads, heads=h.heads, edge_dim=h.hidden, fill_value="mean")
            for _ in range(h.layers)
        )
        self.norms = nn.ModuleList(nn.LayerNorm(h.hidden) for _ in range(h.layers))
        self.readout = AttentionalAggregation(
            gate_nn=_mlp(h.hidden, h.hidden, 1), nn=nn.Linear(h.hidden, h.hidden)
        )
        self.policy = _mlp(h.hidden + 1, h.hidden, h.actions, gain=0.01)  # CleanRL: near-uniform at first
        self.value = _mlp(h.hidden + 1, h.hidden, 1, gain=1.0)

    def embed(self, graphs: Batch) -> torch.Tensor:
        """The graph embeddings [B, hidden + 1]."""
        x = self.opcode(graphs.opcode) + self.dtype(graphs.dtype) + self.numeric(graphs.numeric)
        edge_index, edge_type = graphs.edge_index, graphs.edge_type
        position = graphs.edge_position.clamp(0, self.config.max_position - 1)
        if self.config.bidirectional:
            edge_index = torch.cat([edge_index, edge_index.flip(0)], dim=1)
            edge_type = torch.cat([edge_type, edge_type + len(EDGE_FLOWS)])
            position = torch.cat([position, position])
        edge_attr = self.edge_type(edge_type) + self.edge_position(position)
        for conv, norm in zip(self.convs, self.norms):
            x = nn.functional.elu(norm(x + conv(x, edge_index, edge_attr)))
        size = int(graphs.num_graphs)
        pooled = self.readout(x, graphs.batch, dim_size=size)
        nodes = torch.bincount(graphs.batch, minlength=size).to(x.dtype)
        return torch.cat([pooled, torch.log1p(nodes).unsqueeze(1)], dim=1)

    def forward(self, graphs: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        embedding = self.embed(graphs)
        return self.policy(embedding), self.value(embedding).squeeze(-1)
