"""The harness on Ray: one task per benchmark, each with its own xla-gym service.

``python -m leaderboard.eval --policy ... --ray [ADDRESS]``. Every task loads
the policy from its ``MODULE:FUNCTION`` spec, makes ``xla-v0`` (a service with
one XLA worker, sharing the node's experience store, or the cluster's when
``$XLA_GYM_STORE`` names a PostgreSQL server), runs the policy on its
benchmark and returns the state; the driver returns them in the benchmarks'
order, so the results CSV is a serial run's but for walltimes. Without an
address a local Ray instance starts and stops with the command.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from compiler_gym.compiler_env_state import CompilerEnvState

__all__ = ["run_on_ray"]


def _evaluate(policy_spec: str, benchmark: str, reward: str) -> dict[str, Any]:
    """A Ray task: one result, as a plain dict (what crosses the wire)."""
    import compiler_gym

    from leaderboard.harness import load_policy, run_policy

    policy = load_policy(policy_spec)
    with compiler_gym.make("xla-v0", reward_space=reward) as env:
        state = run_policy(policy, env, benchmark, reward)
    return state.dict()


def run_on_ray(
    policy_spec: str,
    benchmarks: Sequence[str],
    progress: Callable[[CompilerEnvState], None] = lambda s: None,
    address: str = "local",
    reward: str = "OpCount",
) -> list[CompilerEnvState]:
    """The results of ``policy_spec`` on ``benchmarks``, computed by Ray tasks, in order."""
    import ray

    started = not ray.is_initialized()
    if started:
        ray.init(
            address=None if address == "local" else address,
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": {"XLA_GYM_WORKERS": "1", "XLA_GYM_STORE": os.environ.get("XLA_GYM_STORE", "default")}},
        )
    try:
        task = ray.remote(num_cpus=1, max_retries=1)(_evaluate)
        pending = {task.remote(policy_spec, b, reward): i for i, b in enumerate(benchmarks)}
        results: dict[int, CompilerEnvState] = {}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            index = pending.pop(ready[0])
            results[index] = CompilerEnvState(**ray.get(ready[0]))
            progress(results[index])
        return [results[i] for i in range(len(benchmarks))]
    finally:
        if started:
            ray.shutdown()
