"""xla-v0's observation spaces as Gymnasium spaces, and their values as Gymnasium values.

Each CompilerGym space kind maps to one Gymnasium space: integer and float
vectors to ``Box``, scalars to a ``Box`` of shape ``(1,)``, dicts to ``Dict``,
strings to ``Text``, byte and runtime sequences to ``Sequence``; ``HloGraph``
and ``HloGraphArrays`` both become a ``Graph`` (node features
``NODE_FEATURE_NAMES``, edge features ``(flow index, position)``, edge
links), decoded from the packed ``HloGraphArrays`` without JSON.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
from gymnasium import spaces

from xla_service.catalog.backend import BACKEND_KEYS
from xla_service.catalog.opcodes import OPCODES
from xla_service.catalog.schema import COST_KEYS
from xla_service.env.graph import NODE_FEATURES, unpack
from xla_service.errors import close_matches

__all__ = ["Converter", "converter", "SUPPORTED", "GRAPH_SPACES"]

_BIG = float(2**62)
_TEXT = spaces.Text(max_length=64 * 2**20, min_length=0, charset="".join(chr(c) for c in range(9, 127)))
#: Observations that reach the Gymnasium env as a ``Graph``, through ``HloGraphArrays``.
GRAPH_SPACES = ("HloGraph", "HloGraphArrays")


@dataclass(frozen=True)
class Converter:
    """A Gymnasium space, the xla-v0 observation that feeds it, and how a value converts."""

    space: spaces.Space
    source: str
    convert: Callable[[Any], Any]


def _box(size: int, dtype: Any, high: float = _BIG) -> spaces.Box:
    return spaces.Box(low=0, high=high, shape=(size,), dtype=dtype)


def _graph(value: Any) -> spaces.GraphInstance:
    arrays = unpack(value)
    return spaces.GraphInstance(
        nodes=arrays.node_features,
        edges=np.stack([arrays.edge_type, arrays.edge_position], axis=1).astype(np.int64),
        edge_links=np.ascontiguousarray(arrays.edge_index.T),
    )


def _vector(dtype: Any) -> Callable[[Any], np.ndarray]:
    return lambda value: np.asarray(value, dtype=dtype)


def _scalar(value: Any) -> np.ndarray:
    return np.asarray([value], dtype=np.int64)


def _runtime(name: str) -> Converter:
    return Converter(spaces.Sequence(spaces.Box(0, np.inf, (), np.float64), stack=True), name, _vector(np.float64))


_N, _C = len(OPCODES), len(COST_KEYS)
_TABLE: dict[str, Callable[[], Converter]] = {
    "OpcodeCounts": lambda: Converter(_box(_N, np.int64), "OpcodeCounts", _vector(np.int64)),
    "OpcodeFractions": lambda: Converter(_box(_N, np.float64, 1.0), "OpcodeFractions", _vector(np.float64)),
    "CostAnalysis": lambda: Converter(_box(_C, np.float64, np.inf), "CostAnalysis", _vector(np.float64)),
    "CostAnalysisInitial": lambda: Converter(_box(_C, np.float64, np.inf), "CostAnalysisInitial", _vector(np.float64)),
    "CostAnalysisDict": lambda: Converter(
        spaces.Dict({k: spaces.Box(0, np.inf, (1,), np.float64) for k in COST_KEYS}),
        "CostAnalysisDict",
        lambda value: {k: np.asarray([value[k]], dtype=np.float64) for k in COST_KEYS},
    ),
    "OpCount": lambda: Converter(_box(1, np.int64), "OpCount", _scalar),
    "OpCountInitial": lambda: Converter(_box(1, np.int64), "OpCountInitial", _scalar),
    "OpCountDefault": lambda: Converter(_box(1, np.int64), "OpCountDefault", _scalar),
    "PassOutcomes": lambda: Converter(_box(64, np.int64, 3), "PassOutcomes", _vector(np.int64)),
    "Hlo": lambda: Converter(_TEXT, "Hlo", str),
    "PassError": lambda: Converter(_TEXT, "PassError", str),
    **{name: partial(Converter, _TEXT, name, str) for name in ("ExecutableDigest", "ExecutableDigestInitial", "ExecutableDigestDefault")},
    "HloProto": lambda: Converter(
        spaces.Sequence(spaces.Discrete(256), stack=True), "HloProto",
        lambda value: np.frombuffer(np.asarray(value).tobytes(), dtype=np.uint8).astype(np.int64),
    ),
    **{name: partial(_runtime, name) for name in ("Runtime", "RuntimeInitial", "RuntimeDefault")},
    **{
        name: partial(Converter, _box(len(BACKEND_KEYS), np.float64, np.inf), name, _vector(np.float64))
        for name in (f"BackendCost{m}{s}" for m in ("", "Agent") for s in ("", "Initial", "Default"))
    },
    **{
        name: (lambda: Converter(
            spaces.Graph(
                node_space=spaces.Box(-1.0, np.inf, (NODE_FEATURES,), np.float32),
                edge_space=spaces.Box(0, _BIG, (2,), np.int64),
            ),
            "HloGraphArrays",
            _graph,
        ))
        for name in GRAPH_SPACES
    },
}
SUPPORTED = tuple(sorted(_TABLE))


def converter(name: str) -> Converter:
    """The converter of xla-v0 observation ``name``; ValueError with close matches."""
    if name not in _TABLE:
        raise ValueError(
            f"Unknown observation space {name!r}: expected one of {list(SUPPORTED)}."
            f"{close_matches(name, SUPPORTED)}"
        )
    return _TABLE[name]()


def dict_space(names: Sequence[str]) -> dict[str, Converter]:
    return {name: converter(name) for name in names}
