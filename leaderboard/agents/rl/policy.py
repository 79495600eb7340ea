"""A trained SB3 model as a leaderboard policy.

``XLA_GYM_RL_RUN=runs/ppo-OpCount-seed0 python -m leaderboard.eval
--policy "leaderboard.agents.rl.policy:from_env()"`` evaluates the run saved
by ``leaderboard.agents.rl.train``.

The model acts greedily (its most likely action; DQN: the highest Q value)
for ``episode_length`` steps, except that an action which left the module
unchanged (or that XLA failed on) is not taken again from that same state:
the next-preferred action is. A deterministic policy would otherwise repeat
a no-op until the episode ends. The best state on the trajectory (fewest
ops) is kept: the env is reset and the best prefix replayed (cached in the
service, so cheap).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Set

import numpy as np
from compiler_gym.envs import CompilerEnv

from leaderboard.agents.common import op_count
from leaderboard.gym_adapter import COST_FEATURES

__all__ = ["RlPolicy", "from_env"]


@dataclass
class RlPolicy:
    run: Path

    def __post_init__(self) -> None:
        args = json.loads((self.run / "args.json").read_text())["args"]
        self.args = args
        import sb3_contrib
        import stable_baselines3 as sb3

        cls: Any = {"ppo": sb3.PPO, "a2c": sb3.A2C, "dqn": sb3.DQN, "trpo": sb3_contrib.TRPO}[args["algo"]]
        self.model: Any = cls.load(self.run / "model.zip", device="cpu")

    def _observe(self, env: CompilerEnv) -> np.ndarray:
        features = [np.log1p(np.asarray(env.observation["OpcodeCounts"], dtype=np.float64))]
        if self.args["cost_features"]:
            cost = env.observation["CostAnalysisDict"]
            features.append(np.log1p([float(cost[k]) for k in COST_FEATURES]))
        return np.concatenate(features).astype(np.float32)

    def preferences(self, observation: np.ndarray) -> np.ndarray:
        """Every action, most preferred first."""
        import torch

        with torch.no_grad():
            obs, _ = self.model.policy.obs_to_tensor(observation)
            if self.args["algo"] == "dqn":
                scores = self.model.q_net(obs)[0]
            else:
                scores = self.model.policy.get_distribution(obs).distribution.logits[0]
        return np.argsort(-scores.numpy(), kind="stable")

    def __call__(self, env: CompilerEnv) -> None:
        benchmark = env.benchmark
        actions: List[int] = []
        best, best_count = 0, op_count(env)
        futile: Set[int] = set()  # actions that changed nothing from the current state
        for _ in range(self.args["episode_length"]):
            ranked = [int(a) for a in self.preferences(self._observe(env)) if int(a) not in futile]
            if not ranked:
                break
            action = ranked[0]
            try:
                _, _, _, info = env.step(action)
            except ValueError:  # XLA failed on this pass: state unchanged
                futile.add(action)
                continue
            if info.get("action_had_no_effect"):
                futile.add(action)
                continue
            actions.append(action)  # only passes that changed the module are replayed
            futile.clear()
            if op_count(env) < best_count:
                best, best_count = len(actions), op_count(env)
        env.reset(benchmark=benchmark)
        if best:
            env.multistep(actions[:best])


def from_env() -> RlPolicy:
    """The policy of the run folder named by ``$XLA_GYM_RL_RUN``."""
    run = os.environ.get("XLA_GYM_RL_RUN")
    if not run:
        raise ValueError("Set XLA_GYM_RL_RUN to a run folder made by leaderboard.agents.rl.train")
    return RlPolicy(Path(run))
