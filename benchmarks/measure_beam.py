"""The figures behind the beam agent's README: pass sequences and beam
settings on one module, through the stock ``compiler_gym`` client.

Prints the op count after each pass of a few sequences (greedy's, PPO's, a
canonicalizing detour), how many of the 64 passes change the module at the
start, and where ``Beam`` ends with each setting, with its walltime.

    .venv/bin/python benchmarks/measure_beam.py    # ~10 min on 2 cores
"""
from __future__ import annotations

import argparse
import time

import compiler_gym

from leaderboard.agents.beam.policy import Beam
from leaderboard.agents.common import op_count

SEQUENCES = [
    "cse reshape-mover call-inliner transpose-folding reshape-mover",  # greedy's
    "cse algsimp cse algsimp reshape-mover algsimp",  # PPO's
    "cse reshape-mover batched_gather_scatter_normalizer algsimp cse",
]
SETTINGS = [
    Beam(width=3, depth=40, lazy=True, patience=2),
    Beam(width=3, depth=40, lazy=True, patience=2, diverse=True),
    Beam(width=5, depth=40, lazy=True, patience=2, diverse=True),  # the leaderboard's
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--benchmark", default="benchmark://xla-bert-v0/bert-l6-d128-h4-s64-b1-adamw-f32-train",
                        help="the module (default: %(default)s)")
    parser.add_argument("--no-beam", action="store_true", help="only the sequences and the pass count (~1 min)")
    args = parser.parse_args()
    with compiler_gym.make("xla-v0", benchmark=args.benchmark) as env:
        env.reset()
        names = list(env.action_space.names)
        changing = 0
        for action in range(env.action_space.n):
            fork = env.fork()
            try:
                changing += not fork.step(action)[3]["action_had_no_effect"]
            except ValueError:
                pass
            finally:
                fork.close()
        print(f"{args.benchmark}: {op_count(env)} ops; {changing} of {env.action_space.n} passes change it")
        for sequence in SEQUENCES:
            env.reset()
            counts = []
            for name in sequence.split():
                env.step(names.index(name))
                counts.append(f"{name}:{op_count(env)}")
            print("  " + " ".join(counts))
        for beam in [] if args.no_beam else SETTINGS:
            env.reset()
            started = time.monotonic()
            beam(env)
            print(f"{beam}: {op_count(env)} ops in {time.monotonic() - started:.0f} s: {env.commandline()}", flush=True)


if __name__ == "__main__":
    main()
