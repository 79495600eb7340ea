"""The client side of xla-v0: registration, the env class, rewards, datasets.

Never imports jax. Importing this package does not import compiler_gym
either (gym loads :mod:`xla_service.env.registration` while compiler_gym is
half-imported); the env class lives in :mod:`xla_service.env.xla_env`.
"""
__all__ = ["ENV_ID"]

ENV_ID = "xla-v0"
