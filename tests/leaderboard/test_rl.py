"""RL agents train with a tiny budget, save a run, and act as leaderboard policies."""
from __future__ import annotations

import json

import pytest

from leaderboard.agents.rl.policy import RlPolicy
from leaderboard.agents.rl.train import ALGOS, parse_args, train, trim_monitors
from tests.leaderboard.acting import check_acting_steps

VARIANTS = [(algo, []) for algo in ALGOS] + [
    ("ppo", ["--reward-space=OpCountShaped"]),
    ("ppo", ["--cost-features", "--cost-in-value-only"]),
]


@pytest.mark.parametrize(
    "algo, extra", VARIANTS, ids=[a + "".join(e).replace("--", "-") for a, e in VARIANTS]
)
def test_train_tiny_budget_and_act(tmp_path, small_env, algo, extra):
    args = parse_args(
        [
            *extra,
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
    hyper = record["hyperparameters"]
    assert hyper["class"].lower() == algo and hyper["seed"] == 0 and "gamma" in hyper
    assert (run / "model.zip").is_file()
    assert json.loads((run / "result.json").read_text())["timesteps"] >= 16
    assert list(run.glob("monitor-0.monitor.csv"))
    assert list((run / "tb").rglob("events.out.tfevents.*")), "TensorBoard logs"

    env = small_env
    env.reset()
    start = env.observation["OpCount"]
    policy = RlPolicy(run)
    assert sorted(policy.preferences(policy._observe(env))) == list(range(env.action_space.n))
    policy(env)
    assert env.observation["OpCount"] <= start
    # Only passes that changed the module are kept, and their replay is the result.
    actions, final = list(env.actions), env.observation["OpCount"]
    env.reset()
    for action in actions:
        assert not env.step(action)[3]["action_had_no_effect"]
    assert env.observation["OpCount"] == final


def test_trains_on_generator_seeds_and_on_a_mix_of_suites_and_seeds(tmp_path):
    from xla_service.gym.env import resolve_benchmarks

    seeds = "generator://xla-random-v0/7-8?ops=50-300"
    args = parse_args(
        ["--algo=ppo", "--total-timesteps=16", "--n-steps=8", "--n-envs=1", "--episode-length=4",
         "--dummy-vec-env", f"--datasets={seeds}", f"--out={tmp_path}"]
    )
    run, _ = train(args)
    assert json.loads((run / "args.json").read_text())["train_benchmarks"] == 2
    assert json.loads((run / "result.json").read_text())["timesteps"] >= 16
    mixed = resolve_benchmarks(f"xla-gpt2-v0,{seeds}")
    assert len(mixed) == 108 + 2 and mixed[0].startswith("benchmark://xla-gpt2-v0/")
    assert mixed[-1] == "generator://xla-random-v0/8?ops=50-300"


def test_max_minutes_stops_training_and_records_the_steps(tmp_path):
    args = parse_args(
        ["--algo=ppo", "--total-timesteps=64", "--n-steps=8", "--n-envs=1", "--episode-length=4",
         "--max-train-benchmarks=1", "--dummy-vec-env", "--max-minutes=1e-9", f"--out={tmp_path}"]
    )
    run, _ = train(args)
    result = json.loads((run / "result.json").read_text())
    assert 0 < result["timesteps"] < 64


def test_a_run_resumes_from_its_last_checkpoint_and_acts_from_any(tmp_path, small_env, monkeypatch):
    flags = ["--algo=ppo", "--n-steps=8", "--n-envs=1", "--episode-length=4", "--max-train-benchmarks=1",
             "--dummy-vec-env", "--checkpoint-every=8", f"--out={tmp_path}"]
    run, first = train(parse_args([*flags, "--total-timesteps=16"]))
    assert first.num_timesteps == 16
    run, resumed = train(parse_args([*flags, "--total-timesteps=32", "--resume"]))
    assert resumed.num_timesteps == 32
    # the training curve goes on: the first 16 steps' episodes kept, the resumed run's appended
    episodes = (run / "monitor-0.monitor.csv").read_text().splitlines()[2:]
    assert sum(int(line.split(",")[1]) for line in episodes) == 32
    assert json.loads((run / "result.json").read_text())["resumed_at"] == 16
    checkpoints = sorted((run / "checkpoints").glob("rl_model_*_steps.zip"))
    assert len(checkpoints) >= 3
    policy = RlPolicy(str(run), checkpoint=str(checkpoints[0].relative_to(run)))
    small_env.reset()
    policy(small_env)
    # acting longer or shorter than the run's episodes (--episode-length=4)
    small_env.reset()
    RlPolicy(run, episode_length=1)(small_env)
    assert len(small_env.actions) <= 1
    check_acting_steps(monkeypatch, RlPolicy, run, small_env, run_length=4)
    with pytest.raises(ValueError, match="No model at"):
        RlPolicy(run, checkpoint="checkpoints/nope.zip")


def test_flags_have_help_and_reject_unknown_algorithms(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    out = capsys.readouterr().out
    assert "--cost-in-value-only" in out and "(default: 20000)" in out
    with pytest.raises(SystemExit):
        parse_args(["--algo=sac"])


def test_value_only_policy_hides_cost_features_from_the_actor():
    import gymnasium
    import numpy as np
    import torch

    from leaderboard.agents.rl.policies import value_only_policy

    space = gymnasium.spaces.Box(0.0, np.inf, (6,), np.float32)
    policy = value_only_policy(len_hidden=2)(
        space, gymnasium.spaces.Discrete(4), lr_schedule=lambda _: 1e-3
    )
    obs = torch.ones((1, 6))
    changed = obs.clone()
    changed[0, -2:] = 50.0
    with torch.no_grad():
        logits = [policy.get_distribution(o).distribution.logits for o in (obs, changed)]
        values = [policy.predict_values(o) for o in (obs, changed)]
    assert torch.equal(logits[0], logits[1])
    assert not torch.equal(values[0], values[1])


def test_a_resume_drops_the_episodes_its_checkpoint_does_not_hold(tmp_path):
    # SB3's monitor: a JSON comment line, the columns, one episode a line (return, length, time)
    lines = ['#{"t_start": 0.0, "env_id": "xla-v0"}', "r,l,t", "1.0,4,0.1", "2.0,4,0.2", "3.0,4,0.3"]
    (tmp_path / "monitor-0.monitor.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "monitor-1.monitor.csv").write_text("\n".join(lines[:3]) + "\n")
    trim_monitors(tmp_path, steps_per_env=9)  # the third episode ended at step 12, after the checkpoint
    assert (tmp_path / "monitor-0.monitor.csv").read_text().splitlines() == lines[:4]
    assert (tmp_path / "monitor-1.monitor.csv").read_text().splitlines() == lines[:3]
