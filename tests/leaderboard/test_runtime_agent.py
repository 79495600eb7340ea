"""The runtime agent (leaderboard/agents/runtime): cost model, k-means, noise, search, policy.

Tiny budgets: a 20-instruction module, 2 runs per Runtime observation.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

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

#: The runtime agent's folder: its README and its committed results.
AGENT = Path(__file__).parents[2] / "leaderboard/agents/runtime"


def committed(name: str) -> Path:
    """``results/name`` of the runtime agent, or the test skipped if it is not committed."""
    path = AGENT / "results" / name
    if not path.is_file():
        pytest.skip(f"{name} is not committed")
    return path


#: A module on which many passes (cse, algsimp, dce, transpose-folding,
#: tuple-simplifier, ...) have something to do: many distinct candidates.
RUNTIME_HLO = b"""HloModule rt, entry_computation_layout={(f32[16,16]{1,0}, f32[16,16]{1,0})->f32[16,16]{1,0}}

ENTRY main {
  p = f32[16,16]{1,0} parameter(0)
  q = f32[16,16]{1,0} parameter(1)
  a = f32[16,16]{1,0} add(p, q)
  b = f32[16,16]{1,0} add(p, q)
  n = f32[16,16]{1,0} negate(a)
  nn = f32[16,16]{1,0} negate(n)
  t = f32[16,16]{1,0} transpose(q), dimensions={1,0}
  d = f32[16,16]{1,0} dot(nn, t), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  r1 = f32[256]{0} reshape(d)
  r2 = f32[16,16]{1,0} reshape(r1)
  c1 = f32[] constant(2)
  c2 = f32[] constant(3)
  c3 = f32[] add(c1, c2)
  bc = f32[16,16]{1,0} broadcast(c3), dimensions={}
  tu = (f32[16,16]{1,0}, f32[16,16]{1,0}) tuple(r2, b)
  g0 = f32[16,16]{1,0} get-tuple-element(tu), index=0
  g1 = f32[16,16]{1,0} get-tuple-element(tu), index=1
  dead = f32[16,16]{1,0} exponential(p)
  m = f32[16,16]{1,0} multiply(g0, g1)
  ROOT o = f32[16,16]{1,0} add(m, bc)
}
"""


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


# -- through the env --------------------------------------------------------


@pytest.fixture(scope="module")
def runtime_env() -> Iterator[object]:
    import compiler_gym
    from compiler_gym.datasets import Benchmark

    env = compiler_gym.make("xla-v0")
    env.reset(benchmark=Benchmark.from_file_contents("benchmark://test/runtime-lb", RUNTIME_HLO))
    try:
        yield env
    finally:
        env.close()


def test_adaptive_counts_fewer_real_measurements_on_the_same_candidates(runtime_env, monkeypatch):
    import leaderboard.agents.runtime.policy as policy_module
    from leaderboard.agents.runtime.features import FEATURE_NAMES, GRAPH_FEATURE_NAMES
    from leaderboard.agents.runtime.search import propose

    env = runtime_env
    env.reset()
    env.send_param("xla.runtime.repetitions", "2")
    candidates = propose(env, 6, 6, seed=0)
    assert len(candidates) >= 5
    assert len({c.key for c in candidates}) == len(candidates)
    assert all(c.features.shape == (len(FEATURE_NAMES),) for c in candidates)
    assert candidates[0].actions  # the default pipeline's order comes first
    with_graph = propose(env, 2, 6, seed=0, graph=True)
    assert with_graph[0].key == candidates[0].key
    assert with_graph[0].features.shape == (len(FEATURE_NAMES) + len(GRAPH_FEATURE_NAMES),)
    assert np.array_equal(with_graph[0].features[: len(FEATURE_NAMES)], candidates[0].features)
    # around the default: every other sequence is the default order with a few edits
    default = candidates[0].actions
    mutants = propose(env, 4, 6, seed=0, mutate=1.0)
    assert mutants[0].actions == default and len(mutants) >= 2
    assert all(abs(len(m.actions) - len(default)) <= 3 for m in mutants[1:])
    assert any(len(c.actions) < len(default) - 3 for c in candidates[1:])  # random ones are short
    with pytest.raises(ValueError, match="mutate must be in"):
        propose(env, 2, 6, mutate=1.5)
    # the default pipeline removes ops: fewer operand edges than the start module
    assert with_graph[0].features[len(FEATURE_NAMES)] < 0

    observations = []
    real = policy_module.measure_runtime

    def counted(e, baseline="initial"):
        observations.append(baseline)
        return real(e, baseline)

    monkeypatch.setattr(policy_module, "measure_runtime", counted)
    settings = dict(baseline_rounds=1, final_rounds=1, final_sessions=0, repetitions=2, budget=3, per_round=2,
                    refresh_every=2)
    reports = {}
    for mode in ("exhaustive", "adaptive"):
        observations.clear()
        reports[mode] = policy_module.RuntimeSearch(mode=mode, **settings).search(env, candidates)
        # one Runtime observation per measured candidate, and the baseline's:
        # once before, then again after every 2 candidates (interleaved)
        measured = reports[mode]["measurements"]
        assert reports[mode]["baseline_observations"] == 1 + (measured - 1) // 2
        assert len(observations) == reports[mode]["baseline_observations"] + measured
    assert reports["exhaustive"]["measurements"] == len(candidates)
    assert reports["adaptive"]["measurements"] == 3 < len(candidates)
    for report in reports.values():
        final = report["final"]
        assert final["low"] <= final["speedup"] <= final["high"]
        assert final["samples"] == 2 and final["sessions"] == 0  # one round of 2 runs a side, in the search's envs
    assert env.actions == []  # searching leaves the env where it was


def test_candidates_distinct_by_executable_exclude_the_baselines(runtime_env):
    from leaderboard.agents.runtime.search import baseline_keys, propose

    env = runtime_env
    env.reset()
    modules = propose(env, 8, 6, seed=0)
    executables = propose(env, 8, 6, seed=0, distinct="executable")
    keys = [c.key for c in executables]
    assert len(set(keys)) == len(keys)  # one candidate per executable
    assert env.observation["ExecutableDigest"] not in keys  # none compiles to the start's executable
    assert len(executables) <= len(modules)
    for c in executables:  # the key is the executable the candidate's passes make
        fork = env.fork()
        try:
            for a in c.actions:
                fork.step(a)
            assert fork.observation["ExecutableDigest"] == c.key
        finally:
            fork.close()
    default = str(env.observation["ExecutableDigestDefault"])
    assert baseline_keys(env, "executable", "default") == {default}
    assert baseline_keys(env, "executable", "initial") == set() == baseline_keys(env, "module", "default")
    assert default not in {c.key for c in propose(env, 8, 6, seed=0, distinct="executable", exclude={default})}
    with pytest.raises(ValueError, match="distinct must be one of"):
        propose(env, 2, 6, distinct="runtime")
    # without XLA's optimizing passes the candidates' own passes make the executables: more of them
    env.send_param("xla.runtime.pipeline", "agent")
    try:
        by_agent = propose(env, 8, 6, seed=0, distinct="executable")
    finally:
        env.send_param("xla.runtime.pipeline", "full")
    assert len(by_agent) > len(executables)


@pytest.mark.parametrize("baseline", ["initial", "default"])
def test_without_a_faster_candidate_the_winner_is_the_baselines_module(runtime_env, baseline):
    """No candidate (or none faster): the search's winner is what it measured against, so the start module, or
    XLA's default order replayed; its final measurement is then the baseline against itself."""
    from leaderboard.agents.runtime.policy import RuntimeSearch
    from leaderboard.agents.runtime.search import DEFAULT_ORDER

    search = RuntimeSearch(baseline=baseline, repetitions=1, baseline_rounds=1, final_rounds=2, final_sessions=0)
    report = search.search(runtime_env, [])
    expected = [] if baseline == "initial" else [runtime_env.action_space.names.index(n) for n in DEFAULT_ORDER]
    assert report["actions"] == search.fallback(runtime_env) == expected
    assert report["measurements"] == 0 and report["search_speedup"] == 1.0
    assert [runtime_env.action_space.names[a] for a in report["actions"]] == ([] if baseline == "initial" else list(DEFAULT_ORDER))


def test_known_orders_join_the_candidates_and_the_mutants_edit_them(runtime_env, tmp_path):
    from compiler_gym.compiler_env_state import CompilerEnvState, CompilerEnvStateWriter

    from leaderboard.agents.runtime.search import (
        DEFAULT_ORDER,
        orders_from_results,
        propose,
        read_result_orders,
    )

    env = runtime_env
    env.reset()
    uri = str(env.benchmark.uri)
    results = tmp_path / "results.csv"
    with open(results, "w") as f, CompilerEnvStateWriter(f) as writer:
        for benchmark, commandline in ((uri, "cse"), ("benchmark://test/other", "dce"), (uri, ""), (uri, "algsimp cse")):
            writer.write_state(CompilerEnvState(benchmark=benchmark, reward=0.0, walltime=1.0, commandline=commandline))
    orders = orders_from_results(env, read_result_orders([str(results)]))
    assert orders_from_results(env, {}) == []
    assert orders == [[env.action_space["cse"]], [env.action_space["algsimp"], env.action_space["cse"]]]
    candidates = propose(env, 6, 6, seed=0, orders=orders)
    assert candidates[1].actions == (env.action_space["cse"],)  # right after the default order
    around = propose(env, 8, 6, seed=0, mutate=1.0, orders=orders)
    assert any(len(c.actions) <= 2 + 3 for c in around[3:])  # edits of a short known order
    assert all(len(c.actions) >= len(DEFAULT_ORDER) - 3 or len(c.actions) <= 5 for c in around)


def test_missing_result_files_are_refused():
    from leaderboard.agents.runtime.policy import RuntimeSearch
    from leaderboard.agents.runtime.proposals import Proposals

    with pytest.raises(ValueError, match="from_results: expected results CSVs"):
        RuntimeSearch(from_results="no/such.csv")
    assert Proposals(from_results="no/such.csv").problems() == [
        "--from-results: expected a results CSV, got 'no/such.csv' (no such file)"
    ]


def test_policy_leaves_a_valid_replayable_state(runtime_env, tmp_path):
    from leaderboard.agents.runtime.policy import RuntimeSearch
    from leaderboard.agents.runtime.search import propose
    from leaderboard.eval import load_policy

    policy = load_policy(
        "leaderboard.agents.runtime.policy:RuntimeSearch(candidates=5, max_length=6, budget=3, per_round=2, "
        "repetitions=2, baseline_rounds=1, final_rounds=1, final_sessions=2)"
    )
    assert isinstance(policy, RuntimeSearch)
    env = runtime_env
    env.reset()
    policy(env)
    assert policy.last["kept"] and policy.last["measurements"] == 3
    # the final measurement in 2 fresh pairs of envs (a benchmark the new services only know from the env's
    # Benchmark object), one round of 2 runs a side each
    final = policy.last["final"]
    assert final["sessions"] == 2 and final["samples"] == 4 and final["low"] <= final["speedup"] <= final["high"]
    actions = list(env.actions)
    assert actions == policy.last["actions"]
    final = env.observation["OpCount"]
    env.reset()
    env.multistep(actions) if actions else None
    assert env.observation["OpCount"] == final
    assert env.commandline_to_actions(env.commandline()) == actions
    assert env.validate().okay()
    env.reset()
    env.send_param("xla.runtime.repetitions", "2")
    policy_candidates = propose(env, 5, 6, seed=0)  # what the policy proposed (same seed, same start)
    assert len(policy_candidates) == policy.last["candidates"]

    # the search's fastest two re-measured, the fastest of them kept; a prior from a file
    from leaderboard.agents.runtime.cost_model import save_measurements

    measured = policy.last["measured"]
    path = tmp_path / "prior.npz"
    X = np.stack([policy_candidates[i].features for i in sorted(measured)])
    save_measurements(path, [("runtime-lb", X, np.array([measured[i] for i in sorted(measured)]))])
    picky = RuntimeSearch(candidates=5, max_length=6, budget=3, per_round=2, repetitions=2, baseline_rounds=1,
                          final_rounds=1, final_sessions=0, finalists=2, prior=str(path))
    env.reset()
    picky(env)
    assert len(picky.last["finalists"]) <= 2
    if picky.last["finalists"]:
        best = max(picky.last["finalists"], key=picky.last["finalists"].get)
        assert picky.last["actions"] == list(policy_candidates[best].actions)
    assert list(env.actions) == picky.last["actions"]

    # a tolerance no speedup can clear: the env is left as it was handed over
    strict = RuntimeSearch(candidates=3, budget=2, per_round=2, repetitions=2, baseline_rounds=1,
                           final_rounds=1, final_sessions=0, tolerance=100.0, require_significant=True)
    env.reset()
    strict(env)
    assert not strict.last["kept"] and env.actions == []


@pytest.mark.parametrize(
    "bad",
    [{"mode": "all"}, {"baseline": "median"}, {"budget": 0}, {"repetitions": 0}, {"refresh_every": -1}, {"finalists": 0},
     {"mutate": 1.5}, {"explore": -0.1}, {"final_sessions": -1}, {"final_sessions": 1, "final_rounds": 1},
     {"distinct": "runtime"}, {"pipeline": "none"}],
)
def test_policy_rejects_bad_settings(bad):
    from leaderboard.agents.runtime.policy import RuntimeSearch

    with pytest.raises(ValueError):
        RuntimeSearch(**bad)


def test_script_flags_show_defaults_and_reject_bad_values(capsys):
    from leaderboard.agents.runtime.run import Args, parse_args

    assert parse_args([]) == Args()
    assert parse_args(["--budget", "3", "--baseline", "default"]).budget == 3
    assert parse_args(["--graph", "--transfer"]).graph and not parse_args(["--no-graph"]).graph
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    assert "(default: 8)" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        parse_args(["--baseline", "median"])
    with pytest.raises(SystemExit):
        parse_args(["--mutate", "2"])
    assert parse_args(["--distinct", "executable"]).distinct == "executable"
    assert parse_args(["--pipeline", "agent"]).pipeline == "agent"
    with pytest.raises(SystemExit):
        parse_args(["--pipeline", "none"])
    with pytest.raises(SystemExit):
        parse_args(["--distinct", "runtime"])
    with pytest.raises(SystemExit):
        parse_args(["--final-sessions", "1", "--final-rounds", "1"])


def test_plot_draws_a_report_and_refuses_an_empty_one(tmp_path):
    import json

    from leaderboard.agents.runtime.plot import main, plot

    committed = Path(__file__).parents[2] / "leaderboard/agents/runtime/results/tiny-smoke-rnn2.json"
    out = tmp_path / "figure.png"
    assert main([str(committed), "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = json.loads(committed.read_text())
    with pytest.raises(ValueError, match="with rows, got none"):
        plot({**report, "rows": []}, tmp_path / "empty.png")

    from leaderboard.agents.runtime.plot import table

    faster = dict(report["rows"][0], speedup=1.2, low=1.1, high=1.3, within_noise=False)
    lines = table({**report, "rows": [faster, *report["rows"][1:]]})
    assert "1.200 [1.100, 1.300] | **no: faster**" in lines[2]
    assert lines[-2].startswith(f"- {faster['mode']}: ") and lines[-2].endswith("; 1 final speedups above 1.0 beyond noise")
    with pytest.raises(ValueError, match="with rows, got none"):
        table({**report, "rows": []})


@pytest.mark.parametrize(
    "report", ["runtime-sample1.json", "runtime-sample1-mutate.json", "runtime-resnet3-mutate.json", "runtime-sample1-agent.json",
               "runtime-sample1-agent-known.json", "runtime-sample1-agent-known-finalists4.json",
               "runtime-vit1-agent-known-finalists4-sessions3.json", "runtime-vit8-known-finalists4-sessions3.json",
               "runtime-vit4-infer-known-finalists4-sessions3.json", "runtime-vit4-train-candidates96.json",
               "runtime-vit4-train-candidates64-module.json"]
)
def test_readme_tables_are_the_reports_tables(report):
    import json

    from leaderboard.agents.runtime.plot import table

    lines = table(json.loads(committed(report).read_text()))
    assert "\n".join(lines) in (AGENT / "README.md").read_text()
    assert lines[-1].startswith("- adaptive: ") and "beyond noise" in lines[-1]


def test_no_winner_of_the_known_orders_run_is_a_known_order():
    """The README's claim about runtime-sample1-agent-known: the op-count agents' orders were candidates, none won."""
    import csv
    import json

    from leaderboard.agents.runtime.search import read_result_orders, result_paths

    root = Path(__file__).parents[2]
    report = committed("runtime-sample1-agent-known.json")
    known = read_result_orders([str(root / p) for p in result_paths(json.loads(report.read_text())["args"]["from_results"])])
    with open(report.with_suffix(".csv")) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 12 and all(known.get(row["benchmark"]) for row in rows)
    assert not [row["benchmark"] for row in rows if row["commandline"] in known[row["benchmark"]]]


def test_vit_family_run_claims():
    """The README's claims about runtime-vit8-known-finalists4-sessions3: under XLA's full pipeline no proposal
    for an inference ViT compiles to another executable than the default's, and of the training ViTs' eight
    winners only those of the first benchmark are op-count agents' orders (greedy's and beam's, PPO's)."""
    import csv
    import json

    from leaderboard.agents.runtime.search import DEFAULT_ORDER, read_result_orders, result_paths

    root = Path(__file__).parents[2]
    report = committed("runtime-vit8-known-finalists4-sessions3.json")
    paths = result_paths(json.loads(report.read_text())["args"]["from_results"])
    orders = {Path(p).parent.name if "rl" not in p else "ppo": read_result_orders([str(root / p)]) for p in paths}
    with open(report.with_suffix(".csv")) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 16
    infer = [row for row in rows if row["benchmark"].endswith("-infer")]
    assert len(infer) == 8 and all(row["candidates"] == "0" and row["commandline"] == "" for row in infer)
    sources = {(row["benchmark"].rsplit("/", 1)[1], row["mode"]): sorted(
        name for name, known in orders.items() if row["commandline"] in known.get(row["benchmark"], []))
        for row in rows if row not in infer}
    first = "vit-l6-d128-h4-p4-i32-b2-adamw-train"
    assert sources.pop((first, "exhaustive")) == ["beam", "greedy"]
    assert sources.pop((first, "adaptive")) == ["ppo"]
    assert len(sources) == 6 and not any(sources.values())
    with open(report.with_name("runtime-vit4-infer-known-finalists4-sessions3.csv")) as f:
        again = list(csv.DictReader(f))  # after the fallback fix: no candidate, so XLA's default order wins
    assert sorted(row["benchmark"] for row in again) == sorted(row["benchmark"] for row in infer)
    assert all(row["candidates"] == "0" and row["commandline"] == " ".join(DEFAULT_ORDER) for row in again)


@pytest.mark.parametrize("report, exhaustive, adaptive, ratio", [
    ("runtime-vit4-train-candidates96.json", (85, 115), (32, 48), "2.4"),
    ("runtime-vit4-train-candidates64-module.json", (250, 322), (32, 48), "6.7"),
])
def test_goal1_runs_claims(report, exhaustive, adaptive, ratio):
    """The README's "Goal 1 with more proposals": candidates and observations per mode, their ratio, and on
    every benchmark the two modes' final intervals overlapping (an equal speedup within noise)."""
    import json

    rows = json.loads(committed(report).read_text())["rows"]
    spent = {mode: (sum(r["measurements"] for r in rows if r["mode"] == mode),
                    sum(r["measurements"] + r["baseline_observations"] for r in rows if r["mode"] == mode))
             for mode in ("exhaustive", "adaptive")}
    assert spent == {"exhaustive": exhaustive, "adaptive": adaptive}
    assert f"{exhaustive[1] / adaptive[1]:.1f}" == ratio
    by_benchmark: dict[str, list[dict]] = {}
    for r in rows:
        by_benchmark.setdefault(r["benchmark"], []).append(r)
    assert len(by_benchmark) == 4
    assert all(max(a["low"], b["low"]) <= min(a["high"], b["high"]) for a, b in by_benchmark.values())


def test_runtime_table_measures_results_against_xlas_default(tmp_path, capsys):
    import json

    import compiler_gym
    from compiler_gym.compiler_env_state import CompilerEnvStateWriter

    from leaderboard.runtime_table import AS_LOADED, CONTROL, main, table

    uri = "benchmark://xla-rnn-v0/lstm-lm-l4-h32-s32-b4-infer"
    files = {}
    with compiler_gym.make("xla-v0") as env:
        for name, passes in (("start", []), ("cse", ["cse", "dce"])):
            env.reset(benchmark=uri)
            for p in passes:
                env.step(env.action_space.names.index(p))
            files[name] = tmp_path / f"{name}.csv"
            with open(files[name], "w") as f:
                CompilerEnvStateWriter(f).write_state(env.state, flush=True)
    out = tmp_path / "report.json"
    assert main(["measure", *(f"{k}={v}" for k, v in files.items()), f"--benchmarks={uri}", "--sessions=2",
                 "--rounds=1", "--repetitions=1", f"--out={out}"]) == 0
    report = json.loads(out.read_text())
    assert [r["label"] for r in report["rows"]] == [CONTROL, AS_LOADED, "start", "cse"]
    for row in report["rows"]:
        (b,) = row["benchmarks"]
        assert b["benchmark"] == uri and b["speedup"] == pytest.approx(b["baseline_median"] / b["candidate_median"])
        assert b["low"] <= b["speedup"] <= b["high"] and b["samples"] == 2
        assert row["faster"] + row["slower"] == int(not b["within_noise"])
        assert row["geomean"]["value"] == pytest.approx(b["speedup"]) and row["geomean"]["n"] == 1
    assert "cse" in report["rows"][3]["benchmarks"][0]["commandline"]
    for row in report["rows"][:2]:  # the built-in rows measure the module as loaded
        assert row["results"] == "" and "cse" not in row["benchmarks"][0]["commandline"]
    printed = capsys.readouterr().out
    assert main(["show", str(out)]) == 0
    assert capsys.readouterr().out == printed == "\n".join(table(report)) + "\n"
    assert "(one benchmark: no interval over benchmarks)" in printed and "nan" not in printed
    assert f"| start | 1 | {report['rows'][2]['geomean']['value']:.3f}x (one" in printed

    assert main(["measure", f"start={files['start']}", f"--benchmarks={uri}", "--sessions=1", "--rounds=2",
                 "--repetitions=1", "--no-control", f"--out={out}"]) == 0
    assert [r["label"] for r in json.loads(out.read_text())["rows"]] == ["start"]
    run_csv = tmp_path / "run.csv"  # a runtime search's CSV (run.py's): a winner per mode
    run_csv.write_text(f"benchmark,mode,speedup,commandline\n{uri},exhaustive,1.1,cse dce\n{uri},adaptive,1.0,\n")
    assert main(["measure", f"won={run_csv}:exhaustive", f"--benchmarks={uri}", "--sessions=1", "--rounds=2",
                 "--repetitions=1", "--no-control", "--pipeline=agent", f"--out={out}"]) == 0
    report = json.loads(out.read_text())
    assert report["pipeline"] == "agent" and report["rows"][0]["benchmarks"][0]["commandline"] == "cse dce"
    assert table(report)[-1].endswith("without XLA's optimizing passes (pipeline agent)")
    capsys.readouterr()
    run_csv.write_text(f"benchmark,mode,speedup,commandline\n{uri},exhaustive,1.1,cse dce\n")
    with pytest.raises(SystemExit):
        main(["measure", f"won={run_csv}:adaptive", f"--benchmarks={uri}", f"--out={out}"])
    assert "run.csv:adaptive: expected a runtime search's CSV with adaptive rows, got none" in capsys.readouterr().err
    run_csv.write_text(f"benchmark,mode\n{uri},exhaustive\n")
    with pytest.raises(SystemExit):
        main(["measure", f"won={run_csv}:exhaustive", f"--benchmarks={uri}", f"--out={out}"])
    assert "got one without columns ['commandline']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["measure", f"x={files['start']}", f"--benchmarks={uri}", "--pipeline=fast", f"--out={out}"])
    assert "invalid choice: 'fast'" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # a suite that is none
        main(["measure", f"x={files['start']}", "--datasets=xla-nope-v0", f"--out={out}"])
    assert "xla-nope-v0" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # a results file without the benchmark
        main(["measure", f"x={files['start']}", "--benchmarks=benchmark://xla-rnn-v0/gru-lm-l4-h32-s32-b4-infer",
              f"--out={out}"])
    err = capsys.readouterr().err
    assert "x: " in err and "gru-lm-l4-h32-s32-b4-infer\n" in err and "more" not in err  # one missing, no "0 more"
    for bad, message in ((["nolabel"], "expected LABEL=RESULTS.csv, got 'nolabel'"),
                         ([f"x={files['start']}", f"x={files['cse']}"], "expected a label per row, got 'x' twice"),
                         ([f"{CONTROL}={files['cse']}"], "twice"),
                         ([f"y={tmp_path / 'none.csv'}"], "y: expected a results CSV"),
                         ([f"x={files['start']}", "--rounds=1", "--sessions=1"], "2 rounds in all, got 1 and 1")):
        with pytest.raises(SystemExit):
            main(["measure", *bad, f"--benchmarks={uri}", f"--out={out}"])
        assert message in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["show", str(tmp_path / "none.json")])
    assert "expected a runtime_table report" in capsys.readouterr().err


def test_runtime_table_row_of_several_files_takes_each_benchmark_from_the_last(tmp_path, capsys):
    """``a.csv:exhaustive,b.csv:exhaustive``: one row, b's module where b has the benchmark, a's elsewhere."""
    from leaderboard.runtime_table import main, read_commandlines

    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("benchmark,mode,commandline\nu1,exhaustive,p1\nu2,exhaustive,p2\nu2,adaptive,q2\n")
    b.write_text("benchmark,mode,commandline\nu2,exhaustive,r2\nu3,exhaustive,r3\n")
    assert read_commandlines(f"{a}:exhaustive,{b}:exhaustive") == {"u1": "p1", "u2": "r2", "u3": "r3"}
    assert read_commandlines(f"{b}:exhaustive,{a}:exhaustive") == {"u1": "p1", "u2": "p2", "u3": "r3"}
    assert read_commandlines(f"{a}:adaptive,{b}:exhaustive") == {"u2": "r2", "u3": "r3"}
    with pytest.raises(SystemExit):  # every file of the row must exist, checked before any env starts
        main(["measure", f"x={a}:exhaustive,{tmp_path / 'none.csv'}:exhaustive", "--benchmarks=u1",
              f"--out={tmp_path / 'r.json'}"])
    assert "x: expected a results CSV, got " in capsys.readouterr().err


def test_runtime_table_names_cells_by_family_or_by_benchmark():
    """One benchmark per family: cells say the family; several of one family (a family's run): the benchmark."""
    from leaderboard.runtime_table import table

    def report(uris):
        def benchmark(uri):
            return {"benchmark": uri, "speedup": 1.0, "low": 0.9, "high": 1.1}
        geomean = {"value": 1.0, "low": 0.95, "high": 1.05, "n": len(uris)}
        row = {"label": "x", "geomean": geomean, "faster": 0, "slower": 0, "benchmarks": [benchmark(u) for u in uris]}
        return {"rows": [row], "sessions": 2, "rounds": 2, "repetitions": 1, "seconds": 60, "versions": {"jaxlib": "0"}}

    mixed = table(report(["benchmark://xla-vit-v0/vit-a", "benchmark://xla-rnn-v0/lstm-b"]))[2]
    assert mixed.endswith("| vit 1.000 [0.900, 1.100]; rnn 1.000 [0.900, 1.100] |")
    family = table(report(["benchmark://xla-vit-v0/vit-a", "benchmark://xla-vit-v0/vit-b"]))[2]
    assert family.endswith("| vit-a 1.000 [0.900, 1.100]; vit-b 1.000 [0.900, 1.100] |")


def test_leaderboard_readme_runtime_table_is_the_reports():
    import json

    from leaderboard.runtime_table import table

    root = Path(__file__).parents[2]
    for report, readme in (("leaderboard/results/runtime-sample1.json", "leaderboard/README.md"),
                           ("leaderboard/agents/runtime/results/vit-winners-agent-sessions6.json",
                            "leaderboard/agents/runtime/README.md"),
                           ("leaderboard/agents/runtime/results/vit8-winners-sessions6.json",
                            "leaderboard/agents/runtime/README.md"),
                           ("leaderboard/agents/runtime/results/vit8-winners-sessions3-rounds10.json",
                            "leaderboard/agents/runtime/README.md"),
                           ("leaderboard/agents/runtime/results/vit8-winners-control-sessions3-rounds10.json",
                            "leaderboard/agents/runtime/README.md")):
        if not (root / report).is_file():
            pytest.skip(f"{report} is not committed")
        assert "\n".join(table(json.loads((root / report).read_text()))) in (root / readme).read_text()


@pytest.mark.parametrize("runs, excluding", [("a-a-run", 1), ("a-a-rounds10-run", 1)])
def test_noise_tables_are_the_committed_outputs(runs, excluding):
    """The runtime README's "Where the noise comes from": every sd is the committed outputs' of
    benchmarks/measure_runtime_noise.py (2 rounds a side, then 10), and as many A/A intervals exclude 1.0 as it says."""
    import re

    outputs = [(AGENT / f"results/noise/{runs}{i}.txt").read_text() for i in (1, 2)]
    sds: dict[tuple[str, str, int], str] = {}
    excluded = 0
    for run, text in enumerate(outputs, 1):
        for block in text.split("\n== ")[1:]:
            statistic = "median" if block.startswith("A/A, the median") else "minimum"
            for line in block.splitlines()[2:]:
                match = re.match(r"  (.+?)\s{2,}([\d.]+)\s+[\d.]+ \[([\d.]+), ([\d.]+)\]", line)
                if match:
                    sds[match[1], statistic, run] = match[2]
                    excluded += not float(match[3]) <= 1.0 <= float(match[4])
    assert len(sds) == 16 and excluded == excluding
    readme = (AGENT / "README.md").read_text()
    for pairing in ("two services", "one service, its workers", "one service, one worker", "one worker, one executable"):
        row = " | ".join([pairing] + [sds[pairing, s, r] for s in ("median", "minimum") for r in (1, 2)])
        assert f"| {row} |" in readme
