"""The HloGraph builder and its GNN arrays, on hand-made instruction records (no jax)."""
from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest

from xla_service.catalog.opcodes import OPCODE_INDEX, OPCODES
from xla_service.catalog.schema import DTYPES, EDGE_FLOWS
from xla_service.env.graph import NODE_FEATURE_NAMES, NODE_FEATURES, graph_to_arrays
from xla_service.passes.hlo_graph import (
    InstructionRecord,
    build_graph,
    entry_and_roots,
    parse_shape,
)

TEXT = """HloModule m

add.0 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY main.1 {
  p = f32[4,2]{1,0} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[2]{0} reduce(p, z), dimensions={0}, to_apply=add.0
}
"""

RECORDS = [
    InstructionRecord("add.0", "x", "parameter", "%x = f32[] parameter(0)", ()),
    InstructionRecord("add.0", "y", "parameter", "%y = f32[] parameter(1)", ()),
    InstructionRecord("add.0", "s", "add", "%s = f32[] add(%x, %y)", ("x", "y")),
    InstructionRecord("main.1", "p", "parameter", "%p = f32[4,2]{1,0} parameter(0)", ()),
    InstructionRecord("main.1", "z", "constant", "%z = f32[] constant(0)", ()),
    InstructionRecord(
        "main.1", "r", "reduce",
        "%r = f32[2]{0} reduce(%p, %z), dimensions={0}, to_apply=%add.0", ("p", "z"),
    ),
]


@pytest.fixture
def graph():
    entry, roots = entry_and_roots(TEXT)
    return build_graph(RECORDS, entry, roots)


def test_shapes():
    assert parse_shape("f32[8,16]{1,0}") == ("f32", [8, 16])
    assert parse_shape("pred[]") == ("pred", [])
    assert parse_shape("(f32[], s32[2])") == ("tuple", [])
    assert parse_shape("token[]") == ("token", [])
    assert parse_shape("f32[<=8]") == ("f32", [8])


def test_entry_and_roots():
    assert entry_and_roots(TEXT) == ("main.1", {"s", "r"})


def test_nodes(graph):
    nodes = {n["name"]: n for n in graph["nodes"]}
    assert [n["id"] for n in graph["nodes"]] == list(range(len(RECORDS)))
    assert nodes["r"] == {
        "id": 5, "name": "r", "opcode": "reduce", "opcode_index": OPCODE_INDEX["reduce"],
        "dtype": "f32", "shape": [2], "elements": 2, "computation": "main.1",
        "computation_index": 1, "entry": True, "root": True, "parameter_number": -1,
    }
    assert nodes["y"]["parameter_number"] == 1 and not nodes["y"]["entry"]
    assert nodes["z"]["elements"] == 1 and nodes["z"]["shape"] == []


def test_operand_call_and_return_edges(graph):
    edges = {(e["source"], e["target"], e["flow"], e["position"]) for e in graph["edges"]}
    assert edges == {
        (0, 2, "operand", 0), (1, 2, "operand", 1),          # x, y -> s
        (3, 5, "operand", 0), (4, 5, "operand", 1),          # p, z -> r
        (5, 0, "call", 0), (5, 1, "call", 1),                # r -> parameters of add.0
        (2, 5, "return", 0),                                 # root of add.0 -> r
    }
    assert all(e["via"] == "to_apply" for e in graph["edges"] if e["flow"] != "operand")


def test_networkx_decodes_it(graph):
    g = nx.readwrite.json_graph.node_link_graph(graph, multigraph=True, directed=True)
    assert g.number_of_nodes() == 6 and g.number_of_edges() == 7


def test_arrays_from_networkx_dict_and_json_agree(graph):
    g = nx.readwrite.json_graph.node_link_graph(graph, multigraph=True, directed=True)
    arrays = [graph_to_arrays(x) for x in (g, graph, json.dumps(graph))]
    for other in arrays[1:]:
        np.testing.assert_array_equal(arrays[0].node_features, other.node_features)
        assert sorted(map(tuple, arrays[0].edge_index.T)) == sorted(map(tuple, other.edge_index.T))
    a = arrays[1]
    assert a.node_features.shape == (6, NODE_FEATURES) == (6, len(NODE_FEATURE_NAMES))
    assert a.node_features.dtype == np.float32
    assert a.node_features[5, OPCODE_INDEX["reduce"]] == 1
    assert a.node_features[5, len(OPCODES) + DTYPES.index("f32")] == 1
    rank, log_elements, entry, root, parameter = a.node_features[3, -5:]
    assert (rank, entry, root, parameter) == (2, 1, 0, 1)
    assert log_elements == pytest.approx(np.log1p(8))
    assert a.edge_index.shape == (2, 7) and a.edge_index.dtype == np.int64
    assert sorted(a.edge_type.tolist()) == sorted([0, 0, 0, 0, 1, 1, 2])
    assert EDGE_FLOWS[a.edge_type[0]] == graph["edges"][0]["flow"]


def test_arrays_reject_other_types():
    with pytest.raises(TypeError, match="Expected a networkx graph"):
        graph_to_arrays(42)
