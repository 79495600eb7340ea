"""``XlaEnv``: CompilerGym's client environment for the XLA service.

Subclasses CompilerGym's ``ClientServiceCompilerEnv`` the way its GccEnv
does: datasets and rewards are set here, so forks keep them, and it
implements ``commandline()`` / ``commandline_to_actions()`` so that
``env.state``, ``env.apply(state)`` and ``env.validate()`` work.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any, List, Optional, Union

from compiler_gym.datasets import Benchmark
from compiler_gym.service.client_service_compiler_env import ClientServiceCompilerEnv

from xla_service.env.datasets import default_benchmark_uri, get_xla_datasets
from xla_service.env.rewards import default_rewards
from xla_service.errors import UnknownPassError, close_matches

__all__ = ["XlaEnv", "service_executable"]

SERVICE_EXECUTABLE = "xla-gym-service"


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
