"""The leaderboard's aggregates: geometric means and means with bootstrap intervals.

Every aggregate is reported with how many benchmarks it covers and a 95%
bootstrap interval over benchmarks (2,000 resamples, seeded: the same inputs
give the same interval). Below :data:`MIN_BENCHMARKS` benchmarks a number is
flagged as too small a sample to mean much.
"""
from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Aggregate", "MIN_BENCHMARKS", "aggregate", "geomean", "mean", "geomean_improvement"]

#: Fewer benchmarks than this: the aggregate is flagged (summary, table, eval progress).
MIN_BENCHMARKS = 20
_DRAWS = 2000


def geomean(values: Sequence[float]) -> float:
    """The geometric mean of positive values (NaN if there are none)."""
    if not values or any(v <= 0 for v in values):
        return math.nan
    return math.exp(sum(math.log(v) for v in values) / len(values))


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def geomean_improvement(values: Sequence[float]) -> float:
    """The paper's aggregate: geometric mean minus one, of the positive values only."""
    positive = [v for v in values if v > 0]
    return geomean(positive) - 1 if positive else math.nan


@dataclass(frozen=True)
class Aggregate:
    """An aggregate over benchmarks, its 95% interval, and what it covers."""

    value: float
    low: float
    high: float
    n: int
    #: Benchmarks left out of it, and why (empty: none).
    excluded: str = ""

    @property
    def small(self) -> bool:
        return self.n < MIN_BENCHMARKS

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "low": self.low, "high": self.high, "n": self.n, "excluded": self.excluded}

    @staticmethod
    def from_json(data: dict[str, Any]) -> Aggregate:
        return Aggregate(data["value"], data["low"], data["high"], data["n"], data.get("excluded", ""))


def aggregate(
    values: Sequence[float], statistic: Callable[[Sequence[float]], float], excluded: str = "", seed: int = 0
) -> Aggregate:
    """``statistic`` of ``values`` with a 95% percentile bootstrap interval over them."""
    value = statistic(values)
    if len(values) < 2 or math.isnan(value):
        return Aggregate(value, math.nan, math.nan, len(values), excluded)
    rng = random.Random(seed)
    draws = sorted(
        s for s in (statistic([rng.choice(values) for _ in values]) for _ in range(_DRAWS)) if not math.isnan(s)
    )
    if not draws:
        return Aggregate(value, math.nan, math.nan, len(values), excluded)
    low, high = draws[int(0.025 * (len(draws) - 1))], draws[int(0.975 * (len(draws) - 1))]
    return Aggregate(value, low, high, len(values), excluded)
