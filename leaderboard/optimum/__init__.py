"""The optimum as ground truth: exhaustive search over a benchmark's distinct states.

``python -m leaderboard.optimum`` searches (``search.py``, driven by ``run.py``),
``python -m leaderboard.optimum.report`` tabulates the state graphs it wrote,
``python -m leaderboard.optimum.gap RESULTS.csv`` gives each agent's gap to them.
"""
from __future__ import annotations

from leaderboard.optimum.search import FAILED, UNCHANGED, Budget, StateGraph, search

__all__ = ["Budget", "FAILED", "StateGraph", "UNCHANGED", "search"]
