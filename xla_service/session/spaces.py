"""The spaces that ``xla-v0`` declares, as CompilerGym protos.

Names and meanings are documented in the README's "Spaces" section.
"""
from __future__ import annotations

from typing import List

from xla_service.opcodes import OPCODES
from xla_service.passes.catalog import PASS_NAMES
from xla_service.passes.schema import COST_KEYS
from xla_service.proto import (
    ActionSpace,
    ByteSequenceSpace,
    DictSpace,
    DoubleBox,
    DoubleRange,
    DoubleSequenceSpace,
    DoubleTensor,
    Event,
    Int64Box,
    Int64Range,
    Int64Tensor,
    NamedDiscreteSpace,
    ObservationSpace,
    Opaque,
    Space,
)

__all__ = ["ACTION_SPACES", "OBSERVATION_SPACES", "GRAPH_FORMAT", "EMPTY_GRAPH"]

_INT64_MAX = 2**62

ACTION_SPACES: List[ActionSpace] = [
    ActionSpace(
        name="passes",
        space=Space(named_discrete=NamedDiscreteSpace(name=list(PASS_NAMES))),
    )
]


def _scalar(name: str, deterministic: bool = True) -> ObservationSpace:
    return ObservationSpace(
        name=name,
        space=Space(int64_value=Int64Range(min=0, max=_INT64_MAX)),
        deterministic=deterministic,
        platform_dependent=False,
        default_observation={"int64_value": 0},
    )


OBSERVATION_SPACES: List[ObservationSpace] = [
    ObservationSpace(
        name="Hlo",
        space=Space(string_value={}),
        deterministic=True,
        platform_dependent=False,
        default_observation={"string_value": ""},
    ),
    _scalar("OpCount"),
    ObservationSpace(
        name="OpcodeCounts",
        space=Space(
            int64_box=Int64Box(
                low=Int64Tensor(shape=[len(OPCODES)], value=[0] * len(OPCODES)),
                high=Int64Tensor(shape=[len(OPCODES)], value=[_INT64_MAX] * len(OPCODES)),
            )
        ),
        deterministic=True,
        platform_dependent=False,
    ),
    _scalar("OpCountInitial"),
    _scalar("OpCountDefault"),
]


#: How ``HloGraph`` travels: CompilerGym's client decodes it into a networkx graph.
GRAPH_FORMAT = "json://networkx/MultiDiGraph"
EMPTY_GRAPH = b'{"directed":true,"multigraph":true,"graph":{},"nodes":[],"edges":[]}'


def _doubles(name: str, size: int, high: float = float("inf")) -> ObservationSpace:
    return ObservationSpace(
        name=name,
        space=Space(
            double_box=DoubleBox(
                low=DoubleTensor(shape=[size], value=[0.0] * size),
                high=DoubleTensor(shape=[size], value=[high] * size),
            )
        ),
        deterministic=True,
        platform_dependent=False,
    )


def _runtimes(name: str) -> ObservationSpace:
    return ObservationSpace(
        name=name,
        space=Space(
            double_sequence=DoubleSequenceSpace(
                length_range=Int64Range(min=1), scalar_range=DoubleRange(min=0)
            )
        ),
        deterministic=False,
        platform_dependent=True,
    )


def _graph_default() -> Event:
    event = Event()
    event.any_value.Pack(Opaque(format=GRAPH_FORMAT, data=EMPTY_GRAPH))
    return event


OBSERVATION_SPACES.extend(
    [
        _doubles("CostAnalysis", len(COST_KEYS)),
        ObservationSpace(
            name="CostAnalysisDict",
            space=Space(
                space_dict=DictSpace(
                    space={k: Space(double_value=DoubleRange(min=0)) for k in COST_KEYS}
                )
            ),
            deterministic=True,
            platform_dependent=False,
        ),
        _doubles("CostAnalysisInitial", len(COST_KEYS)),
        _doubles("OpcodeFractions", len(OPCODES), high=1.0),
        ObservationSpace(
            name="HloGraph",
            space=Space(string_value={"length_range": {"min": 0}}),
            deterministic=True,
            platform_dependent=False,
            default_observation=_graph_default(),
        ),
        ObservationSpace(
            name="HloProto",
            space=Space(byte_sequence=ByteSequenceSpace(length_range=Int64Range(min=0))),
            deterministic=True,
            platform_dependent=False,
        ),
        _runtimes("Runtime"),
        _runtimes("RuntimeInitial"),
        _runtimes("RuntimeDefault"),
    ]
)
