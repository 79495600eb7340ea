"""A trained SB3 model as a leaderboard policy.

``XLA_GYM_STORE=off XLA_GYM_RL_RUN=runs/ppo-OpCount-seed0 python -m leaderboard.eval
--policy "leaderboard.agents.rl.policy:from_env()"`` evaluates the run saved
by ``leaderboard.agents.rl.train`` (its ``model.zip``, or the checkpoint that
``$XLA_GYM_RL_CHECKPOINT`` names, e.g. ``checkpoints/rl_model_2000_steps.zip``);
``--policy "leaderboard.agents.rl.policy:RlPolicy(run='RUN', checkpoint='...')"``
says the same without variables. Observations are ``features.features``, as in
training.

The model acts greedily (its most likely action; DQN: the highest Q value)
for the run's ``episode_length`` steps (``episode_length=N``: N steps, e.g. 20 for
a run trained in shorter episodes), except that an action which left the module
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
from typing import Any

import numpy as np
from compiler_gym.envs import CompilerEnv

from leaderboard.agents.common import act_keep_best, acting_steps
from leaderboard.agents.rl.features import features

__all__ = ["RlPolicy", "from_env"]


@dataclass
class RlPolicy:
    run: str | Path
    #: A checkpoint of the run to act with (default: its final ``model.zip``).
    checkpoint: str | Path | None = None
    #: Steps per benchmark (0: the run's ``episode_length``).
    episode_length: int = 0

    def __post_init__(self) -> None:
        from leaderboard.agents.rl.train import model_class

        self.run = Path(self.run)
        args = json.loads((self.run / "args.json").read_text())["args"]
        self.args = args
        self.steps = acting_steps(self.episode_length, int(args["episode_length"]))
        self.rllib: Any = None
        if args.get("backend") == "rllib":
            from leaderboard.agents.rl.rllib_backend import RllibModule

            self.rllib = RllibModule(self.run)
            return
        weights = Path(self.checkpoint) if self.checkpoint else self.run / "model.zip"
        if not weights.is_absolute() and not weights.exists():
            weights = self.run / weights
        if not weights.is_file():
            raise ValueError(f"No model at {weights}: expected model.zip or a checkpoint of {self.run}")
        self.model: Any = model_class(args["algo"]).load(weights, device="cpu")

    def _observe(self, env: CompilerEnv) -> np.ndarray:
        cost = env.observation["CostAnalysisDict"] if self.args["cost_features"] else None
        return features(env.observation["OpcodeCounts"], cost)

    def preferences(self, observation: np.ndarray) -> np.ndarray:
        """Every action, most preferred first."""
        import torch

        if self.rllib is not None:
            return np.argsort(-self.rllib.scores(observation), kind="stable")
        with torch.no_grad():
            obs, _ = self.model.policy.obs_to_tensor(observation)
            if self.args["algo"] == "dqn":
                scores = self.model.q_net(obs)[0]
            else:
                scores = self.model.policy.get_distribution(obs).distribution.logits[0]
        return np.argsort(-scores.numpy(), kind="stable")

    def __call__(self, env: CompilerEnv) -> None:
        def choose(futile: set[int]) -> int | None:
            ranked = (int(a) for a in self.preferences(self._observe(env)))
            return next((a for a in ranked if a not in futile), None)

        act_keep_best(env, choose, self.steps)


def from_env() -> RlPolicy:
    """The policy of the run folder named by ``$XLA_GYM_RL_RUN``."""
    run = os.environ.get("XLA_GYM_RL_RUN")
    if not run:
        raise ValueError("Set XLA_GYM_RL_RUN to a run folder made by leaderboard.agents.rl.train")
    return RlPolicy(Path(run), os.environ.get("XLA_GYM_RL_CHECKPOINT") or None)
