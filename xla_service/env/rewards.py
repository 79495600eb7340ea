"""Reward spaces of xla-v0, computed on the client from observations."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from compiler_gym.spaces import Reward

__all__ = [
    "OpCountReward",
    "OpCountNormReward",
    "OpCountShapedReward",
    "RuntimeReward",
    "SHAPING_GAMMA",
    "default_rewards",
]

#: The discount of ``OpCountShaped``'s potential-based shaping.
SHAPING_GAMMA = 0.99


class OpCountReward(Reward):
    """The reduction in op count since the previous step.

    An episode's return is ``OpCount at start - OpCount at end``.
    """

    #: What :meth:`start` reads, which a client may fetch with the episode's first
    #: observation and pass to :meth:`start` itself (the Gymnasium env does).
    initial_spaces: tuple[str, ...] = ("OpCountInitial",)

    def __init__(self, name: str = "OpCount") -> None:
        super().__init__(
            name=name,
            observation_spaces=["OpCount"],
            default_value=0,
            default_negates_returns=False,
            deterministic=True,
            platform_dependent=False,
        )
        self.previous: int | None = None
        self.scale = 1

    def reset(self, benchmark: str, observation_view: object) -> None:
        del benchmark, observation_view
        self.previous = None

    def start(self, observation_view: object) -> None:
        """Read the episode's starting point (on the first step: see ``update``)."""
        self.previous = int(observation_view["OpCountInitial"])  # type: ignore[index]

    def update(self, actions: list[int], observations: list[object], observation_view: object) -> float:
        del actions
        count = int(observations[0])  # type: ignore[call-overload]
        if self.previous is None:  # CompilerGym resets every reward on every reset: read lazily
            self.start(observation_view)
        assert self.previous is not None
        reward = (self.previous - count) / self.scale
        self.previous = count
        return float(reward)


class OpCountNormReward(OpCountReward):
    """The op count reduction divided by the reduction of XLA's default pipeline.

    An episode's return is ``(OpCountInitial - OpCount at end) /
    max(OpCountInitial - OpCountDefault, 1)``: 1.0 when the agent matches the
    default pipeline (as ``IrInstructionCountOz`` is for LLVM).
    """

    #: Read lazily, at the first step (XLA's default pipeline is no part of a reset).
    initial_spaces: tuple[str, ...] = ()

    def __init__(self) -> None:
        super().__init__(name="OpCountNorm")

    def start(self, observation_view: object) -> None:
        super().start(observation_view)
        default = int(observation_view["OpCountDefault"])  # type: ignore[index]
        self.scale = max(int(self.previous or 0) - default, 1)


class OpCountShapedReward(Reward):
    """``OpCount`` plus potential-based shaping (Ng et al., 1999) from XLA's cost analysis.

    ``r' = r + gamma * Phi(s') - Phi(s)`` per ``env.step()``, with ``r`` the
    ``OpCount`` reward, ``gamma`` = :data:`SHAPING_GAMMA` (the ``gamma``
    attribute) and ``Phi(s) = N0 * (1 - (F(s) + T(s)) / max(F(s0) + T(s0), 1))``:
    ``N0`` the initial op count, ``F`` and ``T`` the flops and transcendentals
    of ``CostAnalysis``, ``s0`` the benchmark as loaded. The discounted shaped
    return is the discounted ``OpCount`` return plus
    ``gamma**T * Phi(s_T) - Phi(s0)``; with ``gamma = 1`` the episode's return
    differs from ``OpCount``'s by ``Phi(s_T) - Phi(s0)`` only.
    """

    def __init__(self, gamma: float = SHAPING_GAMMA) -> None:
        super().__init__(
            name="OpCountShaped",
            observation_spaces=["OpCount", "CostAnalysis"],
            default_value=0,
            default_negates_returns=False,
            deterministic=True,
            platform_dependent=False,
        )
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"Expected gamma in [0, 1], got {gamma}")
        self.gamma = gamma
        self.previous: int | None = None
        self.previous_potential = 0.0
        self.initial_count = 0
        self.initial_cost = 1.0

    def reset(self, benchmark: str, observation_view: object) -> None:
        del benchmark, observation_view
        self.previous = None

    def potential(self, costs: Sequence[float]) -> float:
        """``Phi`` of a state whose ``CostAnalysis`` is ``costs``."""
        return self.initial_count * (1.0 - (float(costs[0]) + float(costs[1])) / self.initial_cost)

    def update(self, actions: list[int], observations: list[object], observation_view: object) -> float:
        del actions
        count = int(observations[0])  # type: ignore[call-overload]
        costs = observations[1]
        if self.previous is None:
            self.previous = self.initial_count = int(observation_view["OpCountInitial"])  # type: ignore[index]
            initial = observation_view["CostAnalysisInitial"]  # type: ignore[index]
            self.initial_cost = max(float(initial[0]) + float(initial[1]), 1.0)
            self.previous_potential = self.potential(initial)
        potential = self.potential(costs)  # type: ignore[arg-type]
        reward = (self.previous - count) + self.gamma * potential - self.previous_potential
        self.previous, self.previous_potential = count, potential
        return float(reward)


class RuntimeReward(Reward):
    """The reduction of the median ``Runtime`` since the previous step, over the initial one.

    An episode's return is ``(initial - final) / initial`` median runtime
    (``RuntimeInitial`` measures the benchmark as loaded).
    """

    def __init__(self) -> None:
        super().__init__(
            name="Runtime",
            observation_spaces=["Runtime"],
            default_value=0,
            default_negates_returns=True,
            deterministic=False,
            platform_dependent=True,
        )
        self.previous: float | None = None
        self.initial = 1.0

    def reset(self, benchmark: str, observation_view: object) -> None:
        del benchmark, observation_view
        self.previous = None

    def update(self, actions: list[int], observations: list[object], observation_view: object) -> float:
        del actions
        runtime = float(np.median(observations[0]))  # type: ignore[call-overload]
        if self.previous is None:
            self.initial = float(np.median(observation_view["RuntimeInitial"]))  # type: ignore[index]
            self.previous = self.initial
        reward = (self.previous - runtime) / max(self.initial, 1e-12)
        self.previous = runtime
        return reward


def default_rewards() -> list[Reward]:
    """Every reward space of xla-v0."""
    from xla_service.env.backend_rewards import backend_rewards

    return [OpCountReward(), OpCountNormReward(), OpCountShapedReward(), RuntimeReward(), *backend_rewards()]
