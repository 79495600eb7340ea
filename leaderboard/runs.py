"""Where the leaderboard's commands write by default: a runs folder outside the checkout.

``$XLA_GYM_RUNS`` if set, else ``~/.cache/xla-gym/runs``; each command writes
under its own subfolder (``rl``, ``gnn``, ``world_model``, ``figures``, ...).
Committed results are written only by ``leaderboard/reproduce.sh``, which
passes explicit paths inside the checkout. Read when called (the dataclass
defaults of ``agents/runtime`` when imported).
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["RUNS_HELP", "runs_dir", "runs_root"]

#: For a command's help text.
RUNS_HELP = "$XLA_GYM_RUNS, else ~/.cache/xla-gym/runs"


def runs_root() -> Path:
    """``$XLA_GYM_RUNS`` (an empty value counts as unset), else ``~/.cache/xla-gym/runs``."""
    runs = os.environ.get("XLA_GYM_RUNS")
    return Path(runs).expanduser() if runs else Path.home() / ".cache" / "xla-gym" / "runs"


def runs_dir(*parts: str) -> Path:
    """``runs_root()/parts...`` (not made: the command that writes makes it)."""
    for part in parts:
        if not part or part in (".", "..") or "/" in part or os.sep in part:
            raise ValueError(f"expected a plain folder or file name, got {part!r}")
    return runs_root().joinpath(*parts)
