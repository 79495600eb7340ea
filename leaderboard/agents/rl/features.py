"""The RL agents' observation, built by one function in training and in acting.

``log1p`` of the 133 counted opcodes (``OpcodeCounts``), float32; with cost
features, ``log1p`` of XLA's cost analysis (flops, transcendentals, bytes
accessed) appended. :class:`RlFeatures` applies it to the Gymnasium env during
training; the leaderboard policy applies :func:`features` to the CompilerGym
env it is handed, so the two can never diverge.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium
import numpy as np

from xla_service.catalog.opcodes import OPCODES

__all__ = ["COST_FEATURES", "features", "observation_spaces", "RlFeatures", "size"]

#: Cost-analysis entries appended with ``cost_features``.
COST_FEATURES: tuple[str, ...] = ("flops", "transcendentals", "bytes accessed")


def observation_spaces(cost_features: bool) -> tuple[str, ...]:
    """The xla-v0 observation spaces the features are made of."""
    return ("OpcodeCounts", "CostAnalysisDict") if cost_features else ("OpcodeCounts",)


def size(cost_features: bool) -> int:
    return len(OPCODES) + (len(COST_FEATURES) if cost_features else 0)


def features(counts: Any, cost: Mapping[str, Any] | None = None) -> np.ndarray:
    """The feature vector of one state (``cost``: ``CostAnalysisDict``, or None)."""
    parts = [np.log1p(np.asarray(counts, dtype=np.float64).reshape(-1))]
    if cost is not None:
        parts.append(np.log1p([float(np.asarray(cost[k]).reshape(-1)[0]) for k in COST_FEATURES]))
    return np.concatenate(parts).astype(np.float32)


class RlFeatures(gymnasium.ObservationWrapper):
    """The Gymnasium env's observation (``OpcodeCounts``, and ``CostAnalysisDict``) as features."""

    def __init__(self, env: gymnasium.Env, cost_features: bool) -> None:
        super().__init__(env)
        self.cost_features = cost_features
        self.observation_space = gymnasium.spaces.Box(0.0, np.inf, (size(cost_features),), np.float32)

    def observation(self, observation: Any) -> np.ndarray:
        if isinstance(observation, Mapping):
            cost = observation["CostAnalysisDict"] if self.cost_features else None
            return features(observation["OpcodeCounts"], cost)
        return features(observation)
