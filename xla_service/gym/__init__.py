"""xla-v0 for Gymnasium: ``gymnasium.make("xla_service.gym:xla-v0", ...)``.

Gymnasium 1.x has no plugin mechanism, so its documented ``module:id`` form
imports this module, which registers ``xla-v0`` (``XlaGymEnv``, ``env.py``)
in Gymnasium's registry; after ``import xla_service.gym``, plain
``gymnasium.make("xla-v0")`` and ``gymnasium.make_vec("xla-v0", num_envs=N,
vectorization_mode="async"|"sync")`` work too. Keyword arguments go to
``XlaGymEnv``; ``max_episode_steps`` is the env's own (default 20).
"""
from __future__ import annotations

import gymnasium

from xla_service.env import ENV_ID

__all__ = ["ENV_ID", "XlaGymEnv"]

ENTRY_POINT = "xla_service.gym.env:XlaGymEnv"

if ENV_ID not in gymnasium.registry:
    gymnasium.register(id=ENV_ID, entry_point=ENTRY_POINT, disable_env_checker=False)


def __getattr__(name: str) -> object:
    if name == "XlaGymEnv":  # lazy: importing the package registers only
        from xla_service.gym.env import XlaGymEnv

        return XlaGymEnv
    raise AttributeError(f"module 'xla_service.gym' has no attribute {name!r}")
