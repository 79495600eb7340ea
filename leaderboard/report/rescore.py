"""Re-score results CSVs under the current op count rule: replay each commandline, rewrite its reward.

``python -m leaderboard.report.rescore RESULTS.csv [...]``

A result is a benchmark and the passes an agent chose; its score is an op count,
which depends on the op count rule (``xla_service.catalog.schema.OP_COUNT_RULE``,
docs/concepts.md). This replays every row's commandline through xla-v0 and
rewrites the row's reward as the episode's ``OpCount`` return (initial - final
op count) under the current rule, keeping the benchmark, walltime and
commandline. Results made before 2026-11-23 (rule 1, rewards in
``OpCountNorm`` units) are brought to the current harness's form this way; the
file is rewritten in place (``--out`` writes elsewhere).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from compiler_gym.compiler_env_state import CompilerEnvStateReader, CompilerEnvStateWriter

from leaderboard.harness import REWARD_SPACE

__all__ = ["main", "rescore"]


def rescore(path: Path, out: Path, env: object) -> int:
    """Replay ``path``'s rows in ``env``, write them with current rewards to ``out``; rows done."""
    with CompilerEnvStateReader(open(path)) as reader:
        states = list(reader)
    for i, state in enumerate(states, 1):
        env.reset(benchmark=state.benchmark)  # type: ignore[attr-defined]
        env.apply(state)  # type: ignore[attr-defined]
        state.reward = float(env.episode_reward)  # type: ignore[attr-defined]
        print(f"\r{path.name}: {i}/{len(states)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    with open(out, "w") as f, CompilerEnvStateWriter(f) as writer:
        for state in states:
            writer.write_state(state, flush=True)
    return len(states)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("results", nargs="+", type=Path, help="results CSVs (benchmark,reward,walltime,commandline)")
    parser.add_argument("--out", type=Path, default=None, help="with one CSV: write here instead of in place")
    args = parser.parse_args(argv)
    if args.out is not None and len(args.results) != 1:
        parser.error("--out takes one results CSV")
    import compiler_gym

    with compiler_gym.make("xla-v0", reward_space=REWARD_SPACE) as env:
        for path in args.results:
            rows = rescore(path, args.out or path, env)
            print(f"{path}: {rows} rows re-scored")
    return 0


if __name__ == "__main__":
    sys.exit(main())
