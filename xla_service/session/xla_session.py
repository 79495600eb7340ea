"""The XLA compilation session: a benchmark's HLO module and the passes run on it.

The state is the normalized module (the HLO -> StableHLO -> HLO fixpoint), so
what the agent observes is exactly what the next pass receives. All XLA work
goes through one :class:`~xla_service.passes.engine.Engine` per service
process, shared by its sessions.
"""
from __future__ import annotations

import logging
import threading
import zlib
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import ClassVar

from xla_service.catalog.generator import parse_recipe
from xla_service.catalog.passes import PASS_NAMES
from xla_service.catalog.schema import DEFAULT_RUNTIME_REPETITIONS, RUNTIME_PIPELINES
from xla_service.errors import (
    BenchmarkError,
    ExecutionError,
    PassCrashedError,
    PassTimeoutError,
    UnknownPassError,
    XlaGymError,
)
from xla_service.passes.analysis import Analysis
from xla_service.passes.engine import MAX_MODULE_BYTES, Engine
from xla_service.passes.memo import Memo
from xla_service.proto import ActionSpace, Benchmark, Event, ObservationSpace
from xla_service.session import observations
from xla_service.session.base import CompilationSession
from xla_service.session.loaded import loaded_benchmarks
from xla_service.session.observations import OBSERVATION_SPACES
from xla_service.session.parameters import SERVICE_PARAMETERS, handle_parameter, pass_errors_default
from xla_service.session.spaces import ACTION_SPACES

__all__ = ["XlaSession", "configure_engine", "shared_engine", "close_engine"]

logger = logging.getLogger(__name__)

#: Serialized observations of the state alone, by (space, state digest, counts).
_OBSERVED = Memo(8192)
_engine: Engine | None = None
_engine_factory: Callable[[], Engine] = Engine
_engine_lock = threading.Lock()


def configure_engine(factory: Callable[[], Engine]) -> None:
    """Set how the service's shared engine is made (before the first session)."""
    global _engine_factory
    _engine_factory = factory


def shared_engine() -> Engine:
    """The service process's engine, made on first use."""
    global _engine
    with _engine_lock:
        if _engine is None:
            _engine = _engine_factory()
        return _engine


def _benchmark_text(benchmark: Benchmark, engine: Engine | None = None) -> str:
    """The HLO text of a benchmark: raw or gzip-compressed UTF-8 bytes, or a
    ``generator://`` recipe (``catalog/generator.py``), which ``engine`` generates."""
    if not benchmark.program.contents:
        raise BenchmarkError(
            f"Benchmark {benchmark.uri!r} has no program: expected HLO text, got nothing"
        )
    data = benchmark.program.contents
    try:
        recipe = parse_recipe(data)
    except ValueError as e:
        raise BenchmarkError(f"Benchmark {benchmark.uri!r}: {e}") from None
    if recipe is not None:
        return (engine or shared_engine()).generate(recipe.text)[0]
    if data[:2] == b"\x1f\x8b":
        data = _gunzip(data, benchmark.uri)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BenchmarkError(
            f"Benchmark {benchmark.uri!r} is not HLO text: byte {e.start} is not UTF-8"
        ) from None


def _gunzip(data: bytes, uri: str) -> bytes:
    """Decompress at most ``MAX_MODULE_BYTES`` + 1 bytes (no gzip bomb)."""
    try:
        reader = zlib.decompressobj(wbits=31)
        text = reader.decompress(data, MAX_MODULE_BYTES + 1)
    except zlib.error as e:
        raise BenchmarkError(f"Benchmark {uri!r} is not valid gzip: {e}") from None
    if not reader.eof and len(text) <= MAX_MODULE_BYTES:
        raise BenchmarkError(f"Benchmark {uri!r} is not valid gzip: the stream is truncated or corrupt")
    if len(text) > MAX_MODULE_BYTES:
        raise BenchmarkError(
            f"Benchmark {uri!r}: HLO module too large: expected at most "
            f"{MAX_MODULE_BYTES} bytes of text, got more"
        )
    return text


class XlaSession(CompilationSession):
    """One episode: the current module of one benchmark."""

    compiler_version: ClassVar[str] = f"jaxlib {version('jaxlib')}"
    action_spaces: ClassVar[list[ActionSpace]] = ACTION_SPACES
    observation_spaces: ClassVar[list[ObservationSpace]] = OBSERVATION_SPACES
    service_parameters: ClassVar[frozenset[str]] = SERVICE_PARAMETERS

    def __init__(
        self,
        working_directory: Path,
        action_space: ActionSpace,
        benchmark: Benchmark,
        engine: Engine | None = None,
    ) -> None:
        super().__init__(working_directory, action_space, benchmark)
        self.engine = engine or shared_engine()
        self.benchmark_uri = str(benchmark.uri)
        self.initial = self._load(benchmark)
        self.state = self.initial
        self._default: Analysis | None = None
        self.runtime_repetitions = DEFAULT_RUNTIME_REPETITIONS
        self.runtime_pipeline = RUNTIME_PIPELINES[0]
        self.input_seed = 0
        self.pass_errors = pass_errors_default()
        #: ``"<pass>: <XLA's message>"`` for each pass of the current step that failed.
        self.last_pass_errors: list[str] = []

    def _load(self, benchmark: Benchmark) -> Analysis:
        """The benchmark's state: known by its program's bytes, or loaded by the engine."""
        program = benchmark.program.contents
        loaded = loaded_benchmarks(self.engine)
        state = loaded.get(program)
        if state is not None:
            return state
        try:
            state = self.engine.load(_benchmark_text(benchmark, self.engine))
        except XlaGymError as e:  # say which benchmark
            if str(e).startswith(f"Benchmark {benchmark.uri!r}"):
                raise
            raise type(e)(f"Benchmark {benchmark.uri!r}: {e}", transient=e.transient) from None
        loaded.put(program, state)
        return state

    def start_step(self) -> None:
        self.last_pass_errors = []

    def apply_action(self, action: Event) -> tuple[bool, ActionSpace | None, bool]:
        kind = action.WhichOneof("value")
        if kind != "int64_value":
            raise UnknownPassError(
                f"Unknown action: expected an int64 pass index in [0, {len(PASS_NAMES)}), "
                f"got {'an empty event' if kind is None else 'a ' + kind}"
            )
        index = action.int64_value
        if not 0 <= index < len(PASS_NAMES):
            raise UnknownPassError(
                f"Unknown action: expected an index in [0, {len(PASS_NAMES)}), got {index}"
            )
        name = PASS_NAMES[index]
        try:
            new_state = self._apply(name)
        except PassCrashedError as e:
            # A transient failure (a timeout, a killed worker) says nothing of the
            # pass: raised, so that the history never holds a step that would
            # replay differently.
            if self.pass_errors == "raise" or e.transient:
                raise
            logger.info("Pass %s failed, a step without effect: %s", name, e)
            self.last_pass_errors.append(f"{name}: {e}")
            return False, None, True
        unchanged = new_state is self.state
        self.state = new_state
        return False, None, unchanged

    def _apply(self, name: str) -> Analysis:
        """The engine's step, retried once if a worker was killed under it."""
        try:
            return self.engine.apply(self.state, name)
        except PassCrashedError as e:
            if not e.transient or isinstance(e, PassTimeoutError):
                raise
            logger.warning("Retrying %s once: %s", name, e)
            return self.engine.apply(self.state, name)

    def get_observation(self, observation_space: ObservationSpace) -> Event:
        try:
            return observations.get(observation_space.name).compute(self)
        except ExecutionError as e:  # say which module and which observation
            raise type(e)(
                f"Benchmark {self.benchmark_uri!r}, observation {observation_space.name!r}: {e}",
                transient=e.transient,
            ) from None

    def get_observation_bytes(self, observation_space: ObservationSpace) -> bytes:
        """Serialized; kept per state for the observations of the state alone
        (``Observation.of_state``: op counts), which a replay asks for again."""
        observation = observations.get(observation_space.name)
        if not observation.of_state:
            return self.get_observation(observation_space).SerializeToString()
        key = (observation.name, self.state.digest, self.state.opcode_counts)
        return _OBSERVED.get(key, lambda: self.get_observation(observation_space).SerializeToString())  # type: ignore[no-any-return]

    def handle_session_parameter(self, key: str, value: str) -> str | None:
        return handle_parameter(self, key, value)

    def fork(self) -> XlaSession:
        fork = object.__new__(XlaSession)
        fork.__dict__.update(self.__dict__)  # states are immutable: sharing is safe
        fork.last_pass_errors = list(self.last_pass_errors)
        return fork

    @property
    def default(self) -> Analysis:
        """XLA's default pipeline result for the benchmark (computed once)."""
        if self._default is None:
            self._default = self.engine.default_pipeline(self.initial)
        return self._default


def close_engine() -> None:
    """Stop the shared engine's workers, if it was made."""
    global _engine
    with _engine_lock:
        if _engine is not None:
            _engine.close()
            _engine = None
