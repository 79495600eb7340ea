"""Held-out accuracy of a world model.

``python -m leaderboard.agents.world_model.evaluate RUN [--data FILE.npz]``
prints (as JSON) the metrics of the run's ``model.pt`` on the held-out
transitions of the run (``RUN/heldout.npz``: whole episodes the model never
trained on), or on ``--data`` (a file saved by the run, or a store export
from ``python -m xla_service.store export``: one-step metrics only, since an
export has no episodes):

- ``op_change_mae``: mean |predicted - real| op-count change per step, in ops
  (predicted: the reward head if "changed" is predicted, else 0);
- ``op_change_mae_pct``: the same in percent of the state's op count;
- ``changed_precision`` / ``changed_recall`` / ``changed_accuracy`` of the
  "changed" classifier (threshold 0.5);
- ``drift``: for k = 1..10, the mean relative error |imagined - real| / real of
  the op count after replaying an episode's first k real passes in the model
  from its real start state (``drift_10``: the last one).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from leaderboard.agents.world_model.data import Transitions, op_counts
from leaderboard.agents.world_model.model import WorldModel

__all__ = ["drift", "load_model", "main", "one_step_metrics", "model_metrics"]


@torch.no_grad()
def one_step_metrics(model: WorldModel, data: Transitions, threshold: float = 0.5) -> dict[str, float]:
    """Op-count-change MAE and the "changed" classifier's precision and recall."""
    if len(data) == 0:
        raise ValueError("No held-out transitions to evaluate on")
    pred = model.step(torch.as_tensor(data.state), torch.as_tensor(data.action), threshold=threshold)
    predicted = (pred.p_changed >= threshold).numpy()
    ops = np.maximum(op_counts(data.state), 1.0)
    change = np.where(predicted, pred.reward_pct.numpy().astype(np.float64) * ops / 100.0, 0.0)
    error = np.abs(change - data.reward)
    real = data.changed
    tp = float(np.sum(predicted & real))
    return {
        "transitions": float(len(data)),
        "changed_fraction": float(real.mean()),
        "op_change_mae": float(error.mean()),
        "op_change_mae_pct": float((100.0 * error / ops).mean()),
        "changed_precision": tp / max(float(predicted.sum()), 1.0),
        "changed_recall": tp / max(float(real.sum()), 1.0),
        "changed_accuracy": float(np.mean(predicted == real)),
    }


@torch.no_grad()
def drift(model: WorldModel, data: Transitions, horizon: int = 10, threshold: float = 0.5) -> list[float]:
    """Mean relative op-count error after k = 1..horizon imagined steps along real
    episodes (those at least k steps long count for k); NaN where none is."""
    sums, counts = np.zeros(horizon), np.zeros(horizon)
    for episode in data.episodes():
        x = torch.as_tensor(episode.state[:1])
        for k in range(min(horizon, len(episode))):
            x = model.step(x, torch.as_tensor(episode.action[k : k + 1]), threshold=threshold).next_state
            real = max(float(op_counts(episode.next_state[k])), 1.0)
            sums[k] += abs(float(op_counts(x.numpy())[0]) - real) / real
            counts[k] += 1
    return [float(s / c) if c else float("nan") for s, c in zip(sums, counts)]


def model_metrics(model: WorldModel, data: Transitions, horizon: int = 10) -> dict[str, float]:
    """One-step metrics, and the drift at 1..horizon steps where episodes are known."""
    metrics = one_step_metrics(model, data)
    if (data.episode >= 0).any():
        for k, value in enumerate(drift(model, data, horizon), start=1):
            metrics[f"drift_{k}"] = value
    return metrics


def load_model(path: Path) -> WorldModel:
    """The world model of a run folder (its ``model.pt``) or of a saved model file (e.g. ``RUN/checkpoints/model-750.pt``)."""
    saved = torch.load(path / "model.pt" if path.is_dir() else path, map_location="cpu", weights_only=False)
    model = WorldModel(saved["args"]["ensemble"], saved["args"]["hidden"])
    model.load_state_dict(saved["world_model"])
    return model.eval()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a run folder made by leaderboard.agents.world_model.train")
    parser.add_argument("--data", type=Path, default=None, help="transitions (default: RUN/heldout.npz)")
    parser.add_argument("--horizon", type=int, default=10, help="steps of the drift (default: 10)")
    args = parser.parse_args(argv)
    if not (args.run / "model.pt").is_file():
        parser.error(f"No model.pt in {args.run}")
    data = Transitions.load(args.data or args.run / "heldout.npz")
    print(json.dumps(model_metrics(load_model(args.run), data, args.horizon), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
