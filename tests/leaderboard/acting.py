"""The steps a trained policy asks ``act_keep_best`` for, checked once for every policy class (rl, gnn)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

__all__ = ["check_acting_steps"]


def check_acting_steps(monkeypatch: pytest.MonkeyPatch, policy: type, run: Path, env: Any, run_length: int) -> None:
    """``policy(run, episode_length=N)`` acts N steps, the run's ``run_length`` for 0, and refuses -1
    (every refused kind: test_agents)."""
    asked: list[int] = []
    with monkeypatch.context() as m:
        m.setattr(f"{policy.__module__}.act_keep_best", lambda env, choose, steps: asked.append(steps))
        for length in (0, 20, 1):
            policy(run, episode_length=length)(env)
    assert asked == [run_length, 20, 1]
    with pytest.raises(ValueError, match="expected episode_length an int >= 0"):
        policy(run, episode_length=-1)
