"""Random search: random pass sequences, keep the best prefix found.

Each trial resets to the benchmark and takes ``length`` uniformly random
passes; the best op count reached by any prefix wins, and the env is left in
that state. Replays are cheap: the service caches (module, pass) results.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from compiler_gym.envs import CompilerEnv

from leaderboard.agents.common import op_count

__all__ = ["RandomSearch", "policy"]


@dataclass
class RandomSearch:
    trials: int = 20
    length: int = 20
    seed: int = 0

    def __call__(self, env: CompilerEnv) -> None:
        rng = np.random.default_rng(self.seed)
        benchmark = env.benchmark
        best: list[int] = []
        best_count = op_count(env)
        for _ in range(self.trials):
            env.reset(benchmark=benchmark)
            actions: list[int] = []
            for _ in range(self.length):
                action = int(rng.integers(env.action_space.n))
                try:
                    env.step(action)
                except ValueError:
                    continue
                actions.append(action)
                if op_count(env) < best_count:
                    best, best_count = list(actions), op_count(env)
        env.reset(benchmark=benchmark)
        if best:
            env.multistep(best)


policy = RandomSearch()
