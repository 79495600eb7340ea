"""The world models' accuracy on the test split's transitions, family by family.

A run's own held-out episodes (``evaluate.py``) come from its train split. To
see how far a model carries to modules it never saw, two commands:

``python -m leaderboard.agents.world_model.accuracy collect --out DIR`` steps
the Gymnasium env with a uniformly random pass on each family's benchmarks of
the split (``--split``, default test): ``--episodes`` episodes of
``--episode-length`` steps a family, each on a benchmark drawn by the seeded
env, into ``DIR/FAMILY.npz`` (:class:`~leaderboard.agents.world_model.data.Transitions`)
and ``DIR/manifest.json`` (the arguments and the jaxlib version). The env's mask
is ``"episode"`` (only what the episode itself saw), so a seed's collection is
the same whatever the experience store holds. A family already in ``DIR`` is
kept; adding families to a folder takes the arguments (and jaxlib) it was
collected with.

``python -m leaderboard.agents.world_model.accuracy table --data DIR`` scores
each row's models (one per seed) on each family's transitions, and on all of
them together, with ``evaluate.model_metrics``, and prints a markdown table:
the mean over the row's models of the "changed" classifier's precision and
recall, the op-count-change MAE in percent of the op count, and the op-count
drift after 10 imagined steps along the random episodes (``-`` where no
episode is 10 steps long). The rows are
``--row LABEL=GLOB@STEPS`` (run folders; ``STEPS``: the checkpoint of that many
real steps, ``final`` for ``model.pt``), or ``ROWS`` by default. A run without
that checkpoint is left out of its row (the seeds column counts those in).
"""
from __future__ import annotations

import argparse
import glob
import json
import re
import sys
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

import numpy as np
import torch

from leaderboard.agents.world_model.data import Transitions, collect, random_chooser
from leaderboard.agents.world_model.evaluate import load_model, model_metrics

__all__ = ["ROWS", "collect_split", "main", "row_metrics", "split_families", "table"]

_RUNS = Path(__file__).parent / "runs"
#: The committed world models: the GPT-2 runs at their checkpoints, and the six-split runs.
ROWS: tuple[tuple[str, str], ...] = (
    *((f"GPT-2, {n:,} real steps", f"{_RUNS}/wm-xla-gpt2-v0-seed*@{n}") for n in (750, 1000, 2000)),
    ("six train splits, 750 real steps", f"{_RUNS}/wm-bert+gpt2+moe+resnet+rnn+vit-seed*@final"),
)
_METRICS = (("changed_precision", "{:.2f}"), ("changed_recall", "{:.2f}"), ("op_change_mae_pct", "{:.1f}%"), ("drift_10", "{:.1f}%"))


def split_families(split: str) -> list[str]:
    """The suites with benchmarks in ``split`` (``KeyError`` for an unknown split)."""
    from xla_service.env.datasets import XlaDataset, get_xla_datasets

    return [d.name.split("://")[-1] for d in get_xla_datasets() if isinstance(d, XlaDataset) and d.split_uris(split)]


def collect_split(out: Path, families: Sequence[str], split: str, episodes: int, episode_length: int, seed: int) -> None:
    """Random-pass episodes on each family's ``split`` into ``out/FAMILY.npz`` (families already there are kept)."""
    import gymnasium

    out.mkdir(parents=True, exist_ok=True)
    manifest = {
        "split": split, "episodes": episodes, "episode_length": episode_length, "seed": seed, "mask": "episode",
        "policy": "uniformly random pass", "jaxlib": version("jaxlib"),
    }
    path = out / "manifest.json"
    if path.is_file():  # the folder's transitions were collected so: more families only the same way
        saved = json.loads(path.read_text())
        if saved != manifest:
            raise ValueError(f"{out} holds transitions collected with {saved}: expected the same arguments, got {manifest}")
    path.write_text(json.dumps(manifest, indent=1) + "\n")
    for family in families:
        path = out / f"{family}.npz"
        if path.is_file():
            continue
        env = gymnasium.make(
            "xla_service.gym:xla-v0", benchmarks=f"{family}:{split}", observation=["OpcodeCounts", "OpCount"],
            reward="OpCount", max_episode_steps=episode_length, mask="episode",
        )
        try:
            data = collect(env, episodes * episode_length, random_chooser, np.random.default_rng(seed), progress=family)
        finally:
            env.close()
        data.save(path)
        print(f"{path}: {len(data)} transitions, {int(data.changed.sum())} changed the module", file=sys.stderr)


def _model_file(pattern: str) -> tuple[str, str]:
    """(run glob, model file in each run) of a ``GLOB@STEPS`` row."""
    runs, _, steps = pattern.rpartition("@")
    if not runs or not (steps == "final" or re.fullmatch("[0-9]+", steps)):
        raise ValueError(f"expected GLOB@STEPS (STEPS: real steps of a checkpoint, or final), got {pattern!r}")
    return runs, "model.pt" if steps == "final" else f"checkpoints/model-{int(steps)}.pt"


def _models(pattern: str) -> list[Path]:
    """The model files of a ``GLOB@STEPS`` row that exist."""
    runs, name = _model_file(pattern)
    return [Path(run) / name for run in sorted(glob.glob(runs)) if (Path(run) / name).is_file()]


def _together(parts: Sequence[Transitions]) -> Transitions:
    """The families' transitions in one set, episode ids made distinct."""
    shifted, offset = [], 0
    for part in parts:
        episode = np.where(part.episode >= 0, part.episode + offset, -1)
        shifted.append(Transitions(part.state, part.action, part.next_state, part.reward, part.changed, episode))
        offset += int(part.episode.max(initial=-1)) + 1
    return Transitions.concat(list(shifted))


def row_metrics(models: Sequence[Path], data: dict[str, Transitions]) -> dict[str, dict[str, float]]:
    """Per data set: each metric's mean over ``models`` (NaN where a set has no episode long enough for it)."""
    if not models:
        raise ValueError("expected at least one model file, got none")
    per_model = []
    for path in models:
        model = load_model(path)
        per_model.append({name: model_metrics(model, transitions) for name, transitions in data.items()})
    keys = [key for key, _ in _METRICS]
    return {name: {key: float(np.mean([m[name].get(key, np.nan) for m in per_model])) for key in keys} for name in data}


def table(rows: Sequence[tuple[str, str]], data_dir: Path) -> str:
    """The markdown table of ``rows`` (label, ``GLOB@STEPS``) on the transitions in ``data_dir``."""
    for _, pattern in rows:
        _model_file(pattern)
    files = sorted(data_dir.glob("*.npz"))
    if not files:
        raise ValueError(f"expected FAMILY.npz files in {data_dir} (the collect command), got none")
    data = {f.stem.removeprefix("xla-").removesuffix("-v0"): Transitions.load(f) for f in files}
    if len(data) < len(files) or "all" in data:
        raise ValueError(f"expected one file a family, none named all, got {[f.name for f in files]}")
    data["all"] = _together(list(data.values()))
    lines = [
        '| model | seeds | family | transitions (changed) | "changed" precision | recall | op-count change MAE | drift over 10 steps |',
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, pattern in rows:
        models = _models(pattern)
        if not models:
            print(f"{label}: no model matches {pattern!r}, left out", file=sys.stderr)
            continue
        for name, metrics in row_metrics(models, data).items():
            cells = ["-" if np.isnan(metrics[key]) else fmt.format(metrics[key] * (100 if key == "drift_10" else 1))
                     for key, fmt in _METRICS]
            size = f"{len(data[name])} ({int(data[name].changed.sum())})"
            lines.append(f"| {label} | {len(models)} | {name} | {size} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    gather = commands.add_parser("collect", help="random-pass episodes on each family's split", formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    gather.add_argument("--out", type=Path, required=True, help="the folder of FAMILY.npz and manifest.json")
    gather.add_argument("--families", default="", help="comma-separated families (default: every suite with benchmarks in the split)")
    gather.add_argument("--split", default="test", help="the split of each family")
    gather.add_argument("--episodes", type=int, default=20, help="episodes a family")
    gather.add_argument("--episode-length", type=int, default=20, help="steps an episode")
    gather.add_argument("--seed", type=int, default=0, help="seeds the benchmark draw and the passes")
    score = commands.add_parser("table", help="the models' accuracy on the collected transitions")
    score.add_argument("--data", type=Path, required=True, help="a folder made by the collect command")
    score.add_argument("--row", action="append", metavar="LABEL=GLOB@STEPS",
                       help="a row: a label, run folders, the checkpoint's real steps or final (repeat; default: the committed world models)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.command == "collect":
        if args.episodes < 1 or args.episode_length < 1:
            parser.error(f"expected at least 1 episode of at least 1 step, got {args.episodes} of {args.episode_length}")
        families = [f.strip() for f in args.families.split(",") if f.strip()]
        try:
            families = families or split_families(args.split)
            collect_split(args.out, families, args.split, args.episodes, args.episode_length, args.seed)
        except (ValueError, LookupError) as e:  # another collection's folder, or a family or split the datasets lack
            parser.error(str(e.args[0] if e.args else e))  # a KeyError's message without its quotes
        return 0
    rows = list(ROWS)
    if args.row:
        if any("=" not in row for row in args.row):
            parser.error(f"--row: expected LABEL=GLOB@STEPS, got {[r for r in args.row if '=' not in r]}")
        rows = [(label, pattern) for label, _, pattern in (row.partition("=") for row in args.row)]
    try:
        print(table(rows, args.data))
    except ValueError as e:
        parser.error(str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
