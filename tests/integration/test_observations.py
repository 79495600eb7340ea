"""The observation spaces beyond op counts, through the stock client over real gRPC."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from compiler_gym.datasets import Benchmark
from integration.modules import CUSTOM_CALL_HLO, SMALL_HLO, mlp_step, small_jax

from xla_service.catalog.opcodes import OPCODE_INDEX, OPCODES
from xla_service.catalog.schema import COST_KEYS, DEFAULT_RUNTIME_REPETITIONS, EDGE_FLOWS
from xla_service.env.graph import NODE_FEATURES, graph_to_arrays
from xla_service.tools.from_jax import benchmark_from_jax


def small(env: object, name: str = "small") -> None:
    env.reset(benchmark=Benchmark.from_file_contents(f"benchmark://test/{name}", SMALL_HLO))  # type: ignore[attr-defined]


def test_cost_analysis_equals_xla_own_through_jax(env):
    import jax

    f, args = small_jax()
    env.reset(benchmark=benchmark_from_jax(f, *args))
    costs = env.observation["CostAnalysisDict"]
    assert list(costs) == list(COST_KEYS)
    lowered = jax.jit(f).lower(*args)
    for xla in (lowered.cost_analysis(), lowered.compile().cost_analysis()):
        assert costs["flops"] == xla["flops"] > 0
        assert costs["transcendentals"] == xla["transcendentals"] > 0
        assert costs["optimal_seconds"] == xla.get("optimal_seconds", 0.0)
    assert costs["bytes accessed"] > 0
    vector = env.observation["CostAnalysis"]
    assert vector.dtype == np.float64
    assert vector.tolist() == [costs[k] for k in COST_KEYS]


def test_cost_analysis_follows_the_state(env):
    small(env)
    # f32[8]: two adds and a multiply, 8 flops each.
    assert env.observation["CostAnalysis"][0] == 24
    env.step(env.action_space["cse"])
    assert env.observation["CostAnalysis"][0] == 16
    assert env.observation["CostAnalysisInitial"][0] == 24


def test_opcode_fractions_are_counts_over_total(env):
    fn, args = mlp_step()
    env.reset(benchmark=benchmark_from_jax(fn, *args))
    counts = env.observation["OpcodeCounts"]
    fractions = env.observation["OpcodeFractions"]
    assert fractions.shape == (len(OPCODES),)
    np.testing.assert_allclose(fractions, counts / counts.sum())
    assert fractions.sum() == pytest.approx(1.0)


def test_hlo_graph_is_decoded_into_networkx(env):
    small(env)
    graph = env.observation["HloGraph"]
    assert isinstance(graph, nx.MultiDiGraph)
    opcodes = sorted(d["opcode"] for _, d in graph.nodes(data=True))
    assert opcodes == ["add", "add", "multiply", "parameter"]
    node = {d["opcode"]: d for _, d in graph.nodes(data=True)}
    assert node["multiply"]["root"] and node["multiply"]["entry"]
    assert node["parameter"]["parameter_number"] == 0
    assert (node["add"]["dtype"], node["add"]["shape"], node["add"]["elements"]) == ("f32", [8], 8)
    # p feeds each add twice (operands 0 and 1); the adds feed the multiply.
    positions = sorted(
        (graph.nodes[u]["opcode"], graph.nodes[v]["opcode"], d["position"])
        for u, v, d in graph.edges(data=True)
    )
    assert positions == [
        ("add", "multiply", 0),
        ("add", "multiply", 1),
        ("parameter", "add", 0),
        ("parameter", "add", 0),
        ("parameter", "add", 1),
        ("parameter", "add", 1),
    ]


def test_hlo_graph_of_a_real_model_has_calls_and_matches_op_counts(env):
    fn, args = mlp_step()
    env.reset(benchmark=benchmark_from_jax(fn, *args))
    graph = env.observation["HloGraph"]
    counts = env.observation["OpcodeCounts"]
    assert graph.number_of_nodes() == counts.sum()
    for name in ("dot", "reduce", "parameter"):
        assert sum(1 for _, d in graph.nodes(data=True) if d["opcode"] == name) == counts[OPCODE_INDEX[name]]
    flows = {d["flow"] for _, _, d in graph.edges(data=True)}
    assert flows == set(EDGE_FLOWS)  # reduce calls its to_apply computation
    operand_edges = sum(1 for _, _, d in graph.edges(data=True) if d["flow"] == "operand")
    hlo = env.observation["Hlo"]
    assert operand_edges > 0 and "to_apply=" in hlo

    arrays = graph_to_arrays(graph)
    assert arrays.node_features.shape == (graph.number_of_nodes(), NODE_FEATURES)
    assert arrays.edge_index.shape == (2, graph.number_of_edges())
    assert arrays.edge_type.shape == (graph.number_of_edges(),)
    assert arrays.node_features[:, : len(OPCODES)].sum(axis=0).tolist() == counts.tolist()
    assert arrays.edge_index.max() < graph.number_of_nodes()


def test_hlo_proto_is_the_current_module(env):
    from xla_service.passes.jaxlib import hlo

    small(env)
    env.step(env.action_space["cse"])
    data = env.observation["HloProto"]
    assert data.dtype == np.int8
    module = hlo.HloModule.from_serialized_hlo_module_proto(data.tobytes())
    expected = hlo.hlo_module_from_text(env.observation["Hlo"])
    assert module.to_string() == expected.to_string()
    assert sum(len(list(c.instructions())) for c in module.computations()) == 3


def test_runtime_is_a_list_of_measurements_set_by_a_parameter(env):
    small(env)
    runtimes = env.observation["Runtime"]
    assert runtimes.shape == (DEFAULT_RUNTIME_REPETITIONS,)
    assert (runtimes > 0).all() and (runtimes < 10).all()
    assert env.send_param("xla.runtime.repetitions", "3") == "3"
    assert env.observation["Runtime"].shape == (3,)
    assert env.observation["RuntimeInitial"].shape == (3,)
    space = env.observation.spaces["Runtime"]
    assert not space.deterministic and space.platform_dependent


def test_a_module_xla_cannot_execute(env):
    env.reset(benchmark=Benchmark.from_file_contents("benchmark://test/custom-call", CUSTOM_CALL_HLO))
    with pytest.raises(ValueError, match="cannot compile this module for CPU.*xla_gym_no_such_target"):
        env.observation["Runtime"]
    # Op-count steps, cost analysis and the graph still work; the episode goes on.
    before = env.observation["OpCount"]
    _, reward, done, _ = env.step(env.action_space["cse"])
    assert not done and reward == 1 and env.observation["OpCount"] == before - 1
    assert env.observation["HloGraph"].number_of_nodes() == before
    assert env.observation["CostAnalysis"][0] > 0


def test_executable_digest_names_the_executable_not_the_module(env):
    small(env)
    digest = env.observation["ExecutableDigest"]
    assert len(digest) == 64 and int(digest, 16) >= 0
    space = env.observation.spaces["ExecutableDigest"]
    assert space.deterministic and space.platform_dependent
    env.step(env.action_space["cse"])  # a new module, which XLA's own pipeline would make of it anyway
    assert env.observation["OpCount"] == env.observation["OpCountInitial"] - 1
    assert env.observation["ExecutableDigest"] == digest
    assert env.observation["ExecutableDigestInitial"] == digest
    assert env.observation["ExecutableDigestDefault"] == digest
    renamed = SMALL_HLO.replace(b"HloModule small", b"HloModule other").replace(b" a ", b" x ").replace(b"(a, b)", b"(x, b)")
    env.reset(benchmark=Benchmark.from_file_contents("benchmark://test/small-renamed", renamed))
    assert env.observation["ExecutableDigest"] == digest  # names and module name do not count
    different = SMALL_HLO.replace(b"multiply(a, b)", b"subtract(a, b)")
    env.reset(benchmark=Benchmark.from_file_contents("benchmark://test/small-subtract", different))
    assert env.observation["ExecutableDigest"] != digest


def test_executable_digest_of_a_module_xla_cannot_compile(env):
    env.reset(benchmark=Benchmark.from_file_contents("benchmark://test/custom-call-digest", CUSTOM_CALL_HLO))
    with pytest.raises(ValueError, match="cannot compile this module for CPU"):
        env.observation["ExecutableDigest"]
    assert env.observation["OpCount"] > 0  # the session goes on
