"""leaderboard/reproduce.sh: its stages, their listing, and dispatch (with a logging stand-in for python)."""
from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "leaderboard" / "reproduce.sh"
PARTS = sorted((ROOT / "leaderboard" / "reproduce").glob("*.sh"))


def listed_stages() -> list[str]:
    """The stages the script's header lists (its usage text)."""
    return re.findall(r"^#   bash leaderboard/reproduce\.sh (\w+)", SCRIPT.read_text(), re.M)


def defined_stages() -> list[str]:
    return [m for part in PARTS for m in re.findall(r"^stage_(\w+)\(\) \{", part.read_text(), re.M)]


def test_every_listed_stage_is_defined_once_and_every_defined_stage_is_listed():
    assert len(PARTS) >= 2
    defined = defined_stages()
    assert len(defined) == len(set(defined))
    assert sorted(listed_stages()) == sorted(defined)


@pytest.mark.parametrize("path", [SCRIPT, *PARTS], ids=lambda p: p.name)
def test_parses(path: Path):
    subprocess.run(["bash", "-n", str(path)], check=True)


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    """A copy of the script and its stages whose python logs its XLA_GYM_ environment and arguments, a call a line."""
    (tmp_path / "leaderboard").mkdir()
    shutil.copy(SCRIPT, tmp_path / "leaderboard")
    shutil.copytree(ROOT / "leaderboard" / "reproduce", tmp_path / "leaderboard" / "reproduce")
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/usr/bin/env bash\necho "$(env | grep ^XLA_GYM_ | sort | xargs)| $*" >> {tmp_path}/calls\n')
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    return tmp_path


def run(sandbox: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess, list[tuple[str, str]]]:
    """Run a stage (in an environment without the caller's XLA_GYM_ variables); its python calls as
    (environment, arguments)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("XLA_GYM_")}
    done = subprocess.run(["bash", str(sandbox / "leaderboard" / "reproduce.sh"), *args],
                          capture_output=True, text=True, timeout=60, env={**clean, **env})
    calls = sandbox / "calls"
    lines = calls.read_text().splitlines() if calls.exists() else []
    return done, [tuple(line.split("| ", 1)) for line in lines]  # type: ignore[misc]


@pytest.mark.parametrize("args", [(), ("no_such_stage",), ("want",), ("stage_train",)])
def test_no_or_unknown_stage_prints_the_stages_and_runs_nothing(sandbox: Path, args: tuple[str, ...]):
    done, calls = run(sandbox, *args)
    assert done.returncode == 2
    assert calls == []
    for stage in listed_stages():
        assert f"reproduce.sh {stage}" in done.stdout


def test_a_stage_runs_its_commands_and_a_second_argument_keeps_the_matching_jobs(sandbox: Path):
    done, calls = run(sandbox, "train")
    assert done.returncode == 0, done.stderr
    assert len(calls) == 6
    assert all(args.startswith("-m leaderboard.agents.rl.train --total-timesteps 4000") for _, args in calls)
    assert any("--algo dqn" in args for _, args in calls)
    assert all(environment == "XLA_GYM_WORKERS=1" for environment, _ in calls)
    (sandbox / "calls").unlink()
    done, calls = run(sandbox, "train", "dqn")
    assert done.returncode == 0, done.stderr
    assert len(calls) == 1 and "--algo dqn" in calls[0][1]


def test_a_stage_uses_another_files_helpers_and_passes_the_environment(sandbox: Path):
    """gnn_seeds (gnn.sh) trains the MLP with rl.sh's `train`; its GNN evaluations run with the store off."""
    done, calls = run(sandbox, "gnn_seeds", SEEDS="7")
    assert done.returncode == 0, done.stderr
    trains = [args for _, args in calls if " leaderboard.agents.rl.train " in f" {args}"]
    assert trains and trains[0].endswith("--algo ppo --seed 7 --datasets xla-gpt2-v0 --resume")
    evals = [(environment, args) for environment, args in calls if args.startswith("-m leaderboard.eval")]
    assert len(evals) == 4  # GNN and MLP, test and held out
    for environment, args in evals:
        assert ("XLA_GYM_STORE=off" in environment) == ("gnn.policy" in args)
        # with the machine's store the harness needs --shared-store, which it records (leaderboard/PROTOCOL.md)
        assert ("--shared-store" in args) == ("XLA_GYM_STORE=off" not in environment)


def test_a_stage_with_a_table_of_its_own_runs_each_entry(sandbox: Path):
    """generalize's training sets are a `declare -A` inside its function; each run reads its run from the environment."""
    done, calls = run(sandbox, "generalize", "generalize/six")
    assert done.returncode == 0, done.stderr
    evals = [environment for environment, args in calls if args.startswith("-m leaderboard.eval")]
    assert len(evals) == 6  # seeds 0-2, test and held out
    # the seeds are declared before the first run: test and held-out files, seeds 0-2
    assert [args for _, args in calls[:2]] == [
        f"-m leaderboard.declared leaderboard/agents/rl/results/generalize six-ppo-seed*-{split}.csv 0-2"
        for split in ("test", "heldout")]
    assert all("XLA_GYM_RL_RUN=leaderboard/agents/rl/runs/generalize/six/ppo-OpCount-seed" in e for e in evals)


def test_the_leaderboard_readme_lists_every_stage():
    text = (ROOT / "leaderboard" / "README.md").read_text()
    listed = set(re.findall(r"^bash leaderboard/reproduce\.sh (\w+)", text, re.M))
    assert listed == set(defined_stages())
