"""A Gymnasium view of ``xla-v0``, for stable-baselines3 (which speaks Gymnasium).

- Observation: ``log1p`` of the 133 opcode counts, float32; with
  ``cost_features=True`` also ``log1p`` of the cost analysis (flops,
  transcendentals, bytes accessed), appended.
- Action: ``Discrete(64)``, the XLA passes in ``env.action_space.names`` order.
- Reward: the op-count reduction of the step divided by the benchmark's
  initial op count (so returns are comparable across benchmarks), or the
  ``OpCountShaped`` reward with ``reward_space="OpCountShaped"``.
- Episodes: ``episode_length`` steps (truncation); each reset draws a
  benchmark from ``benchmarks`` with the env's seeded generator.
- A pass that XLA fails on (``ValueError`` from the service) is a no-op step
  with reward 0 and ``info["xla_error"]`` set: the state is unchanged.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import gymnasium
import numpy as np

from xla_service.catalog.opcodes import OPCODES
from xla_service.env.compat import restore_numpy_names

__all__ = ["XlaGymnasiumEnv", "COST_FEATURES"]

#: Cost-analysis entries appended with ``cost_features=True``.
COST_FEATURES = ("flops", "transcendentals", "bytes accessed")


class XlaGymnasiumEnv(gymnasium.Env):
    """``xla-v0`` as a ``gymnasium.Env`` with a fixed episode length."""

    metadata: Dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        benchmarks: Sequence[str],
        episode_length: int = 20,
        cost_features: bool = False,
        reward_space: str = "OpCount",
    ) -> None:
        if not benchmarks:
            raise ValueError("Expected at least one benchmark URI, got none")
        if episode_length < 1:
            raise ValueError(f"Expected episode_length >= 1, got {episode_length}")
        restore_numpy_names()
        import compiler_gym

        self.benchmarks: List[str] = list(benchmarks)
        self.episode_length = episode_length
        self.cost_features = cost_features
        self.env = compiler_gym.make(
            "xla-v0", observation_space="OpcodeCounts", reward_space=reward_space
        )
        size = len(OPCODES) + (len(COST_FEATURES) if cost_features else 0)
        self.observation_space = gymnasium.spaces.Box(0.0, np.inf, (size,), np.float32)
        self.action_space = gymnasium.spaces.Discrete(len(self.env.action_space.names))
        self._scale = 1.0
        self._steps = 0

    def _observe(self, counts: np.ndarray) -> np.ndarray:
        features = [np.log1p(np.asarray(counts, dtype=np.float64))]
        if self.cost_features:
            cost = self.env.observation["CostAnalysisDict"]
            features.append(np.log1p([float(cost[k]) for k in COST_FEATURES]))
        return np.concatenate(features).astype(np.float32)

    def reset(
        self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None
    ) -> Tuple[np.ndarray, Dict[str, Any]]:
        super().reset(seed=seed)
        benchmark = (options or {}).get("benchmark") or self.benchmarks[
            int(self.np_random.integers(len(self.benchmarks)))
        ]
        counts = self.env.reset(benchmark=benchmark)
        self._scale = float(max(self.env.observation["OpCountInitial"], 1))
        self._steps = 0
        return self._observe(counts), {"benchmark": benchmark}

    def step(self, action: int) -> Tuple[np.ndarray, float, bool, bool, Dict[str, Any]]:
        self._steps += 1
        truncated = self._steps >= self.episode_length
        try:
            counts, reward, done, info = self.env.step(int(action))
        except ValueError as e:  # XLA failed on this module: state unchanged
            counts = self.env.observation["OpcodeCounts"]
            return self._observe(counts), 0.0, False, truncated, {"xla_error": str(e)}
        scale = self._scale if self.env.reward_space.name == "OpCount" else 1.0
        return self._observe(counts), float(reward or 0.0) / scale, bool(done), truncated, info

    def close(self) -> None:
        self.env.close()
