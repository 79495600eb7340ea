"""PPO on RLlib (new API stack): the ``--backend rllib`` of ``train.py``, and acting from its checkpoints.

Each env runner is a Ray actor with its own xla-v0 Gymnasium env, so its own
xla-gym service (one XLA worker each, ``XLA_GYM_WORKERS=1``); the services of
one machine share its experience store, and with ``$XLA_GYM_STORE`` naming a
PostgreSQL server (``postgresql://...``), every machine's (docs/ray.md). The
observation is ``features.features`` as with stable-baselines3. Without
``--ray-address`` a local Ray instance starts with the command and stops with
it. The run folder gets ``rllib/`` (an RLlib checkpoint), ``args.json``,
``result.json`` and ``tb/`` (TensorBoard: episode return, env steps/s).
"""
from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["train_rllib", "RllibModule", "CHECKPOINT"]

#: Where in a run folder the RLlib checkpoint goes.
CHECKPOINT = "rllib"
_MODULE = ("learner_group", "learner", "rl_module", "default_policy")


def _env_creator(config: dict[str, Any]) -> Any:
    """An env runner's environment (called in the runner's process)."""
    import gymnasium

    import xla_service.gym  # noqa: F401  (registers xla-v0)
    from leaderboard.agents.rl.features import RlFeatures, observation_spaces

    spaces = observation_spaces(config["cost_features"])
    env = gymnasium.make(
        "xla-v0",
        benchmarks=config["benchmarks"],
        observation=spaces[0] if len(spaces) == 1 else list(spaces),
        reward=config["reward_space"],
        reward_scale="initial" if config["reward_space"] == "OpCount" else None,
        max_episode_steps=config["episode_length"],
    )
    return RlFeatures(env, config["cost_features"])


def train_rllib(args: Any, benchmarks: Sequence[str], run: Path) -> dict[str, Any]:
    """Train PPO with ``args.num_env_runners`` env runners; returns the run's result record."""
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.tune.registry import register_env
    from torch.utils.tensorboard import SummaryWriter

    if args.algo != "ppo":
        raise ValueError(f"--backend rllib trains PPO only, got --algo {args.algo}")
    started_ray = not ray.is_initialized()
    if started_ray:
        ray.init(
            address=args.ray_address or None,
            num_cpus=None if args.ray_address else max(os.cpu_count() or 1, args.num_env_runners + 1),
            include_dashboard=False,
            log_to_driver=False,
            runtime_env={"env_vars": {"XLA_GYM_WORKERS": "1", "XLA_GYM_STORE": os.environ.get("XLA_GYM_STORE", "default")}},
        )
    register_env("xla-gym-rl", _env_creator)
    batch = max(args.n_steps * max(args.num_env_runners, 1), 32)
    config = (
        PPOConfig()
        .environment(
            "xla-gym-rl",
            env_config={
                "benchmarks": benchmarks,
                "reward_space": args.reward_space,
                "cost_features": args.cost_features,
                "episode_length": args.episode_length,
            },
        )
        .env_runners(
            num_env_runners=args.num_env_runners,
            num_envs_per_env_runner=1,
            rollout_fragment_length="auto",
            # a runner's first steps start its service and compile: far slower than a game's
            sample_timeout_s=1800.0,
        )
        .training(lr=args.learning_rate, train_batch_size_per_learner=batch, minibatch_size=min(64, batch), num_epochs=4)
        .debugging(seed=args.seed)
    )
    setup_started = time.monotonic()
    algo = config.build_algo()
    setup = time.monotonic() - setup_started
    writer = SummaryWriter(str(run / "tb"))
    steps, started, iterations = 0, time.monotonic(), 0
    try:
        while steps < args.total_timesteps:
            if args.max_minutes > 0 and time.monotonic() - started > 60 * args.max_minutes:
                break
            result = algo.train()
            iterations += 1
            steps = int(result["env_runners"]["num_env_steps_sampled_lifetime"])
            episode_return = result["env_runners"].get("episode_return_mean", float("nan"))
            writer.add_scalar("rollout/ep_rew_mean", episode_return, steps)
            writer.add_scalar("time/env_steps_per_second", steps / max(time.monotonic() - started, 1e-9), steps)
            print(f"iteration {iterations}: {steps} env steps, episode return {episode_return:.4f}", flush=True)
        seconds = time.monotonic() - started
        algo.save_to_path(str((run / CHECKPOINT).resolve()))
    finally:
        writer.close()
        algo.stop()
        if started_ray:
            ray.shutdown()
    return {
        "timesteps": steps,
        "iterations": iterations,
        "minutes": (seconds + setup) / 60,
        "setup_seconds": setup,
        "env_steps_per_second": steps / max(seconds, 1e-9),
    }


class RllibModule:
    """The policy network of an RLlib run, for acting (``policy.RlPolicy``)."""

    def __init__(self, run: Path) -> None:
        from ray.rllib.core.rl_module import RLModule

        path = Path(run) / CHECKPOINT
        if not path.is_dir():
            raise ValueError(f"No RLlib checkpoint at {path}: expected a run of train.py --backend rllib")
        self.module = RLModule.from_checkpoint(str(path.joinpath(*_MODULE)))

    def scores(self, observation: np.ndarray) -> np.ndarray:
        """The action logits of one observation."""
        import torch

        with torch.no_grad():
            out = self.module.forward_inference({"obs": torch.from_numpy(observation[None])})
        return out["action_dist_inputs"][0].numpy()
