"""scripts/check_big_files.py: CI refuses a tracked file over 1 MB unless the allow-list has it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_big_files.py"


def _check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


@pytest.fixture
def repo(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "small.txt").write_text("x" * 1000)
    subprocess.run(["git", "-C", str(tmp_path), "add", "small.txt"], check=True)
    return tmp_path


def _add(repo: Path, name: str, size: int) -> None:
    (repo / name).parent.mkdir(parents=True, exist_ok=True)
    (repo / name).write_bytes(b"\0" * size)
    subprocess.run(["git", "-C", str(repo), "add", name], check=True)


def test_todays_tree_passes():
    result = _check()
    assert result.returncode == 0, result.stderr


def test_a_big_tracked_file_fails_unless_allowed(repo):
    allow = repo / "allowed.txt"
    flags = ["--root", str(repo), "--allow", str(allow)]
    assert _check(*flags).returncode == 0
    _add(repo, "runs/model.pt", 1_000_001)
    (repo / "untracked.bin").write_bytes(b"\0" * 2_000_000)  # only tracked files count
    result = _check(*flags)
    assert result.returncode == 1 and "runs/model.pt (1.0 MB)" in result.stderr
    assert "untracked.bin" not in result.stderr
    allow.write_text("# today's\nruns/model.pt  # 1.0 MB\n")
    assert _check(*flags).returncode == 0
    _add(repo, "other.pt", 1_500_000)
    result = _check(*flags)
    assert result.returncode == 1 and "other.pt" in result.stderr and "runs/model.pt" not in result.stderr
    assert _check(*flags, "--limit", "2000000").returncode == 0


def test_write_allow_list_records_the_big_files(repo):
    _add(repo, "a.bin", 1_200_000)
    allow = repo / "allowed.txt"
    assert _check("--root", str(repo), "--allow", str(allow), "--write-allow-list").returncode == 0
    assert "a.bin  # 1.2 MB" in allow.read_text() and "small.txt" not in allow.read_text()
    assert _check("--root", str(repo), "--allow", str(allow)).returncode == 0


def test_outside_a_git_checkout_is_a_clear_error(tmp_path):
    result = _check("--root", str(tmp_path / "nowhere"))
    assert result.returncode == 2 and "expected a git checkout" in result.stderr
