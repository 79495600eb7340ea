"""Every observation space of xla-v0, declared beside how it is computed.

One :class:`Observation` per space: its name, its CompilerGym space, its
default (what the client shows when the service is gone), whether it is
deterministic, and the function that computes it from a session. A new
observation is one entry here (plus, if XLA must compute it, one function in
``passes/observe.py``). The README's space reference is generated from this
table (``python -m xla_service.session.observations``).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from xla_service.catalog.backend import BACKEND_KEYS
from xla_service.catalog.opcodes import OPCODES
from xla_service.catalog.passes import PASS_NAMES
from xla_service.catalog.schema import COST_KEYS
from xla_service.passes.analysis import Analysis
from xla_service.passes.engine import Engine
from xla_service.proto import (
    ByteSequenceSpace,
    ByteTensor,
    DictEvent,
    DictSpace,
    DoubleBox,
    DoubleRange,
    DoubleSequenceSpace,
    DoubleTensor,
    Event,
    Int64Box,
    Int64Range,
    Int64Tensor,
    ObservationSpace,
    Opaque,
    Space,
)

__all__ = ["Observation", "OBSERVATIONS", "OBSERVATION_SPACES", "GRAPH_FORMAT", "ObservedSession", "reference"]

#: How ``HloGraph`` travels: CompilerGym's client decodes it into a networkx graph.
GRAPH_FORMAT = "json://networkx/MultiDiGraph"
_EMPTY_GRAPH = b'{"directed":true,"multigraph":true,"graph":{},"nodes":[],"edges":[]}'
_INT64_MAX = 2**62


class ObservedSession(Protocol):
    """What an observation reads of a session."""

    engine: Engine
    initial: Analysis
    state: Analysis
    runtime_repetitions: int
    runtime_pipeline: str
    input_seed: int
    last_pass_errors: list[str]

    @property
    def default(self) -> Analysis: ...


@dataclass(frozen=True)
class Observation:
    """One observation space: what it is, and how a session computes it."""

    name: str
    #: Its value, as in the README's space reference.
    doc: str
    space: Space
    default: Event
    compute: Callable[[ObservedSession], Event]
    deterministic: bool = True
    platform_dependent: bool = False
    #: Its value depends on the current state alone (no session setting, no other
    #: state, no store): a session may keep it per state (``XlaSession``).
    of_state: bool = False

    def proto(self) -> ObservationSpace:
        return ObservationSpace(
            name=self.name,
            space=self.space,
            deterministic=self.deterministic,
            platform_dependent=self.platform_dependent,
            default_observation=self.default,
        )


# ------------------------------------------------------------ spaces and values


def _int() -> Space:
    return Space(int64_value=Int64Range(min=0, max=_INT64_MAX))


def _ints(size: int) -> Space:
    return Space(
        int64_box=Int64Box(
            low=Int64Tensor(shape=[size], value=[0] * size),
            high=Int64Tensor(shape=[size], value=[_INT64_MAX] * size),
        )
    )


def _doubles(size: int, high: float = float("inf")) -> Space:
    return Space(
        double_box=DoubleBox(
            low=DoubleTensor(shape=[size], value=[0.0] * size),
            high=DoubleTensor(shape=[size], value=[high] * size),
        )
    )


def _sequence() -> Space:
    return Space(double_sequence=DoubleSequenceSpace(length_range=Int64Range(min=0), scalar_range=DoubleRange(min=0)))


def _int_event(value: int) -> Event:
    return Event(int64_value=value)


def _ints_event(values: Sequence[int]) -> Event:
    return Event(int64_tensor=Int64Tensor(shape=[len(values)], value=list(values)))


def _doubles_event(values: Sequence[float]) -> Event:
    return Event(double_tensor=DoubleTensor(shape=[len(values)], value=list(values)))


def _cost_dict(values: Sequence[float]) -> Event:
    return Event(event_dict=DictEvent(event={k: Event(double_value=float(v)) for k, v in zip(COST_KEYS, values)}))


def _fractions(state: Analysis) -> Event:
    total = sum(state.opcode_counts)
    return _doubles_event([c / total if total else 0.0 for c in state.opcode_counts])


def _graph(json_text: bytes) -> Event:
    event = Event()
    event.any_value.Pack(Opaque(format=GRAPH_FORMAT, data=json_text))
    return event


def _proto(data: bytes) -> Event:
    return Event(byte_tensor=ByteTensor(shape=[len(data)], value=data))


_OUTCOME_CODES = {"changed": 1, "unchanged": 2, "failed": 3}


def _outcomes(s: ObservedSession) -> Event:
    known = s.engine.pass_outcomes(s.state)
    return _ints_event([_OUTCOME_CODES.get(known.get(name, ""), 0) for name in PASS_NAMES])


def _runtime(s: ObservedSession, state: Analysis) -> Event:
    return _doubles_event(s.engine.runtime(state, s.runtime_repetitions, s.input_seed, s.runtime_pipeline))


def _executable(s: ObservedSession, state: Analysis) -> Event:
    return Event(string_value=s.engine.executable_digest(state, s.runtime_pipeline))


def _backend(pipeline: str, which: str) -> Callable[[ObservedSession], Event]:
    """``BackendCost`` of the session's ``which`` state (state, initial, default) under ``pipeline``."""
    return lambda s: _doubles_event(s.engine.backend_cost(getattr(s, which), pipeline))


def _backend_observations() -> tuple[Observation, ...]:
    """``BackendCost`` (full pipeline) and ``BackendCostAgent``, each of the current
    module, of the benchmark as loaded and of XLA's default pipeline's result."""
    keys = ", ".join(f"`{k}`" for k in BACKEND_KEYS)
    size = len(BACKEND_KEYS)
    spaces = []
    for pipeline, suffix in (("full", ""), ("agent", "Agent")):
        name = f"BackendCost{suffix}"
        spaces += [
            Observation(
                name,
                f"float64 array ({size},): what XLA's CPU backend makes of the current module, "
                f"compiled with the `{pipeline}` pipeline (as `xla.runtime.pipeline={pipeline}`): "
                f"{keys} (`catalog.backend.BACKEND_KEYS`; below, \"Backend cost\"). Deterministic",
                _doubles(size), _doubles_event([0.0] * size),
                _backend(pipeline, "state"), platform_dependent=True,
            ),
            Observation(
                f"{name}Initial", f"float64 array ({size},): `{name}` of the benchmark as loaded",
                _doubles(size), _doubles_event([0.0] * size),
                _backend(pipeline, "initial"), platform_dependent=True,
            ),
            Observation(
                f"{name}Default",
                f"float64 array ({size},): `{name}` of the module XLA's default pipeline makes of the "
                "benchmark (the reference of the normalized backend rewards)",
                _doubles(size), _doubles_event([0.0] * size),
                _backend(pipeline, "default"), platform_dependent=True,
            ),
        ]
    return tuple(spaces)


_N, _C = len(OPCODES), len(COST_KEYS)

OBSERVATIONS: tuple[Observation, ...] = (
    Observation(
        "Hlo", "str: the current normalized module as HLO text",
        Space(string_value={}), Event(string_value=""),
        lambda s: Event(string_value=s.state.text),
    ),
    Observation(
        "OpCount", "int: the op count of the current module (docs/concepts.md, \"The op count\")",
        _int(), _int_event(0), lambda s: _int_event(s.state.op_count), of_state=True,
    ),
    Observation(
        "OpcodeCounts",
        f"int64 array ({_N},): counted instructions per opcode (calls inlined, as `OpCount` "
        "counts them), in the order of `xla_service.catalog.opcodes.OPCODES`; `OpCount` is their sum "
        "without `parameter` and `constant`",
        _ints(_N), _ints_event([0] * _N), lambda s: _ints_event(s.state.opcode_counts), of_state=True,
    ),
    Observation(
        "OpCountInitial", "int: the op count of the benchmark as loaded (normalized)",
        _int(), _int_event(0), lambda s: _int_event(s.initial.op_count),
    ),
    Observation(
        "OpCountDefault", "int: the op count after XLA's default pipeline",
        _int(), _int_event(0), lambda s: _int_event(s.default.op_count),
    ),
    Observation(
        "OpcodeFractions", f"float64 array ({_N},): `OpcodeCounts` divided by their sum (Autophase-style)",
        _doubles(_N, high=1.0), _doubles_event([0.0] * _N), lambda s: _fractions(s.state), of_state=True,
    ),
    Observation(
        "CostAnalysis",
        f"float64 array ({_C},): XLA's `HloCostAnalysis` of the current module: "
        + ", ".join(f"`{k}`" for k in COST_KEYS) + " (`schema.COST_KEYS`)",
        _doubles(_C), _doubles_event([0.0] * _C),
        lambda s: _doubles_event(s.engine.cost_analysis(s.state)),
    ),
    Observation(
        "CostAnalysisDict", "dict of float: the same, keyed by XLA's names",
        Space(space_dict=DictSpace(space={k: Space(double_value=DoubleRange(min=0)) for k in COST_KEYS})),
        _cost_dict([0.0] * _C), lambda s: _cost_dict(s.engine.cost_analysis(s.state)),
    ),
    Observation(
        "CostAnalysisInitial", f"float64 array ({_C},): `CostAnalysis` of the benchmark as loaded",
        _doubles(_C), _doubles_event([0.0] * _C),
        lambda s: _doubles_event(s.engine.cost_analysis(s.initial)),
    ),
    Observation(
        "HloGraph", "`networkx.MultiDiGraph`: the current module as a graph (below, \"HloGraph\")",
        Space(string_value={"length_range": {"min": 0}}), _graph(_EMPTY_GRAPH),
        lambda s: _graph(s.engine.hlo_graph(s.state).encode()),
    ),
    Observation(
        "HloGraphArrays",
        "int8 array: `HloGraph` as packed int64 tables, a row per node and per edge "
        "(`schema.GRAPH_NODE_COLUMNS`, `GRAPH_EDGE_COLUMNS`), which `xla_service.env.graph.unpack` "
        "turns into GNN arrays without JSON (the Gymnasium env's graph observation)",
        Space(byte_sequence=ByteSequenceSpace(length_range=Int64Range(min=0))), _proto(b""),
        lambda s: _proto(s.engine.observe("hlo_graph_arrays", s.state)),
    ),
    Observation(
        "HloProto", "int8 array: the serialized `HloModuleProto` of the current module (`.tobytes()`)",
        Space(byte_sequence=ByteSequenceSpace(length_range=Int64Range(min=0))), _proto(b""),
        lambda s: _proto(s.engine.hlo_proto(s.state)),
    ),
    Observation(
        "Runtime",
        "float64 array (n,): seconds per execution of the current module, compiled with XLA's "
        "CPU pipeline (`xla.runtime.pipeline`: in full by default), on seeded inputs; "
        "n = `xla.runtime.repetitions`, warm-up excluded. Not deterministic, platform-dependent",
        _sequence(), _doubles_event([]), lambda s: _runtime(s, s.state),
        deterministic=False, platform_dependent=True,
    ),
    Observation(
        "RuntimeInitial", "float64 array (n,): `Runtime` of the benchmark as loaded",
        _sequence(), _doubles_event([]), lambda s: _runtime(s, s.initial),
        deterministic=False, platform_dependent=True,
    ),
    Observation(
        "RuntimeDefault",
        "float64 array (n,): `Runtime` of the module XLA's default pipeline makes of the "
        "benchmark (the leaderboard's speedup baseline)",
        _sequence(), _doubles_event([]), lambda s: _runtime(s, s.default),
        deterministic=False, platform_dependent=True,
    ),
    Observation(
        "ExecutableDigest",
        "str: sha256 (hex) of the optimized HLO that XLA's CPU pipeline (as `Runtime` compiles: "
        "`xla.runtime.pipeline`) makes of the current module, printed as XLA fingerprints modules "
        "(canonical names, no metadata). Equal digests mean the same executable, so runtimes that "
        "differ only by noise. Platform-dependent",
        Space(string_value={}), Event(string_value=""), lambda s: _executable(s, s.state), platform_dependent=True,
    ),
    Observation(
        "ExecutableDigestInitial", "str: `ExecutableDigest` of the benchmark as loaded",
        Space(string_value={}), Event(string_value=""),
        lambda s: _executable(s, s.initial), platform_dependent=True,
    ),
    Observation(
        "ExecutableDigestDefault",
        "str: `ExecutableDigest` of the module XLA's default pipeline makes of the benchmark "
        "(the executable `RuntimeDefault` times)",
        Space(string_value={}), Event(string_value=""),
        lambda s: _executable(s, s.default), platform_dependent=True,
    ),
    *_backend_observations(),
    Observation(
        "PassOutcomes",
        f"int64 array ({len(PASS_NAMES)},): what each pass is known (from the cache or the "
        "experience store) to do to the current module: 0 not known, 1 changes it, 2 changes "
        "nothing, 3 XLA fails; the Gymnasium env's `action_mask` masks 2 and 3 with `mask=\"known\"`",
        _ints(len(PASS_NAMES)), _ints_event([0] * len(PASS_NAMES)), lambda s: _outcomes(s),
    ),
    Observation(
        "PassError",
        "str: XLA's error for each pass of the last step that it failed or aborted on, "
        "`<pass>: <message>` a line; empty if none (`info[\"pass_error\"]` of `env.step()`)",
        Space(string_value={}), Event(string_value=""),
        lambda s: Event(string_value="\n".join(s.last_pass_errors)),
    ),
)

#: The spaces as CompilerGym's ``GetSpaces`` sends them, in this order.
OBSERVATION_SPACES: list[ObservationSpace] = [o.proto() for o in OBSERVATIONS]
_BY_NAME: dict[str, Observation] = {o.name: o for o in OBSERVATIONS}


def get(name: str) -> Observation:
    """The observation called ``name``; raises LookupError with close matches."""
    from xla_service.errors import close_matches

    try:
        return _BY_NAME[name]
    except KeyError:
        raise LookupError(
            f"Unknown observation space: {name!r}.{close_matches(name, _BY_NAME)}"
        ) from None


def reference() -> str:
    """The README's table of observation spaces, generated from this table."""
    rows = ["| name | value |", "|---|---|"]
    rows += [f"| `{o.name}` | {o.doc} |" for o in OBSERVATIONS]
    return "\n".join(rows)


if __name__ == "__main__":
    print(reference())
