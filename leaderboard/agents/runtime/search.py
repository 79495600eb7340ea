"""Candidate pass sequences, and the two ways to pick the fastest: measure all, or adaptively.

:func:`propose` draws random pass sequences of random lengths, each pass
from the 13 passes of XLA's default pipeline (``FOCUS``; most of the 64
passes change nothing on a given module) or, with probability ``explore``,
from all of them; with ``include_default``, the default pipeline's own order
(prologue, simplification twice, epilogue) is the first sequence. A
``mutate`` fraction of the sequences are instead the default order with 1 to
3 random edits (insert any pass, delete one, append any pass: a local search
around the compiler's own choice, which short random sequences rarely
reach). ``orders`` adds known good orders (the op-count agents' results:
:func:`read_result_orders`, then :func:`orders_from_results`) after the default's, and mutants edit them too. Each is
applied on a fork; the distinct modules they make are kept (by HLO text; the
start module excluded: it is the baseline), with their features. With
``distinct="executable"`` they are told apart by the executable XLA compiles
them to instead (the ``ExecutableDigest`` observation: one full compile each,
no run): modules that compile to the same executable as another candidate, or
as one of ``exclude`` (the baseline's), can differ in runtime only by noise,
so they are not candidates at all. A ``measure`` callable gives a candidate's
``log(runtime / baseline runtime)``; each call is one real measurement.

- :func:`exhaustive` (mode a) measures every candidate.
- :func:`adaptive` (mode b) measures k-means representatives of the
  candidates, fits the cost model on what it measured, and in each further
  round measures the ``exploit`` candidates the model ranks fastest plus
  representatives of k-means clusters of the most promising unmeasured
  candidates (the ``promising`` fraction of them by predicted runtime),
  refitting after each round, until ``budget`` measurements.

Both return the measured candidate with the lowest runtime (or none, -1, if
none measured faster than the baseline).
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from compiler_gym.envs import CompilerEnv

from leaderboard.agents.runtime.cost_model import CostModel, held_out_spearman
from leaderboard.agents.runtime.features import module_features
from leaderboard.agents.runtime.kmeans import representatives
from leaderboard.agents.runtime.measure import apply_actions
from xla_service.catalog.pipelines import DEFAULT_EPILOGUE, DEFAULT_PROLOGUE, DEFAULT_SIMPLIFICATION

__all__ = [
    "DEFAULT_ORDER", "DISTINCT", "FOCUS", "Candidate", "Measure", "SearchResult", "adaptive", "baseline_keys", "default_actions",
    "exhaustive",
    "missing_paths", "mutant", "orders_from_results", "propose", "read_result_orders", "result_paths", "standardize",
]


DEFAULT_ORDER: tuple[str, ...] = (*DEFAULT_PROLOGUE, *DEFAULT_SIMPLIFICATION, *DEFAULT_SIMPLIFICATION, *DEFAULT_EPILOGUE)
FOCUS: tuple[str, ...] = tuple(dict.fromkeys(DEFAULT_ORDER))
#: How candidates are told apart: by module (HLO text) or by the executable XLA compiles them to.
DISTINCT = ("module", "executable")


@dataclass(frozen=True)
class Candidate:
    actions: tuple[int, ...]
    features: np.ndarray  # module features minus the start module's
    key: str  # sha256 of the module's HLO text, or its ExecutableDigest (propose's ``distinct``)


Measure = Callable[[Candidate], float]


@dataclass
class SearchResult:
    mode: str
    candidates: list[Candidate]
    measured: dict[int, float] = field(default_factory=dict)  # index -> log relative runtime
    rounds: list[dict[str, Any]] = field(default_factory=list)

    @property
    def n_measurements(self) -> int:
        return len(self.measured)

    @property
    def best(self) -> int:
        """Index of the fastest measured candidate; -1 if none beat the baseline."""
        if not self.measured:
            return -1
        index = min(self.measured, key=lambda i: (self.measured[i], i))
        return index if self.measured[index] < 0 else -1

    @property
    def best_actions(self) -> list[int]:
        return list(self.candidates[self.best].actions) if self.best >= 0 else []


def propose(
    env: CompilerEnv,
    n: int,
    max_length: int,
    seed: int = 0,
    explore: float = 0.2,
    include_default: bool = True,
    tries_per_candidate: int = 4,
    graph: bool = False,
    mutate: float = 0.0,
    distinct: str = "module",
    exclude: Collection[str] = (),
    orders: Sequence[Sequence[int]] = (),
) -> list[Candidate]:
    """Up to ``n`` distinct candidate modules from random pass sequences, from env's state:
    distinct by ``distinct`` (:data:`DISTINCT`), none with the start's key or one of ``exclude``.

    ``orders``: known good pass orders (e.g. the op-count agents' results for this
    benchmark, :func:`orders_from_results`), tried right after the default order; a
    mutant then edits the default order or one of them, drawn uniformly."""
    if n < 1 or max_length < 1:
        raise ValueError(f"n and max_length must be >= 1, got {n}, {max_length}")
    for name, value in (("explore", explore), ("mutate", mutate)):
        if not 0 <= value <= 1:
            raise ValueError(f"{name} must be in [0, 1], got {value}")
    if distinct not in DISTINCT:
        raise ValueError(f"distinct must be one of {DISTINCT}, got {distinct!r}")
    rng = np.random.default_rng(seed)
    focus = [env.action_space[name] for name in FOCUS]
    default = default_actions(env)
    sequences: list[list[int]] = ([default] if include_default else []) + [list(o) for o in orders]
    bases = [default, *sequences[len(sequences) - len(orders):]]
    for _ in range(n * tries_per_candidate - len(sequences)):
        if rng.random() < mutate:
            base = bases[int(rng.integers(len(bases)))] if orders else default  # no draw without orders: runs reproduce
            sequences.append(mutant(base, env.action_space.n, rng))
            continue
        length = int(rng.integers(1, max_length + 1))
        sequences.append(
            [int(rng.integers(env.action_space.n)) if rng.random() < explore else int(rng.choice(focus)) for _ in range(length)]
        )
    start = module_features(env, graph=graph)
    seen = {_key(env, distinct), *exclude}
    candidates: list[Candidate] = []
    for actions in sequences:
        if len(candidates) >= n:
            break
        fork = env.fork()
        try:
            applied = apply_actions(fork, actions)
            key = _key(fork, distinct)
            if key in seen:
                continue
            seen.add(key)
            candidates.append(Candidate(tuple(applied), module_features(fork, graph=graph) - start, key))
        finally:
            fork.close()
    return candidates


def default_actions(env: CompilerEnv) -> list[int]:
    """XLA's default order (:data:`DEFAULT_ORDER`) as env's actions."""
    return [int(env.action_space[name]) for name in DEFAULT_ORDER]


def result_paths(from_results: str) -> list[str]:
    """The paths in a comma-separated ``from_results`` (empty entries dropped)."""
    return [path for path in from_results.split(",") if path]


def missing_paths(paths: Sequence[str]) -> list[str]:
    """Those of ``paths`` that are no file."""
    return [path for path in paths if not os.path.isfile(path)]


def read_result_orders(paths: Sequence[str]) -> dict[str, list[str]]:
    """Benchmark URI -> the pass orders (commandlines) that the results CSVs at ``paths``
    (``leaderboard.eval``'s) hold for it, in file order; orders that replay no pass are
    left out. Read once, then looked up per benchmark by :func:`orders_from_results`."""
    from compiler_gym.compiler_env_state import CompilerEnvStateReader

    orders: dict[str, list[str]] = {}
    for path in paths:
        with open(path) as f, CompilerEnvStateReader(f) as reader:
            for state in reader:
                if state.commandline.strip():
                    orders.setdefault(state.benchmark, []).append(state.commandline)
    return orders


def orders_from_results(env: CompilerEnv, orders: Mapping[str, Sequence[str]]) -> list[list[int]]:
    """The pass orders of ``orders`` (:func:`read_result_orders`'s) for env's benchmark, as actions."""
    uri = str(env.benchmark.uri if hasattr(env.benchmark, "uri") else env.benchmark)
    return [[int(a) for a in env.commandline_to_actions(commandline)] for commandline in orders.get(uri, ())]


def baseline_keys(env: CompilerEnv, distinct: str, baseline: str) -> set[str]:
    """The keys :func:`propose` must exclude besides the start's: with ``distinct="executable"``
    and ``baseline="default"``, the executable of XLA's default module (``RuntimeDefault``'s)."""
    if distinct == "executable" and baseline == "default":
        return {str(env.observation["ExecutableDigestDefault"])}
    return set()


def mutant(order: Sequence[int], n_actions: int, rng: np.random.Generator, max_edits: int = 3) -> list[int]:
    """``order`` with 1 to ``max_edits`` random edits: insert any of ``n_actions``
    passes anywhere, delete one pass (unless it is the only one), or append any pass."""
    actions = list(order)
    for _ in range(int(rng.integers(1, max_edits + 1))):
        edit = int(rng.integers(3))
        if edit == 1 and len(actions) > 1:
            del actions[int(rng.integers(len(actions)))]
        elif edit == 0:
            actions.insert(int(rng.integers(len(actions) + 1)), int(rng.integers(n_actions)))
        else:
            actions.append(int(rng.integers(n_actions)))
    return actions


def exhaustive(candidates: Sequence[Candidate], measure: Measure) -> SearchResult:
    """Mode (a): measure every candidate."""
    result = SearchResult("exhaustive", list(candidates))
    for i, candidate in enumerate(candidates):
        result.measured[i] = float(measure(candidate))
    result.rounds.append({"round": 0, "measured": list(range(len(candidates)))})
    return result


def adaptive(
    candidates: Sequence[Candidate],
    measure: Measure,
    budget: int = 12,
    per_round: int = 4,
    exploit: int = 1,
    promising: float = 0.5,
    alpha: float = 1.0,
    seed: int = 0,
    prior: tuple[np.ndarray, np.ndarray] | None = None,
) -> SearchResult:
    """Mode (b): cluster, measure representatives, rank the rest with the refit cost model.

    ``prior``, ``(features, log relative runtimes)`` measured elsewhere (other
    benchmarks), joins every fit: the model ranks from the first round on.
    """
    if budget < 1 or per_round < 1:
        raise ValueError(f"budget and per_round must be >= 1, got {budget}, {per_round}")
    if not 0 <= exploit <= per_round:
        raise ValueError(f"exploit must be in [0, per_round], got {exploit}")
    if not 0 < promising <= 1:
        raise ValueError(f"promising must be in (0, 1], got {promising}")
    result = SearchResult("adaptive", list(candidates))
    if not candidates:
        return result
    F = np.stack([c.features for c in candidates])  # the model's inputs (it standardizes them)
    X = standardize(F)  # k-means' space
    prior_X, prior_y = (np.zeros((0, F.shape[1])), np.zeros(0)) if prior is None else prior
    if prior_X.shape[0] != len(prior_y) or (len(prior_y) and prior_X.shape[1] != F.shape[1]):
        raise ValueError(f"prior: {prior_X.shape} features for {len(prior_y)} targets, candidates have {F.shape[1]}")
    model = CostModel(alpha=alpha)

    def run(indices: list[int], round_: int, **info: Any) -> None:
        for i in indices:
            result.measured[i] = float(measure(candidates[i]))
        result.rounds.append({"round": round_, "measured": indices, **info})

    if len(prior_y):  # already a model: its fastest-predicted candidates join round 0's representatives
        model.fit(prior_X, prior_y)
        head = [int(i) for i in np.argsort(model.predict(F), kind="mergesort")[: min(exploit, budget)]]
    else:
        head = []
    quota = min(per_round, budget) - len(head)
    first = sorted(set(head) | set(representatives(X, quota, seed=seed) if quota > 0 else []))
    run(first, 0)
    round_ = 1
    while len(result.measured) < min(budget, len(candidates)):
        seen = sorted(result.measured)
        unseen = np.array([i for i in range(len(candidates)) if i not in result.measured])
        model.fit(np.vstack([prior_X, F[seen]]), np.concatenate([prior_y, [result.measured[i] for i in seen]]))
        predicted = model.predict(F[unseen])
        order = unseen[np.argsort(predicted, kind="mergesort")]  # fastest predicted first
        quota = min(per_round, budget - len(result.measured))
        chosen = [int(i) for i in order[: min(exploit, quota)]]
        rest = order[len(chosen) :]
        pool = rest[: max(1, int(np.ceil(promising * len(rest))))]
        if quota > len(chosen) and len(pool):
            reps = representatives(X[pool], quota - len(chosen), seed=seed + round_)
            chosen += [int(pool[j]) for j in reps]
        run(chosen, round_, model_samples=len(seen), held_out_spearman=_cv(F, result, seen, alpha, seed))
        round_ += 1
    return result


def standardize(X: np.ndarray) -> np.ndarray:
    """Columns to zero mean and unit variance (constant columns to 0): k-means' space."""
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    scale = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(scale > 1e-12, scale, 1.0)


def _cv(X: np.ndarray, result: SearchResult, seen: list[int], alpha: float, seed: int) -> float:
    y = np.array([result.measured[i] for i in seen])
    return held_out_spearman(X[seen], y, folds=min(5, len(seen)), alpha=alpha, seed=seed) if len(seen) >= 3 else float("nan")


def _key(env: CompilerEnv, distinct: str) -> str:
    if distinct == "executable":
        return str(env.observation["ExecutableDigest"])
    return hashlib.sha256(str(env.observation["Hlo"]).encode()).hexdigest()
