"""XLA's default CPU pipeline, replayed pass by pass (the reference row's policy).

The target-independent passes of jaxlib 0.10.2's CPU pipeline in their order
(``xla_service.catalog.pipelines``),
with the ``simplification`` block repeated until a round changes nothing, as
XLA's fixpoint does. Its return is close to 1.0 by construction; where it is
not, the gap is what running passes one compile at a time (with the module
normalized between them) costs against XLA's single compile.
"""
from __future__ import annotations

from compiler_gym.envs import CompilerEnv

from leaderboard.agents.common import op_count
from xla_service.catalog.pipelines import DEFAULT_EPILOGUE, DEFAULT_PROLOGUE, DEFAULT_SIMPLIFICATION

__all__ = ["policy", "PROLOGUE", "SIMPLIFICATION", "EPILOGUE"]

PROLOGUE, SIMPLIFICATION, EPILOGUE = DEFAULT_PROLOGUE, DEFAULT_SIMPLIFICATION, DEFAULT_EPILOGUE
MAX_ROUNDS = 6


def _run(env: CompilerEnv, names: tuple) -> None:
    for name in names:
        try:
            env.step(env.action_space[name])
        except ValueError:  # XLA failed on this module: state unchanged
            pass


def policy(env: CompilerEnv) -> None:
    _run(env, PROLOGUE)
    for _ in range(MAX_ROUNDS):
        before = op_count(env)
        _run(env, SIMPLIFICATION)
        if op_count(env) == before:
            break
    _run(env, EPILOGUE)
