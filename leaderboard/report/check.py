"""Validate (and time) leaderboard results by execution, several envs side by side.

``check_results(states, runtime, jobs)`` replays each result in the stock
CompilerGym env (``env.validate``: the module it reaches must compute what the
original computes); with ``runtime`` it also times the agent's module against
the default pipeline's (the ``Runtime`` and ``RuntimeDefault`` observations,
medians). ``leaderboard.report.summary --validate`` / ``--runtime`` count the results.
"""
from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from compiler_gym.compiler_env_state import CompilerEnvState

__all__ = ["check_results"]


def check_results(
    states: Sequence[CompilerEnvState], runtime: bool, jobs: int = 1, reward: str = "OpCount"
) -> dict[int, tuple]:
    """Validate (and time) each state: index -> (valid, speedup); ``jobs`` envs (each its own
    service) take every ``jobs``-th state side by side. ``reward``: the reward space the
    results' rewards were recorded in (validation replays and compares them)."""
    import compiler_gym

    if jobs < 1:
        raise ValueError(f"jobs: expected a positive number of envs, got {jobs}")
    if not states:
        return {}
    out: dict[int, tuple] = {}
    lock = threading.Lock()

    def check(env: Any, indices: range) -> None:
        for i in indices:
            state = states[i]
            result = env.validate(state)
            speedup: float | None = None
            if runtime and result.okay():
                env.reset(benchmark=state.benchmark)
                env.apply(state)
                agent = sorted(env.observation["Runtime"])
                default = sorted(env.observation["RuntimeDefault"])
                speedup = default[len(default) // 2] / agent[len(agent) // 2]
            with lock:
                out[i] = (result.okay(), speedup)
                if not result.okay():
                    print(f"\rnot validated: {state.benchmark}: {result.error_details}", file=sys.stderr)
                print(f"\rchecked {len(out)}/{len(states)}", end="", file=sys.stderr, flush=True)

    envs = []
    try:
        for _ in range(min(jobs, len(states))):
            envs.append(compiler_gym.make("xla-v0", reward_space=reward))
        with ThreadPoolExecutor(len(envs)) as pool:
            parts = [pool.submit(check, env, range(k, len(states), len(envs))) for k, env in enumerate(envs)]
            for part in parts:
                part.result()  # an error in a part is raised here
    finally:
        for env in envs:
            env.close()
    print(file=sys.stderr)
    return out
