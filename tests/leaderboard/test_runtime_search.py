"""The runtime agent's parts (leaderboard/agents/runtime): cost model, k-means, noise, search on synthetic candidates."""
from __future__ import annotations

import numpy as np
import pytest

from leaderboard.agents.runtime.cost_model import (
    CostModel,
    held_out_spearman,
    leave_one_group_out_spearman,
    rank,
    spearman,
)
from leaderboard.agents.runtime.kmeans import kmeans, representatives
from leaderboard.agents.runtime.measure import speedup_interval, within_noise
from leaderboard.agents.runtime.search import Candidate, adaptive, exhaustive

# -- cost model -------------------------------------------------------------


def test_rank_averages_ties_and_spearman_matches_known_values():
    assert rank(np.array([10.0, 30.0, 20.0, 20.0])).tolist() == [1.0, 4.0, 2.5, 2.5]
    assert spearman(np.arange(5), np.arange(5) ** 3) == pytest.approx(1.0)
    assert spearman(np.arange(5), -np.arange(5)) == pytest.approx(-1.0)
    # one swapped pair among 4: 1 - 6 * 2 / (4 * 15)
    assert spearman(np.array([1, 2, 3, 4]), np.array([1, 3, 2, 4])) == pytest.approx(0.8)
    assert np.isnan(spearman(np.ones(4), np.arange(4)))
    with pytest.raises(ValueError):
        spearman(np.arange(3), np.arange(4))


def _linear_data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6)) * np.array([1, 10, 0.1, 1, 1, 0])  # mixed scales, a constant column
    w = np.array([0.3, -0.02, 2.0, 0.0, 0.1, 5.0])
    return X, X @ w + 0.01 * rng.normal(size=n), w


def test_cost_model_fits_and_predicts_a_linear_relation():
    X, y, _ = _linear_data(40)
    model = CostModel(alpha=0.01).fit(X[:30], y[:30])
    predicted = model.predict(X[30:])
    assert np.max(np.abs(predicted - y[30:])) < 0.1
    assert spearman(model.predict_speedup(X[30:]), np.exp(-y[30:])) > 0.95
    # more features than samples: the dual form, still a sensible fit
    wide = CostModel(alpha=0.1).fit(np.hstack([X[:8], np.zeros((8, 20))]), y[:8])
    assert wide.predict(np.hstack([X[:8], np.zeros((8, 20))])).shape == (8,)
    assert CostModel().predict(X[:3]).tolist() == [0.0, 0.0, 0.0]  # unfitted: no opinion


def test_held_out_spearman_tells_signal_from_noise():
    X, y, _ = _linear_data(60)
    assert held_out_spearman(X, y, folds=5, alpha=0.1) > 0.9
    noise = np.random.default_rng(1).normal(size=60)
    assert abs(held_out_spearman(X, noise, folds=5, alpha=0.1)) < 0.4
    assert np.isnan(held_out_spearman(X[:2], y[:2]))


def test_a_model_fit_on_other_benchmarks_ranks_a_new_one():
    X, y, _ = _linear_data(60)
    groups = [(X[:20], y[:20]), (X[20:40], y[20:40]), (X[40:], y[40:])]
    assert min(leave_one_group_out_spearman(groups, alpha=0.1)) > 0.9
    # a group alone has nothing to learn from
    assert np.isnan(leave_one_group_out_spearman(groups[:1])[0])


@pytest.mark.parametrize("bad", [{"alpha": 0.0}, {"alpha": -1.0}])
def test_cost_model_rejects_bad_settings(bad):
    with pytest.raises(ValueError):
        CostModel(**bad)


def test_measurements_round_trip_through_a_file(tmp_path):
    from leaderboard.agents.runtime.cost_model import load_measurements, save_measurements

    X, y, _ = _linear_data(10)
    path = tmp_path / "m.npz"
    save_measurements(path, [("a", X[:4], y[:4]), ("empty", X[:0], y[:0]), ("b", X[4:], y[4:])])
    X2, y2 = load_measurements(path)
    assert np.array_equal(X2, X) and np.array_equal(y2, y)
    with pytest.raises(FileNotFoundError):
        load_measurements(tmp_path / "missing.npz")
    with pytest.raises(ValueError):
        save_measurements(path, [])


def test_cost_model_rejects_bad_data():
    with pytest.raises(ValueError):
        CostModel().fit(np.zeros((3, 2)), np.zeros(4))
    with pytest.raises(ValueError):
        CostModel().fit(np.array([[np.nan, 1.0]]), np.zeros(1))
    with pytest.raises(ValueError):
        CostModel().fit(np.zeros((3, 2)), np.zeros(3)).predict(np.zeros((1, 3)))


# -- k-means ----------------------------------------------------------------


def _blobs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    truth = np.repeat(np.arange(3), 15)
    return centers[truth] + rng.normal(scale=0.5, size=(45, 2)), truth


def test_kmeans_recovers_separated_clusters():
    X, truth = _blobs()
    centers, labels = kmeans(X, 3, seed=0)
    assert centers.shape == (3, 2)
    # the same partition, up to the names of the clusters
    assert len({(t, label) for t, label in zip(truth, labels)}) == 3
    assert len(set(labels.tolist())) == 3


def test_representatives_are_one_member_per_cluster_nearest_its_center():
    X, truth = _blobs()
    chosen = representatives(X, 3, seed=0)
    assert sorted(truth[chosen].tolist()) == [0, 1, 2]
    for i in chosen:
        members = X[truth == truth[i]]
        nearest = members[np.argmin(((members - members.mean(axis=0)) ** 2).sum(axis=1))]
        assert X[i].tolist() == nearest.tolist()
    # fewer distinct points than clusters asked for: one per distinct point
    assert len(representatives(np.array([[1.0, 1.0]] * 4 + [[2.0, 2.0]]), 3)) == 2
    with pytest.raises(ValueError):
        kmeans(X, 0)


# -- measurement noise ------------------------------------------------------


def test_speedup_interval_and_noise():
    rng = np.random.default_rng(0)
    base = 1e-3 * (1 + 0.05 * rng.standard_normal(30))
    same = speedup_interval(base, 1e-3 * (1 + 0.05 * rng.standard_normal(30)))
    assert same.within_noise and same.low <= 1 <= same.high
    faster = speedup_interval(base, 0.5e-3 * (1 + 0.05 * rng.standard_normal(30)))
    assert not faster.within_noise
    assert 1.8 < faster.low <= faster.speedup <= faster.high < 2.2
    assert faster.samples == 30
    # a tolerance makes small real differences count as noise
    slightly = speedup_interval(base, 0.97e-3 * (1 + 0.001 * rng.standard_normal(30)))
    assert not slightly.within_noise
    assert within_noise(slightly.low, slightly.high, tolerance=0.05)
    assert within_noise(0.9, 1.1) and not within_noise(1.01, 1.2) and not within_noise(0.5, 0.99)
    with pytest.raises(ValueError):
        within_noise(1.2, 1.0)
    with pytest.raises(ValueError):
        speedup_interval([1.0, -1.0], [1.0])
    with pytest.raises(ValueError):
        speedup_interval([1.0], [1.0], confidence=1.0)


def test_paired_interval_resamples_rounds_not_runs():
    from leaderboard.agents.runtime.measure import paired_speedup_interval

    rng = np.random.default_rng(0)
    load = [1.0, 1.0, 3.0, 1.0, 1.0, 3.0]  # the machine's load in each round, shared by both sides

    def rounds(seconds: float) -> list[np.ndarray]:
        return [seconds * f * (1 + 0.01 * rng.standard_normal(5)) for f in load]

    base = rounds(1e-3)
    same = paired_speedup_interval(base, rounds(1e-3))
    assert same.within_noise and same.samples == 30
    faster = paired_speedup_interval(base, rounds(0.5e-3))
    assert not faster.within_noise and faster.low <= 2.0 <= faster.high
    # bursts of load, twice during the candidate's observations, once during the
    # baseline's: runs bootstrapped one by one call it a slowdown, rounds do not
    quiet = [1e-3 * (1 + 0.01 * rng.standard_normal(20)) for _ in range(3)]
    b3 = [quiet[0], quiet[1], 1.5 * quiet[2]]
    c3 = [1.5 * quiet[2][::-1], 1.5 * quiet[1][::-1], quiet[0][::-1]]
    assert not speedup_interval(np.concatenate(b3), np.concatenate(c3)).within_noise
    assert paired_speedup_interval(b3, c3).within_noise
    with pytest.raises(ValueError):
        paired_speedup_interval(base, base[:3])


def test_paired_interval_over_sessions_counts_their_differences_as_noise():
    from leaderboard.agents.runtime.measure import paired_speedup_interval

    rng = np.random.default_rng(1)
    # the same module on both sides; each session's candidate executable is 4% off, up or down
    offsets = [1.04, 0.96, 1.04, 0.96]
    b = [1e-3 * (1 + 0.002 * rng.standard_normal(10)) for _ in offsets for _ in range(4)]
    c = [1e-3 * f * (1 + 0.002 * rng.standard_normal(10)) for f in offsets for _ in range(4)]
    ids = [i for i in range(len(offsets)) for _ in range(4)]
    first = paired_speedup_interval(b[:4], c[:4])  # one session: its 4% offset is beyond its rounds' noise
    assert not first.within_noise
    pooled = paired_speedup_interval(b, c, sessions=ids)
    assert pooled.within_noise and pooled.high - pooled.low > 0.04 and pooled.samples == 160
    assert paired_speedup_interval(b, c, sessions=ids).low == pooled.low  # seeded
    with pytest.raises(ValueError, match="a session id per round"):
        paired_speedup_interval(b, c, sessions=ids[:-1])
    from leaderboard.agents.runtime.measure import compare_in_sessions

    with pytest.raises(ValueError, match="2 rounds in all, got 1 and 1"):  # refused before any env starts
        compare_in_sessions("benchmark://xla-rnn-v0/lstm-lm-l4-h32-s32-b4-infer", "", sessions=1, rounds=1)


def test_compare_interleaves_abba_and_counts_rounds():
    from leaderboard.agents.runtime.measure import compare

    order = []

    class Fake:
        def __init__(self, name, seconds):
            self.name, self.seconds = name, seconds

        @property
        def observation(self):
            order.append(self.name)
            return {"Runtime": np.full(3, self.seconds) * (1 + 0.01 * len(order))}

    s = compare(Fake("b", 2e-3), Fake("c", 1e-3), rounds=4)
    assert order == ["b", "c", "c", "b", "b", "c", "c", "b"]
    assert s.samples == 12 and 1.9 < s.speedup < 2.1 and not s.within_noise
    with pytest.raises(ValueError):
        compare(Fake("b", 1e-3), Fake("c", 1e-3), rounds=0)


@pytest.mark.parametrize("rounds, expected", [(1, "ab"), (3, "abbaab")])
def test_abba_alternates_which_side_goes_first(rounds, expected):
    from leaderboard.agents.runtime.measure import abba

    order: list[str] = []
    first, second = abba(lambda: order.append("a") or len(order), lambda: order.append("b") or len(order), rounds)
    assert "".join(order) == expected and len(first) == len(second) == rounds
    assert [order[i - 1] for i in first] == ["a"] * rounds  # each side's results are its own calls'


# -- search on synthetic candidates ----------------------------------------


def _synthetic(n: int = 40, seed: int = 0) -> tuple[list[Candidate], dict[str, float]]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = X @ np.array([0.2, -0.1, 0.05, 0.0, 0.0]) + 0.005 * rng.normal(size=n)
    candidates = [Candidate((i,), X[i], str(i)) for i in range(n)]
    return candidates, {str(i): float(y[i]) for i in range(n)}


def test_adaptive_measures_fewer_and_the_model_finds_fast_candidates():
    candidates, truth = _synthetic()
    calls: list[str] = []

    def measure(c: Candidate) -> float:
        calls.append(c.key)
        return truth[c.key]

    full = exhaustive(candidates, measure)
    assert full.n_measurements == len(calls) == 40
    calls.clear()
    fast = adaptive(candidates, measure, budget=12, per_round=4, exploit=2, alpha=0.1, seed=0)
    assert fast.n_measurements == len(calls) == 12  # each candidate measured once
    assert len(set(calls)) == 12
    assert len(fast.rounds) == 3
    # guided by the refit model, it finds one of the 3 fastest of 40 with 12 measurements
    top3 = sorted(truth, key=truth.__getitem__)[:3]
    assert candidates[fast.best].key in top3
    assert full.best_actions == [int(sorted(truth, key=truth.__getitem__)[0])]


def test_adaptive_with_a_prior_measures_the_predicted_best_first():
    candidates, truth = _synthetic()
    others, other_truth = _synthetic(seed=1)  # "another benchmark": the same relation
    prior = (np.stack([c.features for c in others]), np.array([other_truth[c.key] for c in others]))
    fast = adaptive(candidates, lambda c: truth[c.key], budget=4, per_round=4, exploit=2, alpha=0.1, prior=prior)
    assert fast.n_measurements == 4 and len(fast.rounds) == 1
    assert candidates[fast.best].key == min(truth, key=truth.__getitem__)
    with pytest.raises(ValueError):
        adaptive(candidates, lambda c: truth[c.key], prior=(prior[0][:, :3], prior[1]))


def test_adaptive_rejects_bad_settings():
    candidates, truth = _synthetic(5)
    with pytest.raises(ValueError):
        adaptive(candidates, lambda c: truth[c.key], budget=0)
    with pytest.raises(ValueError):
        adaptive(candidates, lambda c: truth[c.key], per_round=2, exploit=3)


@pytest.mark.parametrize("seed", range(5))
def test_a_mutant_is_the_order_with_a_few_edits(seed):
    from leaderboard.agents.runtime.search import mutant

    order = list(range(10, 30))
    rng = np.random.default_rng(seed)
    changed = 0
    for _ in range(20):
        edited = mutant(order, 64, rng, max_edits=3)
        changed += edited != order  # an insert and a delete may cancel out, rarely
        assert abs(len(edited) - len(order)) <= 3 and all(0 <= a < 64 for a in edited)
        # at most 3 edits: the longest common subsequence keeps all but 3 of the order
        lcs = [[0] * (len(edited) + 1) for _ in range(len(order) + 1)]
        for i, a in enumerate(order):
            for j, b in enumerate(edited):
                lcs[i + 1][j + 1] = lcs[i][j] + 1 if a == b else max(lcs[i][j + 1], lcs[i + 1][j])
        assert lcs[-1][-1] >= len(order) - 3
    assert changed >= 15
    assert mutant([5], 64, np.random.default_rng(0), max_edits=1)  # never empties a one-pass order


def test_critical_path_counts_the_edges_of_the_longest_chain():
    from leaderboard.agents.runtime.features import critical_path

    assert critical_path(np.array([[0, 1, 2], [1, 2, 3]]), 4) == 3  # a chain
    assert critical_path(np.array([[0, 0, 1, 2, 3], [1, 2, 3, 3, 4]]), 6) == 3  # a diamond, a tail, an island
    assert critical_path(np.zeros((2, 0)), 3) == 0
    with pytest.raises(ValueError):
        critical_path(np.array([[0, 1], [1, 0]]), 2)  # a cycle
    with pytest.raises(ValueError):
        critical_path(np.array([[0], [5]]), 2)


def test_finalists_are_the_search_fastest_few_and_the_fastest_remeasured_wins(monkeypatch):
    from leaderboard.agents.runtime.policy import RuntimeSearch
    from leaderboard.agents.runtime.search import SearchResult

    candidates, _ = _synthetic(6)
    # by the search: 2 fastest, then 4, 0, 1; 3 and 5 slower than the baseline
    result = SearchResult("exhaustive", candidates, {0: -0.1, 1: -0.05, 2: -0.3, 3: 0.2, 4: -0.2, 5: 0.0})
    remeasured = {(2,): 1.01, (4,): 1.2, (0,): 1.1, (1,): 5.0}
    calls = []

    def verify(self, base, actions, sessions):
        assert sessions == 0  # finalists are re-measured in the search's envs; only the winner in fresh ones
        calls.append(tuple(actions))
        return {"speedup": remeasured[tuple(actions)]}

    monkeypatch.setattr(RuntimeSearch, "verify", verify)
    chosen, speedups = RuntimeSearch(finalists=3)._choose(None, result)
    assert calls == [(2,), (4,), (0,)]  # not 1: only the search's fastest 3
    assert chosen == 4 and speedups == {2: 1.01, 4: 1.2, 0: 1.1}
    calls.clear()
    assert RuntimeSearch(finalists=1)._choose(None, result) == (2, {}) and calls == []
    none_faster = SearchResult("exhaustive", candidates, {3: 0.2, 5: 0.0})
    assert RuntimeSearch(finalists=3)._choose(None, none_faster) == (-1, {})
