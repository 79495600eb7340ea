"""The leaderboard summary's metrics, on results with known values."""
from __future__ import annotations

import math

import pytest
from compiler_gym.compiler_env_state import CompilerEnvState

from leaderboard.summary import family, format_table, summarize


def _state(benchmark: str, reward: float, walltime: float = 1.0) -> CompilerEnvState:
    return CompilerEnvState(benchmark=benchmark, reward=reward, walltime=walltime, commandline="cse")


def test_improvement_is_the_geometric_mean_ratio_minus_one():
    states = [
        _state("benchmark://xla-gpt2-v0/a", 1.2),
        _state("benchmark://xla-gpt2-v0/b", 1.05),
        _state("benchmark://xla-bert-v0/c", 0.9, walltime=3.0),
    ]
    rows = {r.name: r for r in summarize(states)}
    assert rows["xla-gpt2-v0"].improvement == pytest.approx(math.sqrt(1.2 * 1.05) - 1)
    assert rows["overall"].improvement == pytest.approx((1.2 * 1.05 * 0.9) ** (1 / 3) - 1)
    assert rows["overall"].at_least_default == pytest.approx(2 / 3)
    assert rows["xla-bert-v0"].walltime == 3.0
    assert rows["overall"].walltime == pytest.approx(5 / 3)


def test_nonpositive_ratios_are_left_out_and_said():
    rows = summarize([_state("benchmark://xla-gpt2-v0/a", 1.1), _state("benchmark://xla-gpt2-v0/b", -0.5)])
    assert rows[-1].improvement == pytest.approx(0.1)
    assert rows[-1].nonpositive == 1
    assert "1 <= 0 left out" in format_table(rows)


def test_family_is_the_dataset_name():
    assert family("benchmark://xla-resnet-v0/resnet18-train") == "xla-resnet-v0"
