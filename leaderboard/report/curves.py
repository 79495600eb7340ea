"""Learning curves across training seeds: the mean episode return with its 95% interval.

``python -m leaderboard.report.curves LABEL=GLOB [LABEL=GLOB ...] --out curves.png``

Each ``LABEL=GLOB[,GLOB...]`` names one training configuration and matches its
finished run folders (``leaderboard.agents.rl.train --out`` with a
``model.zip``, or ``leaderboard.agents.gnn.train --out`` with a ``model.pt``:
a run still training is left out), one per seed. A run's curve is the rolling
mean of its episode returns (SB3's ``monitor-*.csv``, the GNN's ``episodes.csv``)
against environment steps (``leaderboard.report.figures.rolling_returns``); the
curves are read at common steps, up to the shortest run, and drawn as the
mean across seeds with a 95% Student-t band (``leaderboard.report.seeds``). Returns
of the ``OpCount`` reward are fractions of each training benchmark's initial
op count, so curves of different training sets say how fast each set is
learned, not which policy is better on the test split (``leaderboard.report.seeds``
says that). Other rewards (``OpCountShaped``) have other scales: each reward
space gets its own panel. A run whose episode files hold fewer than 90% of the
env steps it trained (``result.json``: e.g. a run resumed before monitors
were kept across resumes, or a monitor file lost) is left out, with a note:
its curve would have a gap. A malformed episode file stops the command with
its path, line and expected columns.
"""
from __future__ import annotations

import argparse
import bisect
import glob
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from leaderboard.report.figures import COLORS, reward_space_of, rolling_returns, save_figure
from leaderboard.report.seeds import across_seeds

__all__ = ["curve", "main"]


def _at(steps: Sequence[int], values: Sequence[float], step: int) -> float:
    """The rolling return of the last episode ended at or before ``step`` (the first one before it)."""
    return values[max(bisect.bisect_right(steps, step) - 1, 0)]


def curve(runs: Sequence[Path], points: int = 50, window: int = 20) -> tuple[list[int], list[tuple[float, float, float]]]:
    """Steps, and (mean, low, high) across ``runs`` at each; ``ValueError`` for runs without episodes."""
    curves = [rolling_returns(run, window) for run in runs]
    empty = [str(run) for run, (steps, _) in zip(runs, curves) if not steps]
    if empty or not curves:
        raise ValueError(f"expected runs with episodes (monitor-*.csv or episodes.csv), got none in {empty or 'no runs'}")
    last = min(steps[-1] for steps, _ in curves)
    first = max(steps[0] for steps, _ in curves)
    grid = sorted({first + (last - first) * i // max(points - 1, 1) for i in range(points)})
    return grid, [across_seeds([_at(steps, values, step) for steps, values in curves]) for step in grid]


def _finished(run: Path) -> bool:
    """Whether ``run`` has its final model: ``model.zip`` (SB3 agents) or ``model.pt`` (the GNN)."""
    return (run / "model.zip").is_file() or (run / "model.pt").is_file()


def _whole(run: Path) -> bool:
    """Whether ``run``'s episodes (monitors or ``episodes.csv``) hold >= 90% of the env steps of its
    ``result.json`` (no file: yes)."""
    try:
        trained = int(json.loads((run / "result.json").read_text())["timesteps"])
    except (OSError, KeyError, ValueError):
        return True
    steps, _ = rolling_returns(run)
    if steps and steps[-1] >= 0.9 * trained:
        return True
    print(f"{run}: its episode files hold {steps[-1] if steps else 0} of its {trained} env steps (overwritten by "
          "a resume before monitors were kept across resumes, or lost), left out", file=sys.stderr)
    return False


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("rows", nargs="+", metavar="LABEL=GLOB", help="a configuration: its label and globs of its run folders (comma-separated)")
    parser.add_argument("--out", required=True, metavar="PNG", help="the figure to write")
    parser.add_argument("--window", type=int, default=20, help="episodes in the rolling mean")
    parser.add_argument("--points", type=int, default=50, help="steps at which the seeds' curves are compared")
    parser.add_argument("--title", default="Learning curves across seeds (mean, 95% CI)", help="the figure's title")
    args = parser.parse_args(argv)
    import matplotlib.pyplot as plt

    panels: dict[str, list[tuple[str, list[Path]]]] = {}  # reward space -> its configurations
    for item in args.rows:
        if "=" not in item:
            parser.error(f"expected LABEL=GLOB, got {item!r}")
        label, pattern = item.split("=", 1)
        runs = sorted({Path(p) for part in pattern.split(",") for p in glob.glob(part) if _finished(Path(p))})
        try:
            runs = [run for run in runs if _whole(run)]
        except ValueError as e:  # a malformed monitor or episodes.csv
            parser.error(str(e))
        if not runs:
            print(f"{label}: no finished run folders match {pattern!r}, left out", file=sys.stderr)
            continue
        panels.setdefault(reward_space_of(runs[0]), []).append((label, runs))
    figure, axes = plt.subplots(1, max(len(panels), 1), figsize=(8 * max(len(panels), 1), 4.5), squeeze=False)
    color = 0
    for ax, (space, configurations) in zip(axes[0], panels.items()):
        for label, runs in configurations:
            try:
                steps, stats = curve(runs, args.points, args.window)
            except ValueError as e:  # runs without episodes
                parser.error(f"{label}: {e}")
            ax.plot(steps, [m for m, _, _ in stats], color=COLORS[color % len(COLORS)],
                    label=f"{label} ({len(runs)} seed{'s' * (len(runs) > 1)})")
            if len(runs) > 1:
                ax.fill_between(steps, [lo for _, lo, _ in stats], [hi for _, _, hi in stats],
                                color=COLORS[color % len(COLORS)], alpha=0.2)
            color += 1
        unit = "/ initial op count" if space == "OpCount" else f"({space})"
        ax.set_xlabel("environment steps (all environments)")
        ax.set_ylabel(f"episode return {unit}\n(rolling mean of {args.window} episodes)")
        ax.set_title(args.title if len(panels) == 1 else f"{args.title}: {space}", fontsize=10)
        ax.legend(fontsize=7)
    figure.tight_layout()
    save_figure(figure, args.out, dpi=120)
    print(args.out, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
