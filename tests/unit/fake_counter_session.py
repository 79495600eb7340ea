"""A tiny CompilationSession for the runtime's tests: a counter.

Action i < 4 adds i. The others exercise the runtime: see ``ACTIONS``.
Importable by a service subprocess (``python -m fake_counter_session ARGS``).
"""

from __future__ import annotations

import builtins
import sys
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import ClassVar

from xla_service import errors
from xla_service.proto import (
    ActionSpace,
    Benchmark,
    Event,
    Int64Range,
    NamedDiscreteSpace,
    ObservationSpace,
    Space,
)
from xla_service.session.base import CompilationSession

ACTIONS = [
    "add0",
    "add1",
    "add2",
    "add3",
    "slow_add1",  # 4: read, sleep, write: loses updates if not serialized.
    "barrier",  # 5: waits on CounterSession.barrier.
    "block",  # 6: sets CounterSession.entered, waits for CounterSession.release.
    "raise_value",  # 7: ValueError.
    "raise_runtime",  # 8: RuntimeError.
    "end",  # 9: ends the session.
    "switch",  # 10: new action space named "switched-<count>".
]
A = {name: i for i, name in enumerate(ACTIONS)}
COUNT, TEXT, BROKEN = 0, 1, 2


def _string_space() -> Space:
    space = Space()
    space.string_value.length_range.min = 0
    return space


def _action_space(name: str) -> ActionSpace:
    return ActionSpace(name=name, space=Space(named_discrete=NamedDiscreteSpace(name=ACTIONS)))


class CounterSession(CompilationSession):
    """Counts. The class attributes below are shared state for the tests."""

    compiler_version = "counter-1.0"
    action_spaces = [_action_space("counter")]
    observation_spaces = [
        ObservationSpace(
            name="count",
            space=Space(int64_value=Int64Range(min=0, max=2**31)),
            deterministic=True,
            default_observation=Event(int64_value=0),
        ),
        ObservationSpace(
            name="text",
            space=_string_space(),
            deterministic=True,
        ),
        ObservationSpace(
            name="broken",
            space=Space(int64_value=Int64Range(min=0)),
            deterministic=True,
        ),
    ]

    instances: ClassVar[list[CounterSession]] = []
    barrier: ClassVar[threading.Barrier] = threading.Barrier(2, timeout=10)
    entered: ClassVar[threading.Event] = threading.Event()
    release: ClassVar[threading.Event] = threading.Event()
    _class_lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def reset_class_state(cls) -> None:
        cls.instances = []
        cls.barrier = threading.Barrier(2, timeout=10)
        cls.entered = threading.Event()
        cls.release = threading.Event()

    def __init__(
        self, working_directory: Path, action_space: ActionSpace, benchmark: Benchmark
    ) -> None:
        super().__init__(working_directory, action_space, benchmark)
        self.count = int(benchmark.program.contents or b"0")
        self.closed = False
        self.inflight = 0
        self.max_inflight = 0
        with self._class_lock:
            self.instances.append(self)

    def apply_action(self, action: Event) -> tuple[bool, ActionSpace | None, bool]:
        if self.closed:
            raise RuntimeError("session used after close()")
        with self._class_lock:
            self.inflight += 1
            self.max_inflight = max(self.max_inflight, self.inflight)
        try:
            return self._apply(ACTIONS[action.int64_value])
        finally:
            with self._class_lock:
                self.inflight -= 1

    def _apply(self, name: str) -> tuple[bool, ActionSpace | None, bool]:
        if name.startswith("add"):
            self.count += int(name[3:])
            return False, None, name == "add0"
        if name == "slow_add1":
            count = self.count
            time.sleep(0.02)
            self.count = count + 1
        elif name == "barrier":
            self.barrier.wait()
        elif name == "block":
            self.entered.set()
            if not self.release.wait(timeout=10):
                raise TimeoutError("block was never released")
        elif name == "raise_value":
            raise ValueError("bad action: raise_value")
        elif name == "raise_runtime":
            raise RuntimeError("internal failure")
        elif name == "end":
            return True, None, False
        elif name == "switch":
            return False, _action_space(f"switched-{self.count}"), True
        return False, None, False

    def get_observation(self, observation_space: ObservationSpace) -> Event:
        if self.closed:
            raise RuntimeError("session used after close()")
        if observation_space.name == "count":
            return Event(int64_value=self.count)
        if observation_space.name == "text":
            return Event(string_value=f"count={self.count}")
        raise ValueError(f"broken observation: {observation_space.name}")

    def fork(self) -> CounterSession:
        forked = CounterSession(self.working_directory, self.action_space, self.benchmark)
        forked.count = self.count
        return forked

    def handle_session_parameter(self, key: str, value: str) -> str | None:
        if key == "echo":
            return value
        if key == "fail":
            raise ValueError(f"parameter fail failed: {value}")
        if key == "raise":  # value: an exception class in builtins or xla_service.errors
            error_type = getattr(errors, value, None) or getattr(builtins, value)
            raise error_type("boom")
        return None

    def close(self) -> None:
        if self.closed:
            raise RuntimeError("closed twice")
        self.closed = True


def import_compiler_gym() -> ModuleType:
    """``import compiler_gym`` under NumPy 2 (it reads three removed names)."""
    try:
        from xla_service.env.compat import restore_numpy_names  # type: ignore
    except ImportError:
        import numpy as np

        def restore_numpy_names() -> None:
            np.NINF = -np.inf  # type: ignore[attr-defined]
            np.PINF = np.inf  # type: ignore[attr-defined]
            if not hasattr(np, "find_common_type"):
                np.find_common_type = (  # type: ignore[attr-defined]
                    lambda array_types, scalar_types: np.result_type(*array_types, *scalar_types)
                )

    restore_numpy_names()
    import compiler_gym

    return compiler_gym


if __name__ == "__main__":
    from xla_service.runtime.server import serve

    sys.exit(serve(CounterSession))
