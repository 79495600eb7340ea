"""What a search minimizes: the objective behind the env's reward space.

The harness sets the reward space of a track (``OpCount`` for the op count
track, ``EstimatedTimeAgentNorm`` for a backend track, ...); the searches read
it from ``env.reward_space`` and minimize the observation behind it, so one
agent serves every track. A module XLA's backend cannot compile has no backend
cost: its value is ``inf``, never chosen.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from compiler_gym.envs import CompilerEnv

from xla_service.catalog.backend import BACKEND_KEYS, BACKEND_OBJECTIVES

__all__ = ["Objective", "objective_of", "env_objective", "OBJECTIVE_NAMES"]


@dataclass(frozen=True)
class Objective:
    """An observation entry to minimize: ``env.observation[space][index]`` (the whole
    observation when ``index`` is None)."""

    name: str
    space: str
    index: int | None = None

    def value(self, env: CompilerEnv) -> float:
        """The objective in ``env``'s current state; ``inf`` if XLA cannot compute it."""
        try:
            observation = env.observation[self.space]
        except ValueError:  # the backend cannot compile this module
            return math.inf
        return float(observation if self.index is None else observation[self.index])

    def initial(self, env: CompilerEnv) -> float:
        """The objective of the benchmark as loaded."""
        return self._reference(env, "Initial")

    def default(self, env: CompilerEnv) -> float:
        """The objective of XLA's default pipeline's result."""
        return self._reference(env, "Default")

    def _reference(self, env: CompilerEnv, suffix: str) -> float:
        observation = env.observation[f"{self.space}{suffix}"]
        return float(observation if self.index is None else observation[self.index])


def _objectives() -> dict[str, Objective]:
    table = {name: Objective("OpCount", "OpCount") for name in ("OpCount", "OpCountNorm", "OpCountShaped")}
    for suffix in ("", "Agent"):
        for stem, key in BACKEND_OBJECTIVES.items():
            objective = Objective(f"{stem}{suffix}", f"BackendCost{suffix}", BACKEND_KEYS.index(key))
            table[objective.name] = table[f"{objective.name}Norm"] = objective
    return table


_OBJECTIVES = _objectives()
#: Reward spaces whose objective a search can minimize (``Runtime`` is noise: no search uses it).
OBJECTIVE_NAMES: tuple[str, ...] = tuple(_OBJECTIVES)


def objective_of(reward_space: str) -> Objective:
    """The objective behind a reward space; raises ValueError with the choices."""
    try:
        return _OBJECTIVES[reward_space]
    except KeyError:
        raise ValueError(
            f"Expected a reward space with a deterministic objective, one of {list(_OBJECTIVES)}, "
            f"got {reward_space!r}"
        ) from None


def env_objective(env: CompilerEnv) -> Objective:
    """The objective behind ``env``'s reward space (``OpCount`` if it has none)."""
    return objective_of(env.reward_space.name if env.reward_space is not None else "OpCount")
