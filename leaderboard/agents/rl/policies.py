"""Policies for the paper's second enhancement: cost features for the critic only.

With ``cost_in_value_only`` the observation ends with cost-analysis features;
the value function sees all of it, the actor sees the cost features zeroed,
so only the critic (the baseline) uses them.
"""
from __future__ import annotations

from typing import Any

import torch
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import FlattenExtractor

__all__ = ["value_only_policy"]


def value_only_policy(len_hidden: int) -> type[ActorCriticPolicy]:
    """An ActorCriticPolicy whose actor does not see the last ``len_hidden`` features."""

    class _MaskTail(FlattenExtractor):
        def forward(self, observations: torch.Tensor) -> torch.Tensor:
            masked = observations.clone()
            masked[..., -len_hidden:] = 0.0
            return super().forward(masked)

    class ValueOnlyCostPolicy(ActorCriticPolicy):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["share_features_extractor"] = False
            super().__init__(*args, **kwargs)
            self.pi_features_extractor = _MaskTail(self.observation_space)

    return ValueOnlyCostPolicy
