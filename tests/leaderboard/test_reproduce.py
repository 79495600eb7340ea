"""leaderboard/reproduce.sh: its stages, their listing, and dispatch (with a logging stand-in for python)."""
from __future__ import annotations

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
    """A copy of the script and its stages whose python logs its arguments, one call a line."""
    (tmp_path / "leaderboard").mkdir()
    shutil.copy(SCRIPT, tmp_path / "leaderboard")
    shutil.copytree(ROOT / "leaderboard" / "reproduce", tmp_path / "leaderboard" / "reproduce")
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/usr/bin/env bash\necho "$*" >> {tmp_path}/calls\n')
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    return tmp_path


def run(sandbox: Path, *args: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    done = subprocess.run(["bash", str(sandbox / "leaderboard" / "reproduce.sh"), *args],
                          capture_output=True, text=True, timeout=60)
    calls = sandbox / "calls"
    return done, calls.read_text().splitlines() if calls.exists() else []


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
    assert all(c.startswith("-m leaderboard.agents.rl.train --total-timesteps 4000") for c in calls)
    assert any("--algo dqn" in c for c in calls)
    (sandbox / "calls").unlink()
    done, calls = run(sandbox, "train", "dqn")
    assert done.returncode == 0, done.stderr
    assert len(calls) == 1 and "--algo dqn" in calls[0]
