"""leaderboard.report.improvement: how often a seed of one row beats a seed of another, with its interval."""
from __future__ import annotations

import itertools
import math
import random
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
from matplotlib.collections import PathCollection

from leaderboard.report import improvement
from leaderboard.report.improvement import (
    improvement_table,
    main,
    permutation_p,
    probability_of_improvement,
    seed_figure,
    with_interval,
)
from tests.leaderboard.results_files import GPT2, RESNET, write_results

#: The comparison the GNN README reports: the GNN trained in episodes of 5 against the MLP PPO, at every seed run.
GNN_ROW = "GNN PPO, GPT-2, episodes of 5, store off, more seeds"
MLP_ROW = "MLP PPO, GPT-2, more seeds"


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ([2.0, 3.0], [1.0, 1.0], 1.0),  # every seed of A above every seed of B
        ([1.0, 1.0], [2.0, 3.0], 0.0),
        ([1.0, 1.0], [1.0, 1.0], 0.5),  # ties count half
        ([1.0, 3.0], [2.0], 0.5),
        ([1.037, 1.037, 1.032], [1.033, 0.983], 5 / 6),  # (1 + 1) + (1 + 1) + (0 + 1) of 6 pairs
        ([1.0 + 1e-13], [1.0], 0.5),  # closer than TIE: a tie
        ([1.0 + 1e-9], [1.0], 1.0),
    ],
)
def test_probability_of_improvement_counts_pairs_and_half_ties(a, b, expected):
    assert probability_of_improvement(a, b) == pytest.approx(expected)
    assert probability_of_improvement(b, a) == pytest.approx(1 - expected)  # the other way round


def test_probability_of_improvement_needs_scores_on_both_sides():
    with pytest.raises(ValueError, match="expected scores on both sides, got 2 and 0"):
        probability_of_improvement([1.0, 2.0], [])


def test_the_interval_resamples_seeds_reproducibly_and_holds_the_value():
    a, b = [1.037, 1.037, 1.037, 1.032, 1.032], [1.033, 1.028, 1.032, 1.027, 0.983]
    value, low, high = with_interval(a, b)
    assert low <= value <= high and 0.0 <= low < high <= 1.0
    assert with_interval(a, b) == (value, low, high)  # seeded
    assert with_interval([2.0, 3.0], [1.0, 1.5]) == (1.0, 1.0, 1.0)  # no draw can reverse a clean split
    one = with_interval([2.0], [1.0, 3.0])  # one seed on a side: no interval
    assert one[0] == 0.5 and math.isnan(one[1]) and math.isnan(one[2])


def test_both_sides_are_resampled():
    """A side of two seeds far apart makes the interval wide whichever side it is on."""
    for a, b in (([1.0, 3.0], [2.0, 2.0]), ([2.0, 2.0], [1.0, 3.0])):
        value, low, high = with_interval(a, b)
        assert (value, low, high) == (0.5, 0.0, 1.0)


def _brute_force_p(a, b):
    """The permutation p-value the slow way: the statistic itself over every relabelling."""
    pooled, observed = [*a, *b], probability_of_improvement(a, b)
    stats = [
        probability_of_improvement([pooled[i] for i in chosen], [pooled[i] for i in range(len(pooled)) if i not in chosen])
        for chosen in itertools.combinations(range(len(pooled)), len(a))
    ]
    return sum(1 for s in stats if s >= observed - 1e-9) / len(stats)


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ([2.0, 3.0], [1.0, 1.0], 1 / 6),  # the best two of four in A: 1 of C(4, 2) relabellings
        ([1.0, 1.0], [2.0, 3.0], 1.0),  # A below B: every relabelling does at least as well
        ([1.0, 1.0], [1.0, 1.0], 1.0),  # all tied
        ([1.037, 1.037, 1.037, 1.032], [1.033, 0.983, 1.032], None),  # ties across the rows
        ([1.0, 2.0, 2.0, 5.0], [2.0, 3.0, 0.5], None),
    ],
)
def test_permutation_p_is_the_exact_share_of_relabellings(a, b, expected):
    p = permutation_p(a, b)
    assert p == pytest.approx(_brute_force_p(a, b))
    if expected is not None:
        assert p == pytest.approx(expected)


@pytest.mark.parametrize("n_a, n_b", [(6, 6), (3, 9)])
def test_permutation_p_estimates_beyond_the_exact_limit(n_a, n_b, monkeypatch):
    rng = random.Random(1)
    a, b = [rng.gauss(1.03, 0.01) for _ in range(n_a)], [rng.gauss(1.02, 0.02) for _ in range(n_b)]
    exact = permutation_p(a, b)
    monkeypatch.setattr(improvement, "_EXACT", 10)  # C(12, 6) = 924, C(12, 3) = 220 relabellings: estimate them
    estimate = permutation_p(a, b)
    assert estimate != exact and estimate == pytest.approx(exact, abs=0.01)
    assert permutation_p(a, b) == estimate  # seeded


def test_permutation_p_estimate_is_never_zero(monkeypatch):
    monkeypatch.setattr(improvement, "_EXACT", 10)
    # 1 of C(30, 15) relabellings wins: 20,000 draws all lose, and the observed labelling counts once
    assert permutation_p([2.0] * 15, [1.0] * 15) == 1 / 20_001
    with pytest.raises(ValueError, match="expected scores on both sides, got 0 and 1"):
        permutation_p([], [1.0])


def test_the_table_says_which_p_values_are_estimates():
    few = {"test split": ([1.03, 1.04, 1.05], [1.01, 1.02, 1.03])}
    many = {"test split": ([1.03 + i / 1000 for i in range(11)], [1.02 + i / 1000 for i in range(11)])}
    assert not any("estimated" in line for line in improvement_table(("A", "B"), few))  # C(6, 3) = 20: exact
    note = improvement_table(("A", "B"), many)[-1]
    assert note == ("p with 11 and 11 seeds: estimated from 20,000 seeded random relabellings of the 705,432 "
                    "(every one is enumerated up to 200,000)")


def test_the_seed_figure_draws_each_rows_seeds_and_interval():
    scores = {"gpt2": ([1.05, 1.05, 1.04], [1.03, 0.98]), "test split": ([1.02], [1.01, 1.03])}
    figure = seed_figure(("GNN", "MLP"), scores)
    axes = figure.axes
    assert [ax.get_title() for ax in axes] == ["gpt2", "test split"]
    a, b = (c.get_offsets() for c in axes[0].collections if isinstance(c, PathCollection))  # the dots
    assert sorted(a[:, 1]) == [1.04, 1.05, 1.05] and sorted(b[:, 1]) == [0.98, 1.03]  # each row its own seeds
    assert all(x < 0.5 for x in a[:, 0]) and all(x > 0.5 for x in b[:, 0])  # A left, B right
    tied = sorted(x for x, y in a if y == 1.05)
    assert tied[0] < tied[1] and tied[0] + tied[1] == pytest.approx(0.0)  # ties side by side, centred
    assert len(axes[0].containers) == 2  # an interval for each row of two seeds or more
    assert len(axes[1].containers) == 1  # one seed of A: no interval
    assert [t.get_text() for t in figure.legends[0].get_texts()] == ["A: GNN", "B: MLP"]
    plt.close(figure)


def test_main_compares_two_rows_of_results_files(tmp_path, capsys):
    base = write_results(tmp_path / "base.csv", {GPT2: 100})
    for seed, ops in enumerate([80, 85, 90]):  # A removes more ops than B on every seed
        write_results(tmp_path / f"a-seed{seed}-test.csv", {GPT2: ops})
        write_results(tmp_path / f"b-seed{seed}-test.csv", {GPT2: ops + 12})
    assert main(["--baseline", base, f"A={tmp_path}/a-seed*.csv", f"B={tmp_path}/b-seed*.csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "A = A; B = B"
    # 100/85 and 100/97; 1 of the 20 relabellings of 6 seeds puts the 3 best in A
    assert lines[4] == "| gpt2 | 1.00 [1.00, 1.00] | 0.050 | 1.176x (3) | 1.031x (3) |"
    assert lines[2].split(" | ")[2] == "p (A above B), one-sided"
    assert lines[5].startswith("| test split | 1.00 [1.00, 1.00] |")
    figure = tmp_path / "seeds.png"
    assert main(["--baseline", base, f"A={tmp_path}/b-seed*.csv", f"B={tmp_path}/a-seed*.csv", "--figure", str(figure)]) == 0
    assert "| gpt2 | 0.00 [0.00, 0.00] | 1.000 |" in capsys.readouterr().out
    assert figure.read_bytes().startswith(b"\x89PNG")
    # a column only one row has whole seeds of is left out, and said so
    write_results(tmp_path / "c-seed0-test.csv", {GPT2: 80, RESNET: 150})
    write_results(tmp_path / "c-seed1-test.csv", {GPT2: 85})
    base2 = write_results(tmp_path / "base2.csv", {GPT2: 100, RESNET: 200})
    assert main(["--baseline", base2, f"C={tmp_path}/c-seed*.csv", f"B={tmp_path}/b-seed*.csv"]) == 0
    out, err = capsys.readouterr()
    assert "| gpt2 | 1.00 [1.00, 1.00] |" in out and "| resnet |" not in out and "| test split |" not in out
    assert "resnet: left out, expected whole seeds on both sides, got 1 and 0" in err
    assert "test split: seeds with only some of its benchmarks left out: {'C': 1, 'B': 3}" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--preset", "gnn", "GNN PPO, GPT2, episodes of 5, more seeds", MLP_ROW], f"did you mean {GNN_ROW!r}?"),
        (["--preset", "gnn", "X=/no/such/file-seed*.csv", MLP_ROW], "row 'X' matches no results files"),
        (["--preset", "gnn", MLP_ROW, MLP_ROW], f"expected two different rows, got {MLP_ROW!r} twice"),
        (["A=a.csv", "B=b.csv"], "expected --baseline or --preset"),
        (["--baseline", "b.csv", MLP_ROW, "B=b.csv"], f"expected LABEL=GLOB (a bare label needs --preset), got {MLP_ROW!r}"),
    ],
)
def test_main_refuses_bad_rows_with_a_clear_error(argv, message, capsys):
    with pytest.raises(SystemExit):
        main(argv)
    assert message in capsys.readouterr().err


def test_main_turns_bad_files_into_clear_errors(tmp_path, capsys):
    base = write_results(tmp_path / "base.csv", {GPT2: 100})
    write_results(tmp_path / "x-test.csv", {GPT2: 90})
    write_results(tmp_path / "x-heldout.csv", {GPT2: 90})
    write_results(tmp_path / "r-seed0-test.csv", {RESNET: 90})
    cases = [
        ([f"A={tmp_path}/x-*.csv", f"B={tmp_path}/x-test.csv"], "expected 'seed<k>' in the results file name"),
        ([f"A={tmp_path}/r-seed0-test.csv", f"B={tmp_path}/r-seed0-test.csv"], "is in no baseline file"),
    ]
    for rows, message in cases:
        with pytest.raises(SystemExit):
            main(["--baseline", base, *rows])
        assert message in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--baseline", str(tmp_path / "missing.csv"), f"A={tmp_path}/r-seed0-test.csv", f"B={tmp_path}/x-test.csv"])
    assert "missing.csv" in capsys.readouterr().err


def test_the_gnn_readme_table_is_the_commands(capsys):
    """The GNN README's probability-of-improvement table is the committed results', unedited."""
    readme = (Path(__file__).parents[2] / "leaderboard" / "agents" / "gnn" / "README.md").read_text()
    assert main(["--preset", "gnn", GNN_ROW, MLP_ROW]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line]
    assert lines[0] == f"A = {GNN_ROW}; B = {MLP_ROW}" and any(line.startswith("| test split |") for line in lines)
    missing = [line for line in lines if line not in readme]
    assert not missing, f"README lacks `python -m leaderboard.report.improvement` lines: {missing[:2]}"
    test_split = next(line for line in lines if line.startswith("| test split |")).split(" | ")[1]
    leaderboard_readme = (Path(__file__).parents[2] / "leaderboard" / "README.md").read_text()
    assert f"probability {test_split}" in " ".join(readme.split()) and test_split in leaderboard_readme
