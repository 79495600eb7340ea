"""A forest plot of a table with many rows: one panel per column, one line per row.

Grouped bars give each column a bar per row, told apart by colours in a legend (which repeat after
twenty). Here each row is labelled once, down the left, and a column's panel shows each row's mean
(dot) and 95% interval (line) on that column's own scale, with 1.0 (as good as the baseline) marked.
``leaderboard.report.seeds --figure`` draws its larger tables so.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from leaderboard.report.metrics import Aggregate  # noqa: E402

__all__ = ["forest"]


def forest(table: Mapping[str, Mapping[str, Aggregate]], columns: Sequence[str], title: str, xlabel: str) -> Figure:
    """The figure: ``table`` (row label -> column -> mean and interval) over ``columns`` (in order;
    a column no row has is left out, a cell a row lacks is left blank)."""
    shown = [c for c in columns if any(c in row for row in table.values())]
    if not table or not shown:
        raise ValueError(f"expected a row with a cell in one of {list(columns)}, got none")
    labels = list(table)
    figure, axes = plt.subplots(
        1, len(shown), sharey=True, squeeze=False, figsize=(3.5 + 1.3 * len(shown), 1.2 + 0.22 * len(labels))
    )
    for ax, column in zip(axes[0], shown):
        for y, label in enumerate(labels):
            cell = table[label].get(column)
            if cell is None:
                continue
            if not math.isnan(cell.low):
                ax.plot([cell.low, cell.high], [y, y], color="tab:blue", linewidth=1.2)
            ax.plot([cell.value], [y], "o", color="tab:blue", markersize=3)
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_title(column.removeprefix("xla-").removesuffix("-v0"), fontsize=8)
        ax.tick_params(axis="x", labelsize=6, labelrotation=45)
        ax.grid(axis="y", linewidth=0.3, alpha=0.5)
    first = axes[0][0]
    first.set_yticks(range(len(labels)))
    first.set_yticklabels(labels, fontsize=7)
    first.set_ylim(len(labels) - 0.5, -0.5)  # the table's first row on top
    figure.suptitle(title, fontsize=10)
    figure.supxlabel(xlabel, fontsize=8)
    figure.tight_layout()
    return figure
