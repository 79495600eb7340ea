"""Train an RL agent on the train split with stable-baselines3 (CleanRL style).

``python -m leaderboard.agents.rl.train --algo ppo --total-timesteps 20000``

One file reads top to bottom: arguments (a dataclass, every field a flag),
seeding, vectorized environments (xla-v0's Gymnasium env, ``xla_service.gym``,
one service per environment, all sharing the persistent experience store),
the SB3 algorithm, training with a progress bar, TensorBoard logs and
checkpoints, and the saved run: ``model.zip``, ``args.json`` (hyperparameters
and versions), ``monitor-*.csv`` (training curves) and ``tb/`` (TensorBoard:
``tensorboard --logdir RUN/tb``). ``--resume`` continues from the run's last
checkpoint: the monitors keep the episodes the checkpoint holds and the
resumed run appends to them; ``result.json`` says ``resumed_at`` (its minutes
are the last piece's).
"""
from __future__ import annotations

import dataclasses
import json
import math
import platform
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from leaderboard.agents.arguments import dataclass_parser
from leaderboard.runs import runs_dir

__all__ = ["Args", "ALGOS", "hyperparameters", "parse_args", "train", "trim_monitors"]

ALGOS = ("ppo", "a2c", "dqn", "trpo")


@dataclass
class Args:
    algo: str = "ppo"
    """ppo, a2c, dqn (stable-baselines3) or trpo (sb3-contrib)"""
    total_timesteps: int = 20_000
    """environment steps to train for"""
    seed: int = 0
    """seed of Python, NumPy, torch and the benchmark sampling"""
    n_envs: int = 2
    """parallel environments (SubprocVecEnv; each runs its own XLA service)"""
    episode_length: int = 20
    """passes per episode"""
    reward_space: str = "OpCount"
    """OpCount (reduction / initial op count) or OpCountShaped (potential-based shaping)"""
    cost_features: bool = False
    """append log1p(flops, transcendentals, bytes accessed) to the observation"""
    cost_in_value_only: bool = False
    """with cost_features: let only the value function see them (the actor sees zeros)"""
    datasets: str = "xla-gpt2-v0"
    """comma-separated suites whose train split to train on (SUITE:SPLIT for another split), and
    generator URIs, e.g. generator://xla-random-v0/0-9999, alone or mixed with suites"""
    max_train_benchmarks: int = 0
    """if > 0, train on the first N train benchmarks only"""
    learning_rate: float = 3e-4
    """optimizer learning rate"""
    n_steps: int = 128
    """rollout length per environment (PPO, A2C, TRPO)"""
    checkpoint_every: int = 5_000
    """save a checkpoint every this many steps"""
    max_minutes: float = 0.0
    """if > 0, stop training after this many minutes of wall time (the steps
    actually taken are recorded in result.json)"""
    out: str = ""
    """folder for the run (a subfolder named after algo, reward and seed is made); empty:
    $XLA_GYM_RUNS/rl, else ~/.cache/xla-gym/runs/rl (out of the checkout)"""
    resume: bool = False
    """continue the run in OUT from its last checkpoint (same arguments), up to --total-timesteps"""
    dummy_vec_env: bool = False
    """run environments in this process (DummyVecEnv) instead of subprocesses"""
    backend: str = "sb3"
    """sb3 (stable-baselines3, this machine) or rllib (Ray RLlib PPO, env runners on a Ray cluster)"""
    num_env_runners: int = 2
    """rllib: env runners (Ray actors), each with its own xla-gym service"""
    ray_address: str = ""
    """rllib: the Ray cluster to join (e.g. ray://head:10001 or auto); empty: a local Ray instance for this command"""


def parse_args(argv: Sequence[str] | None = None) -> Args:
    """Every field of :class:`Args` as a ``--kebab-case`` flag, its docstring the help."""
    parser = dataclass_parser(Args, __doc__.splitlines()[0])
    args = Args(**vars(parser.parse_args(argv)))
    if args.algo not in ALGOS:
        parser.error(f"--algo: expected one of {ALGOS}, got {args.algo!r}")
    if args.backend not in ("sb3", "rllib"):
        parser.error(f"--backend: expected sb3 or rllib, got {args.backend!r}")
    if args.backend == "rllib" and args.algo != "ppo":
        parser.error(f"--backend rllib trains PPO only, got --algo {args.algo}")
    return args


def run_name(args: Args) -> str:
    features = "-cost" + ("vf" if args.cost_in_value_only else "") if args.cost_features else ""
    backend = "-rllib" if args.backend == "rllib" else ""
    return f"{args.algo}{backend}-{args.reward_space}{features}-seed{args.seed}"


def _env_factory(args: Args, benchmarks: Sequence[str], rank: int, log_dir: Path, append: bool = False) -> Callable[[], Any]:
    def make() -> Any:
        import gymnasium
        from stable_baselines3.common.monitor import Monitor

        import xla_service.gym  # noqa: F401  (registers xla-v0 with Gymnasium)
        from leaderboard.agents.rl.features import RlFeatures, observation_spaces

        env = gymnasium.make(
            "xla-v0",
            benchmarks=benchmarks,
            observation=list(observation_spaces(args.cost_features)),
            reward=args.reward_space,
            reward_scale="initial" if args.reward_space == "OpCount" else None,
            max_episode_steps=args.episode_length,
        )
        env = RlFeatures(env, args.cost_features)
        env.reset(seed=args.seed + rank)
        return Monitor(env, str(log_dir / f"monitor-{rank}"), override_existing=not append)

    return make


def _model(args: Args, env: Any, tensorboard: Path) -> Any:
    import sb3_contrib
    import stable_baselines3 as sb3

    from leaderboard.agents.rl.policies import value_only_policy

    common: dict[str, Any] = dict(
        seed=args.seed, verbose=1, learning_rate=args.learning_rate, tensorboard_log=str(tensorboard)
    )
    if args.algo == "dqn":
        return sb3.DQN("MlpPolicy", env, learning_starts=min(1000, args.total_timesteps // 4), **common)
    policy: Any = "MlpPolicy"
    if args.cost_features and args.cost_in_value_only:
        policy = value_only_policy(len_hidden=3)
    cls = {"ppo": sb3.PPO, "a2c": sb3.A2C, "trpo": sb3_contrib.TRPO}[args.algo]
    extra = {"batch_size": 64} if args.algo == "ppo" else {}
    return cls(policy, env, n_steps=args.n_steps, **extra, **common)


def train(args: Args) -> tuple[Path, Any]:
    """Train; return the run folder and the model."""
    import torch
    from stable_baselines3.common.callbacks import CheckpointCallback
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    from xla_service.gym.env import resolve_benchmarks

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    benchmarks: Sequence[str] = resolve_benchmarks(args.datasets)
    if isinstance(benchmarks, list):  # suites: in URI order; generator seeds stay lazy
        benchmarks = sorted(benchmarks)
    if args.max_train_benchmarks > 0:
        benchmarks = benchmarks[: args.max_train_benchmarks]
    if not benchmarks:
        raise ValueError(f"No train benchmarks in {args.datasets!r}")
    if not args.out:
        args = dataclasses.replace(args, out=str(runs_dir("rl")))
    run = Path(args.out) / run_name(args)
    run.mkdir(parents=True, exist_ok=True)
    record = {
        "args": dataclasses.asdict(args),
        "train_benchmarks": len(benchmarks),
        "versions": {p: version(p) for p in ("jaxlib", "stable-baselines3", "sb3-contrib", "torch", "compiler-gym", "ray")},
        "python": platform.python_version(),
    }
    (run / "args.json").write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record["args"]), file=sys.stderr)
    if args.backend == "rllib":
        from leaderboard.agents.rl.rllib_backend import train_rllib

        result = train_rllib(args, benchmarks, run)
        (run / "result.json").write_text(json.dumps(result, indent=1) + "\n")
        return run, None
    resumed = latest_checkpoint(run) if args.resume else None
    if resumed is not None:  # the curves go on from the checkpoint: its episodes kept, the redone ones dropped
        trim_monitors(run, checkpoint_steps(resumed) // args.n_envs)
        record["resumed_at"] = checkpoint_steps(resumed)
    factories = [_env_factory(args, benchmarks, i, run, append=resumed is not None) for i in range(args.n_envs)]
    vec = DummyVecEnv(factories) if args.dummy_vec_env else SubprocVecEnv(factories)
    try:
        if resumed is not None:
            model = model_class(args.algo).load(resumed, env=vec, device="cpu", tensorboard_log=str(run / "tb"))
            print(f"resuming from {resumed} at step {model.num_timesteps}", file=sys.stderr)
        else:
            model = _model(args, vec, run / "tb")
        record["hyperparameters"] = hyperparameters(model)
        (run / "args.json").write_text(json.dumps(record, indent=1) + "\n")
        checkpoints = CheckpointCallback(max(args.checkpoint_every // args.n_envs, 1), str(run / "checkpoints"))
        started = time.monotonic()
        callbacks = [checkpoints, _TimeLimit(started + 60 * args.max_minutes if args.max_minutes > 0 else math.inf)]
        remaining = max(args.total_timesteps - int(model.num_timesteps), 0)
        model.learn(remaining, callback=callbacks, progress_bar=True, reset_num_timesteps=resumed is None, tb_log_name="run")
        model.save(run / "model.zip")
        result = {"timesteps": int(model.num_timesteps), "minutes": (time.monotonic() - started) / 60}
        if resumed is not None:  # the minutes are this piece's
            result["resumed_at"] = checkpoint_steps(resumed)
        (run / "result.json").write_text(json.dumps(result, indent=1) + "\n")
    finally:
        vec.close()
    return run, model


def model_class(algo: str) -> Any:
    """The SB3 class of ``algo``."""
    import sb3_contrib
    import stable_baselines3 as sb3

    return {"ppo": sb3.PPO, "a2c": sb3.A2C, "dqn": sb3.DQN, "trpo": sb3_contrib.TRPO}[algo]


def latest_checkpoint(run: Path) -> Path | None:
    """The checkpoint of ``run`` with the most steps, or None."""
    found = sorted((run / "checkpoints").glob("rl_model_*_steps.zip"), key=checkpoint_steps)
    return found[-1] if found else None


def checkpoint_steps(checkpoint: Path) -> int:
    """``rl_model_12000_steps.zip`` -> 12000 (env steps over all envs)."""
    return int(checkpoint.stem.split("_")[-2])


def trim_monitors(run: Path, steps_per_env: int) -> None:
    """Keep in each ``monitor-*.monitor.csv`` of ``run`` the episodes that ended within ``steps_per_env``
    of that env's steps: those of the training a checkpoint holds (a resumed run redoes the rest)."""
    for path in sorted(run.glob("monitor-*.monitor.csv")):
        header, columns, *episodes = path.read_text().splitlines()
        kept, steps = [], 0
        for line in episodes:
            steps += int(line.split(",")[1])  # r,l,t: l is the episode's length
            if steps > steps_per_env:
                break
            kept.append(line)
        path.write_text("\n".join([header, columns, *kept]) + "\n")


def hyperparameters(model: Any) -> dict[str, Any]:
    """Every scalar setting of an SB3 model (its defaults included), for args.json."""
    out: dict[str, Any] = {"class": type(model).__name__, "policy": type(model.policy).__name__}
    for key, value in sorted(vars(model).items()):
        if key.startswith("_") or key in ("num_timesteps", "start_time", "verbose"):
            continue
        if key in ("clip_range", "clip_range_vf", "exploration_schedule") and callable(value):
            value = value(1.0)  # the schedule at the start of training
        if isinstance(value, (bool, int, float, str)):
            out[key] = value
    out["net_arch"] = repr(getattr(model.policy, "net_arch", None))
    return out


def _TimeLimit(deadline: float) -> Any:
    """A callback that stops training at ``deadline`` (``time.monotonic()``)."""
    from stable_baselines3.common.callbacks import BaseCallback

    class TimeLimit(BaseCallback):
        def _on_step(self) -> bool:
            return time.monotonic() < deadline

    return TimeLimit()


if __name__ == "__main__":
    folder, _ = train(parse_args())
    print(folder)
