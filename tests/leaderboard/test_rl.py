"""RL agents train with a tiny budget, save a run, and act as leaderboard policies."""
from __future__ import annotations

import json

import pytest

from leaderboard.agents.rl.policy import RlPolicy
from leaderboard.agents.rl.train import ALGOS, parse_args, train


@pytest.mark.parametrize("algo", ALGOS)
def test_train_tiny_budget_and_act(tmp_path, small_env, algo):
    args = parse_args(
        [
            f"--algo={algo}",
            "--total-timesteps=16",
            "--n-steps=8",
            "--n-envs=1",
            "--episode-length=4",
            "--max-train-benchmarks=1",
            "--dummy-vec-env",
            f"--out={tmp_path}",
        ]
    )
    run, _ = train(args)
    record = json.loads((run / "args.json").read_text())
    assert record["args"]["algo"] == algo and record["versions"]["jaxlib"] == "0.10.2"
    assert (run / "model.zip").is_file()
    assert list(run.glob("monitor-0.monitor.csv"))

    env = small_env
    env.reset()
    start = env.observation["OpCount"]
    RlPolicy(run)(env)
    assert env.observation["OpCount"] <= start


def test_flags_have_help_and_reject_unknown_algorithms(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    assert "--cost-in-value-only" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        parse_args(["--algo=sac"])
