"""Reward spaces on what XLA's CPU backend makes of the module (``BackendCost``).

For each objective of ``catalog.backend.BACKEND_OBJECTIVES`` (``EstimatedTime``,
``TempBytes``, ``BytesAccessed``) and each pipeline mode (``full``: the name as
it is; ``agent``: with ``Agent`` after the objective):

- ``<Objective>``: the reduction since the previous step, in the objective's
  unit (seconds, bytes); an episode's return is ``initial - final``;
- ``<Objective>Norm``: the same divided by the value XLA's default pipeline
  reaches (``BackendCost[Agent]Default``): an episode's return is
  ``(initial - final) / default``, so ``final / default = initial / default - return``.

Deterministic: the same module gives the same value in any process.
"""
from __future__ import annotations

from compiler_gym.spaces import Reward

from xla_service.catalog.backend import BACKEND_KEYS, BACKEND_OBJECTIVES

__all__ = ["BackendReward", "backend_rewards", "backend_space"]

_PIPELINES = {"full": "", "agent": "Agent"}


def backend_space(pipeline: str) -> str:
    """The ``BackendCost`` observation space of a pipeline mode (``full`` or ``agent``)."""
    if pipeline not in _PIPELINES:
        raise ValueError(f"Expected a pipeline in {list(_PIPELINES)}, got {pipeline!r}")
    return f"BackendCost{_PIPELINES[pipeline]}"


class BackendReward(Reward):
    """The reduction of one ``BackendCost`` entry, optionally over XLA's default."""

    def __init__(self, objective: str, pipeline: str = "full", normalized: bool = False) -> None:
        if objective not in BACKEND_OBJECTIVES:
            raise ValueError(f"Expected an objective in {list(BACKEND_OBJECTIVES)}, got {objective!r}")
        self.space = backend_space(pipeline)
        super().__init__(
            name=f"{objective}{_PIPELINES[pipeline]}{'Norm' if normalized else ''}",
            observation_spaces=[self.space],
            default_value=0,
            default_negates_returns=False,
            deterministic=True,
            platform_dependent=False,
        )
        self.index = BACKEND_KEYS.index(BACKEND_OBJECTIVES[objective])
        self.normalized = normalized
        self.previous: float | None = None
        self.scale = 1.0

    def reset(self, benchmark: str, observation_view: object) -> None:
        del benchmark, observation_view
        self.previous = None

    def _value(self, observation: object) -> float:
        return float(observation[self.index])  # type: ignore[index]

    def update(self, actions: list[int], observations: list[object], observation_view: object) -> float:
        del actions
        value = self._value(observations[0])
        if self.previous is None:  # CompilerGym resets rewards on every reset: read lazily
            self.previous = self._value(observation_view[f"{self.space}Initial"])  # type: ignore[index]
            if self.normalized:
                default = self._value(observation_view[f"{self.space}Default"])  # type: ignore[index]
                self.scale = default if default > 0 else 1.0
        reward = (self.previous - value) / self.scale
        self.previous = value
        return reward


def backend_rewards() -> list[Reward]:
    """Every backend reward space: each objective, pipeline mode, raw and normalized."""
    return [
        BackendReward(objective, pipeline, normalized)
        for pipeline in _PIPELINES
        for objective in BACKEND_OBJECTIVES
        for normalized in (False, True)
    ]
