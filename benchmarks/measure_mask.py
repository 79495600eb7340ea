"""What the Gymnasium env's action mask costs and buys: ``mask="known"`` against ``mask="episode"``.

A uniformly random policy over the passes the mask allows (the world model's
random steps) plays the same seeded episodes under each mask twice: first with
a new experience store, then again with the same store, which by then holds
every step of the first time. For each mask and time: the share of steps that
changed nothing (steps wasted on passes the store could have ruled out),
passes that changed the module per episode, steps per second, and how many
episodes took exactly the actions they took the first time. With ``known`` the
mask follows what the store holds, so a seeded run changes once the store has
learned; with ``episode`` it does not (docs/gymnasium.md). ``--store`` plays
each mask once more with a store as it is, such as ``default``, the one the
agents' runs have filled (it then learns these steps too).

    .venv/bin/python benchmarks/measure_mask.py          # 20 episodes of 20 steps a pass, ~5 min
    .venv/bin/python benchmarks/measure_mask.py --quick  # 2 episodes of 4 steps, < 1 min
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import heading, machine_line  # noqa: E402


def play(mask: str, store: Path | str, benchmarks: str, episodes: int, steps: int, seed: int) -> dict[str, Any]:
    """Random episodes (seeded: benchmark draws and actions) in a new service using ``store``."""
    import gymnasium

    import xla_service.gym  # noqa: F401  (registers xla-v0)

    os.environ["XLA_GYM_STORE"] = str(store)  # the service the env starts reads it
    env = gymnasium.make("xla-v0", benchmarks=benchmarks, observation="OpCount", max_episode_steps=steps, mask=mask)
    actions: list[list[int]] = []
    wasted = taken = 0
    start = time.perf_counter()
    try:
        for episode in range(episodes):
            rng = np.random.default_rng([seed, episode])
            _, info = env.reset(seed=seed + episode)
            actions.append([])
            for _ in range(steps):
                action = int(rng.choice(np.flatnonzero(info["action_mask"])))
                _, _, terminated, truncated, info = env.step(action)
                actions[-1].append(action)
                taken += 1
                wasted += not info["changed"]
                if terminated or truncated:
                    break
    finally:
        env.close()
    seconds = time.perf_counter() - start
    return {"actions": actions, "wasted": wasted, "steps": taken, "seconds": seconds,
            "changed_per_episode": (taken - wasted) / max(episodes, 1)}


def describe(setting: str) -> str:
    """The store ``setting`` names, as ``python -m xla_service.store stats`` counts it."""
    from xla_service.store import open_store

    store = open_store(setting)
    if store is None:
        return f"STORE {setting}: off"
    try:
        stats = store.stats()
    finally:
        store.close()
    return (f"STORE {setting}: {stats['bytes'] / 2**20:,.0f} MiB, {stats['results'].get('step', 0):,} steps "
            f"from {stats['states']:,} states")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--benchmarks", default="xla-gpt2-v0:train",
                        help="the env's benchmarks (SUITE[:SPLIT] or URIs, comma-separated)")
    parser.add_argument("--episodes", type=int, default=20, help="episodes each time")
    parser.add_argument("--steps", type=int, default=20, help="steps an episode")
    parser.add_argument("--seed", type=int, default=0, help="seed of the benchmark draws and the random actions")
    parser.add_argument("--store", default="",
                        help="also play each mask once with this store as it is (a path, or default); none if empty")
    parser.add_argument("--quick", action="store_true", help="2 episodes of 4 steps: < 1 min")
    args = parser.parse_args(argv)
    if args.quick:
        args.episodes, args.steps = 2, 4
    if args.episodes < 1 or args.steps < 1:
        parser.error(f"expected --episodes and --steps >= 1, got {args.episodes} and {args.steps}")

    print(machine_line(), flush=True)
    print(f"random policy over the allowed passes, {args.episodes} episodes of {args.steps} steps on "
          f"{args.benchmarks}, seed {args.seed}; each mask with its own new store, played twice", flush=True)
    with tempfile.TemporaryDirectory(prefix="measure-mask-") as folder:
        for mask in ("known", "episode"):
            heading(f'mask="{mask}"')
            store = Path(folder) / f"{mask}.sqlite"
            first = play(mask, store, args.benchmarks, args.episodes, args.steps, args.seed)
            again = play(mask, store, args.benchmarks, args.episodes, args.steps, args.seed)
            played = [("new store", first), ("store knowing the first time", again)]
            if args.store:
                print(describe(args.store), flush=True)
                played.append((f"the store {args.store}", play(
                    mask, args.store, args.benchmarks, args.episodes, args.steps, args.seed)))
            for label, result in played:
                print(f"MASK {mask}, {label}: {result['wasted'] / result['steps']:.1%} of {result['steps']} steps "
                      f"changed nothing; {result['changed_per_episode']:.1f} passes changed the module an episode; "
                      f"{result['steps'] / result['seconds']:.1f} steps/s", flush=True)
            same = sum(a == b for a, b in zip(first["actions"], again["actions"]))
            print(f"REPEATS {mask}: {same} of {args.episodes} episodes took the same actions the second time",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
