"""leaderboard.report.against_paper: the paper's metric over seeds and benchmarks, and the verdict per set."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
from compiler_gym.compiler_env_state import CompilerEnvState, CompilerEnvStateWriter

from leaderboard.report.against_paper import PAPER, ROWS, Cell, against, main, verdict
from leaderboard.report.summary import op_counts


def _cell(low: float, high: float) -> Cell:
    return Cell(value=(low + high) / 2, low=low, high=high, seeds=3, ratios=10, benchmarks=10, nonpositive=0)


@pytest.mark.parametrize("low, high, expected", [(0.2, 0.5, "beaten"), (-0.1, 0.05, "below"), (0.05, 0.3, "not shown")])
def test_verdict_needs_the_interval_to_exclude_the_papers_number(low, high, expected):
    assert verdict(_cell(low, high), 0.133) == expected


def test_against_leaves_out_benchmarks_without_a_ratio_and_counts_nonpositive_ones():
    initial = {"a": 100.0, "b": 100.0, "c": 100.0, "d": 100.0}
    reference = {"a": 90.0, "b": 80.0, "c": 100.0, "d": 95.0}  # c: the reference removes nothing, no ratio
    seeds = [{"a": 80.0, "b": 80.0, "c": 50.0, "d": 100.0}, {"a": 85.0, "b": 60.0, "c": 50.0, "d": 90.0}]
    cell = against(seeds, initial, reference, ["a", "b", "c", "d"])
    # seed 0: ratios 2, 1 (d: 0 <= 0, left out) -> sqrt(2) - 1; seed 1: 1.5, 2, 2 -> 6^(1/3) - 1
    assert cell.value == pytest.approx((math.sqrt(2) - 1 + 6 ** (1 / 3) - 1) / 2)
    assert (cell.seeds, cell.ratios, cell.benchmarks, cell.nonpositive) == (2, 3, 4, 1)
    assert cell.low <= cell.value <= cell.high and cell.high - cell.low > 0
    assert against(seeds, initial, reference, ["a", "b", "c", "d"]).low == cell.low  # seeded
    one = against(seeds[:1], initial, reference, ["a", "b", "c", "d"])  # one seed: an interval over benchmarks only
    assert one.seeds == 1 and one.low <= one.value <= one.high
    with pytest.raises(ValueError, match="one seed or more"):
        against([], initial, reference, ["a"])


def _write(path: Path, results: dict[str, float]) -> str:
    counts = op_counts()
    with open(path, "w") as f, CompilerEnvStateWriter(f) as writer:
        for benchmark, ops in results.items():
            writer.write_state(CompilerEnvState(benchmark=benchmark, reward=counts[benchmark][0] - ops, walltime=1.0,
                                                commandline="cse"))
    return str(path)


def test_main_scores_rows_of_whole_seeds_and_names_bad_input(tmp_path, capsys):
    from xla_service.env.datasets import split_benchmark_uris

    counts = op_counts()
    gpt2 = split_benchmark_uris("test", ["xla-gpt2-v0"])
    baseline = _write(tmp_path / "replayed.csv", {b: counts[b][1] for b in gpt2})  # the replay = XLA's default
    # an agent removing 1.5x what XLA's default removes (a ratio of 1.5 wherever there is one); seed 2 misses a benchmark
    agent = {b: counts[b][1] - max(counts[b][0] - counts[b][1], 0) / 2 for b in gpt2}
    for seed in (0, 1):
        _write(tmp_path / f"a-seed{seed}-test.csv", agent)
    _write(tmp_path / "a-seed2-test.csv", {b: agent[b] for b in gpt2[1:]})
    assert main([f"A={tmp_path}/a-seed*-test.csv", "--baseline", baseline]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[2].startswith("| A | GPT-2 (+13.3%) | +")  # the mix lacks BERT, ResNet: no row
    assert lines[2].count("+50.0% [+50.0%, +50.0%] (2 seeds; ") == 2 and lines[2].count("| beaten |") == 2
    with pytest.raises(SystemExit):
        main(["no-equals"])
    assert "expected LABEL=GLOB, got 'no-equals'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([f"B={tmp_path}/none-seed*.csv", "--baseline", baseline])
    assert "no row has a seed" in capsys.readouterr().err
    # a file without a seed in its name (a deterministic search) is one run, if alone in its row
    _write(tmp_path / "search-test.csv", agent)
    assert main([f"S={tmp_path}/search-test.csv", "--baseline", baseline]) == 0
    assert capsys.readouterr().out.splitlines()[2].count("+50.0% [+50.0%, +50.0%] (1 run; ") == 2
    _write(tmp_path / "search-other.csv", agent)
    with pytest.raises(SystemExit):
        main([f"S={tmp_path}/search-*.csv", "--baseline", baseline])
    assert "expected 'seed<k>' in the results file name, got 'search-other.csv'" in capsys.readouterr().err


def test_the_readme_section_is_the_commands_table(capsys):
    readme = (Path(__file__).parents[2] / "docs" / "experiments" / "against-the-paper.md").read_text()
    assert main([]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 2 + len(PAPER) * (len(ROWS) - 2)  # rows without a whole seed yet are left out
    missing = [line for line in lines if line not in readme]
    assert not missing, f"docs/experiments/against-the-paper.md lacks `python -m leaderboard.report.against_paper` lines: {missing[:2]}"
