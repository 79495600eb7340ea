"""Reward spaces of xla-v0, computed on the client from observations."""
from __future__ import annotations

from typing import List, Optional

from compiler_gym.spaces import Reward

__all__ = ["OpCountReward", "default_rewards"]


class OpCountReward(Reward):
    """The reduction in op count since the previous step.

    An episode's return is ``OpCount at start - OpCount at end``.
    """

    def __init__(self) -> None:
        super().__init__(
            name="OpCount",
            observation_spaces=["OpCount"],
            default_value=0,
            default_negates_returns=False,
            deterministic=True,
            platform_dependent=False,
        )
        self.previous: Optional[int] = None

    def reset(self, benchmark: str, observation_view: object) -> None:
        del benchmark
        self.previous = None
        del observation_view

    def update(self, actions: List[int], observations: List[object], observation_view: object) -> float:
        del actions
        count = int(observations[0])  # type: ignore[call-overload]
        if self.previous is None:
            self.previous = int(observation_view["OpCountInitial"])  # type: ignore[index]
        reward = float(self.previous - count)
        self.previous = count
        return reward


def default_rewards() -> List[Reward]:
    return [OpCountReward()]
