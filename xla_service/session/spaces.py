"""The spaces that ``xla-v0`` declares, as CompilerGym protos.

Names and meanings are documented in the README's "Spaces" section.
"""
from __future__ import annotations

from typing import List

from xla_service.opcodes import OPCODES
from xla_service.passes.catalog import PASS_NAMES
from xla_service.proto import (
    ActionSpace,
    Int64Box,
    Int64Range,
    Int64Tensor,
    NamedDiscreteSpace,
    ObservationSpace,
    Space,
)

__all__ = ["ACTION_SPACES", "OBSERVATION_SPACES"]

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
