"""The compilation session contract, after CompilerGym's ``CompilationSession``.

A backend declares its spaces at class level and implements
:meth:`apply_action` and :meth:`get_observation`. The service runtime creates
one instance per session and never calls two methods of one instance at once.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar

from xla_service.proto import ActionSpace, Benchmark, Event, ObservationSpace

__all__ = ["CompilationSession"]


class CompilationSession(ABC):
    """One episode's compiler state, owned by the service runtime."""

    compiler_version: ClassVar[str] = ""
    action_spaces: ClassVar[list[ActionSpace]] = []
    observation_spaces: ClassVar[list[ObservationSpace]] = []
    #: Parameters that change the whole service: the runtime accepts them only
    #: from a client that presents the service's admin token.
    service_parameters: ClassVar[frozenset[str]] = frozenset()

    def __init__(
        self, working_directory: Path, action_space: ActionSpace, benchmark: Benchmark
    ) -> None:
        self.working_directory = working_directory
        self.action_space = action_space
        self.benchmark = benchmark

    def start_step(self) -> None:
        """Called before the actions of each ``Step`` request."""

    @abstractmethod
    def apply_action(self, action: Event) -> tuple[bool, ActionSpace | None, bool]:
        """Apply one action.

        :return: ``(end_of_session, new_action_space or None,
            action_had_no_effect)``.
        """

    @abstractmethod
    def get_observation(self, observation_space: ObservationSpace) -> Event:
        """Compute one observation of the current state."""

    def get_observation_bytes(self, observation_space: ObservationSpace) -> bytes:
        """:meth:`get_observation` serialized, as a ``Step`` reply carries it
        (a session may keep the bytes of what it observed before)."""
        return self.get_observation(observation_space).SerializeToString()

    def fork(self) -> CompilationSession:
        """An independent copy of this session, in its current state."""
        raise NotImplementedError(f"{type(self).__name__} does not support fork()")

    def handle_session_parameter(self, key: str, value: str) -> str | None:
        """Handle a session parameter. ``None`` means "not understood"."""
        del key, value
        return None

    def close(self) -> None:
        """Release what the session holds. Called once, when it ends."""
