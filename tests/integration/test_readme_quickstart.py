"""The README's quickstart runs as it is written, in a fresh interpreter."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_the_quickstart_runs():
    code = README.split("## Quickstart", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    assert 10 <= len(code.strip().splitlines()) <= 25
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines[:3]] == ["algsimp", "cse", "dce"]
    assert "ops; XLA's default pipeline reaches" in lines[3]
    assert "✅" in lines[4]
