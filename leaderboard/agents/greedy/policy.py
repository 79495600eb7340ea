"""Greedy search: at each step, the pass that lowers the objective most.

The objective is the one behind the env's reward space (``objective.py``):
the op count on the op count track, a backend cost on a backend track; "op
count" below stands for it.

Every pass is tried on a fork of the current state; the best is applied;
the search stops when no pass lowers the op count (or after ``max_steps``).

``lazy=True`` sweeps every pass only when it must: after a full sweep, the
next steps try only the passes that lowered the op count in it (most of the
64 passes change nothing on a given module, yet each try costs a compile),
and a new full sweep runs when none of those helps any more. The search
still stops only where a full sweep finds nothing, so the end state is a
local optimum in the same sense; the path may differ. With
``after_default=True`` the search starts from the state XLA's default
pipeline (replayed pass by pass) leaves: a polish of the default ordering.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from compiler_gym.envs import CompilerEnv

from leaderboard.agents.common import best_pass, improving_passes
from leaderboard.agents.default_pipeline.policy import policy as default_pipeline
from leaderboard.agents.objective import env_objective

__all__ = ["Greedy", "policy"]


@dataclass
class Greedy:
    max_steps: int = 50
    lazy: bool = False
    after_default: bool = False

    def __call__(self, env: CompilerEnv) -> None:
        if self.after_default:
            default_pipeline(env)
        objective = env_objective(env)
        every = range(env.action_space.n)
        candidates: Iterable[int] = every
        for _ in range(self.max_steps):
            current = objective.value(env)
            improving = improving_passes(env, candidates, current, objective)
            if not improving and candidates is not every:  # the lazy set ran dry
                candidates = every
                improving = improving_passes(env, every, current, objective)
            if not improving:
                return
            env.step(best_pass(improving))
            if self.lazy:
                candidates = sorted(improving)


policy = Greedy()
