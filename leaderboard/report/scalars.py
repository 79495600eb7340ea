"""What training did, from a run's TensorBoard scalars: one row per run and tag.

``python -m leaderboard.report.scalars RUN [RUN ...] [--tag TAG ...]``

A ``RUN`` is a run folder (its ``tb/`` is read, or the folder itself if it holds the event
files) or a glob of them. For each tag (default: PPO's ``losses/approx_kl``,
``losses/clipfrac``, ``losses/entropy`` and ``charts/episodic_return``, as the agents'
``train.py`` log them) the row gives the number of points, the first and last value, the
median, the largest, how many points are above zero, and the mean of the last quarter of
the points (of ``charts/episodic_return``: the last quarter of the episodes). A run
without a tag has ``-`` in its row: the tags are PPO's, an agent that logs others says so
with ``--tag``.
"""
from __future__ import annotations

import argparse
import glob
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["DEFAULT_TAGS", "main", "read_scalars", "summarize"]

#: PPO's update statistics and the training episodes' return, as the agents' ``train.py`` log them.
DEFAULT_TAGS = ("losses/approx_kl", "losses/clipfrac", "losses/entropy", "charts/episodic_return")
_COLUMNS = ("run", "tag", "points", "first", "last", "median", "max", "> 0", "mean of last quarter")


def read_scalars(run: Path) -> dict[str, list[float]]:
    """Every scalar tag of ``run``'s TensorBoard logs (``run/tb`` or ``run``), values in step order."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    logdir = run / "tb" if (run / "tb").is_dir() else run
    if not any(logdir.glob("events.out.tfevents.*")):
        raise FileNotFoundError(f"expected TensorBoard event files in {logdir}, found none")
    accumulator = EventAccumulator(str(logdir), size_guidance={"scalars": 0})  # 0: keep every point
    accumulator.Reload()
    return {
        tag: [e.value for e in sorted(accumulator.Scalars(tag), key=lambda e: (e.step, e.wall_time))]
        for tag in accumulator.Tags()["scalars"]
    }


def summarize(values: Sequence[float]) -> dict[str, float | int]:
    """The row's figures for one tag's values (``ValueError`` if there are none)."""
    if not values:
        raise ValueError("expected at least one value, got none")
    quarter = values[-max(len(values) // 4, 1):]
    return {
        "points": len(values), "first": values[0], "last": values[-1], "median": statistics.median(values),
        "max": max(values), "> 0": sum(v > 0 for v in values), "mean of last quarter": statistics.fmean(quarter),
    }


def _runs(patterns: Sequence[str]) -> list[Path]:
    runs: list[Path] = []
    for pattern in patterns:
        matched = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        if not matched:
            raise FileNotFoundError(f"expected run folders matching {pattern!r}, found none")
        runs.extend(Path(m) for m in matched)
    return runs


def _cell(value: float | int) -> str:
    return str(value) if isinstance(value, int) else f"{value:.4g}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m leaderboard.report.scalars", description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run folders (their tb/ is read) or globs of them")
    parser.add_argument("--tag", action="append", metavar="TAG",
                        help=f"a scalar tag to summarize (repeat for several; default: {', '.join(DEFAULT_TAGS)})")
    args = parser.parse_args(argv)
    tags = args.tag or list(DEFAULT_TAGS)
    try:
        runs = _runs(args.runs)
        scalars = {run: read_scalars(run) for run in runs}
    except FileNotFoundError as error:
        parser.error(str(error))
    print("| " + " | ".join(_COLUMNS) + " |")
    print("|" + "---|" * len(_COLUMNS))
    for run, tagged in scalars.items():
        for tag in tags:
            if tag not in tagged:
                print(f"| {run} | {tag} |" + " - |" * (len(_COLUMNS) - 2))
                continue
            row = summarize(tagged[tag])
            print(f"| {run} | {tag} | " + " | ".join(_cell(row[c]) for c in _COLUMNS[2:]) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
