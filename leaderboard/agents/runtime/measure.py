"""Measurement hygiene: repeated, interleaved runtimes, medians with bootstrap intervals.

A speedup is ``median(baseline) / median(candidate)`` of seconds per
execution (the ``Runtime`` observation, ``xla.runtime.repetitions`` runs per
observation, warm-up excluded). :func:`compare` measures baseline and
candidate in turns (baseline, candidate, candidate, baseline, ...), so
drifts of the machine's load hit both sides alike; :func:`paired_speedup_interval`
bootstraps the ratio of medians over those rounds (:func:`speedup_interval`
over single runs, for independent samples); :func:`within_noise` says whether the interval admits no
difference. The baseline is the benchmark as loaded (compiled by XLA's full
CPU pipeline: what XLA does by default) or ``RuntimeDefault`` (the module of
XLA's default pipeline, the leaderboard's speedup baseline).

:func:`compare` measures in the envs it is given: one *session*. A service
compiles a module once and its worker processes reuse the executable, so
all rounds of a session share one compile and one set of processes.
:func:`compare_in_sessions` measures in fresh pairs of envs (new services) and
resamples sessions, so whatever differs between compiles, processes and
moments is part of the interval. (On the 2-core machine of the committed runs,
``benchmarks/measure_runtime_noise.py`` found one executable measured against
itself in one process to vary between sessions about as much as two compiles
in two services: most of the spread is the machine's own, in time.)
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

import numpy as np
from compiler_gym.envs import CompilerEnv

__all__ = [
    "BASELINES",
    "Speedup",
    "abba",
    "apply_actions",
    "compare",
    "compare_in_sessions",
    "interleaved",
    "measure_runtime",
    "median_interval",
    "paired_speedup_interval",
    "session",
    "speedup_interval",
    "within_noise",
]

BASELINES = ("initial", "default")
T = TypeVar("T")


@dataclass(frozen=True)
class Speedup:
    """A measured speedup (baseline over candidate median) and its bootstrap interval."""

    speedup: float
    low: float
    high: float
    baseline_median: float
    candidate_median: float
    samples: int  # runtimes per side
    within_noise: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def median_interval(
    samples: Sequence[float] | np.ndarray, confidence: float = 0.95, resamples: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """``(median, low, high)``: the median and its percentile bootstrap interval."""
    x = _samples(samples)
    _check_confidence(confidence)
    rng = np.random.default_rng(seed)
    medians = np.median(x[rng.integers(len(x), size=(resamples, len(x)))], axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(medians, [tail, 100 - tail])
    return float(np.median(x)), float(low), float(high)


def speedup_interval(
    baseline: Sequence[float] | np.ndarray,
    candidate: Sequence[float] | np.ndarray,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    tolerance: float = 0.0,
) -> Speedup:
    """``median(baseline) / median(candidate)`` with a percentile bootstrap interval.

    Each side is resampled on its own (the runs are independent draws).
    """
    b, c = _samples(baseline), _samples(candidate)
    _check_confidence(confidence)
    rng = np.random.default_rng(seed)
    mb = np.median(b[rng.integers(len(b), size=(resamples, len(b)))], axis=1)
    mc = np.median(c[rng.integers(len(c), size=(resamples, len(c)))], axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = (float(v) for v in np.percentile(mb / mc, [tail, 100 - tail]))
    return Speedup(
        speedup=float(np.median(b) / np.median(c)),
        low=low,
        high=high,
        baseline_median=float(np.median(b)),
        candidate_median=float(np.median(c)),
        samples=int(min(len(b), len(c))),
        within_noise=within_noise(low, high, tolerance),
    )


def paired_speedup_interval(
    baseline: Sequence[Sequence[float] | np.ndarray],
    candidate: Sequence[Sequence[float] | np.ndarray],
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    tolerance: float = 0.0,
    sessions: Sequence[int] | None = None,
) -> Speedup:
    """:func:`speedup_interval` for interleaved rounds: round ``i`` of each side measured together.

    The bootstrap resamples whole rounds, the same for both sides: the runs of
    one observation share the machine's load of that moment, so resampling
    runs one by one (as if independent) gives intervals too narrow on a busy
    machine. Point estimate: the ratio of the pooled medians.

    ``sessions`` (one id per round) says which rounds came from the same pair
    of envs (rounds of one session share its compiles, its processes and its
    stretch of time). With it, the bootstrap resamples sessions, then rounds
    within each (two levels).
    """
    if len(baseline) != len(candidate) or not baseline:
        raise ValueError(f"expected as many rounds a side (>= 1), got {len(baseline)} and {len(candidate)}")
    if sessions is not None and len(sessions) != len(baseline):
        raise ValueError(f"expected a session id per round ({len(baseline)}), got {len(sessions)}")
    b = [_samples(r) for r in baseline]
    c = [_samples(r) for r in candidate]
    _check_confidence(confidence)
    rng = np.random.default_rng(seed)
    groups = [np.flatnonzero(np.asarray(sessions) == g) for g in dict.fromkeys(sessions)] if sessions is not None else []
    ratios = np.empty(resamples)
    for k in range(resamples):
        if sessions is None:
            rounds = rng.integers(len(b), size=len(b))
        else:
            chosen = rng.integers(len(groups), size=len(groups))
            rounds = np.concatenate([rng.choice(groups[g], size=len(groups[g])) for g in chosen])
        ratios[k] = np.median(np.concatenate([b[i] for i in rounds])) / np.median(np.concatenate([c[i] for i in rounds]))
    tail = (1 - confidence) / 2 * 100
    low, high = (float(v) for v in np.percentile(ratios, [tail, 100 - tail]))
    mb, mc = float(np.median(np.concatenate(b))), float(np.median(np.concatenate(c)))
    return Speedup(
        speedup=mb / mc, low=low, high=high, baseline_median=mb, candidate_median=mc,
        samples=int(min(sum(map(len, b)), sum(map(len, c)))), within_noise=within_noise(low, high, tolerance),
    )


def within_noise(low: float, high: float, tolerance: float = 0.0) -> bool:
    """Whether a speedup interval ``[low, high]`` admits no difference.

    True when it overlaps ``[1 - tolerance, 1 + tolerance]``: a tolerance
    declares differences below it irrelevant even when they are measurable.
    """
    if low > high:
        raise ValueError(f"expected low <= high, got [{low}, {high}]")
    if tolerance < 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance}")
    return low <= 1 + tolerance and high >= 1 - tolerance


def apply_actions(env: CompilerEnv, actions: Sequence[int]) -> list[int]:
    """Step ``env`` through ``actions``, skipping those XLA fails on; the ones applied."""
    applied: list[int] = []
    for action in actions:
        try:
            env.step(int(action))
        except ValueError:  # pass_errors=raise: the step is not kept
            continue
        applied.append(int(action))
    return applied


def measure_runtime(env: CompilerEnv, baseline: str = "initial") -> np.ndarray:
    """One observation of runtimes: of the current module, or ``RuntimeDefault``."""
    name = {"initial": "Runtime", "default": "RuntimeDefault"}.get(baseline)
    if name is None:
        raise ValueError(f"baseline must be one of {BASELINES}, got {baseline!r}")
    return np.asarray(env.observation[name], dtype=np.float64).ravel()


def compare(
    base: CompilerEnv,
    candidate: CompilerEnv,
    rounds: int = 3,
    baseline: str = "initial",
    confidence: float = 0.95,
    seed: int = 0,
    tolerance: float = 0.0,
) -> Speedup:
    """Interleaved ``rounds`` of (baseline, candidate) runtime observations, then their speedup.

    Round ``i`` observes both sides, the baseline first in even rounds and the
    candidate first in odd ones; the interval resamples whole rounds
    (:func:`paired_speedup_interval`).

    ``base`` is an env at the benchmark as loaded; ``candidate`` one at the
    module to measure (each observation: ``xla.runtime.repetitions`` runs).
    """
    b, c = interleaved(base, candidate, rounds, baseline)
    return paired_speedup_interval(b, c, confidence=confidence, seed=seed, tolerance=tolerance)


def abba(first: Callable[[], T], second: Callable[[], T], rounds: int) -> tuple[list[T], list[T]]:
    """``rounds`` calls of each, (first's, second's), in ABBA order: which goes first alternates
    (first, second, second, first, ...), so a linear drift of the machine falls on both alike."""
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    a: list[T] = []
    b: list[T] = []
    for i in range(rounds):
        if i % 2 == 0:
            a.append(first())
            b.append(second())
        else:
            b.append(second())
            a.append(first())
    return a, b


def interleaved(
    base: CompilerEnv, candidate: CompilerEnv, rounds: int, baseline: str = "initial"
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """:func:`compare`'s ``rounds`` observations a side, (baseline's, candidate's), in ABBA order."""
    return abba(lambda: measure_runtime(base, baseline), lambda: measure_runtime(candidate, "initial"), rounds)


def compare_in_sessions(
    benchmark: Any,
    candidate: str,
    sessions: int = 3,
    rounds: int = 2,
    baseline: str = "initial",
    repetitions: int = 10,
    start: str = "",
    confidence: float = 0.95,
    seed: int = 0,
    tolerance: float = 0.0,
    env_id: str = "xla-v0",
    pipeline: str = "full",
) -> Speedup:
    """:func:`compare` in ``sessions`` fresh pairs of envs, ``rounds`` interleaved rounds each.

    ``benchmark``: a URI or ``Benchmark``; ``candidate`` and ``start``: the
    commandlines of the measured module and of the baseline's env (``""``: the
    benchmark as loaded); ``pipeline``: their ``xla.runtime.pipeline``. The
    interval resamples sessions, then rounds within them
    (:func:`paired_speedup_interval` with ``sessions``).
    """
    if sessions < 1 or rounds < 1 or sessions * rounds < 2:
        raise ValueError(f"sessions, rounds: expected >= 1 each and >= 2 rounds in all, got {sessions} and {rounds}")
    b: list[np.ndarray] = []
    c: list[np.ndarray] = []
    ids: list[int] = []
    for k in range(sessions):
        bs, cs = session(benchmark, candidate, rounds, baseline, repetitions, start=start, env_id=env_id, pipeline=pipeline)
        b, c, ids = b + bs, c + cs, ids + [k] * len(bs)
    return paired_speedup_interval(b, c, confidence=confidence, seed=seed, tolerance=tolerance, sessions=ids)


def session(
    benchmark: Any, candidate: str, rounds: int, baseline: str = "initial", repetitions: int = 10,
    start: str = "", env_id: str = "xla-v0", pipeline: str = "full",
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """One session: two fresh envs (new services: new compiles and worker processes) at ``benchmark``,
    the first at the commandline ``start``, the second at ``candidate``; :func:`interleaved`'s rounds.

    A commandline pass that fails raises ``ValueError`` (a module to measure is replayed whole or not at all).
    """
    import compiler_gym

    with compiler_gym.make(env_id) as base, compiler_gym.make(env_id) as other:
        for env, commandline in ((base, start), (other, candidate)):
            env.reset(benchmark=benchmark)
            env.send_param("xla.runtime.repetitions", str(repetitions))
            env.send_param("xla.runtime.pipeline", pipeline)
            for action in env.commandline_to_actions(commandline):
                env.step(action)
        return interleaved(base, other, rounds, baseline)


def _samples(samples: Sequence[float] | np.ndarray) -> np.ndarray:
    x = np.asarray(samples, dtype=np.float64).ravel()
    if len(x) == 0:
        raise ValueError("need at least one runtime")
    if not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise ValueError("runtimes must be finite and > 0")
    return x


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
