"""The world models' accuracy on the test split's transitions (leaderboard.agents.world_model.accuracy)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from leaderboard.agents.world_model.accuracy import (
    _together,
    main,
    row_metrics,
    split_families,
    table,
)
from leaderboard.agents.world_model.data import N_ACTIONS, N_FEATURES, Transitions
from leaderboard.agents.world_model.evaluate import model_metrics
from leaderboard.agents.world_model.model import WorldModel


def _transitions(rng: np.random.Generator, episodes: int, length: int) -> Transitions:
    n = episodes * length
    state = rng.uniform(0, 5, (n, N_FEATURES)).astype(np.float32)
    changed = rng.random(n) < 0.4
    next_state = np.where(changed[:, None], state - 0.1, state).astype(np.float32)
    reward = np.where(changed, np.expm1(state[:, -1]) - np.expm1(next_state[:, -1]), 0.0)
    return Transitions(state, rng.integers(N_ACTIONS, size=n), next_state, reward, changed, np.repeat(np.arange(episodes), length))


def _save_model(path: Path, seed: int) -> WorldModel:
    torch.manual_seed(seed)
    model = WorldModel(2, 16)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"args": {"ensemble": 2, "hidden": 16}, "world_model": model.state_dict()}, path)
    return model.eval()


def test_table_scores_each_family_and_all_of_them(tmp_path):
    rng = np.random.default_rng(0)
    data = tmp_path / "data"
    data.mkdir()
    parts = {"xla-bert-v0": _transitions(rng, 3, 12), "xla-resnet-v0": _transitions(rng, 2, 12)}
    for name, part in parts.items():
        part.save(data / f"{name}.npz")
    models = [_save_model(tmp_path / f"runs/wm-seed{s}/checkpoints/model-750.pt", s) for s in (0, 1)]
    _save_model(tmp_path / "runs/wm-seed0/model.pt", 2)  # seed 1 has no final model

    together = _together(list(parts.values()))
    assert len(together) == 60 and len(together.episodes()) == 5  # episode ids kept apart
    metrics = row_metrics(sorted((tmp_path / "runs").glob("*/checkpoints/model-750.pt")), {"bert": parts["xla-bert-v0"]})
    expected = [model_metrics(m, parts["xla-bert-v0"])["op_change_mae_pct"] for m in models]
    assert metrics["bert"]["op_change_mae_pct"] == pytest.approx(np.mean(expected))

    text = table([("early", f"{tmp_path}/runs/wm-seed*@750"), ("final", f"{tmp_path}/runs/wm-seed*@final"),
                  ("none", f"{tmp_path}/runs/wm-seed*@2000")], data)
    lines = text.splitlines()
    assert len(lines) == 2 + 2 * 3  # header, two rows of three sets; "none" left out
    assert lines[2].startswith("| early | 2 | bert | 36 (") and lines[4].startswith("| early | 2 | all | 60 (")
    assert lines[5].startswith("| final | 1 | bert |")
    assert all(line.count("|") == 9 for line in lines)

    short = tmp_path / "short"  # episodes shorter than the drift's 10 steps, and a row's steps with a leading zero
    short.mkdir()
    parts["xla-bert-v0"].subset(slice(0, 5)).save(short / "xla-bert-v0.npz")
    text = table([("early", f"{tmp_path}/runs/wm-seed*@0750")], short)
    assert text.splitlines()[2].startswith("| early | 2 | bert | 5 (") and text.splitlines()[2].endswith("| - |")


def test_default_families_are_the_splits_suites():
    test, heldout = split_families("test"), split_families("heldout")
    assert "xla-gpt2-v0" in test and "xla-resnet-v0" in test and not set(test) & set(heldout)
    assert sorted(heldout) == ["xla-ssm-v0", "xla-unet-v0"]


def test_errors(tmp_path, capsys):
    with pytest.raises(ValueError, match="expected FAMILY.npz"):
        table([("x", "runs/*@750")], tmp_path)
    with pytest.raises(ValueError, match="expected at least one model"):
        row_metrics([], {})
    _transitions(np.random.default_rng(0), 1, 3).save(tmp_path / "xla-rnn-v0.npz")
    with pytest.raises(SystemExit):
        main(["table", "--data", str(tmp_path), "--row", "x=runs/*@soon"])
    assert "expected GLOB@STEPS" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["table", "--data", str(tmp_path), "--row", "no label"])
    assert "expected LABEL=GLOB@STEPS" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["collect", "--out", str(tmp_path), "--episodes", "0"])
    assert "expected at least 1 episode" in capsys.readouterr().err


def test_collect_repeats_on_a_real_family(tmp_path):
    """Random passes on a real test module, masked by the episode alone: the same seed, the same steps."""
    for out in ("a", "b"):
        assert main(["collect", "--out", str(tmp_path / out), "--families", "xla-rnn-v0", "--episodes", "2", "--episode-length", "3"]) == 0
    a, b = (Transitions.load(tmp_path / out / "xla-rnn-v0.npz") for out in ("a", "b"))
    assert len(a) == 6 and sorted(set(a.episode.tolist())) == [0, 1]
    assert np.array_equal(a.action, b.action) and np.array_equal(a.state, b.state) and np.array_equal(a.reward, b.reward)
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["mask"] == "episode" and manifest["jaxlib"]
    before = (tmp_path / "a" / "xla-rnn-v0.npz").stat().st_mtime_ns
    main(["collect", "--out", str(tmp_path / "a"), "--families", "xla-rnn-v0", "--episodes", "2", "--episode-length", "3"])
    assert (tmp_path / "a" / "xla-rnn-v0.npz").stat().st_mtime_ns == before  # a collected family is kept
    with pytest.raises(SystemExit):  # more families only as the folder's were collected
        main(["collect", "--out", str(tmp_path / "a"), "--families", "xla-vit-v0", "--episodes", "3", "--episode-length", "3"])
    assert not (tmp_path / "a" / "xla-vit-v0.npz").exists()
    assert json.loads((tmp_path / "a" / "manifest.json").read_text()) == manifest


def test_the_readme_holds_the_committed_table(capsys):
    """The world model's test-split accuracy table (docs/experiments/world-model.md) is the command's output on the
    committed transitions, unedited."""
    folder = Path(__file__).parents[2] / "leaderboard" / "agents" / "world_model"
    assert main(["table", "--data", str(folder / "results" / "accuracy")]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("|")]
    readme = (Path(__file__).parents[2] / "docs" / "experiments" / "world-model.md").read_text().splitlines()
    missing = [line for line in lines if line not in readme]
    assert len(lines) == 2 + 4 * 7 and not missing, f"docs/experiments/world-model.md lacks `accuracy table` lines: {missing[:2]}"
