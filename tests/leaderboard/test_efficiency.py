"""leaderboard.report.efficiency: score against real env steps, and the steps an agent needs to reach a target."""
from __future__ import annotations

import math

import pytest

from leaderboard.report.efficiency import Point, curves, main, reached, steps_of
from leaderboard.report.seeds import TEST, Cell
from tests.leaderboard.results_files import GPT2, write_results

NAN = math.nan


@pytest.mark.parametrize(
    "label, parsed",
    [
        ("MLP PPO, 4,000 steps", ("MLP PPO", 4000)),
        ("world model + lookahead, 750 real steps", ("world model + lookahead", 750)),
        ("six families: MLP PPO, 20000 env steps", ("six families: MLP PPO", 20000)),
        ("greedy search", None),
        ("PPO, steps", None),
    ],
)
def test_steps_of_reads_the_budget_at_the_end_of_a_label(label, parsed):
    assert steps_of(label) == parsed


def _cell(m: float, low: float = NAN, high: float = NAN, seeds: int = 3) -> Cell:
    return Cell(m, low, high, seeds)


def test_curves_group_an_agents_budgets_fewest_steps_first_and_leave_out_empty_rows():
    table = {
        "A, 2,000 steps": {TEST: _cell(1.02)},
        "A, 750 real steps": {TEST: _cell(1.00)},
        "A, 4,000 steps": {TEST: _cell(NAN, seeds=0)},  # no whole seed yet
        "B": {TEST: _cell(1.05)},  # no budget in its label
    }
    assert curves(table) == {"A": [Point(750, table["A, 750 real steps"][TEST]), Point(2000, table["A, 2,000 steps"][TEST])]}


TARGET = _cell(1.031, 1.025, 1.037)


@pytest.mark.parametrize(
    "points, expected",
    [
        ([(750, _cell(1.00, 0.97, 1.02)), (2000, _cell(1.03, 1.02, 1.04))], (None, None)),  # 1.030 < 1.031
        ([(750, _cell(1.00, 0.97, 1.026)), (2000, _cell(1.04, 1.03, 1.05))], (2000, None)),  # 1.03 < 1.031: bound short
        ([(750, _cell(1.00, 0.97, 1.04)), (2000, _cell(1.045, 1.035, 1.055))], (2000, 2000)),
        ([(750, _cell(1.031))], (750, None)),  # one seed: its mean, but no interval to be sure of
        ([(750, _cell(1.05, 1.045, 1.055))], (750, 750)),  # above the target's interval
        ([(750, _cell(1.032, 1.026, 1.038))], (750, None)),  # overlapping is not reaching
        ([], (None, None)),
    ],
)
def test_reached_is_the_fewest_steps_at_the_mean_and_with_the_lower_bound(points, expected):
    assert reached([Point(s, c) for s, c in points], TARGET) == expected


def _wider(cell: Cell, factor: float) -> Cell:
    return Cell(cell.mean, cell.mean - factor * (cell.mean - cell.low), cell.mean + factor * (cell.high - cell.mean), cell.seeds)


def test_a_wider_interval_never_reaches_a_target_sooner():
    """The verdict does not move when the target's interval widens, nor the mean criterion when an
    agent's does; the lower-bound criterion can only come later (the old overlap rule moved sooner)."""
    import random

    rng = random.Random(0)
    for _ in range(200):
        target = _cell(m := rng.uniform(1.0, 1.1), m - rng.uniform(0.001, 0.02), m + rng.uniform(0.001, 0.02))
        points = [Point(steps, _cell(m := rng.uniform(0.98, 1.12), m - rng.uniform(0.001, 0.03), m + rng.uniform(0.001, 0.03)))
                  for steps in (250, 500, 1000, 2000)]
        by_mean, by_bound = reached(points, target)
        for factor in (1.5, 3.0, 10.0):
            assert reached(points, _wider(target, factor)) == (by_mean, by_bound)
            wide_mean, wide_bound = reached([Point(p.steps, _wider(p.cell, factor)) for p in points], target)
            assert wide_mean == by_mean
            assert wide_bound is None or (by_bound is not None and wide_bound >= by_bound)
    # the widening that the overlap rule rewarded: an interval just short of the target, made wider
    short = [Point(750, _cell(1.00, 0.99, 1.02))]
    assert reached(short, TARGET) == reached([Point(750, _wider(short[0].cell, 5.0))], TARGET) == (None, None)


def test_main_reports_steps_to_the_target_against_its_own_agents_and_draws_the_figure(tmp_path, capsys):
    base = write_results(tmp_path / "base.csv", {GPT2: 100})
    for seed, (early, late) in enumerate([(100, 90), (98, 92), (99, 91)]):
        write_results(tmp_path / f"a-steps1000-seed{seed}-test.csv", {GPT2: early})
        write_results(tmp_path / f"a-steps2000-seed{seed}-test.csv", {GPT2: late})  # A's final score, at half its steps
        write_results(tmp_path / f"a-seed{seed}-test.csv", {GPT2: late})
        write_results(tmp_path / f"m-seed{seed}-test.csv", {GPT2: late + 1})
        write_results(tmp_path / f"w-seed{seed}-test.csv", {GPT2: late - 10})
    rows = [f"A, 1,000 steps={tmp_path}/a-steps1000-seed*.csv", f"A, 2,000 steps={tmp_path}/a-steps2000-seed*.csv",
            f"A, 4,000 steps={tmp_path}/a-seed*.csv", f"M, 400 real steps={tmp_path}/m-seed*.csv",
            f"W, 500 real steps={tmp_path}/w-seed*.csv"]
    figure = tmp_path / "steps.png"
    assert main(["--baseline", base, *rows, "--target", "A, 4,000 steps", "--figure", str(figure)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Target: A, 4,000 steps, 1.099x [")
    assert "A itself reaches that mean from 2,000 steps and with its lower bound from 4,000" in out
    line = {row.split(" | ")[0]: row for row in out.splitlines() if row.startswith(("| A |", "| M |", "| W |"))}
    # A's own lower bound never reaches its mean: the bound column's ratios are against its 4,000 steps
    assert line["| A"] == "| A | 1,000, 2,000, 4,000 | 1.099x at 2,000 | 2,000 | 1.0x | not reached | - |"
    assert line["| M"] == "| M | 400 | 1.087x at 400 | not reached | - | not reached | - |"  # overlapping is not reaching
    assert line["| W"].endswith("| 500 | 4.0x | 500 | 8.0x |")  # the mean against A's 2,000, the bound its 4,000
    assert figure.stat().st_size > 0
    with pytest.raises(SystemExit):
        main(["--baseline", base, *rows, "--target", "A 4000"])
    assert "did you mean 'A, 4,000 steps'?" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--baseline", base, *rows])
    assert "at least one --target" in capsys.readouterr().err


def test_the_world_model_readme_holds_the_efficiency_output(capsys):
    """The world model's steps-to-target tables (docs/experiments/world-model.md) are the committed results', unedited."""
    from pathlib import Path

    readme = (Path(__file__).parents[2] / "docs" / "experiments" / "world-model.md").read_text()
    assert main(["--preset", "world_model", "--target", "MLP PPO, 4,000 steps", "--target", "six families: MLP PPO, 4,000 steps"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith(("|", "Target:"))]
    assert sum(line.startswith("Target:") for line in lines) == 2
    missing = [line for line in lines if line not in readme]
    assert not missing, f"docs/experiments/world-model.md lacks `python -m leaderboard.report.efficiency --preset world_model ...` lines: {missing[:2]}"
