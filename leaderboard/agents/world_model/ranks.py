"""Where another agent's choices rank in a world model's order of the passes.

``python -m leaderboard.agents.world_model.ranks RESULTS.csv --run RUN
[--checkpoint STEPS] [--plan score]`` replays the commandline of every row of
a leaderboard results CSV (e.g. greedy search's) and, at each state on the
way, finds the rank of the pass the agent chose there in the order
``WorldModelPolicy(run, checkpoint, plan).preferences`` gives (0: the model's
first choice). It prints, as JSON, how many steps there were, in how many
the chosen pass was among the model's first 1, 2, 4, 8 and 16, the median
rank, and the mean steps a benchmark: a search guided by the model that
tries its first K passes a step (``search=K``) finds the agent's choice
where the rank is below K.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence

from compiler_gym.envs import CompilerEnv

from leaderboard.agents.common import op_count
from leaderboard.agents.world_model.data import features
from leaderboard.agents.world_model.policy import PLANS, WorldModelPolicy

__all__ = ["TOP", "choice_ranks", "main", "summarize"]

#: The "among the model's first K" counts reported.
TOP = (1, 2, 4, 8, 16)


def choice_ranks(policy: WorldModelPolicy, env: CompilerEnv, passes: Sequence[str]) -> list[int]:
    """Step ``env`` (reset to its benchmark) through ``passes`` by name; the rank of each in the
    policy's order of the passes at the state it was taken from."""
    names = list(env.action_space.names)
    ranks = []
    for name in passes:
        if name not in names:
            raise ValueError(f"expected a pass of the action space, got {name!r}")
        action = names.index(name)
        ranks.append(policy.preferences(features(env.observation["OpcodeCounts"], op_count(env))).index(action))
        env.step(action)
    return ranks


def summarize(ranks: Sequence[int], benchmarks: int) -> dict[str, float]:
    if not ranks:
        raise ValueError("expected results with at least one pass in their commandlines, got none")
    out: dict[str, float] = {"steps": len(ranks), "benchmarks": benchmarks}
    out.update({f"top{k}": sum(r < k for r in ranks) for k in TOP})
    out["median_rank"] = statistics.median(ranks)
    out["steps_per_benchmark"] = len(ranks) / benchmarks
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("results", help="a leaderboard results CSV whose commandlines are replayed")
    parser.add_argument("--run", required=True, help="a run folder of leaderboard.agents.world_model.train")
    parser.add_argument("--checkpoint", type=int, default=0, help="real env steps of the checkpoint (0: model.pt)")
    parser.add_argument("--plan", default="score", choices=PLANS, help="the policy's order of the passes")
    args = parser.parse_args(argv)

    import compiler_gym

    from leaderboard.report.summary import read_results

    policy = WorldModelPolicy(args.run, checkpoint=args.checkpoint, plan=args.plan)
    rows = read_results([args.results])
    ranks: list[int] = []
    with compiler_gym.make("xla-v0") as env:
        for row in rows:
            env.reset(benchmark=row.benchmark)
            ranks += choice_ranks(policy, env, row.commandline.split())
    json.dump(summarize(ranks, len(rows)), sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
