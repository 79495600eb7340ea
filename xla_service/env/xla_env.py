"""``XlaEnv``: CompilerGym's client environment for the XLA service.

Subclasses CompilerGym's ``ClientServiceCompilerEnv`` the way its GccEnv
does: datasets and rewards are set here, so forks keep them, and it
implements ``commandline()`` / ``commandline_to_actions()`` so that
``env.state``, ``env.apply(state)`` and ``env.validate()`` work. Where the
stock client's behaviour would break the contract (README, "Stock contract")
it is corrected here, never in site-packages:

- the history holds exactly the actions the service applied: a step that
  raises is taken out of ``env.actions`` (a batch is all-or-nothing);
- ``info["pass_error"]`` carries XLA's error for a pass it failed on;
- ``fork()`` copies the reward's state; ``validate()`` never touches the live
  episode; validation callbacks run in the calling thread;
- a launched service gets an admin token for service-wide settings, and a
  remote service an auth token.
"""
from __future__ import annotations

import atexit
import contextlib
import ctypes
import logging
import os
import shutil
import subprocess
import sys
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from compiler_gym.compiler_env_state import CompilerEnvState
from compiler_gym.datasets import Benchmark
from compiler_gym.service import ConnectionOpts, ServiceError
from compiler_gym.service.client_service_compiler_env import ClientServiceCompilerEnv
from compiler_gym.validation_result import ValidationResult

from xla_service.env.actions import message_converters
from xla_service.env.connection import (
    ADMIN_TOKEN_PARAMETER,
    ADMIN_TOKEN_VARIABLE,
    TokenConnection,
    auth_token_from_environment,
    new_admin_token,
)
from xla_service.env.datasets import default_benchmark_uri, get_xla_datasets
from xla_service.env.replies import install as install_fast_step
from xla_service.env.rewards import default_rewards
from xla_service.env.validation import make_validatable
from xla_service.errors import ForkedClientError, UnknownPassError, close_matches
from xla_service.lifeline import CLIENT_PID_VARIABLE

__all__ = ["XlaEnv", "forked_after_grpc", "service_executable"]

SERVICE_EXECUTABLE = "xla-gym-service"
#: The observation that carries XLA's errors of a step (``session/observations.py``).
PASS_ERROR_SPACE = "PassError"

logger = logging.getLogger(__name__)
#: Environments not yet garbage collected, closed at interpreter exit: a
#: client env finalized later (e.g. held by an uncaught exception's traceback)
#: hangs the interpreter in gRPC's ``channel.close()``.
_LIVE: weakref.WeakSet[XlaEnv] = weakref.WeakSet()
#: The process that made this module's first client (gRPC runs there), None before.
_GRPC_PID: int | None = None


def forked_after_grpc() -> bool:
    """Whether this process was forked from one where an ``XlaEnv`` had used gRPC:
    gRPC does not survive ``fork()``, and a new channel here may hang for ever."""
    return _GRPC_PID is not None and _GRPC_PID != os.getpid()


def _forget_parent_envs() -> None:
    """In a forked child: the parent's envs are the parent's. Drop this copy of
    them without a word to their service (closing them here would end the
    parent's sessions and stop its service, at exit or when collected)."""
    for env in list(_LIVE):
        service: Any = getattr(env, "service", None)
        if service is not None:
            _never_free(service.connection)
            service.connection = None  # this copy only: the parent's stays open
            env.service = None  # type: ignore[assignment]
    _LIVE.clear()


def _never_free(connection: object) -> None:
    """Keep this copy of a parent's gRPC connection alive until the process ends.

    Freeing it runs gRPC's ``Channel.__del__``, which takes a lock that one of the
    parent's gRPC threads may have held at the fork: no thread in the child ever
    releases it, and the child hangs (at once, or in its interpreter's exit)."""
    if connection is not None:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(connection))


os.register_at_fork(after_in_child=_forget_parent_envs)


@atexit.register
def _close_live_envs() -> None:
    for env in list(_LIVE):
        try:
            env.close()
        except Exception as e:  # exiting anyway: report, close the others
            logger.warning("Closing %s at exit failed: %s", type(env).__name__, e)


def _abandon(service: Any, stop: bool) -> None:
    """Drop ``service`` (a ``CompilerGymServiceConnection``) without gRPC: stop the
    process it launched (if ``stop``) and mark it closed, so that no ``__del__``
    closes its channel later. Closing a gRPC channel waits for gRPC's polling
    threads, which no longer run once the interpreter is finalizing: that wait
    never ends."""
    connection = getattr(service, "connection", None)
    if connection is None:
        return
    process = getattr(connection, "process", None)
    if stop and process is not None and process.poll() is None:
        process.terminate()  # the service's own shutdown stops its workers
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
    cache = getattr(connection, "cache", None)
    if cache is not None:
        with contextlib.suppress(Exception):
            cache.close()
    service.connection = None


def _launch_settings(settings: ConnectionOpts | None) -> ConnectionOpts:
    """Connection settings whose service stops when this process dies, with an admin token."""
    settings = settings.copy(deep=True) if settings else ConnectionOpts()
    extra = {CLIENT_PID_VARIABLE: str(os.getpid())}
    if ADMIN_TOKEN_VARIABLE not in settings.script_env:
        extra[ADMIN_TOKEN_VARIABLE] = new_admin_token()
    settings.script_env = {**settings.script_env, **extra}
    return settings


def service_executable() -> Path:
    """The service executable installed beside this Python (or on PATH)."""
    beside = Path(sys.executable).with_name(SERVICE_EXECUTABLE)
    if beside.is_file():
        return beside
    found = shutil.which(SERVICE_EXECUTABLE)
    if found is None:
        raise FileNotFoundError(
            f"{SERVICE_EXECUTABLE!r} not found beside {sys.executable} nor on PATH: "
            "install xla-gym (make setup)"
        )
    return Path(found)


class XlaEnv(ClientServiceCompilerEnv):
    """The ``xla-v0`` environment: XLA HLO passes on HLO modules."""

    def __init__(
        self,
        *args: Any,
        benchmark: str | Benchmark | None = None,
        observation_space: str | None = "OpcodeCounts",
        reward_space: str | None = "OpCount",
        service: str | Path | None = None,
        auth_token: str | None = None,
        **kwargs: Any,
    ) -> None:
        global _GRPC_PID
        if forked_after_grpc():
            raise ForkedClientError(
                f"Expected a process that gRPC has not run in, got one forked (pid {os.getpid()}) "
                f"from process {_GRPC_PID} after it had made an xla-v0 env: gRPC does not "
                "survive fork() and this env could hang for ever. Start the process with the "
                "'forkserver' or 'spawn' method (multiprocessing.get_context('forkserver'); "
                "gymnasium.make_vec(..., vector_kwargs={'context': 'forkserver'}); SB3's "
                "SubprocVecEnv does by default), or make the env with xla_service.gym, "
                "which runs it in a fresh interpreter there."
            )
        _GRPC_PID = _GRPC_PID or os.getpid()
        # Custom benchmarks by URI, so that env.validate() and fork() can reset to them.
        self._custom_benchmarks: dict[str, Benchmark] = {}
        if isinstance(benchmark, Benchmark):
            benchmark = self._remember(benchmark)
        endpoint = service or service_executable()
        self._auth_token = auth_token if auth_token is not None else auth_token_from_environment()
        if isinstance(endpoint, Path):
            kwargs["connection_settings"] = _launch_settings(kwargs.get("connection_settings"))
        elif self._auth_token and kwargs.get("service_connection") is None:
            kwargs["service_connection"] = TokenConnection(
                str(endpoint), kwargs.get("connection_settings"), self._auth_token
            )
        kwargs.setdefault("service_message_converters", message_converters())
        #: Whether this env made its connection (a fork shares its parent's).
        self._owns_service = kwargs.get("service_connection") is None
        # Closed at exit even if the constructor fails half-way (a bad benchmark,
        # reward or dataset): the connection it opened must not outlive the threads.
        _LIVE.add(self)
        try:
            super().__init__(
                *args,
                service=endpoint,
                benchmark=benchmark or default_benchmark_uri(),
                observation_space=observation_space,
                reward_space=reward_space,
                datasets=get_xla_datasets(),
                rewards=default_rewards(),
                **kwargs,
            )
        except BaseException:
            self._close_after_failure()
            raise

    # ------------------------------------------------------------ benchmarks

    def _remember(self, benchmark: Benchmark) -> Benchmark:
        validatable = make_validatable(benchmark)
        self._custom_benchmarks[str(validatable.uri)] = validatable
        return validatable

    @ClientServiceCompilerEnv.benchmark.setter  # type: ignore[attr-defined, untyped-decorator]
    def benchmark(self, benchmark: str | Benchmark) -> None:
        """As CompilerGym's, plus custom benchmarks by URI; every benchmark is validatable."""
        if isinstance(benchmark, Benchmark):
            benchmark = self._remember(benchmark)
        elif isinstance(benchmark, str) and benchmark in self._custom_benchmarks:
            benchmark = self._custom_benchmarks[benchmark]
        ClientServiceCompilerEnv.benchmark.fset(self, benchmark)  # type: ignore[attr-defined]

    # ------------------------------------------------------------ connection

    def _init_kwargs(self) -> dict[str, Any]:
        return {**super()._init_kwargs(), "auth_token": self._auth_token}

    def _reset(self, *args: Any, **kwargs: Any) -> Any:
        # The stock client reconnects with a plain connection after an error:
        # a remote service that requires a token needs ours.
        service: Any = getattr(self, "service", None)
        if service is None and self._auth_token and not isinstance(self._service_endpoint, Path):
            self.service = TokenConnection(
                str(self._service_endpoint), self._connection_settings, self._auth_token
            )
        return super()._reset(*args, **kwargs)

    def send_params(self, *params: tuple[str, str], resend_on_reset: bool = False) -> list[str]:
        """As CompilerGym's; a client that launched its service presents the service's
        admin token with every call, which service-wide settings need."""
        token = self._connection_settings.script_env.get(ADMIN_TOKEN_VARIABLE, "")
        if token:
            params = ((ADMIN_TOKEN_PARAMETER, token), *params)
            return super().send_params(*params, resend_on_reset=resend_on_reset)[1:]
        return super().send_params(*params, resend_on_reset=resend_on_reset)

    # ------------------------------------------------------------ episodes

    def raw_step(
        self,
        actions: Iterable[Any],
        observation_spaces: list[Any],
        reward_spaces: list[Any],
        timeout: float = 300,
    ) -> Any:
        """CompilerGym's step, with the history kept to what the service applied
        and XLA's errors in ``info["pass_error"]``."""
        actions = list(actions)
        connection = getattr(getattr(self, "service", None), "connection", None)
        if connection is not None:  # replies parsed without per-element checks (env/replies.py)
            install_fast_step(connection.stub, connection.channel)
        before = len(self._actions)
        spaces = list(observation_spaces)
        extra = self.observation.spaces[PASS_ERROR_SPACE] if actions else None
        if extra is not None:
            spaces.append(extra)
        try:
            observations, rewards, done, info = super().raw_step(actions, spaces, reward_spaces, timeout)
        except Exception:
            del self._actions[before:]  # the service restored its state: nothing ran
            raise
        if extra is not None:
            error = observations.pop() if len(observations) == len(spaces) else None
            info["pass_error"] = error or ""
        return observations, rewards, done, info

    def observations(self, spaces: Iterable[str]) -> list[Any]:
        """The values of several observation spaces of the current state, in one round
        trip (``env.observation[name]`` takes one each)."""
        specs = [self.observation.spaces[name] for name in spaces]
        values, _, done, info = self.raw_step([], specs, [])
        if done:
            details = f": {info['error_details']}" if info.get("error_details") else ""
            raise ServiceError(f"Failed to compute observations {[s.id for s in specs]}{details}")
        return list(values)

    def fork(self) -> XlaEnv:
        """As CompilerGym's, with the reward's state copied (the stock fork resets it)."""
        forked: XlaEnv = super().fork()  # type: ignore[assignment]
        if self.reward_space is not None:
            forked.reward_space_spec = forked.reward.spaces[self.reward_space.name]
        forked._custom_benchmarks = dict(self._custom_benchmarks)
        return forked

    def close(self) -> None:
        """As CompilerGym's, except that a fork without a session (its reset failed)
        leaves the service it shares alone: the stock client would stop it, and
        with it every other session; and that once the interpreter is finalizing
        it only stops the service (:func:`_abandon`)."""
        service: Any = getattr(self, "service", None)
        if service is None:
            return
        if not self._owns_service and not self.in_episode:
            self.service = None  # type: ignore[assignment]
            return
        if sys.is_finalizing():
            _abandon(service, stop=self._owns_service)
            self.service = None  # type: ignore[assignment]
            return
        super().close()

    def _close_after_failure(self) -> None:
        """Close what a failed constructor opened, without masking its error."""
        try:
            self.close()
        except Exception as e:
            logger.warning("Closing a half-made %s failed: %s", type(self).__name__, e)
            _abandon(getattr(self, "service", None), stop=self._owns_service)
            self.service = None  # type: ignore[assignment]

    def validate(self, state: CompilerEnvState | None = None) -> ValidationResult:
        """As CompilerGym's, but never in the live episode: in a fork of it, or,
        outside an episode, in this env (which ``state`` resets)."""
        if not self.in_episode:
            if state is None:
                raise TypeError("validate() with no state needs an episode: call reset() first")
            return super().validate(state)
        state = state or self.state
        with self.fork() as fork:
            return ClientServiceCompilerEnv.validate(fork, state)

    def commandline(self) -> str:
        """The passes applied so far, space-separated, in order."""
        names = self.action_space.names
        return " ".join(names[a] for a in self.actions)

    def commandline_to_actions(self, commandline: str) -> list[int]:
        """The inverse of :meth:`commandline`."""
        names = list(self.action_space.names)
        actions = []
        for word in commandline.split():
            if word not in names:
                raise UnknownPassError(
                    f"Unknown pass {word!r} in commandline.{close_matches(word, names)}"
                )
            actions.append(names.index(word))
        return actions
