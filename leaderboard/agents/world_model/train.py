"""Train a world model of pass ordering and a controller inside it (Dyna, CleanRL style).

``python -m leaderboard.agents.world_model.train --benchmarks xla-gpt2-v0:train --seed 0``

Top to bottom: arguments (a dataclass, every field a flag), seeding, the real
env (xla-v0's Gymnasium env, observation ``OpcodeCounts`` + ``OpCount``,
reward ``OpCount``, its ``action_mask`` in ``info``), then the loop:

1. collect ``--initial-steps`` real steps with a random policy (uniform over
   the env's ``action_mask``); optionally add a store export (``--offline-data``);
2. fit the world model (``model.py``) on the training episodes and measure it
   on held-out episodes (``evaluate.py``: op-count-change MAE, "changed"
   precision and recall, drift over 10 imagined steps);
3. train the controller (``controller.py``) for ``--imagination-updates``
   actor-critic updates on rollouts imagined from real start states;
4. collect ``--steps-per-iteration`` real steps with the controller
   (epsilon-greedy), add them to the data, and go to 2 until
   ``--total-env-steps`` real steps are spent.

The run folder (``runs/wm-SUITE-seedN``, ``runs/wm-SUITE+SUITE-seedN`` for several) gets ``args.json`` (arguments and
versions), ``tb/`` (TensorBoard: ``tensorboard --logdir RUN/tb``, x axis =
real env steps), ``model.pt`` (both networks and the arguments; also
``checkpoints/model-STEPS.pt`` at the ``--checkpoints`` step counts),
``transitions.npz`` and ``heldout.npz`` (the real data, split), and
``result.json`` with the real env steps spent (the method's point is sample
efficiency) and the final held-out metrics, and ``state.pt`` (the whole training
state as the last iteration started; ``resume.py``): ``--resume`` continues a
stopped run, or a finished one to a larger ``--total-env-steps``.
"""
from __future__ import annotations

import dataclasses
import json
import platform
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import torch

from leaderboard.agents.arguments import dataclass_parser, experience_store
from leaderboard.agents.world_model import controller as ctl
from leaderboard.agents.world_model import resume
from leaderboard.agents.world_model.data import Transitions, collect, from_export, random_chooser
from leaderboard.agents.world_model.evaluate import model_metrics
from leaderboard.agents.world_model.model import WorldModel, fit
from leaderboard.runs import runs_dir
from xla_service.gym.env import MASKS

__all__ = ["Args", "parse_args", "run_name", "train"]


@dataclass
class Args:
    benchmarks: str = "xla-gpt2-v0:train"
    """benchmarks to collect on: SUITE[:SPLIT] (default train) and URIs, comma-separated, e.g. generator://xla-random-v0/0-999"""
    max_train_benchmarks: int = 0
    """if > 0, use the first N of them only"""
    seed: int = 0
    """seed of Python, NumPy, torch and the benchmark draws"""
    total_env_steps: int = 2000
    """real env steps to spend in all (the random ones included)"""
    initial_steps: int = 500
    """real steps of the random policy before the first model"""
    steps_per_iteration: int = 250
    """real steps of the controller per Dyna iteration"""
    episode_length: int = 20
    """passes per real episode, and per benchmark when acting"""
    mask: str = "known"
    """the env's action_mask: "known" (passes the service's cache or experience store knows change nothing or fail here, even before this run tries them; two runs act alike only if their stores know the same) or "episode" (only what this episode saw: a seeded run repeats on any machine)"""
    epsilon: float = 0.2
    """probability of a random (masked) action when the controller collects"""
    offline_data: str = ""
    """a store export (python -m xla_service.store export OUT.npz) to train the model on too"""
    heldout_fraction: float = 0.1
    """fraction of the collected episodes held out to measure the model"""
    ensemble: int = 5
    """world model: MLPs in the ensemble"""
    hidden: int = 256
    """world model: hidden units per layer"""
    model_lr: float = 1e-3
    """world model: Adam's learning rate"""
    model_epochs: int = 20
    """world model: epochs over the data per iteration"""
    model_min_updates: int = 500
    """world model: at least this many gradient steps per iteration (more epochs when the data is small)"""
    batch_size: int = 256
    """world model: minibatch size (per member)"""
    controller_hidden: int = 256
    """controller: hidden units per layer"""
    controller_lr: float = 3e-4
    """controller: Adam's learning rate"""
    imagination_updates: int = 200
    """controller: actor-critic updates per iteration"""
    imagination_batch: int = 64
    """controller: imagined rollouts per update (from real start states)"""
    horizon: int = 15
    """controller: imagined steps per rollout"""
    gamma: float = 0.99
    """discount factor"""
    lam: float = 0.95
    """lambda of the imagined returns"""
    entropy_coef: float = 0.01
    """entropy bonus"""
    change_threshold: float = 0.5
    """passes with a predicted P(changed) below it are masked (imagination and acting)"""
    disagreement_penalty: float = 0.0
    """reward penalty per unit of ensemble disagreement (pessimism, MOPO)"""
    threads: int = 1
    """torch CPU threads (the networks are small: more threads only contend with XLA's)"""
    checkpoints: str = "750,1000,2000"
    """real-step counts at which to save both networks too (checkpoints/model-STEPS.pt), comma-separated: the
    same run then scores at smaller budgets (score against real env steps); steps fall on iteration ends"""
    max_minutes: float = 0.0
    """if > 0, stop collecting after this many minutes of this invocation (the steps spent are in result.json;
    --resume goes on)"""
    resume: bool = False
    """go on from the run's state.pt (written as each iteration starts) if it has one: a stopped run continues
    from the iteration it was in, a finished one to a larger --total-env-steps; other arguments must be the run's"""
    out: str = ""
    """folder for the run (a subfolder named after the benchmarks and seed is made); empty:
    $XLA_GYM_RUNS/world_model, else ~/.cache/xla-gym/runs/world_model (out of the checkout)"""


def parse_args(argv: Sequence[str] | None = None) -> Args:
    """Every field of :class:`Args` as a ``--kebab-case`` flag, its docstring the help."""
    parser = dataclass_parser(Args, __doc__.splitlines()[0])
    args = Args(**vars(parser.parse_args(argv)))
    if args.total_env_steps < 1 or args.initial_steps < 1 or args.steps_per_iteration < 1:
        parser.error("--total-env-steps, --initial-steps and --steps-per-iteration must be >= 1")
    try:
        checkpoint_steps(args)
    except ValueError:
        parser.error(f"--checkpoints: expected comma-separated step counts, got {args.checkpoints!r}")
    if args.threads < 1:
        parser.error(f"--threads: expected >= 1, got {args.threads}")
    if not 0.0 <= args.epsilon <= 1.0:
        parser.error(f"--epsilon: expected a probability, got {args.epsilon}")
    if args.mask not in MASKS:
        parser.error(f"--mask: expected one of {', '.join(MASKS)}, got {args.mask!r}")
    return args


def checkpoint_steps(args: Args) -> set[int]:
    """The real-step counts of ``--checkpoints``."""
    return {int(s) for s in args.checkpoints.split(",") if s.strip()}


def _save(path: Path, args: Args, model: WorldModel, ac: ctl.ActorCritic) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"args": dataclasses.asdict(args), "world_model": model.state_dict(), "controller": ac.state_dict()}, path)


def run_name(args: Args) -> str:
    """``wm-xla-gpt2-v0-seed0`` for one suite (``wm-xla-random-v0-seed0`` for generator URIs),
    ``wm-bert+gpt2-seed0`` for several."""
    parts = [p.strip() for p in args.benchmarks.split(",") if p.strip()]
    suites = list(dict.fromkeys(p.split("://")[1].split("/")[0] if "://" in p else p.split(":")[0] for p in parts))
    if len(suites) == 1:
        return f"wm-{suites[0]}-seed{args.seed}"
    return "wm-" + "+".join(s.removeprefix("xla-").removesuffix("-v0") for s in suites) + f"-seed{args.seed}"


def _env(args: Args) -> Any:
    import gymnasium

    from xla_service.gym.env import resolve_benchmarks

    benchmarks = resolve_benchmarks(args.benchmarks)  # generator seeds stay lazy
    if args.max_train_benchmarks > 0:
        benchmarks = benchmarks[: args.max_train_benchmarks]
    return gymnasium.make(
        "xla_service.gym:xla-v0", benchmarks=benchmarks, observation=["OpcodeCounts", "OpCount"],
        reward="OpCount", max_episode_steps=args.episode_length, mask=args.mask,
    )


def _epsilon_greedy(ac: ctl.ActorCritic, model: WorldModel, args: Args) -> Any:
    def choose(x: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
        if rng.random() < args.epsilon:
            return random_chooser(x, mask, rng)
        with torch.no_grad():
            xt = torch.as_tensor(x).unsqueeze(0)
            logits, _ = ctl.masked_logits(ac.actor(xt), model.changed_probs(xt), args.change_threshold)
            logits = logits.masked_fill(torch.as_tensor(mask[: logits.shape[-1]] == 0).unsqueeze(0), float("-inf"))
            if torch.isinf(logits).all():  # the env and the model rule out everything
                return random_chooser(x, mask, rng)
            return int(logits.argmax(-1))

    return choose


def train(args: Args) -> Path:
    """Train (or with ``args.resume``, go on from the run's ``state.pt``); return the run folder."""
    from torch.utils.tensorboard import SummaryWriter

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng, gen = np.random.default_rng(args.seed), torch.Generator().manual_seed(args.seed)
    if not args.out:
        args = dataclasses.replace(args, out=str(runs_dir("world_model")))
    run = Path(args.out) / run_name(args)
    if args.resume and _finished(run, args):
        print(f"{run} has already spent --total-env-steps={args.total_env_steps}: nothing to do", file=sys.stderr)
        return run
    run.mkdir(parents=True, exist_ok=True)
    offline = from_export(args.offline_data) if args.offline_data else Transitions.empty()
    model = WorldModel(args.ensemble, args.hidden)
    model_opt = torch.optim.Adam(model.parameters(), lr=args.model_lr)
    ac = ctl.ActorCritic(args.controller_hidden)
    ac_opt = torch.optim.Adam(ac.parameters(), lr=args.controller_lr)
    nets = {"world_model": model, "model_optimizer": model_opt, "controller": ac, "controller_optimizer": ac_opt}
    config = ctl.ImagineConfig(args.horizon, args.change_threshold, args.gamma, args.lam, args.entropy_coef, args.disagreement_penalty)
    started, checkpoints, metrics = time.monotonic(), checkpoint_steps(args), {}
    restored = resume.load(run, dataclasses.asdict(args), nets, rng, gen) if args.resume else None
    record = {
        "args": dataclasses.asdict(args),
        "versions": {p: version(p) for p in ("jaxlib", "torch", "gymnasium", "compiler-gym", "numpy")},
        "python": platform.python_version(), "experience_store": experience_store(),
        "resumed_at_real_steps": _resumed_at(run, restored),
    }
    (run / "args.json").write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record["args"]), file=sys.stderr)
    writer = SummaryWriter(str(run / "tb"), purge_step=restored[1].real_steps if restored else None)
    writer.add_text("args", json.dumps(record, indent=1))
    env = _env(args)
    try:
        if restored is None:
            data = collect(env, min(args.initial_steps, args.total_env_steps), random_chooser, rng, progress="random steps")
            progress = resume.Progress(real_steps=len(data))
        else:
            data, progress = restored
            print(f"resuming {run} at {progress.real_steps} real steps (iteration {progress.iteration})", file=sys.stderr)
        spent_before = progress.seconds
        while True:
            progress.seconds = spent_before + time.monotonic() - started
            resume.save(run, dataclasses.asdict(args), data, nets, rng, gen, progress)
            real_steps = progress.real_steps
            train_data, heldout = data.split(args.heldout_fraction, args.seed)
            history = fit(model, model_opt, Transitions.concat([train_data, offline]), args.model_epochs, args.batch_size, gen,
                          args.model_min_updates)
            metrics = model_metrics(model, heldout) if len(heldout) else {}
            starts = torch.as_tensor(train_data.starts())
            for i in range(args.imagination_updates):
                batch = starts[torch.randint(len(starts), (args.imagination_batch,), generator=gen)]
                stats = ctl.update(model, ac, ac_opt, batch, config, gen)
                progress.imagined += args.imagination_batch * args.horizon
                if i == args.imagination_updates - 1:
                    for k, v in stats.items():
                        writer.add_scalar(f"controller/{k}", v, real_steps)
            for k, v in {**history[-1], **metrics}.items():
                writer.add_scalar(f"model/{k}", v, real_steps)
            print(f"iteration {progress.iteration}: {real_steps} real steps, model loss {history[-1]['loss']:.4f}, "
                  f"held out {json.dumps({k: round(v, 4) for k, v in metrics.items()})}", file=sys.stderr)
            if real_steps in checkpoints:
                _save(run / "checkpoints" / f"model-{real_steps}.pt", args, model, ac)
            out_of_time = args.max_minutes > 0 and time.monotonic() - started > 60 * args.max_minutes
            if real_steps >= args.total_env_steps or out_of_time:
                break
            steps = min(args.steps_per_iteration, args.total_env_steps - real_steps)
            new = collect(env, steps, _epsilon_greedy(ac, model, args), rng, first_episode=int(data.episode.max()) + 1,
                          progress=f"iteration {progress.iteration + 1}: real steps")
            writer.add_scalar("real/changed_fraction", float(new.changed.mean()), real_steps + steps)
            writer.add_scalar("real/op_reduction_per_step", float(new.reward.mean()), real_steps + steps)
            data = Transitions.concat([data, new])
            progress.real_steps, progress.iteration = real_steps + steps, progress.iteration + 1
    finally:
        env.close()
        writer.close()
    _save(run / "model.pt", args, model, ac)
    train_data.save(run / "transitions.npz")
    heldout.save(run / "heldout.npz")
    result = {
        "real_env_steps": progress.real_steps, "iterations": progress.iteration + 1, "imagined_steps": progress.imagined,
        "offline_transitions": len(offline), "minutes": (spent_before + time.monotonic() - started) / 60,
        "heldout": metrics,
    }
    (run / "result.json").write_text(json.dumps(result, indent=1) + "\n")
    return run


def _finished(run: Path, args: Args) -> bool:
    """Whether ``run`` has a result with at least ``--total-env-steps`` real steps."""
    path = run / "result.json"
    return path.exists() and json.loads(path.read_text())["real_env_steps"] >= args.total_env_steps


def _resumed_at(run: Path, restored: tuple[Transitions, resume.Progress] | None) -> list[int]:
    """The real-step counts at which the run was resumed, this time included."""
    if restored is None:
        return []
    earlier = json.loads((run / "args.json").read_text()).get("resumed_at_real_steps", [])
    return [*earlier, restored[1].real_steps]


if __name__ == "__main__":
    print(train(parse_args()))
