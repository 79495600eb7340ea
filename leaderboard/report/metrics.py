"""The leaderboard's aggregates: geometric means and means with bootstrap intervals.

Every aggregate is reported with how many benchmarks it covers and a 95%
bootstrap interval over benchmarks (2,000 resamples, seeded: the same inputs
give the same interval). Below :data:`MIN_BENCHMARKS` benchmarks a number is
flagged as too small a sample to mean much. :class:`Row` holds one group's
per-benchmark values and computes its aggregates (``leaderboard.report.summary``'s rows).
"""
from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from leaderboard.protocol import MIN_BENCHMARKS

__all__ = ["Aggregate", "MIN_BENCHMARKS", "Row", "aggregate", "geomean", "mean", "geomean_improvement"]

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


@dataclass
class Row:
    """The metrics of one group of results."""

    name: str
    ratios: list[float] = field(default_factory=list)
    no_ratio: int = 0
    as_good: list[bool] = field(default_factory=list)
    walltimes: list[float] = field(default_factory=list)
    #: passes in the result's commandline, every benchmark
    passes: list[int] = field(default_factory=list)
    validated: int = 0
    checked: int = 0
    speedups: list[float] = field(default_factory=list)
    #: (initial - agent) / (initial - baseline) where a baseline results file is given
    baseline_ratios: list[float] = field(default_factory=list)
    #: N_default / N_agent, every benchmark
    default_ratios: list[float] = field(default_factory=list)
    #: N_baseline / N_agent, every benchmark, where a baseline results file is given
    baseline_op_ratios: list[float] = field(default_factory=list)
    #: (N0 - N_agent) / N0, every benchmark
    reductions: list[float] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.as_good)

    @property
    def improvement(self) -> float:
        return geomean_improvement(self.ratios)

    @property
    def vs_baseline(self) -> float:
        return geomean_improvement(self.baseline_ratios)

    def aggregates(self) -> dict[str, Aggregate]:
        """Every aggregate with its interval and coverage (see the module doc)."""
        bad = self.nonpositive
        paper_excluded = ", ".join(
            x for x in (f"{self.no_ratio} with no ratio (XLA's default removes nothing)" if self.no_ratio else "",
                        f"{bad} ratios <= 0" if bad else "") if x
        )
        out = {
            "vs_default": aggregate(self.default_ratios, geomean),
            "mean_reduction": aggregate(self.reductions, mean),
            "paper": aggregate([r for r in self.ratios if r > 0], geomean_improvement, paper_excluded),
        }
        if self.baseline_op_ratios:
            out["vs_baseline_ratio"] = aggregate(self.baseline_op_ratios, geomean)
        return out

    @property
    def nonpositive(self) -> int:
        return sum(1 for r in self.ratios if r <= 0)

    @property
    def baseline_nonpositive(self) -> int:
        return sum(1 for r in self.baseline_ratios if r <= 0)

    @property
    def at_least_default(self) -> float:
        return sum(self.as_good) / max(self.count, 1)

    @property
    def speedup(self) -> float:
        if not self.speedups:
            return float("nan")
        return math.exp(sum(math.log(s) for s in self.speedups) / len(self.speedups))

    def to_json(self) -> dict[str, Any]:
        """The row's metrics (NaN where undefined), as written by ``--json``."""
        return {
            "name": self.name,
            "n": self.count,
            "aggregates": {k: a.to_json() for k, a in self.aggregates().items()},
            "small_sample": self.count < MIN_BENCHMARKS,
            "no_ratio": self.no_ratio,
            "nonpositive": self.nonpositive,
            "improvement": self.improvement,
            "vs_baseline": self.vs_baseline,
            "baseline_nonpositive": self.baseline_nonpositive,
            "at_least_default": self.at_least_default,
            "validated": self.validated,
            "checked": self.checked,
            "speedup": self.speedup,
            "walltime": self.walltime,
            "passes": self.mean_passes,
        }

    @property
    def walltime(self) -> float:
        return sum(self.walltimes) / max(len(self.walltimes), 1)

    @property
    def mean_passes(self) -> float:
        return sum(self.passes) / max(len(self.passes), 1)
