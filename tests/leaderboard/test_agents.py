"""Each search agent with a tiny budget, on a small module."""
from __future__ import annotations

import pytest

from leaderboard.agents.beam.policy import Beam
from leaderboard.agents.default_pipeline.policy import policy as default_pipeline
from leaderboard.agents.greedy.policy import Greedy
from leaderboard.agents.random_search.policy import RandomSearch


@pytest.mark.parametrize(
    "policy",
    [
        default_pipeline,
        Greedy(max_steps=3),
        Greedy(max_steps=2, after_default=True),
        Greedy(max_steps=3, lazy=True),
        Beam(width=2, depth=2),
        RandomSearch(trials=3, length=6, seed=1),
    ],
    ids=["default_pipeline", "greedy", "greedy_after_default", "greedy_lazy", "beam", "random_search"],
)
def test_agent_lowers_op_count_and_leaves_a_replayable_state(small_env, policy):
    env = small_env
    env.reset()
    start = env.observation["OpCount"]
    policy(env)
    final = env.observation["OpCount"]
    assert final <= start
    # The state the agent left is exactly its commandline, replayed.
    actions = list(env.actions)
    env.reset()
    env.multistep(actions) if actions else None
    assert env.observation["OpCount"] == final
    assert env.commandline_to_actions(env.commandline()) == actions


@pytest.mark.parametrize("lazy", [False, True])
def test_greedy_finds_every_reduction_on_the_small_module(small_env, lazy):
    env = small_env
    env.reset()
    Greedy(max_steps=10, lazy=lazy)(env)
    # cse merges the two adds, algsimp removes the double negation.
    assert env.observation["OpCount"] == 2
    assert env.observation["OpCount"] < env.observation["OpCountInitial"]


def test_lazy_greedy_ends_where_no_pass_helps(small_env):
    from leaderboard.agents.common import try_pass

    env = small_env
    env.reset()
    Greedy(lazy=True)(env)
    final = env.observation["OpCount"]
    for action in range(env.action_space.n):
        count = try_pass(env, action)
        assert count is None or count >= final


def test_random_search_is_reproducible(small_env):
    env = small_env
    runs = []
    for _ in range(2):
        env.reset()
        RandomSearch(trials=2, length=5, seed=7)(env)
        runs.append(list(env.actions))
    assert runs[0] == runs[1]


def test_greedy_after_default_is_never_worse_than_the_default_replay(small_env):
    env = small_env
    env.reset()
    default_pipeline(env)
    replay = env.observation["OpCount"]
    env.reset()
    Greedy(max_steps=5, after_default=True)(env)
    assert env.observation["OpCount"] <= replay
