"""Random search: random pass sequences, keep the best prefix found.

Each trial resets to the benchmark and takes ``length`` uniformly random
passes; the best objective (the op count, or the backend cost of a backend
track: ``objective.py``) reached by any prefix wins, and the env is left in
that state. Replays are cheap: the service caches (module, pass) results.

With ``seconds``, trials go on until that much walltime has passed (at least
one trial; ``trials`` is then ignored): a budget matched to another search's
walltime, e.g. beam's, at the price of results that depend on the machine.
"""
from __future__ import annotations

from dataclasses import dataclass
from time import monotonic

import numpy as np
from compiler_gym.envs import CompilerEnv

from leaderboard.agents.objective import env_objective

__all__ = ["RandomSearch", "policy"]


@dataclass
class RandomSearch:
    trials: int = 20
    length: int = 20
    seed: int = 0
    seconds: float | None = None

    def __post_init__(self) -> None:
        if self.seconds is not None and not self.seconds > 0:
            raise ValueError(f"expected seconds > 0 or None, got {self.seconds!r}")

    def _more(self, done: int, start: float) -> bool:
        if self.seconds is None:
            return done < self.trials
        return done == 0 or monotonic() - start < self.seconds

    def __call__(self, env: CompilerEnv) -> None:
        start = monotonic()
        rng = np.random.default_rng(self.seed)
        objective = env_objective(env)
        benchmark = env.benchmark
        best: list[int] = []
        best_count = objective.value(env)
        done = 0
        while self._more(done, start):
            done += 1
            env.reset(benchmark=benchmark)
            actions: list[int] = []
            for _ in range(self.length):
                action = int(rng.integers(env.action_space.n))
                try:
                    env.step(action)
                except ValueError:
                    continue
                actions.append(action)
                value = objective.value(env)
                if value < best_count:
                    best, best_count = list(actions), value
        env.reset(benchmark=benchmark)
        if best:
            env.multistep(best)


policy = RandomSearch()
