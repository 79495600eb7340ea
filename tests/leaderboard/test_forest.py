"""leaderboard.report.forest: a table of many rows as one panel per column, and when leaderboard.report.seeds draws it."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import pytest

from leaderboard.report import forest as forest_module
from leaderboard.report.forest import forest
from leaderboard.report.metrics import Aggregate
from leaderboard.report.seeds import MAX_BARS, TEST, main
from tests.leaderboard.results_files import GPT2, RESNET, write_results


def test_one_panel_per_column_and_one_labelled_line_per_row():
    table = {
        "A": {"bert": Aggregate(1.03, 1.01, 1.05, 3), "test split": Aggregate(1.02, 1.0, 1.04, 3)},
        "B": {"test split": Aggregate(0.98, math.nan, math.nan, 1)},  # one seed: a dot, no interval
    }
    figure = forest(table, ["bert", "gpt2", "test split"], "title", "ratio")
    axes = figure.axes
    assert [ax.get_title() for ax in axes] == ["bert", "test split"]  # no row has gpt2: no panel
    assert [t.get_text() for t in axes[0].get_yticklabels()] == ["A", "B"]
    assert axes[0].get_ylim()[0] > axes[0].get_ylim()[1]  # the first row on top
    # bert: A's interval and dot; test split: A's interval and dot, B's dot only (beside the 1.0 line each)
    assert [len(ax.lines) for ax in axes] == [3, 4]
    dots = [[tuple(line.get_xydata()[0]) for line in ax.lines if line.get_marker() == "o"] for ax in axes]
    assert dots == [[(1.03, 0.0)], [(1.02, 0.0), (0.98, 1.0)]]  # at the mean, on its row's line
    assert len({ax.get_ylim() for ax in axes}) == 1  # every panel's rows line up with the labels
    low, high = axes[1].get_xlim()
    assert low <= 0.98 and high >= 1.04  # every dot and interval end in view
    plt.close(figure)
    with pytest.raises(ValueError, match="expected a row with a cell in one of"):
        forest(table, ["unet"], "title", "ratio")


@pytest.mark.parametrize("rows, drawn", [(MAX_BARS, "bars"), (MAX_BARS + 1, "forest")])
def test_seeds_draws_a_forest_beyond_max_bars_rows(rows, drawn, tmp_path, monkeypatch):
    """A table of more than MAX_BARS rows is a forest plot of its rows and columns, in order."""
    calls = []
    real = forest_module.forest
    monkeypatch.setattr(forest_module, "forest", lambda *a, **k: calls.append(a) or real(*a, **k))
    base = write_results(tmp_path / "base.csv", {GPT2: 100, RESNET: 100})
    items = []
    for row in range(rows):
        for seed in range(2):
            write_results(tmp_path / f"r{row}-seed{seed}-test.csv", {GPT2: 90 + row + seed, RESNET: 95})
        items.append(f"row {row}={tmp_path}/r{row}-seed*.csv")
    figure = tmp_path / "rows.png"
    assert main(["--baseline", base, *items, "--figure", str(figure)]) == 0
    assert figure.read_bytes().startswith(b"\x89PNG")
    assert ("forest" if calls else "bars") == drawn
    if calls:
        table, names = calls[0][:2]
        assert list(table) == [f"row {row}" for row in range(rows)]  # the table's rows and columns, in order
        assert names == ["xla-gpt2-v0", "xla-resnet-v0", TEST]
