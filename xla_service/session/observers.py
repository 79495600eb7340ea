"""Observation values of the spaces beyond op counts, as CompilerGym ``Event`` protos.

Each observer maps a session to one engine call and wraps the result; the
spaces are declared in ``spaces.py`` and documented in the README.
"""
from __future__ import annotations

from typing import Callable, Dict, Protocol, Sequence

from xla_service.passes.analysis import Analysis
from xla_service.passes.engine import Engine
from xla_service.passes.schema import COST_KEYS
from xla_service.proto import ByteTensor, DictEvent, DoubleTensor, Event, Opaque
from xla_service.session.spaces import GRAPH_FORMAT

__all__ = ["ObservedSession", "OBSERVERS"]


class ObservedSession(Protocol):
    """What an observer reads of a session."""

    engine: Engine
    initial: Analysis
    state: Analysis

    @property
    def default(self) -> Analysis: ...
    runtime_repetitions: int
    input_seed: int


def _doubles(values: Sequence[float]) -> Event:
    return Event(double_tensor=DoubleTensor(shape=[len(values)], value=list(values)))


def _cost_dict(values: Sequence[float]) -> Event:
    return Event(
        event_dict=DictEvent(event={k: Event(double_value=v) for k, v in zip(COST_KEYS, values)})
    )


def _fractions(state: Analysis) -> Event:
    total = sum(state.opcode_counts)
    return _doubles([c / total if total else 0.0 for c in state.opcode_counts])


def _graph(json_text: str) -> Event:
    event = Event()
    event.any_value.Pack(Opaque(format=GRAPH_FORMAT, data=json_text.encode()))
    return event


def _proto(data: bytes) -> Event:
    return Event(byte_tensor=ByteTensor(shape=[len(data)], value=data))


def _runtime(s: ObservedSession, state: Analysis) -> Event:
    return _doubles(s.engine.runtime(state, s.runtime_repetitions, s.input_seed))


OBSERVERS: Dict[str, Callable[[ObservedSession], Event]] = {
    "CostAnalysis": lambda s: _doubles(s.engine.cost_analysis(s.state)),
    "CostAnalysisDict": lambda s: _cost_dict(s.engine.cost_analysis(s.state)),
    "CostAnalysisInitial": lambda s: _doubles(s.engine.cost_analysis(s.initial)),
    "OpcodeFractions": lambda s: _fractions(s.state),
    "HloGraph": lambda s: _graph(s.engine.hlo_graph(s.state)),
    "HloProto": lambda s: _proto(s.engine.hlo_proto(s.state)),
    "Runtime": lambda s: _runtime(s, s.state),
    "RuntimeInitial": lambda s: _runtime(s, s.initial),
    "RuntimeDefault": lambda s: _runtime(s, s.default),
}
