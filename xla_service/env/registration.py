"""Makes ``compiler_gym.make("xla-v0")`` work with the stock compiler_gym.

gym 0.21 runs every ``gym.envs`` entry point when it is imported, and
compiler_gym imports gym first thing. :func:`register_plugin` (our entry
point) therefore runs while compiler_gym is half-imported, so it must not
import compiler_gym: it restores the NumPy names compiler_gym needs and puts
the ``xla-v0`` spec straight into gym's registry (gym's ``register()`` would
file it under the plugin's namespace).
"""
from __future__ import annotations

from xla_service.env import ENV_ID
from xla_service.env.compat import restore_numpy_names

__all__ = ["register_plugin"]

ENTRY_POINT = "xla_service.env.xla_env:XlaEnv"


def register_plugin() -> None:
    """The ``gym.envs`` entry point. Idempotent."""
    restore_numpy_names()
    from gym.envs.registration import EnvSpec, registry

    if ENV_ID not in registry.env_specs:
        registry.env_specs[ENV_ID] = EnvSpec(
            ENV_ID, entry_point=ENTRY_POINT, order_enforce=False
        )
