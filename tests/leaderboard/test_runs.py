"""The leaderboard's commands write outside the checkout by default; reproduce.sh passes committed paths."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from leaderboard.runs import runs_dir, runs_root

ROOT = Path(__file__).resolve().parents[2]

#: Commands that wrote into the checkout by default, and reproduce.sh writes committed results with.
WRITERS = ("agents.rl.train", "agents.gnn.train", "agents.world_model.train", "report.figures", "report.backend_reference",
           "agents.runtime.run", "agents.runtime.executables")


def _outside_checkout(path: Path) -> bool:
    path = path.resolve()
    return path != ROOT and ROOT not in path.parents


def test_the_runs_folder_is_xla_gym_runs_else_the_users_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XLA_GYM_RUNS", str(tmp_path / "runs"))
    assert runs_dir("rl") == tmp_path / "runs" / "rl"
    monkeypatch.setenv("XLA_GYM_RUNS", "")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert runs_root() == tmp_path / "home" / ".cache" / "xla-gym" / "runs"
    for bad in ("", "..", "a/b"):
        with pytest.raises(ValueError, match="expected a plain folder or file name"):
            runs_dir(bad)


def test_rl_train_writes_its_run_under_the_runs_folder_by_default(tmp_path, monkeypatch):
    from leaderboard.agents.rl.train import parse_args, train

    monkeypatch.setenv("XLA_GYM_RUNS", str(tmp_path))
    args = parse_args(["--algo=ppo", "--total-timesteps=64", "--n-steps=8", "--n-envs=1", "--episode-length=4",
                       "--max-train-benchmarks=1", "--dummy-vec-env", "--max-minutes=1e-9"])
    assert args.out == ""
    run, _ = train(args)
    assert run.parent == tmp_path / "rl" and (run / "result.json").is_file()


def test_the_other_trainers_default_to_the_runs_folder():
    from leaderboard.agents.gnn.train import parse_args as gnn_args
    from leaderboard.agents.runtime.executables import Args as Executables
    from leaderboard.agents.runtime.run import Args as Runtime
    from leaderboard.agents.world_model.train import parse_args as world_model_args

    assert gnn_args([]).out == "" and world_model_args([]).out == ""  # train() reads the runs folder
    for out in (Runtime().out, Executables().out):
        assert _outside_checkout(Path(out)), out


def test_figures_are_drawn_under_the_runs_folder_by_default(tmp_path, monkeypatch):
    from compiler_gym.compiler_env_state import CompilerEnvState, CompilerEnvStateWriter

    from leaderboard.report.figures import main

    monkeypatch.setenv("XLA_GYM_RUNS", str(tmp_path / "runs"))
    results = tmp_path / "ppo.csv"
    with open(results, "w") as f, CompilerEnvStateWriter(f) as writer:
        writer.write_state(CompilerEnvState(benchmark="benchmark://xla-gpt2-v0/gpt2-l6-d128-h4-s32-b2-adam-f32-train", reward=1.1, walltime=1.0, commandline="cse"))
    assert main(["--results", f"PPO={results}", "--runs", str(tmp_path), "--baseline", "none"]) == 0
    assert (tmp_path / "runs" / "figures" / "algorithms.png").is_file()


def test_backend_reference_writes_under_the_runs_folder_by_default(tmp_path, monkeypatch, capsys):
    from leaderboard.report.backend_reference import main

    monkeypatch.setenv("XLA_GYM_RUNS", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "1000")
    with pytest.raises(SystemExit):
        main(["--help"])
    assert f"(default: {tmp_path / 'backend_reference.json'})" in capsys.readouterr().out


def test_reproduce_passes_out_wherever_it_writes_committed_results():
    scripts = [ROOT / "leaderboard" / "reproduce.sh", *sorted((ROOT / "leaderboard" / "reproduce").glob("*.sh"))]
    seen = set()
    for script in scripts:
        text = script.read_text().replace("\\\n", " ")
        for module, rest in re.findall(r"-m leaderboard\.([\w.]+)([^\n;|&]*)", text):
            if module in WRITERS:
                seen.add(module)
                assert "--out" in rest, f"{script.name}: leaderboard.{module} {rest.strip()[:80]} needs --out"
    assert seen == set(WRITERS), set(WRITERS) - seen
