"""Helpers shared by the agents: op counts, trying a pass on a fork, acting with a learned policy."""
from __future__ import annotations

from collections.abc import Callable, Iterable

from compiler_gym.envs import CompilerEnv

__all__ = ["act_keep_best", "acting_steps", "best_pass", "improving_passes", "op_count", "try_pass"]


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


def improving_passes(env: CompilerEnv, actions: Iterable[int], current: int) -> dict[int, int]:
    """Action -> op count after it, for the ``actions`` that lower the op count below ``current``
    (each tried on a fork)."""
    counts = {a: try_pass(env, a) for a in actions}
    return {a: c for a, c in counts.items() if c is not None and c < current}


def best_pass(improving: dict[int, int]) -> int:
    """The action of ``improving`` with the fewest ops after it (ties: the lowest action)."""
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
    trajectory's best state (fewest ops): reset and that prefix replayed
    (cached in the service, so cheap).
    """
    benchmark = env.benchmark
    actions: list[int] = []
    best, best_count = 0, op_count(env)
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
        count = op_count(env)
        if count < best_count:
            best, best_count = len(actions), count
    env.reset(benchmark=benchmark)
    if best:
        env.multistep(actions[:best])
