"""Helpers shared by the search agents: op counts, and trying a pass on a fork."""
from __future__ import annotations

from compiler_gym.envs import CompilerEnv

__all__ = ["op_count", "try_pass"]


def op_count(env: CompilerEnv) -> int:
    return int(env.observation["OpCount"])


def try_pass(env: CompilerEnv, action: int) -> int | None:
    """The op count after ``action``, found on a fork; None if XLA fails on it."""
    fork = env.fork()
    try:
        fork.step(action)
        return op_count(fork)
    except ValueError:  # XLA failed running this pass on this module
        return None
    finally:
        fork.close()
