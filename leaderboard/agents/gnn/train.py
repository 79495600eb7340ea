"""Train the graph agent with PPO, in one file (CleanRL style).

``python -m leaderboard.agents.gnn.train --benchmarks xla-gpt2-v0:train --seed 0``

Top to bottom: arguments (a dataclass, every field a flag), seeding, the
environments (xla-v0's Gymnasium env with the ``HloGraphArrays`` observation,
the ``action_mask`` in ``info`` and ``stop_action=True``; one XLA service per
env, stepped in turn, all sharing the experience store), the network
(``model.py``), and PPO: rollouts with masked logits, GAE, clipped updates on
minibatches of graphs (``--max-batch-nodes`` splits a minibatch into chunks
whose gradients add up, so memory stays bounded on large graphs). A run
folder (``runs/gnn-SUITE-seedN``) gets ``args.json`` (arguments, network,
versions), ``tb/`` (TensorBoard: ``tensorboard --logdir RUN/tb``),
``episodes.csv``, ``checkpoints/gnn_STEP.pt`` (weights, optimizer, RNG
states), ``model.pt`` and ``result.json``. ``--resume`` continues from the
last checkpoint up to ``--total-timesteps`` (``episodes.csv`` keeps the
episodes that checkpoint holds; the steps after it are redone).
"""
from __future__ import annotations

import dataclasses
import json
import math
import platform
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from leaderboard.agents.arguments import dataclass_parser, experience_store
from leaderboard.runs import runs_dir
from xla_service.gym.env import MASKS

__all__ = ["Args", "latest_checkpoint", "parse_args", "run_name", "train", "trim_episodes"]

EPISODES_HEADER = "step,benchmark,return,length,stopped"


@dataclass
class Args:
    benchmarks: str = "xla-gpt2-v0:train"
    """benchmarks to train on: SUITE[:SPLIT] (default train) and URIs, comma-separated (e.g. the mixed split xla-bert-v0:train,xla-gpt2-v0:train,..., or generator://xla-random-v0/0-9999)"""
    max_train_benchmarks: int = 0
    """if > 0, train on the first N of them only"""
    seed: int = 0
    """seed of Python, NumPy, torch and the benchmark draws"""
    total_timesteps: int = 4000
    """environment steps to train for"""
    n_envs: int = 2
    """environments (each with its own XLA service), stepped in turn"""
    num_steps: int = 64
    """rollout length per environment and update"""
    episode_length: int = 20
    """steps per episode, unless the agent stops it earlier"""
    mask: str = "known"
    """the env's action_mask: "known" (passes the service's cache or experience store knows change nothing or fail here, even before this run tries them; two runs act alike only if their stores know the same) or "episode" (only what this episode saw: a seeded run repeats on any machine)"""
    learning_rate: float = 2.5e-4
    """Adam's learning rate"""
    anneal_lr: bool = True
    """decay the learning rate linearly to 0"""
    gamma: float = 0.99
    """discount factor"""
    gae_lambda: float = 0.95
    """lambda of generalized advantage estimation"""
    num_minibatches: int = 4
    """minibatches per epoch"""
    update_epochs: int = 4
    """passes over each rollout"""
    norm_adv: bool = True
    """normalize advantages per minibatch"""
    clip_coef: float = 0.2
    """PPO's clipping coefficient (policy and value)"""
    clip_vloss: bool = True
    """clip the value loss too"""
    ent_coef: float = 0.01
    """entropy bonus"""
    vf_coef: float = 0.5
    """value loss weight"""
    max_grad_norm: float = 0.5
    """gradient clipping norm"""
    target_kl: float = 0.0
    """if > 0, stop an update's epochs once the approximate KL exceeds it"""
    hidden: int = 64
    """width of node, edge and graph embeddings"""
    layers: int = 3
    """GATv2 layers"""
    heads: int = 4
    """attention heads per GATv2 layer"""
    max_nodes: int = 0
    """if > 0, keep at most this many nodes of each graph (model.to_data; entry computation first)"""
    max_batch_nodes: int = 60_000
    """nodes per forward pass in updates: larger minibatches are split, their gradients summed"""
    checkpoint_every: int = 1000
    """save a checkpoint every this many steps"""
    max_minutes: float = 0.0
    """if > 0, stop after this many minutes of wall time (result.json records the steps taken)"""
    threads: int = 1
    """torch threads"""
    out: str = ""
    """folder for the run (a subfolder gnn-SUITE-seedN is made); empty: $XLA_GYM_RUNS/gnn, else
    ~/.cache/xla-gym/runs/gnn (out of the checkout)"""
    resume: bool = False
    """continue the run from its last checkpoint (same arguments), up to --total-timesteps"""


def parse_args(argv: Sequence[str] | None = None) -> Args:
    """Every field of :class:`Args` as a ``--kebab-case`` flag, its docstring the help."""
    parser = dataclass_parser(Args, __doc__.splitlines()[0])
    args = Args(**vars(parser.parse_args(argv)))
    for name in ("total_timesteps", "n_envs", "num_steps", "episode_length", "num_minibatches", "update_epochs", "threads"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')}: expected >= 1, got {getattr(args, name)}")
    if args.num_minibatches > args.n_envs * args.num_steps:
        parser.error(f"--num-minibatches {args.num_minibatches} > the rollout's {args.n_envs * args.num_steps} steps")
    if args.mask not in MASKS:
        parser.error(f"--mask: expected one of {', '.join(MASKS)}, got {args.mask!r}")
    return args


def run_name(args: Args) -> str:
    """``gnn-gpt2-seed0`` for one suite, ``gnn-generator-seed0`` for generator seeds alone,
    ``gnn-mixed-seed0`` for several of these, ``gnn-custom-seed0`` for other URIs."""
    parts = [p.strip() for p in args.benchmarks.split(",") if p.strip()]
    suites = {p.split(":")[0] for p in parts}
    generated = [p for p in parts if p.startswith("generator://")]
    if any("://" in p for p in parts if p not in generated):
        tag = "custom"
    elif generated and len(parts) == len(generated):
        tag = "generator"
    elif len(suites) == 1:
        tag = next(iter(suites)).removeprefix("xla-").removesuffix("-v0")
    else:
        tag = "mixed"
    return f"gnn-{tag}-seed{args.seed}"


def latest_checkpoint(run: Path) -> Path | None:
    """The checkpoint of ``run`` with the most steps, or None."""
    found = sorted((run / "checkpoints").glob("gnn_*.pt"), key=lambda p: int(p.stem.split("_")[1]))
    return found[-1] if found else None


def trim_episodes(path: Path, steps: int) -> None:
    """Keep in ``episodes.csv`` (made if missing) the episodes that ended within the first ``steps``
    training steps: those a checkpoint at ``steps`` holds (0: none, a new run)."""
    lines = path.read_text().splitlines()[1:] if path.is_file() else []
    kept = [line for line in lines if int(line.split(",", 1)[0]) <= steps]
    path.write_text("".join(f"{line}\n" for line in [EPISODES_HEADER, *kept]))


def _make_env(args: Args, benchmarks: Sequence[str]) -> Any:
    import gymnasium

    import xla_service.gym  # noqa: F401  (registers xla-v0 with Gymnasium)

    return gymnasium.make(
        "xla-v0", benchmarks=benchmarks, observation="HloGraphArrays", reward="OpCount",
        reward_scale="initial", max_episode_steps=args.episode_length, stop_action=True, mask=args.mask,
    )


def _graph(observation: Any, max_nodes: int) -> Any:
    """The env's ``Graph`` observation as the network's ``Data``."""
    from leaderboard.agents.gnn.model import to_data
    from xla_service.env.graph import GraphArrays

    arrays = GraphArrays(observation.nodes, observation.edge_links.T, observation.edges[:, 0], observation.edges[:, 1])
    return to_data(arrays, max_nodes)


def _chunks(indices: np.ndarray, nodes: np.ndarray, budget: int) -> list[np.ndarray]:
    """``indices`` split in order into runs of at most ``budget`` nodes (at least one graph each)."""
    chunks: list[list[int]] = [[]]
    total = 0
    for i in indices:
        if chunks[-1] and total + nodes[i] > budget:
            chunks.append([])
            total = 0
        chunks[-1].append(int(i))
        total += int(nodes[i])
    return [np.asarray(c) for c in chunks]


def train(args: Args) -> Path:
    """Train; return the run folder."""
    import torch
    from torch.utils.tensorboard import SummaryWriter
    from tqdm import tqdm

    from leaderboard.agents.gnn.model import GnnActorCritic, GnnConfig, batch, masked_logits
    from xla_service.gym.env import resolve_benchmarks

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    benchmarks = resolve_benchmarks(args.benchmarks)
    if args.max_train_benchmarks > 0:
        benchmarks = benchmarks[: args.max_train_benchmarks]
    if not args.out:
        args = dataclasses.replace(args, out=str(runs_dir("gnn")))
    run = Path(args.out) / run_name(args)
    (run / "checkpoints").mkdir(parents=True, exist_ok=True)
    config = GnnConfig(hidden=args.hidden, layers=args.layers, heads=args.heads)
    agent = GnnActorCritic(config)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    record = {
        "args": dataclasses.asdict(args), "config": dataclasses.asdict(config),
        "parameters": sum(p.numel() for p in agent.parameters()), "train_benchmarks": len(benchmarks),
        "versions": {p: version(p) for p in ("jaxlib", "torch", "torch-geometric", "gymnasium", "compiler-gym")},
        "python": platform.python_version(), "experience_store": experience_store(),
    }
    (run / "args.json").write_text(json.dumps(record, indent=1) + "\n")
    batch_size = args.n_envs * args.num_steps
    minibatch_size = batch_size // args.num_minibatches
    iterations = math.ceil(args.total_timesteps / batch_size)
    global_step, start_iteration = 0, 1
    resumed = latest_checkpoint(run) if args.resume else None
    if resumed is not None:
        state = torch.load(resumed, weights_only=False)
        agent.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        global_step, start_iteration = state["global_step"], state["iteration"] + 1
        random.setstate(state["rng"]["python"])
        np.random.set_state(state["rng"]["numpy"])
        torch.set_rng_state(state["rng"]["torch"])
    writer = SummaryWriter(str(run / "tb"))
    writer.add_text("hyperparameters", "|param|value|\n|-|-|\n" + "\n".join(f"|{k}|{v}|" for k, v in dataclasses.asdict(args).items()))
    writer.add_text("versions", json.dumps(record["versions"]))

    def checkpoint(iteration: int) -> None:
        rng = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
        torch.save(
            {"model": agent.state_dict(), "optimizer": optimizer.state_dict(), "config": dataclasses.asdict(config),
             "global_step": global_step, "iteration": iteration, "rng": rng},
            run / "checkpoints" / f"gnn_{global_step}.pt",
        )

    envs = [_make_env(args, benchmarks) for _ in range(args.n_envs)]
    trim_episodes(run / "episodes.csv", global_step)  # a resumed run redoes the steps after its checkpoint
    episodes = (run / "episodes.csv").open("a")
    try:
        graphs: list[list[Any]] = [[None] * args.n_envs for _ in range(args.num_steps)]
        masks = torch.zeros((args.num_steps, args.n_envs, config.actions))
        actions = torch.zeros((args.num_steps, args.n_envs), dtype=torch.long)
        logprobs, rewards, dones, values = (torch.zeros((args.num_steps, args.n_envs)) for _ in range(4))
        next_graph, next_mask = [], torch.zeros((args.n_envs, config.actions))
        for i, env in enumerate(envs):
            observation, info = env.reset(seed=args.seed + 1000 * i + global_step)
            next_graph.append(_graph(observation, args.max_nodes))
            next_mask[i] = torch.as_tensor(info["action_mask"], dtype=torch.float32)
        next_done = torch.zeros(args.n_envs)
        returns, lengths = np.zeros(args.n_envs), np.zeros(args.n_envs, dtype=np.int64)
        recent: list[float] = []
        started = time.monotonic()
        deadline = started + 60 * args.max_minutes if args.max_minutes > 0 else math.inf
        progress = tqdm(total=iterations * batch_size, initial=global_step, unit="step", desc=run.name)
        iteration = start_iteration - 1
        for iteration in range(start_iteration, iterations + 1):
            if time.monotonic() > deadline:
                break
            if args.anneal_lr:
                optimizer.param_groups[0]["lr"] = (1.0 - (iteration - 1.0) / iterations) * args.learning_rate
            # Rollout: every env in turn, one batched forward pass per step.
            for step in range(args.num_steps):
                global_step += args.n_envs
                graphs[step], masks[step], dones[step] = list(next_graph), next_mask, next_done
                with torch.no_grad():
                    logits, value = agent(batch(next_graph))
                    dist = torch.distributions.Categorical(logits=masked_logits(logits, next_mask))
                    action = dist.sample()
                actions[step], logprobs[step], values[step] = action, dist.log_prob(action), value
                next_mask, next_done = torch.zeros_like(next_mask), torch.zeros(args.n_envs)
                for i, env in enumerate(envs):
                    observation, reward, terminated, truncated, info = env.step(int(action[i]))
                    rewards[step, i] = float(reward)
                    returns[i] += float(reward)
                    lengths[i] += 1
                    if terminated or truncated:
                        episodes.write(f"{global_step},{info['benchmark']},{returns[i]:.6f},{lengths[i]},{int(terminated)}\n")
                        writer.add_scalar("charts/episodic_return", returns[i], global_step)
                        writer.add_scalar("charts/episodic_length", lengths[i], global_step)
                        recent = (recent + [float(returns[i])])[-20:]
                        returns[i], lengths[i] = 0.0, 0
                        observation, info = env.reset()
                        next_done[i] = 1.0
                    next_graph[i] = _graph(observation, args.max_nodes)
                    next_mask[i] = torch.as_tensor(info["action_mask"], dtype=torch.float32)
                progress.update(args.n_envs)
            # Generalized advantage estimation (CleanRL's).
            with torch.no_grad():
                _, next_value = agent(batch(next_graph))
                advantages = torch.zeros_like(rewards)
                last = torch.zeros(args.n_envs)
                for t in reversed(range(args.num_steps)):
                    following_done = next_done if t == args.num_steps - 1 else dones[t + 1]
                    following_value = next_value if t == args.num_steps - 1 else values[t + 1]
                    delta = rewards[t] + args.gamma * following_value * (1.0 - following_done) - values[t]
                    advantages[t] = last = delta + args.gamma * args.gae_lambda * (1.0 - following_done) * last
                returns_ = advantages + values
            flat_graphs = [g for row in graphs for g in row]
            nodes = np.asarray([g.num_nodes for g in flat_graphs])
            b_masks, b_actions, b_logprobs = masks.reshape(batch_size, -1), actions.reshape(-1), logprobs.reshape(-1)
            b_advantages, b_returns, b_values = advantages.reshape(-1), returns_.reshape(-1), values.reshape(-1)
            # PPO's clipped update, minibatch by minibatch, in chunks of at most max_batch_nodes nodes.
            indices = np.arange(batch_size)
            clipfracs: list[float] = []
            stats: dict[str, float] = {}
            for _epoch in range(args.update_epochs):
                np.random.shuffle(indices)
                for start in range(0, batch_size, minibatch_size):
                    mb = indices[start : start + minibatch_size]
                    mb_adv = b_advantages[mb]
                    if args.norm_adv and len(mb) > 1:
                        mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                    optimizer.zero_grad()
                    for chunk in _chunks(np.arange(len(mb)), nodes[mb], args.max_batch_nodes):
                        ids = mb[chunk]
                        logits, value = agent(batch([flat_graphs[i] for i in ids]))
                        dist = torch.distributions.Categorical(logits=masked_logits(logits, b_masks[ids]))
                        logratio = dist.log_prob(b_actions[ids]) - b_logprobs[ids]
                        ratio = logratio.exp()
                        with torch.no_grad():
                            stats["approx_kl"] = float(((ratio - 1) - logratio).mean())
                            clipfracs.append(float(((ratio - 1.0).abs() > args.clip_coef).float().mean()))
                        adv = mb_adv[chunk]
                        pg_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
                        if args.clip_vloss:
                            clipped = b_values[ids] + (value - b_values[ids]).clamp(-args.clip_coef, args.clip_coef)
                            v_loss = 0.5 * torch.max((value - b_returns[ids]) ** 2, (clipped - b_returns[ids]) ** 2).mean()
                        else:
                            v_loss = 0.5 * ((value - b_returns[ids]) ** 2).mean()
                        entropy = dist.entropy().mean()
                        loss = pg_loss - args.ent_coef * entropy + args.vf_coef * v_loss
                        (loss * len(chunk) / len(mb)).backward()
                        stats.update(policy_loss=float(pg_loss.detach()), value_loss=float(v_loss.detach()), entropy=float(entropy.detach()))
                    torch.nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                    optimizer.step()
                if args.target_kl > 0 and stats["approx_kl"] > args.target_kl:
                    break
            variance = float(b_returns.var())
            explained = math.nan if variance == 0 else 1 - float((b_returns - b_values).var()) / variance
            logged: dict[str, float] = {**stats, "clipfrac": float(np.mean(clipfracs)), "explained_variance": explained}
            for key, value_ in logged.items():
                writer.add_scalar(f"losses/{key}", value_, global_step)
            writer.add_scalar("charts/learning_rate", optimizer.param_groups[0]["lr"], global_step)
            writer.add_scalar("charts/SPS", global_step / max(time.monotonic() - started, 1e-9), global_step)
            progress.set_postfix(ret=f"{np.mean(recent):.4f}" if recent else "-", vloss=f"{stats['value_loss']:.4f}")
            if global_step // args.checkpoint_every > (global_step - batch_size) // args.checkpoint_every:
                checkpoint(iteration)
        progress.close()
        checkpoint(iteration)
        torch.save({"model": agent.state_dict(), "config": dataclasses.asdict(config), "global_step": global_step}, run / "model.pt")
        result = {"timesteps": global_step, "minutes": (time.monotonic() - started) / 60,
                  "mean_return_last_20_episodes": float(np.mean(recent)) if recent else None}
        (run / "result.json").write_text(json.dumps(result, indent=1) + "\n")
    finally:
        episodes.close()
        writer.close()
        for env in envs:
            env.close()
    return run


if __name__ == "__main__":
    print(train(parse_args()))
