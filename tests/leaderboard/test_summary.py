"""The leaderboard summary's metrics, on results with known values."""
from __future__ import annotations

import math

import pytest
from compiler_gym.compiler_env_state import CompilerEnvState

from leaderboard.report.summary import family, format_table, summarize

# (initial, default) op counts from the manifests: the default pipeline
# reduces the first two; it adds ops to the bf16 one.
GPT2 = "benchmark://xla-gpt2-v0/gpt2-l6-d128-h4-s32-b2-adam-f32-train"
RESNET = "benchmark://xla-resnet-v0/resnet18-w16-i32-b2-adam-train"
GPT2_BF16 = "benchmark://xla-gpt2-v0/gpt2-l6-d128-h4-s32-b2-adam-bf16-train"


def _state(benchmark: str, ratio: float, walltime: float = 1.0, commandline: str = "cse") -> CompilerEnvState:
    """A result that removed ``ratio`` times the ops that XLA's default removes
    (its CSV reward is the OpCount return: initial - final op count)."""
    from leaderboard.report.summary import op_counts

    initial, default = op_counts()[benchmark]
    reward = ratio * max(initial - default, 1)
    return CompilerEnvState(benchmark=benchmark, reward=reward, walltime=walltime, commandline=commandline)


def test_improvement_is_the_geometric_mean_ratio_minus_one():
    states = [_state(GPT2, 1.2), _state(RESNET, 0.9, walltime=3.0), _state(GPT2_BF16, 5.0)]
    rows = {r.name: r for r in summarize(states)}
    assert rows["xla-gpt2-v0"].improvement == pytest.approx(0.2)
    assert rows["overall"].improvement == pytest.approx(math.sqrt(1.2 * 0.9) - 1)
    assert rows["overall"].no_ratio == 1 and rows["xla-gpt2-v0"].no_ratio == 1
    # GPT-2 and the bf16 module are at least as good as the default; ResNet is not.
    assert rows["overall"].at_least_default == pytest.approx(2 / 3)
    assert rows["xla-resnet-v0"].walltime == 3.0
    assert rows["overall"].walltime == pytest.approx(5 / 3)


def test_passes_are_the_mean_commandline_length():
    states = [_state(GPT2, 1.0, commandline="cse dce algsimp"), _state(RESNET, 1.0, commandline="")]
    rows = {r.name: r for r in summarize(states)}
    assert rows["xla-gpt2-v0"].mean_passes == 3 and rows["xla-resnet-v0"].mean_passes == 0
    assert rows["overall"].to_json()["passes"] == pytest.approx(1.5)
    assert format_table(list(rows.values())).splitlines()[-1].split()[-1] == "1.50"


def test_nonpositive_ratios_are_left_out_and_said():
    rows = summarize([_state(GPT2, 1.1), _state(RESNET, -0.5)])
    assert rows[-1].improvement == pytest.approx(0.1)
    assert rows[-1].nonpositive == 1
    assert "1 <= 0 left out" in format_table(rows)


def test_unknown_benchmark_is_an_error():
    with pytest.raises(LookupError, match="no suite"):
        summarize([CompilerEnvState(benchmark="benchmark://xla-gpt2-v0/nope", reward=1.0, walltime=1.0, commandline="")])


def test_family_is_the_dataset_name():
    assert family("benchmark://xla-resnet-v0/resnet18-train") == "xla-resnet-v0"


def test_baseline_is_another_results_op_counts():
    from leaderboard.report.summary import final_op_counts, op_counts

    initial, default = op_counts()[GPT2]
    replay = [_state(GPT2, 1.1)]  # removes 10% more ops than XLA's default
    baseline = final_op_counts(replay)
    assert baseline[GPT2] == pytest.approx(initial - 1.1 * (initial - default))
    assert replay[0].reward == pytest.approx(initial - baseline[GPT2])
    rows = summarize([_state(GPT2, 1.21)], baseline=baseline)
    assert rows[-1].improvement == pytest.approx(0.21)
    assert rows[-1].vs_baseline == pytest.approx(0.1)
    assert "vs baseline" in format_table(rows, baseline=True)
    with pytest.raises(LookupError, match="baseline"):
        summarize([_state(RESNET, 1.0)], baseline=baseline)


def test_nonpositive_ratios_against_the_baseline_are_counted_and_said():
    from leaderboard.report.summary import final_op_counts

    baseline = final_op_counts([_state(GPT2, 1.1), _state(RESNET, 1.0)])
    # on GPT-2 fewer ops removed than the baseline; on ResNet ops added
    rows = summarize([_state(GPT2, 1.05), _state(RESNET, -0.5)], baseline=baseline)
    assert rows[-1].baseline_nonpositive == 1
    assert rows[-1].vs_baseline == pytest.approx(1.05 / 1.1 - 1)
    assert "1 <= 0 vs baseline left out" in format_table(rows, baseline=True)
    assert rows[-1].to_json()["baseline_nonpositive"] == 1
