"""Sample efficiency: the test-split score against the real env steps an agent trained with.

``python -m leaderboard.report.efficiency --preset world_model --target "MLP PPO, 4,000 steps" --figure F.png``

Reads the rows of a ``leaderboard.report.seeds`` table (a ``--preset``, or ``LABEL=GLOB`` rows
and ``--baseline``) whose labels end in a budget, ``"<agent>, <N> steps"`` or
``"<agent>, <N> real steps"``: rows of one agent at several budgets (a run's
checkpoints) make that agent's curve. Other rows are left out. Each point is
the row's ``test split`` cell: the mean over seeds of each seed's geomean
N_baseline / N_agent, with its 95% Student-t interval across seeds.

For each ``--target`` row (the score to reach), it prints the fewest steps at
which each agent's mean reaches the target's mean, and the fewest at which the
lower bound of its interval does (reached with 95% confidence over seeds; never
with one seed), each with how
many times fewer steps that is than the target's own agent needed on the same
criterion: its curve may reach its own final score before its final budget
(e.g. PPO on the six train splits at 3,000 steps as at 4,000), and then the
saving is counted against that.
An agent's budgets are the ones it was scored at: "from 1,000" means not at the
budget below it that was scored, not that 999 steps would fall short.
"""
from __future__ import annotations

import argparse
import difflib
import math
import re
import sys
from collections.abc import Sequence
from typing import NamedTuple

from leaderboard.report.presets import PRESETS
from leaderboard.report.seeds import (
    TEST,
    Cell,
    add_baseline_arguments,
    baseline_counts,
    chosen_baselines,
    parse_rows,
    score_table,
)

__all__ = ["Point", "curves", "figure", "main", "reached", "report", "steps_of"]

_BUDGET = re.compile(r"^(?P<agent>.+), (?P<steps>\d[\d,]*) (?:real |env )?steps$")


class Point(NamedTuple):
    steps: int
    cell: Cell


def steps_of(label: str) -> tuple[str, int] | None:
    """``"MLP PPO, 4,000 steps"`` -> ``("MLP PPO", 4000)``; None for a label without a budget."""
    found = _BUDGET.match(label)
    return (found["agent"], int(found["steps"].replace(",", ""))) if found else None


def curves(table: dict[str, dict[str, Cell]], column: str = TEST) -> dict[str, list[Point]]:
    """Agent -> its scored budgets in ``column``, fewest steps first (rows with no whole seed left out)."""
    out: dict[str, list[Point]] = {}
    for label, row in table.items():
        parsed = steps_of(label)
        if parsed and column in row and row[column].seeds:
            out.setdefault(parsed[0], []).append(Point(parsed[1], row[column]))
    return {agent: sorted(points) for agent, points in out.items()}


def reached(points: Sequence[Point], target: Cell) -> tuple[int | None, int | None]:
    """The fewest steps whose mean is at least ``target``'s mean, and the fewest whose whole interval
    is (its lower bound at or above ``target``'s mean; a point of one seed has no interval and never
    is). Neither depends on the target's interval, and a wider interval of an agent can only make the
    second later: noise never reaches a target sooner (``leaderboard/PROTOCOL.md``)."""
    by_mean = next((p.steps for p in points if p.cell.mean >= target.mean), None)
    by_bound = next((p.steps for p in points if not math.isnan(p.cell.low) and p.cell.low >= target.mean), None)
    return by_mean, by_bound


def _ratio(target_steps: int, steps: int | None) -> str:
    return f"{target_steps / steps:.1f}x" if steps else "-"


def report(agents: dict[str, list[Point]], target_label: str, table: dict[str, dict[str, Cell]], column: str) -> list[str]:
    """The Markdown lines of one target: every agent's steps to reach it."""
    parsed = steps_of(target_label)
    if target_label not in table:
        close = difflib.get_close_matches(target_label, list(table), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; the rows are {list(table)}"
        raise ValueError(f"expected a row of the table as --target, got {target_label!r}{hint}")
    if parsed is None:
        raise ValueError(f"expected a target row with a budget ('<agent>, <N> steps'), got {target_label!r}")
    target, (owner, target_steps) = table[target_label][column], parsed
    if not target.seeds:
        raise ValueError(f"the target {target_label!r} has no seed with the whole {column} yet")
    # the target's own agent at fewer steps may already score as well: the ratios are against its own steps
    own_mean, own_interval = reached(agents.get(owner, []), target)
    own_mean, own_interval = own_mean or target_steps, own_interval or target_steps
    lines = [
        f"Target: {target_label}, {target} on the {column}; {owner} itself reaches that mean from "
        f"{own_mean:,} steps and with its lower bound from {own_interval:,} (its own budget if never): "
        f"the ratios are against those",
        "",
        f"| agent | scored at (steps) | best | mean at or above the target's from | x fewer steps than {owner} "
        f"| lower bound at or above the target's mean from | x fewer steps than {owner} |",
        "|---|---|---|---|---|---|---|",
    ]
    for agent, points in agents.items():
        by_mean, by_interval = reached(points, target)
        best = max(points, key=lambda p: p.cell.mean)
        lines.append(
            f"| {agent} | {', '.join(f'{p.steps:,}' for p in points)} | {best.cell.mean:.3f}x at {best.steps:,} "
            f"| {f'{by_mean:,}' if by_mean else 'not reached'} | {_ratio(own_mean, by_mean)} "
            f"| {f'{by_interval:,}' if by_interval else 'not reached'} | {_ratio(own_interval, by_interval)} |"
        )
    return lines


def figure(agents: dict[str, list[Point]], targets: Sequence[str], table: dict[str, dict[str, Cell]], column: str, path: str) -> None:
    """Score against steps, one line per agent with its intervals; each target as a band."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex

    from leaderboard.report.figures import save_figure

    fig, ax = plt.subplots(figsize=(10, 5.5))
    colours: dict[str, str] = {}
    for index, (agent, points) in enumerate(agents.items()):
        steps = [p.steps * (1 + 0.015 * (index - len(agents) / 2)) for p in points]  # side by side, not on top
        means = [p.cell.mean for p in points]
        below = [0.0 if math.isnan(p.cell.low) else p.cell.mean - p.cell.low for p in points]
        above = [0.0 if math.isnan(p.cell.high) else p.cell.high - p.cell.mean for p in points]
        line = ax.errorbar(steps, means, yerr=[below, above], marker="o", capsize=3, label=agent)
        colours[agent] = to_hex(line.lines[0].get_color())
    ax.axhline(1.0, color="black", linewidth=0.6)
    ax.set_xscale("log")
    budgets = sorted({p.steps for points in agents.values() for p in points})
    ax.set_xticks(budgets, [f"{n:,}" for n in budgets])
    ax.minorticks_off()
    for label in targets:
        cell, agent = table[label][column], (steps_of(label) or (label, 0))[0]
        colour = colours.get(agent, "grey")
        ax.axhline(cell.mean, color=colour, linestyle="--", linewidth=1)
        if not math.isnan(cell.low):
            ax.axhspan(cell.low, cell.high, color=colour, alpha=0.08)
        ax.annotate(f"target: {label}", (0.01, cell.mean), xycoords=("axes fraction", "data"), fontsize=8, va="bottom", color=colour)
    ax.set_xlabel("real env steps of training (log scale)")
    ax.set_ylabel(f"{column}: N_baseline / N_agent (mean over seeds, 95% CI)")
    ax.set_title("Score against real env steps")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    save_figure(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("rows", nargs="*", metavar="LABEL=GLOB", help="a row, as leaderboard.report.seeds takes it")
    add_baseline_arguments(parser, "a leaderboard.report.seeds table's rows and baselines")
    parser.add_argument(
        "--target", action="append", default=[], metavar="LABEL",
        help="a row whose score the agents must reach, e.g. 'MLP PPO, 4,000 steps' (repeatable; required)",
    )
    parser.add_argument("--column", default=TEST, help="the table column to read")
    parser.add_argument("--figure", default=None, metavar="PNG", help="also draw score against steps")
    args = parser.parse_args(argv)
    baselines, items = chosen_baselines(args), list(args.rows)
    if args.preset:
        items = PRESETS[args.preset].items() + items
    if not items or not baselines or not args.target:
        parser.error("expected rows (LABEL=GLOB) and --baseline, or --preset; and at least one --target")
    try:
        table = score_table(parse_rows(items), baseline_counts(baselines))
        agents = curves(table, args.column)
        for label in args.target:
            print("\n".join(report(agents, label, table, args.column)) + "\n")
    except ValueError as error:
        parser.error(str(error))
    if args.figure:
        figure(agents, args.target, table, args.column, args.figure)
        print(f"wrote {args.figure}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
