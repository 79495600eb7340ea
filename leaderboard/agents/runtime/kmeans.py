"""k-means (k-means++ seeding, Lloyd's iterations) and cluster representatives, numpy only."""
from __future__ import annotations

import numpy as np

__all__ = ["kmeans", "representatives"]


def kmeans(
    X: np.ndarray, k: int, seed: int = 0, iterations: int = 50
) -> tuple[np.ndarray, np.ndarray]:
    """``(centers (k', d), labels (n,))`` with ``k' = min(k, distinct rows)``.

    Columns are used as given: standardize them first if their scales differ.
    """
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if len(X) == 0:
        raise ValueError("cannot cluster no points")
    k = min(k, len(np.unique(X, axis=0)))
    rng = np.random.default_rng(seed)
    centers = [X[rng.integers(len(X))]]
    for _ in range(1, k):  # k-means++: far points are likelier seeds
        d2 = np.min(_sq_distances(X, np.array(centers)), axis=1)
        centers.append(X[rng.choice(len(X), p=d2 / d2.sum())])
    C = np.array(centers)
    labels = np.full(len(X), -1)
    for _ in range(iterations):
        new = np.argmin(_sq_distances(X, C), axis=1)
        if np.array_equal(new, labels):
            break
        labels = new
        for j in range(len(C)):
            members = X[labels == j]
            if len(members):
                C[j] = members.mean(axis=0)
    return C, labels


def representatives(X: np.ndarray, k: int, seed: int = 0) -> list[int]:
    """One row index per k-means cluster: the member nearest its center, sorted."""
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    centers, labels = kmeans(X, k, seed=seed)
    chosen: list[int] = []
    for j in range(len(centers)):
        members = np.flatnonzero(labels == j)
        if len(members):
            d2 = _sq_distances(X[members], centers[j : j + 1])[:, 0]
            chosen.append(int(members[np.argmin(d2)]))
    return sorted(chosen)


def _sq_distances(X: np.ndarray, C: np.ndarray) -> np.ndarray:
    return np.maximum(
        (X * X).sum(axis=1)[:, None] - 2 * X @ C.T + (C * C).sum(axis=1)[None, :], 0.0
    )
