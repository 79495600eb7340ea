"""``XlaEnv``: CompilerGym's client environment for the XLA service.

Subclasses CompilerGym's ``ClientServiceCompilerEnv`` the way its GccEnv
does: datasets and rewards are set here, so forks keep them, and it
implements ``commandline()`` / ``commandline_to_actions()`` so that
``env.state``, ``env.apply(state)`` and ``env.validate()`` work.
"""
from __future__ import annotations

import atexit
import logging
import os
import shutil
import sys
import weakref
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

from compiler_gym.datasets import Benchmark
from compiler_gym.service import ConnectionOpts
from compiler_gym.service.client_service_compiler_env import ClientServiceCompilerEnv

from xla_service.env.datasets import default_benchmark_uri, get_xla_datasets
from xla_service.env.rewards import default_rewards
from xla_service.env.validation import make_validatable
from xla_service.errors import UnknownPassError, close_matches
from xla_service.lifeline import CLIENT_PID_VARIABLE

__all__ = ["XlaEnv", "service_executable"]

SERVICE_EXECUTABLE = "xla-gym-service"


logger = logging.getLogger(__name__)
#: Environments not yet garbage collected, closed at interpreter exit: a
#: client env finalized later (e.g. held by an uncaught exception's traceback)
#: hangs the interpreter in gRPC's ``channel.close()``.
_LIVE: "weakref.WeakSet[XlaEnv]" = weakref.WeakSet()


@atexit.register
def _close_live_envs() -> None:
    for env in list(_LIVE):
        try:
            env.close()
        except Exception as e:  # exiting anyway: report, close the others
            logger.warning("Closing %s at exit failed: %s", type(env).__name__, e)


def _with_client_pid(settings: Optional[ConnectionOpts]) -> ConnectionOpts:
    """Connection settings whose service stops when this process dies."""
    settings = settings.copy(deep=True) if settings else ConnectionOpts()
    settings.script_env = {**settings.script_env, CLIENT_PID_VARIABLE: str(os.getpid())}
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
        benchmark: Optional[Union[str, Benchmark]] = None,
        observation_space: Optional[str] = "OpcodeCounts",
        reward_space: Optional[str] = "OpCount",
        service: Optional[Union[str, Path]] = None,
        **kwargs: Any,
    ) -> None:
        # Custom benchmarks by URI, so that env.validate() and fork() can reset to them.
        self._custom_benchmarks: Dict[str, Benchmark] = {}
        if isinstance(benchmark, Benchmark):
            self._remember(benchmark)
        kwargs["connection_settings"] = _with_client_pid(kwargs.get("connection_settings"))
        super().__init__(
            *args,
            service=service or service_executable(),
            benchmark=benchmark or default_benchmark_uri(),
            observation_space=observation_space,
            reward_space=reward_space,
            datasets=get_xla_datasets(),
            rewards=default_rewards(),
            **kwargs,
        )
        _LIVE.add(self)

    def _remember(self, benchmark: Benchmark) -> None:
        self._custom_benchmarks[str(benchmark.uri)] = make_validatable(benchmark)

    @ClientServiceCompilerEnv.benchmark.setter  # type: ignore[attr-defined, untyped-decorator]
    def benchmark(self, benchmark: Union[str, Benchmark]) -> None:
        """As CompilerGym's, plus custom benchmarks by URI; every benchmark is validatable."""
        if isinstance(benchmark, Benchmark):
            self._remember(benchmark)
        elif isinstance(benchmark, str) and benchmark in self._custom_benchmarks:
            benchmark = self._custom_benchmarks[benchmark]
        ClientServiceCompilerEnv.benchmark.fset(self, benchmark)  # type: ignore[attr-defined]

    def commandline(self) -> str:
        """The passes applied so far, space-separated, in order."""
        names = self.action_space.names
        return " ".join(names[a] for a in self.actions)

    def commandline_to_actions(self, commandline: str) -> List[int]:
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
