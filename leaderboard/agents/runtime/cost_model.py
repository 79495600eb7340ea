"""A learned cost model: ridge regression of log relative runtime on module features.

The target of a module is ``log(runtime / initial runtime)`` (measured medians),
so ``exp(-prediction)`` is a predicted speedup over the benchmark as loaded.
Ridge regression in closed form (numpy only) on standardized features: with a
few dozen measurements and ~140 features, the penalty does the work that
model selection would. :func:`held_out_spearman` reports accuracy as the rank
correlation between predicted and measured speedups on folds the model did
not see: ranking candidates is all the search asks of it.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = [
    "CostModel",
    "held_out_spearman",
    "leave_one_group_out_spearman",
    "load_measurements",
    "rank",
    "save_measurements",
    "spearman",
]


@dataclass
class CostModel:
    """Ridge regression, ``y ~ standardize(X) @ w + b``; refit from scratch by :meth:`fit`."""

    alpha: float = 1.0
    """L2 penalty on the weights (standardized features)"""
    mean_: np.ndarray = field(default_factory=lambda: np.zeros(0))
    scale_: np.ndarray = field(default_factory=lambda: np.ones(0))
    weights_: np.ndarray = field(default_factory=lambda: np.zeros(0))
    intercept_: float = 0.0
    n_samples_: int = 0

    def __post_init__(self) -> None:
        if not self.alpha > 0:
            raise ValueError(f"alpha must be > 0, got {self.alpha}")

    @property
    def fitted(self) -> bool:
        return self.n_samples_ > 0

    def fit(self, X: np.ndarray, y: np.ndarray) -> CostModel:
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        y = np.asarray(y, dtype=np.float64).ravel()
        if X.shape[0] != y.shape[0]:
            raise ValueError(f"{X.shape[0]} feature rows but {y.shape[0]} targets")
        if X.shape[0] == 0:
            raise ValueError("cannot fit on no samples")
        if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
            raise ValueError("features and targets must be finite")
        self.mean_ = X.mean(axis=0)
        scale = X.std(axis=0)
        self.scale_ = np.where(scale > 1e-12, scale, 1.0)  # constant columns contribute 0
        Z = (X - self.mean_) / self.scale_
        self.intercept_ = float(y.mean())
        yc = y - self.intercept_
        n, d = Z.shape
        if n < d:  # dual form: an n x n system
            self.weights_ = Z.T @ np.linalg.solve(Z @ Z.T + self.alpha * np.eye(n), yc)
        else:
            self.weights_ = np.linalg.solve(Z.T @ Z + self.alpha * np.eye(d), Z.T @ yc)
        self.n_samples_ = n
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Predicted ``log(runtime / initial runtime)`` per row (0 before any fit)."""
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        if not self.fitted:
            return np.zeros(X.shape[0])
        if X.shape[1] != self.mean_.shape[0]:
            raise ValueError(f"expected {self.mean_.shape[0]} features, got {X.shape[1]}")
        return ((X - self.mean_) / self.scale_) @ self.weights_ + self.intercept_

    def predict_speedup(self, X: np.ndarray) -> np.ndarray:
        """Predicted speedup over the benchmark as loaded (initial / predicted runtime)."""
        return np.exp(-self.predict(X))


def rank(values: np.ndarray) -> np.ndarray:
    """Ranks from 1, ties sharing their average rank (as Spearman's rho needs)."""
    values = np.asarray(values, dtype=np.float64).ravel()
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values))
    sorted_values = values[order]
    start = 0
    while start < len(values):
        stop = start
        while stop + 1 < len(values) and sorted_values[stop + 1] == sorted_values[start]:
            stop += 1
        ranks[order[start : stop + 1]] = (start + stop) / 2 + 1
        start = stop + 1
    return ranks


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation; nan when either side is constant or has < 2 values."""
    a, b = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"lengths differ: {a.shape} vs {b.shape}")
    if len(a) < 2:
        return float("nan")
    ra, rb = rank(a) - (len(a) + 1) / 2, rank(b) - (len(b) + 1) / 2
    denominator = float(np.sqrt((ra @ ra) * (rb @ rb)))
    return float(ra @ rb / denominator) if denominator > 0 else float("nan")


def held_out_spearman(
    X: np.ndarray, y: np.ndarray, folds: int = 5, alpha: float = 1.0, seed: int = 0
) -> float:
    """Rank correlation of predicted and measured speedups, out of fold.

    Each sample is predicted by a model fit on the other folds; the
    correlation is over the pooled out-of-fold predictions (nan below 3 samples).
    """
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    y = np.asarray(y, dtype=np.float64).ravel()
    if folds < 2:
        raise ValueError(f"folds must be >= 2, got {folds}")
    n = len(y)
    if n < 3:
        return float("nan")
    folds = min(folds, n)
    assignment = np.random.default_rng(seed).permutation(n) % folds
    predicted = np.empty(n)
    for k in range(folds):
        test = assignment == k
        model = CostModel(alpha=alpha).fit(X[~test], y[~test])
        predicted[test] = model.predict(X[test])
    # speedup = exp(-y): a monotone map, so the rank correlation of speedups
    return spearman(np.exp(-predicted), np.exp(-y))


def leave_one_group_out_spearman(
    groups: Sequence[tuple[np.ndarray, np.ndarray]], alpha: float = 1.0
) -> list[float]:
    """Per group (a benchmark's ``(X, y)``), the rank correlation of speedups predicted
    by a model fit on every other group: accuracy on a benchmark never measured."""
    out: list[float] = []
    for k, (X, y) in enumerate(groups):
        rest = [g for j, g in enumerate(groups) if j != k and len(g[1])]
        if not rest or len(y) < 2:
            out.append(float("nan"))
            continue
        model = CostModel(alpha=alpha).fit(np.vstack([g[0] for g in rest]), np.concatenate([g[1] for g in rest]))
        out.append(spearman(model.predict_speedup(X), np.exp(-np.asarray(y, dtype=np.float64))))
    return out


def save_measurements(path: str | Path, groups: Sequence[tuple[str, np.ndarray, np.ndarray]]) -> None:
    """Write ``(benchmark, features, log relative runtimes)`` groups to an ``.npz``."""
    groups = [g for g in groups if len(g[2])]
    if not groups:
        raise ValueError("no measurements to save")
    np.savez_compressed(
        path,
        X=np.vstack([g[1] for g in groups]),
        y=np.concatenate([g[2] for g in groups]),
        benchmark=np.array([g[0] for g in groups for _ in range(len(g[2]))]),
    )


def load_measurements(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """``(features, log relative runtimes)`` from :func:`save_measurements`' file."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"no measurements file {path}")
    with np.load(path) as data:
        X, y = np.asarray(data["X"], dtype=np.float64), np.asarray(data["y"], dtype=np.float64)
    if X.ndim != 2 or X.shape[0] != len(y):
        raise ValueError(f"{path}: {X.shape} features for {len(y)} targets")
    return X, y
