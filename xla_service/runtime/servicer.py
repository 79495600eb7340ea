"""The ``CompilerGymService`` gRPC servicer, driving :class:`CompilationSession` objects.

Same wire semantics as CompilerGym 0.2.5's runtime, without its defects:
session ids are unguessable 63-bit random numbers (a session can be used only
by the client that started it, which alone learns its id), allocated under a
lock (a fork gets a fresh id); each session has its own lock so that two RPCs
on one session never run at once while different sessions run in parallel;
no session method runs under the lock that guards the sessions table; a
``Step`` of several actions is all-or-nothing (the session is restored from a
fork taken before it if an action fails); and the session type's
``service_parameters`` are refused unless the request first presents the
service's admin token (``service.admin_token``), which only the client that
launched the service knows.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import grpc

from xla_service.errors import PermissionDeniedError
from xla_service.proto import (
    ActionSpace,
    AddBenchmarkReply,
    AddBenchmarkRequest,
    Benchmark,
    CompilerGymServiceServicer,
    EndSessionReply,
    EndSessionRequest,
    ForkSessionReply,
    ForkSessionRequest,
    GetSpacesReply,
    GetSpacesRequest,
    GetVersionReply,
    GetVersionRequest,
    ObservationSpace,
    SendSessionParameterReply,
    SendSessionParameterRequest,
    StartSessionReply,
    StartSessionRequest,
    StepReply,
    StepRequest,
)
from xla_service.runtime.benchmark_cache import (
    DEFAULT_MAX_SIZE_IN_BYTES,
    BenchmarkCache,
    BenchmarkNotFoundError,
)
from xla_service.runtime.replies import EncodedStepReply
from xla_service.runtime.sessions import SessionTable, close_quietly, fork_or_none
from xla_service.runtime.status import ServiceClosedError, status_code_for, truncate_details
from xla_service.session.base import CompilationSession

__all__ = [
    "ADMIN_TOKEN_PARAMETER",
    "SERVICE_VERSION",
    "CompilerGymServicer",
    "ServiceClosedError",
    "status_code_for",
]

logger = logging.getLogger(__name__)

SERVICE_VERSION = "0.2.5"
"""The CompilerGym protocol version this runtime speaks (``GetVersion``)."""

#: The session parameter that presents the admin token, before the parameters it authorizes.
ADMIN_TOKEN_PARAMETER = "service.admin_token"

_R = TypeVar("_R")


class CompilerGymServicer(CompilerGymServiceServicer):
    """Serves ``session_type`` sessions; see the module docstring."""

    def __init__(
        self,
        working_directory: Path,
        session_type: type[CompilationSession],
        benchmark_cache_max_size_in_bytes: int = DEFAULT_MAX_SIZE_IN_BYTES,
        service_version: str = SERVICE_VERSION,
        admin_token: str = "",
    ) -> None:
        self.working_directory = Path(working_directory)
        self.session_type = session_type
        self.service_version = service_version
        self.action_spaces: list[ActionSpace] = list(session_type.action_spaces)
        self.observation_spaces: list[ObservationSpace] = list(session_type.observation_spaces)
        self.benchmarks = BenchmarkCache(benchmark_cache_max_size_in_bytes)
        self.sessions = SessionTable()
        #: Presented with ``service.admin_token`` to change service-wide settings.
        self.admin_token = admin_token

    # ------------------------------------------------------------------ helpers

    def _call(
        self,
        name: str,
        context: grpc.ServicerContext,
        reply: _R,
        body: Callable[[], _R],
    ) -> _R:
        """Run ``body``; on an exception set the mapped status and return ``reply``."""
        try:
            return body()
        except Exception as error:
            code = status_code_for(error)
            if isinstance(error, BenchmarkNotFoundError):
                # a protocol step, not a failure: CompilerGym's client sends
                # the benchmark's program and starts the session again
                logger.debug("%s: %s", name, error)
            else:
                logger.warning("%s failed with %s", name, code.name, exc_info=error)
            context.set_code(code)
            context.set_details(truncate_details(str(error) or type(error).__name__))
            return reply

    def _action_space(self, index: int) -> ActionSpace:
        if not 0 <= index < len(self.action_spaces):
            raise ValueError(
                f"Action space index out of range: expected 0 <= index < "
                f"{len(self.action_spaces)}, got {index}"
            )
        return self.action_spaces[index]

    def _observation_spaces(self, indices: Sequence[int]) -> list[ObservationSpace]:
        count = len(self.observation_spaces)
        for index in indices:
            if not 0 <= index < count:
                raise ValueError(
                    f"Observation space index out of range: expected 0 <= index < "
                    f"{count}, got {index}"
                )
        return [self.observation_spaces[i] for i in indices]

    # --------------------------------------------------------------------- RPCs

    def GetVersion(
        self, request: GetVersionRequest, context: grpc.ServicerContext
    ) -> GetVersionReply:
        logger.debug("GetVersion()")
        return GetVersionReply(
            service_version=self.service_version,
            compiler_version=self.session_type.compiler_version,
        )

    def GetSpaces(self, request: GetSpacesRequest, context: grpc.ServicerContext) -> GetSpacesReply:
        logger.debug("GetSpaces()")
        return GetSpacesReply(
            action_space_list=self.action_spaces,
            observation_space_list=self.observation_spaces,
        )

    def StartSession(
        self, request: StartSessionRequest, context: grpc.ServicerContext
    ) -> StartSessionReply:
        logger.debug("StartSession(benchmark=%s)", request.benchmark.uri)
        return self._call(
            "StartSession", context, StartSessionReply(), lambda: self._start(request)
        )

    def _start(self, request: StartSessionRequest) -> StartSessionReply:
        uri = request.benchmark.uri
        if not uri:
            raise ValueError("No benchmark URI set for StartSession()")
        action_space = self._action_space(request.action_space)
        observation_spaces = self._observation_spaces(request.observation_space)
        if request.benchmark.HasField("program"):
            benchmark = Benchmark()
            benchmark.CopyFrom(request.benchmark)
            self.benchmarks.add(benchmark)
        else:
            benchmark = self.benchmarks[uri]
        session = self.session_type(
            working_directory=self.working_directory,
            action_space=action_space,
            benchmark=benchmark,
        )
        try:
            observations = [session.get_observation(space) for space in observation_spaces]
        except BaseException:
            close_quietly(session, "unstarted")
            raise
        session_id = self.sessions.add(session)
        logger.debug("Started session %d with %s", session_id, uri)
        return StartSessionReply(session_id=session_id, observation=observations)

    def ForkSession(
        self, request: ForkSessionRequest, context: grpc.ServicerContext
    ) -> ForkSessionReply:
        logger.debug("ForkSession(%d)", request.session_id)

        def fork() -> ForkSessionReply:
            with self.sessions.locked(request.session_id) as session:
                forked = session.fork()
            session_id = self.sessions.add(forked)
            logger.debug("Forked session %d as %d", request.session_id, session_id)
            return ForkSessionReply(session_id=session_id)

        return self._call("ForkSession", context, ForkSessionReply(), fork)

    def EndSession(
        self, request: EndSessionRequest, context: grpc.ServicerContext
    ) -> EndSessionReply:
        remaining = self.sessions.pop(request.session_id)
        logger.debug("EndSession(%d), %d sessions remaining", request.session_id, remaining)
        return EndSessionReply(remaining_sessions=remaining)

    def Step(self, request: StepRequest, context: grpc.ServicerContext) -> EncodedStepReply | StepReply:
        """The reply's observations go serialized (``replies.py``): gRPC sends them as they are."""
        logger.debug("Step(%d, %d actions)", request.session_id, len(request.action))

        def step() -> EncodedStepReply:
            observation_spaces = self._observation_spaces(request.observation_space)
            reply = EncodedStepReply(action_had_no_effect=True)
            with self.sessions.locked(request.session_id) as session:
                backup = fork_or_none(session) if len(request.action) > 1 else None
                try:
                    session.start_step()
                    for action in request.action:
                        end_of_session, new_action_space, no_effect = session.apply_action(action)
                        reply.action_had_no_effect = reply.action_had_no_effect and bool(no_effect)
                        if new_action_space is not None:
                            reply.new_action_space = new_action_space
                        if end_of_session:  # Like CompilerGym's C++ runtime: stop here.
                            reply.end_of_session = True
                            break
                except BaseException:
                    if backup is not None:  # all or nothing: as before the request
                        self.sessions.restore(request.session_id, backup)
                    raise
                reply.observations = [session.get_observation_bytes(s) for s in observation_spaces]
            return reply

        return self._call("Step", context, StepReply(), step)

    def AddBenchmark(
        self, request: AddBenchmarkRequest, context: grpc.ServicerContext
    ) -> AddBenchmarkReply:
        logger.debug("AddBenchmark(%s)", ", ".join(b.uri for b in request.benchmark))

        def add() -> AddBenchmarkReply:
            for benchmark in request.benchmark:
                if not benchmark.uri:
                    raise ValueError("No benchmark URI set for AddBenchmark()")
                copy = Benchmark()
                copy.CopyFrom(benchmark)
                self.benchmarks.add(copy)
            return AddBenchmarkReply()

        return self._call("AddBenchmark", context, AddBenchmarkReply(), add)

    def SendSessionParameter(
        self, request: SendSessionParameterRequest, context: grpc.ServicerContext
    ) -> SendSessionParameterReply:
        logger.debug(
            "SendSessionParameter(%d, %s)",
            request.session_id,
            ", ".join(p.key for p in request.parameter),
        )

        def send() -> SendSessionParameterReply:
            reply = SendSessionParameterReply()
            admin = False
            with self.sessions.locked(request.session_id) as session:
                for param in request.parameter:
                    if param.key == ADMIN_TOKEN_PARAMETER:
                        admin = self._check_admin(param.value)
                        reply.reply.append("ok")
                        continue
                    if param.key in self.session_type.service_parameters and not admin:
                        raise PermissionDeniedError(
                            f"{param.key} changes the whole service: only the client that "
                            "launched it (which holds its admin token) may set it, or set it "
                            "when the service starts"
                        )
                    message = session.handle_session_parameter(param.key, param.value)
                    if message is None:
                        message = self._builtin_parameter(param.key, param.value)
                    if message is None:
                        raise ValueError(f"Unknown parameter: {param.key}")
                    reply.reply.append(message)
            return reply

        return self._call("SendSessionParameter", context, SendSessionParameterReply(), send)

    def _check_admin(self, token: str) -> bool:
        if not self.admin_token:
            raise PermissionDeniedError(
                "This service has no admin token: its service-wide settings are set when it "
                "starts (environment variables, README \"Session parameters\")"
            )
        if not hmac.compare_digest(token.encode(), self.admin_token.encode()):
            raise PermissionDeniedError("Wrong admin token for this service")
        return True

    def _builtin_parameter(self, key: str, value: str) -> str | None:
        """CompilerGym's service-level parameters, or None for an unknown key."""
        if key == "service.benchmark_cache.set_max_size_in_bytes":
            try:
                size = int(value)
            except ValueError:
                size = -1
            if size < 0:
                raise ValueError(f"{key} expects a non-negative integer, got {value!r}")
            self.benchmarks.max_size_in_bytes = size
            return value
        if key == "service.benchmark_cache.get_max_size_in_bytes":
            return str(self.benchmarks.max_size_in_bytes)
        if key == "service.benchmark_cache.get_size_in_bytes":
            return str(self.benchmarks.size_in_bytes)
        return None

    # ----------------------------------------------------------------- shutdown

    @property
    def session_count(self) -> int:
        """The number of open sessions."""
        return self.sessions.count

    def close_all(self) -> int:
        """End every session and refuse new ones; returns how many were open."""
        return self.sessions.close_all()
