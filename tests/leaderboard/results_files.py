"""Results CSVs as the harness writes them, for the tests of the tools that read them (seeds, efficiency)."""

from __future__ import annotations

from compiler_gym.compiler_env_state import CompilerEnvState, CompilerEnvStateWriter

from leaderboard.report.summary import op_counts

__all__ = ["GPT2", "RESNET", "write_results"]

GPT2 = "benchmark://xla-gpt2-v0/gpt2-l6-d128-h4-s32-b2-adam-f32-train"
RESNET = "benchmark://xla-resnet-v0/resnet18-w16-i32-b2-adam-train"


def write_results(path, results: dict[str, int]) -> str:
    """A results CSV whose agent reached ``results[benchmark]`` ops on each benchmark."""
    with open(path, "w") as f, CompilerEnvStateWriter(f) as writer:
        for benchmark, ops in results.items():
            initial = op_counts()[benchmark][0]
            writer.write_state(
                CompilerEnvState(
                    benchmark=benchmark, reward=initial - ops, walltime=1.0, commandline="cse"
                )
            )
    return str(path)
