"""Helpers shared by the agents: op counts, trying a pass on a fork, acting with a learned policy.

Trying passes minimizes an :class:`~leaderboard.agents.objective.Objective`:
by default the one behind the env's reward space (the op count, or a backend
cost on a backend track).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from compiler_gym.envs import CompilerEnv

from leaderboard.agents.objective import Objective, env_objective

__all__ = ["act_keep_best", "acting_steps", "best_pass", "improving_passes", "op_count", "try_pass"]


def op_count(env: CompilerEnv) -> int:
    return int(env.observation["OpCount"])


def try_pass(env: CompilerEnv, action: int, objective: Objective | None = None) -> float | None:
    """The objective (default: the env's, e.g. the op count) after ``action``, found on a
    fork; None if XLA fails on the pass or cannot compile its result."""
    objective = objective or env_objective(env)
    fork = env.fork()
    try:
        fork.step(action)
        value = objective.value(fork)
        return None if math.isinf(value) else (int(value) if objective.name == "OpCount" else value)
    except ValueError:  # XLA failed running this pass on this module
        return None
    finally:
        fork.close()


def improving_passes(
    env: CompilerEnv, actions: Iterable[int], current: float, objective: Objective | None = None
) -> dict[int, float]:
    """Action -> objective after it, for the ``actions`` that lower it below ``current``
    (each tried on a fork)."""
    objective = objective or env_objective(env)
    values = {a: try_pass(env, a, objective) for a in actions}
    return {a: v for a, v in values.items() if v is not None and v < current}


def best_pass(improving: dict[int, float]) -> int:
    """The action of ``improving`` with the lowest objective after it (ties: the lowest action)."""
    return min(improving, key=lambda a: (improving[a], a))


def acting_steps(episode_length: object, run_length: int) -> int:
    """The steps a trained policy acts on a benchmark: ``episode_length``, or the run's own
    ``run_length`` when it is 0 (e.g. 20 for a run trained in episodes of 5)."""
    if not isinstance(episode_length, int) or isinstance(episode_length, bool) or episode_length < 0:
        raise ValueError(f"expected episode_length an int >= 0 (0: the run's {run_length}), got {episode_length!r}")
    return episode_length or run_length


def act_keep_best(env: CompilerEnv, choose: Callable[[set[int]], int | None], steps: int) -> None:
    """Step ``env`` up to ``steps`` times with ``choose(futile)``: the policy's
    first choice among the actions not in ``futile`` (those that changed
    nothing, or that XLA failed on, from the current state), or None to stop.

    Only passes that changed the module are kept, and ``env`` ends at the
    trajectory's best state (the lowest objective of the env's reward space:
    fewest ops on the op count track): reset and that prefix replayed
    (cached in the service, so cheap).
    """
    objective = env_objective(env)
    benchmark = env.benchmark
    actions: list[int] = []
    best, best_count = 0, objective.value(env)
    futile: set[int] = set()
    for _ in range(steps):
        action = choose(futile)
        if action is None:
            break
        try:
            _, _, _, info = env.step(action)
        except ValueError:  # XLA failed on this pass: state unchanged
            futile.add(action)
            continue
        if info.get("action_had_no_effect"):
            futile.add(action)
            continue
        actions.append(action)
        futile.clear()
        count = objective.value(env)
        if count < best_count:
            best, best_count = len(actions), count
    env.reset(benchmark=benchmark)
    if best:
        env.multistep(actions[:best])
