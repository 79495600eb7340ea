"""Greedy search: at each step, the pass that lowers the op count most.

Every pass is tried on a fork of the current state; the best is applied;
the search stops when no pass lowers the op count (or after ``max_steps``).
"""
from __future__ import annotations

from dataclasses import dataclass

from compiler_gym.envs import CompilerEnv

from leaderboard.agents.common import op_count, try_pass

__all__ = ["Greedy", "policy"]


@dataclass
class Greedy:
    max_steps: int = 50

    def __call__(self, env: CompilerEnv) -> None:
        for _ in range(self.max_steps):
            current = op_count(env)
            results = {a: try_pass(env, a) for a in range(env.action_space.n)}
            counts = {a: c for a, c in results.items() if c is not None}
            if not counts:
                return
            action = min(counts, key=lambda a: (counts[a], a))
            if counts[action] >= current:
                return
            env.step(action)


policy = Greedy()
