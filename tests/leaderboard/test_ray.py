"""Scale-out on a local Ray instance: RLlib PPO with 2 env runners, and evaluation spread over Ray tasks."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from leaderboard.agents.rl.policy import RlPolicy

POLICY = "leaderboard.agents.greedy.policy:Greedy(max_steps=2, lazy=True)"


def test_rllib_ppo_with_two_env_runners_writes_a_checkpoint_the_harness_acts_with(tmp_path, small_env):
    done = subprocess.run(
        [sys.executable, "-m", "leaderboard.agents.rl.train", "--backend=rllib", "--algo=ppo",
         "--num-env-runners=2", "--total-timesteps=32", "--n-steps=8", "--episode-length=4",
         "--max-train-benchmarks=2", f"--out={tmp_path}"],
        capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    run = tmp_path / "ppo-rllib-OpCount-seed0"
    assert json.loads((run / "result.json").read_text())["timesteps"] >= 32
    assert (run / "rllib").is_dir() and list((run / "tb").glob("events.out.tfevents.*"))
    assert json.loads((run / "args.json").read_text())["versions"]["ray"] == "2.60.0"
    policy = RlPolicy(run)
    small_env.reset()
    start = small_env.observation["OpCount"]
    policy(small_env)
    assert small_env.observation["OpCount"] <= start


def _eval(results: Path, *extra: str) -> list[list[str]]:
    done = subprocess.run(
        [sys.executable, "-m", "leaderboard.eval", f"--policy={POLICY}", "--test_dataset=xla-vit-v0",
         "--max_benchmarks=3", f"--leaderboard_results={results}", "--shared-store", *extra],
        capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line.split(",") for line in results.read_text().splitlines()]
    return [[benchmark, reward, commandline] for benchmark, reward, _, commandline in rows]


def test_evaluation_on_ray_gives_the_serial_rows(tmp_path):
    serial = _eval(tmp_path / "serial.csv")
    spread = _eval(tmp_path / "ray.csv", "--ray")
    assert len(serial) == 4 and spread == serial  # the header and 3 rows, in order, but walltimes
