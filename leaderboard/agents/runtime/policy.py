"""Leaderboard policy: search pass sequences for runtime, measuring few of them.

``--policy "leaderboard.agents.runtime.policy:RuntimeSearch(mode='adaptive', candidates=32)"``

On forks of the env it is handed (its state is the start), the policy
measures the start module ``baseline_rounds`` times (and once more after
every ``refresh_every`` candidate measurements, 0: never), proposes ``candidates``
random pass sequences (:func:`search.propose`; a ``mutate`` fraction of them
XLA's default order with a few edits), finds the fastest with
``mode`` ``exhaustive`` (measure all, (a)) or ``adaptive`` (clusters, cost
model, ``budget`` measurements, (b)), then measures the winner again apart
from the search: in ``final_sessions`` fresh pairs of envs (new services, so
new compiles and worker processes: :func:`measure.compare_in_sessions`),
``final_rounds`` interleaved rounds against the baseline in each, a speedup with
a bootstrap interval over sessions and rounds (``final_sessions=0``: the rounds
in the search's own envs, one session, whose interval misses the spread
between compiles). With ``finalists`` > 1 the search's fastest few are first
re-measured in interleaved rounds in the search's envs, and the fastest wins. ``prior``: an ``.npz``
of measurements (``run.py --save-measurements``) the adaptive mode's cost
model starts from. The env is left at the winner's
sequence, so its commandline replays the result; when no candidate measured
faster than the baseline, the winner is the baseline's module (:meth:`RuntimeSearch.fallback`):
the env is left untouched (``baseline="initial"``) or at XLA's default order
replayed (``baseline="default"``). With ``require_significant``, the env is
also left untouched unless the final measurement shows a speedup outside the
noise (:func:`measure.within_noise`). ``last`` holds the report of the last call.
``pipeline`` sets how modules compile for ``Runtime`` (``xla.runtime.pipeline``);
``distinct="executable"`` proposes one candidate per executable, none the baseline's;
``from_results`` (comma-separated results CSVs) adds their orders for the benchmark to the candidates.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from compiler_gym.envs import CompilerEnv

from leaderboard.agents.runtime.cost_model import load_measurements
from leaderboard.agents.runtime.measure import (
    BASELINES,
    apply_actions,
    compare,
    compare_in_sessions,
    measure_runtime,
)
from leaderboard.agents.runtime.search import (
    DISTINCT,
    Candidate,
    SearchResult,
    adaptive,
    baseline_keys,
    default_actions,
    exhaustive,
    missing_paths,
    orders_from_results,
    propose,
    read_result_orders,
    result_paths,
)
from xla_service.catalog.schema import RUNTIME_PIPELINES

__all__ = ["MODES", "RuntimeSearch", "policy"]

MODES = ("adaptive", "exhaustive")
logger = logging.getLogger(__name__)


@dataclass
class RuntimeSearch:
    mode: str = "adaptive"
    candidates: int = 32
    max_length: int = 12
    budget: int = 12
    per_round: int = 4
    exploit: int = 1
    promising: float = 0.5
    alpha: float = 1.0
    repetitions: int = 5
    baseline_rounds: int = 3
    final_rounds: int = 5
    final_sessions: int = 3
    baseline: str = "initial"
    confidence: float = 0.95
    tolerance: float = 0.0
    seed: int = 0
    explore: float = 0.2
    mutate: float = 0.0
    refresh_every: int = 4
    graph: bool = False
    finalists: int = 1
    prior: str = ""
    require_significant: bool = False
    distinct: str = "module"
    pipeline: str = "full"
    from_results: str = ""
    last: dict[str, Any] = field(default_factory=dict, init=False, repr=False)
    _result_orders: dict[str, list[str]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.baseline not in BASELINES:
            raise ValueError(f"baseline must be one of {BASELINES}, got {self.baseline!r}")
        for name in ("candidates", "max_length", "budget", "per_round", "repetitions", "baseline_rounds", "final_rounds", "finalists"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("explore", "mutate"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        for name in ("refresh_every", "final_sessions"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.pipeline not in RUNTIME_PIPELINES:
            raise ValueError(f"pipeline must be one of {RUNTIME_PIPELINES}, got {self.pipeline!r}")
        if self.distinct not in DISTINCT:
            raise ValueError(f"distinct must be one of {DISTINCT}, got {self.distinct!r}")
        paths = result_paths(self.from_results)
        missing = missing_paths(paths)
        if missing:
            raise ValueError(f"from_results: expected results CSVs, got {missing} (no such file)")
        self._result_orders = read_result_orders(paths)
        if self.final_sessions * self.final_rounds == 1:
            raise ValueError("final_sessions=1 with final_rounds=1 is one round: expected >= 2 rounds in all")

    def __call__(self, env: CompilerEnv) -> None:
        base = env.fork()
        try:
            base.send_param("xla.runtime.repetitions", str(self.repetitions))
            base.send_param("xla.runtime.pipeline", self.pipeline)
            candidates = propose(
                base, self.candidates, self.max_length, seed=self.seed, explore=self.explore,
                graph=self.graph, mutate=self.mutate, distinct=self.distinct,
                exclude=baseline_keys(base, self.distinct, self.baseline),
                orders=orders_from_results(base, self._result_orders),
            )
            report = self.search(base, candidates, prior=load_measurements(self.prior) if self.prior else None)
        finally:
            base.close()
        final = report["final"]
        report["kept"] = not self.require_significant or (final["speedup"] > 1 and not final["within_noise"])
        if report["kept"]:
            apply_actions(env, report["actions"])
        self.last = report

    def search(
        self, base: CompilerEnv, candidates: Sequence[Candidate], prior: tuple[np.ndarray, np.ndarray] | None = None
    ) -> dict[str, Any]:
        """Search ``candidates`` from ``base`` (an env at the start module), measure the winner.

        ``base`` keeps its state; its ``xla.runtime.repetitions`` sets the runs per observation, its
        ``xla.runtime.pipeline`` how modules compile (``self.pipeline`` is sent to fresh sessions).
        ``prior``: measurements of other benchmarks for the adaptive mode's cost model.
        """
        started = time.time()
        baseline = [measure_runtime(base, self.baseline) for _ in range(self.baseline_rounds)]
        count = 0

        def measure(candidate: Candidate) -> float:
            nonlocal count
            if self.refresh_every and count and count % self.refresh_every == 0:
                baseline.append(measure_runtime(base, self.baseline))  # interleaved: drifts hit both sides
            count += 1
            reference = float(np.median(np.concatenate(baseline)))
            fork = base.fork()
            try:
                apply_actions(fork, candidate.actions)
                return float(np.log(np.median(measure_runtime(fork, "initial")) / reference))
            finally:
                fork.close()

        if self.mode == "exhaustive":
            result = exhaustive(candidates, measure)
        else:
            result = adaptive(
                candidates, measure, budget=self.budget, per_round=self.per_round, exploit=self.exploit,
                promising=self.promising, alpha=self.alpha, seed=self.seed, prior=prior,
            )
        search_seconds = time.time() - started
        chosen, finalists = self._choose(base, result)
        actions = list(candidates[chosen].actions) if chosen >= 0 else self.fallback(base)
        final = self.verify(base, actions, self.final_sessions)
        logger.info(
            "%s: %d candidates, %d measured, speedup %.3f [%.3f, %.3f]%s",
            self.mode, len(candidates), result.n_measurements, final["speedup"], final["low"], final["high"],
            " (within noise)" if final["within_noise"] else "",
        )
        return {
            "mode": self.mode,
            "candidates": len(candidates),
            "measurements": result.n_measurements,
            "baseline_observations": len(baseline),
            "search_seconds": search_seconds,
            "actions": actions,
            "measured": dict(result.measured),
            "finalists": finalists,
            "search_speedup": float(np.exp(-result.measured[chosen])) if chosen >= 0 else 1.0,
            "final": final,
            "rounds": _jsonable_rounds(result),
        }

    def fallback(self, env: CompilerEnv) -> list[int]:
        """The winner when no candidate beat the baseline: the baseline's own module, so the start module
        (``baseline="initial"``) or XLA's default order replayed (``baseline="default"``)."""
        return [] if self.baseline == "initial" else default_actions(env)

    def _choose(self, base: CompilerEnv, result: SearchResult) -> tuple[int, dict[int, float]]:
        """The winner: the search's best, or with ``finalists > 1`` the best of the
        search's fastest few (those faster than the baseline) re-measured in
        interleaved rounds. -1: none (then :meth:`fallback`)."""
        ranked = sorted((i for i in result.measured if result.measured[i] < 0), key=lambda i: (result.measured[i], i))
        if self.finalists < 2 or len(ranked) < 2:
            return result.best, {}
        speedups = {i: float(self.verify(base, result.candidates[i].actions, 0)["speedup"]) for i in ranked[: self.finalists]}
        return max(speedups, key=lambda i: (speedups[i], -i)), speedups

    def verify(self, base: CompilerEnv, actions: Sequence[int], sessions: int) -> dict[str, Any]:
        """The speedup of ``actions`` over the baseline in interleaved rounds: in ``sessions`` fresh pairs of
        envs, or (0) in ``base`` and a fork of it."""
        fork = base.fork()
        try:
            apply_actions(fork, actions)
            if sessions == 0:
                speedup = compare(
                    base, fork, rounds=self.final_rounds, baseline=self.baseline,
                    confidence=self.confidence, seed=self.seed, tolerance=self.tolerance,
                )
            else:
                speedup = compare_in_sessions(
                    base.benchmark, fork.commandline(), sessions=sessions, rounds=self.final_rounds,
                    baseline=self.baseline, repetitions=self.repetitions, start=base.commandline(),
                    confidence=self.confidence, seed=self.seed, tolerance=self.tolerance,
                    env_id=getattr(base.spec, "id", None) or "xla-v0", pipeline=self.pipeline,
                )
        finally:
            fork.close()
        return {**speedup.to_dict(), "sessions": sessions}


def _jsonable_rounds(result: SearchResult) -> list[dict[str, Any]]:
    return [
        {k: (float(v) if isinstance(v, float | np.floating) else v) for k, v in r.items()} for r in result.rounds
    ]


policy = RuntimeSearch()
