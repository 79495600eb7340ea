"""The runtime agent through the env (leaderboard/agents/runtime): search, policy, script flags.

Tiny budgets: a 20-instruction module (conftest.py's RUNTIME_HLO), 2 runs per Runtime observation.
"""
from __future__ import annotations

import numpy as np
import pytest

# -- through the env (the runtime_env fixture: conftest.py) -----------------


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


# -- without the env: settings, flags ---------------------------------------


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
