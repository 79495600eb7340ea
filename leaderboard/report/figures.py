"""The leaderboard's figures, drawn from its results files (PNG).

``python -m leaderboard.report.figures [--out leaderboard/figures]``

- ``algorithms.png`` (like the paper's Figure 2): every agent's op count
  against the replayed default pipeline (the geometric mean of
  N_replay / N_agent over every benchmark, with its 95% bootstrap interval as
  an error bar; ``leaderboard.report.summary``), per test family, the paper's mix and
  overall.
- ``per_benchmark.png`` (like its Figure 3): per benchmark, the op-count
  reduction of each chosen agent (``PER_BENCHMARK``) relative to the default
  pipeline's, minus one; on the full test split once all of them ran there.
- ``full_test.png``: like ``algorithms.png``, for the agents also run on the
  full test split (``FULL_RESULTS``; drawn only without ``--results``).
- ``heldout.png``: the same for the agents run on the families held out from
  all training (``HELDOUT_RESULTS``, against the default pipeline replayed on
  them; drawn only without ``--results``).
- ``ppo_enhancements.png`` (like its Figure 4): PPO against PPO with reward
  shaping and PPO with cost features in the value function.
- ``training.png``: training curves (episode return against environment
  steps, a rolling mean) from the runs' ``monitor-*.csv`` files, one panel
  per reward space, each labelled with its unit (``OpCount`` returns are
  fractions of the initial op count, ``OpCountShaped`` ones are in operations);
  the leaderboard's runs (seed 0): ``leaderboard.report.curves`` draws them across seeds.

Colours come from a 20-colour palette, so no two agents share one.

Every input is a results CSV written by ``leaderboard.eval`` (``--results
LABEL=PATH``, repeatable; defaults to the committed ones) or a run folder of
``leaderboard.agents.rl.train`` (``--runs``).
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from leaderboard.report.metrics import Aggregate  # noqa: E402
from leaderboard.report.summary import (  # noqa: E402
    PAPER_MIX,
    agent_op_count,
    family,
    final_op_counts,
    op_counts,
    read_results,
    summarize,
)
from leaderboard.runs import runs_dir  # noqa: E402

__all__ = [
    "COLORS", "DEFAULT_RESULTS", "FULL_RESULTS", "HELDOUT_RESULTS", "bars", "labelled_results", "main", "reward_space_of",
    "rolling_returns", "save_figure",
]

HERE = Path(__file__).parents[1]  # leaderboard/
#: label -> results CSV, the leaderboard's rows on the test sample.
DEFAULT_RESULTS = {
    "default pipeline": "agents/default_pipeline/results-sample4.csv",
    "random search": "agents/random_search/results-sample4.csv",
    "greedy": "agents/greedy/results-sample4.csv",
    "default + greedy": "agents/greedy/results-after-default-sample4.csv",
    "beam": "agents/beam/results-sample4.csv",
    "PPO": "agents/rl/results/ppo-OpCount-seed0-sample4.csv",
    "A2C": "agents/rl/results/a2c-OpCount-seed0-sample4.csv",
    "DQN": "agents/rl/results/dqn-OpCount-seed0-sample4.csv",
    "TRPO": "agents/rl/results/trpo-OpCount-seed0-sample4.csv",
    "PPO + shaping": "agents/rl/results/ppo-OpCountShaped-seed0-sample4.csv",
    "PPO + cost in value": "agents/rl/results/ppo-OpCount-costvf-seed0-sample4.csv",
}
#: label -> results CSV, the agents run on the full test split (106 benchmarks).
FULL_RESULTS = {
    "default pipeline": "agents/default_pipeline/results-test.csv",
    "random search": "agents/random_search/results-test.csv",
    "greedy": "agents/greedy/results-test.csv",
    "beam": "agents/beam/results-test.csv",
    "PPO": "agents/rl/results/ppo-OpCount-seed0-test.csv",
    "PPO + shaping": "agents/rl/results/ppo-OpCountShaped-seed0-test.csv",
    "TRPO": "agents/rl/results/trpo-OpCount-seed0-test.csv",
    "GNN PPO": "agents/gnn/results/gnn-gpt2-seed0-test.csv",
    "world model (six train splits, 750 real steps)": "agents/world_model/results/wm-six-score-steps750-seed0-test.csv",
}
#: label -> results CSV on the families held out from all training (split ``heldout``).
HELDOUT_RESULTS = {
    "default pipeline": "agents/default_pipeline/results-heldout.csv",
    "greedy": "agents/greedy/results-heldout.csv",
    "PPO": "agents/rl/results/ppo-OpCount-seed0-heldout.csv",
    "PPO + shaping": "agents/rl/results/ppo-OpCountShaped-seed0-heldout.csv",
    "TRPO": "agents/rl/results/trpo-OpCount-seed0-heldout.csv",
    "GNN PPO": "agents/gnn/results/gnn-gpt2-seed0-heldout.csv",
    "world model (six train splits, 750 real steps)": "agents/world_model/results/wm-six-score-steps750-seed0-heldout.csv",
}
PPO_FAMILY = ("PPO", "PPO + shaping", "PPO + cost in value")
PER_BENCHMARK = ("default pipeline", "greedy", "beam", "PPO")


def labelled_results(
    parser: argparse.ArgumentParser, items: Sequence[str] | None, defaults: dict[str, str] = DEFAULT_RESULTS
) -> dict[str, str]:
    """``--results LABEL=PATH`` items as {label: path}; the committed ``defaults`` if none."""
    if not items:
        return {label: str(HERE / p) for label, p in defaults.items() if (HERE / p).is_file()}
    bad = [item for item in items if "=" not in item]
    if bad:
        parser.error(f"--results: expected LABEL=PATH, got {bad[0]!r}")
    return dict(item.split("=", 1) for item in items)


#: 20 distinct colours (matplotlib's tab20, dark then light): one per agent.
COLORS = [plt.get_cmap("tab20")(i) for i in list(range(0, 20, 2)) + list(range(1, 20, 2))]


def _aggregates(paths: dict[str, str], baseline: str | None) -> dict[str, dict[str, Aggregate]]:
    """label -> group -> the op-count ratio against ``baseline`` (or XLA's default) with its interval."""
    base = final_op_counts(read_results([baseline])) if baseline else None
    key = "vs_baseline_ratio" if base else "vs_default"
    return {
        label: {row.name: row.aggregates()[key] for row in summarize(read_results([path]), baseline=base)}
        for label, path in paths.items()
    }


def bars(
    ax: plt.Axes,
    table: dict[str, dict[str, Aggregate]],
    title: str,
    ylabel: str,
    totals: Sequence[str] = (PAPER_MIX, "overall"),
) -> None:
    """One bar per label and group (families, then ``totals``), from 1.0, with its interval."""
    groups = sorted({g for row in table.values() for g in row if g.startswith("xla-")})
    groups += [g for g in totals if any(g in row for row in table.values())]
    width = 0.8 / max(len(table), 1)
    ends: list[float] = [1.0]
    for i, (label, row) in enumerate(table.items()):
        values = [row[g].value if g in row else math.nan for g in groups]
        low = [v - row[g].low if g in row and not math.isnan(row[g].low) else 0.0 for g, v in zip(groups, values)]
        high = [row[g].high - v if g in row and not math.isnan(row[g].high) else 0.0 for g, v in zip(groups, values)]
        ends += [v - lo for v, lo in zip(values, low) if not math.isnan(v)]
        ends += [v + hi for v, hi in zip(values, high) if not math.isnan(v)]
        # bars grow from 1.0 (as good as the baseline), up for fewer ops, down for more
        ax.bar(
            [x + i * width for x in range(len(groups))], [v - 1.0 for v in values], width, bottom=1.0,
            label=label, color=COLORS[i % len(COLORS)], yerr=[low, high], capsize=1.5, error_kw={"linewidth": 0.6},
        )
    margin = 0.1 * (max(ends) - min(ends)) or 0.01
    ax.set_ylim(min(ends) - margin, max(ends) + margin)
    ax.set_xticks([x + width * (len(table) - 1) / 2 for x in range(len(groups))])
    ax.set_xticklabels([g.removeprefix("xla-").removesuffix("-v0").replace(" (", "\n(") for g in groups], fontsize=8)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if len(table) > 6:  # beside the axes, where it covers no bar
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    else:
        ax.legend(fontsize=7, ncol=2)


def _per_benchmark(ax: plt.Axes, paths: dict[str, str], where: str) -> int:
    """Draw the bars; the number of benchmarks drawn."""
    counts = op_counts()
    ratios: dict[str, dict[str, float]] = {}
    for label, path in paths.items():
        for state in read_results([path]):
            initial, default = counts[state.benchmark]
            if initial > default:
                agent = agent_op_count(state, initial, default)
                ratios.setdefault(state.benchmark, {})[label] = (initial - agent) / (initial - default) - 1
    names = sorted(ratios, key=lambda b: (family(b), b))
    width = 0.8 / max(len(paths), 1)
    for i, label in enumerate(paths):
        ax.bar(
            [x + i * width for x in range(len(names))], [100 * ratios[b].get(label, math.nan) for b in names],
            width, label=label, color=COLORS[i % len(COLORS)],
        )
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels([b.rsplit("/", 1)[-1] for b in names], rotation=90, fontsize=6)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_yscale("symlog", linthresh=10)  # small denominators make a few ratios huge
    ax.set_ylabel("reduction vs XLA default (%), symlog")
    ax.set_title(f"Per test benchmark{f' ({where})' if where else ''}: the benchmarks where XLA's default removes ops")
    ax.legend(fontsize=7)
    return len(names)


def _monitor(path: Path) -> list[tuple[float, int, float]]:
    """(seconds since start, episode length, return) rows of an SB3 monitor CSV.

    A resumed run appends to its monitors, and its times start again from 0:
    each such piece is moved to after the one before, so the times stay in order."""
    rows: list[tuple[float, int, float]] = []
    offset = last = 0.0
    with open(path) as f:
        next(f, None)  # the JSON header line
        for line, r in enumerate(csv.DictReader(f), start=3):
            try:
                seconds, length, episode_return = float(r["t"]), int(r["l"]), float(r["r"])
            except (KeyError, TypeError, ValueError) as e:
                raise ValueError(f"{path}:{line}: expected an SB3 monitor row with numbers in columns r, l and t, got {dict(r)}") from e
            t = seconds + offset
            if t < last:
                offset, t = last, seconds + last
            last = t
            rows.append((t, length, episode_return))
    return rows


def reward_space_of(run: Path) -> str:
    """A run's reward space, from its ``args.json`` (``OpCount`` when it does not say)."""
    try:
        return str(json.loads((run / "args.json").read_text())["args"]["reward_space"])
    except (OSError, KeyError, ValueError):
        return "OpCount"


def _episodes(run: Path) -> list[tuple[int, float]]:
    """A run's episodes in time order, as (env steps so far, return): SB3's ``monitor-*.csv``,
    or else the GNN agent's ``episodes.csv`` (its ``step`` column: env steps when the episode ended)."""
    monitors = sorted(row for m in run.glob("monitor-*.csv") for row in _monitor(m))
    if monitors:
        total, rows = 0, []
        for _, length, episode_return in monitors:
            total += length
            rows.append((total, episode_return))
        return rows
    if not (run / "episodes.csv").is_file():
        return []
    rows = []
    with open(run / "episodes.csv") as f:
        for line, r in enumerate(csv.DictReader(f), start=2):
            try:
                rows.append((int(r["step"]), float(r["return"])))
            except (KeyError, TypeError, ValueError) as e:
                raise ValueError(f"{run / 'episodes.csv'}:{line}: expected numbers in columns step and return, got {dict(r)}") from e
    return sorted(rows, key=lambda row: row[0])


def rolling_returns(run: Path, window: int = 20) -> tuple[list[int], list[float]]:
    """A run's episodes in time order: (env steps so far, mean return of the last ``window``)."""
    episodes = _episodes(run)
    steps, returns = [], []
    for i, (step, _) in enumerate(episodes):
        recent = episodes[max(0, i - window + 1) : i + 1]
        steps.append(step)
        returns.append(sum(r for _, r in recent) / len(recent))
    return steps, returns


def _training(axes: Sequence[plt.Axes], spaces: Sequence[str], runs: Sequence[Path], window: int = 20) -> None:
    """One panel per reward space (their returns have different scales)."""
    for ax, space in zip(axes, spaces):
        for i, run in enumerate(r for r in runs if reward_space_of(r) == space):
            steps, returns = rolling_returns(run, window)
            ax.plot(steps, returns, label=run.name, color=COLORS[i % len(COLORS)])
        ax.set_xlabel("environment steps (all environments)")
        unit = "fraction of the initial op count" if space == "OpCount" else "operations, shaped"
        ax.set_ylabel(f"episode return ({unit}), rolling mean of {window}")
        ax.set_title(f"Training on the GPT-2 train split: {space}")
        ax.legend(fontsize=7)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--results", action="append", default=None, metavar="LABEL=PATH", help="a results CSV and its label (repeatable; default: the committed results)")
    parser.add_argument("--runs", action="append", default=None, help="an RL run folder for the training curves (repeatable; default: agents/rl/runs/*-seed0)")
    parser.add_argument("--out", default=str(runs_dir("figures")), help="folder for the PNG files (default: under $XLA_GYM_RUNS, else ~/.cache/xla-gym/runs; reproduce.sh writes the committed leaderboard/figures)")
    parser.add_argument(
        "--baseline",
        default=str(HERE / "agents/default_pipeline/results-test.csv"),
        help="results CSV whose op counts the bars compare with ('none': XLA's default)",
    )
    args = parser.parse_args(argv)
    paths = labelled_results(parser, args.results)
    if not paths:
        parser.error("no results files: pass --results LABEL=PATH")
    runs = [Path(r) for r in args.runs] if args.runs else sorted(r.parent for r in (HERE / "agents/rl/runs").glob("*-seed0/args.json"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    baseline = args.baseline if args.baseline != "none" else None
    table = _aggregates(paths, baseline)
    ylabel = "op count ratio N_replay / N_agent (geomean, 95% CI)" if baseline else "N_default / N_agent (geomean, 95% CI)"

    figure, ax = plt.subplots(figsize=(13, 5))
    bars(ax, table, "Agents on the test sample: > 1 is fewer ops than the baseline", ylabel)
    _save(figure, out / "algorithms.png")
    ppo = {k: v for k, v in table.items() if k in PPO_FAMILY}
    if ppo:
        figure, ax = plt.subplots(figsize=(9, 4.5))
        bars(ax, ppo, "PPO and the paper's two enhancements", ylabel)
        _save(figure, out / "ppo_enhancements.png")
    full = {} if args.results else labelled_results(parser, None, FULL_RESULTS)
    if full:
        figure, ax = plt.subplots(figsize=(11, 4.5))
        bars(ax, _aggregates(full, baseline), "Agents on the full test split (106 benchmarks)", ylabel)
        _save(figure, out / "full_test.png")
    heldout = {} if args.results else labelled_results(parser, None, HELDOUT_RESULTS)
    heldout_baseline = HERE / HELDOUT_RESULTS["default pipeline"]
    if heldout and heldout_baseline.is_file():
        figure, ax = plt.subplots(figsize=(9, 4.5))
        table = _aggregates(heldout, str(heldout_baseline) if baseline else None)
        bars(ax, table, "Agents on the families held out from all training", ylabel)
        _save(figure, out / "heldout.png")
    # on the full test split once every chosen agent ran there, else on the given results
    on_full = {k: v for k, v in full.items() if k in PER_BENCHMARK}
    full_split = len(on_full) == len(PER_BENCHMARK)
    chosen = on_full if full_split else {k: v for k, v in paths.items() if k in PER_BENCHMARK} or paths
    figure, ax = plt.subplots(figsize=(12, 5))
    drawn = _per_benchmark(ax, chosen, "full test split" if full_split else "" if args.results else "test sample")
    figure.set_size_inches(max(12.0, 0.06 * drawn * len(chosen)), 5)  # the bars stay legible
    _save(figure, out / "per_benchmark.png")
    if runs:
        spaces = sorted({reward_space_of(r) for r in runs})
        figure, axes = plt.subplots(1, len(spaces), figsize=(7 * len(spaces), 4.5), squeeze=False)
        _training(axes[0], spaces, runs)
        _save(figure, out / "training.png")
    return 0


def save_figure(figure: plt.Figure, path: str | Path, dpi: int = 100) -> None:
    """Write ``figure`` as the leaderboard's commands' PNGs are (no software stamp, so the same figure
    gives the same bytes) and close it."""
    figure.savefig(path, dpi=dpi, metadata={"Software": None})
    plt.close(figure)


def _save(figure: plt.Figure, path: Path) -> None:
    figure.tight_layout()
    save_figure(figure, path, dpi=120)
    print(path, file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
