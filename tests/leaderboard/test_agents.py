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
        Beam(width=2, depth=4, lazy=True, patience=1),
        Beam(width=2, depth=4, lazy=True, patience=1, diverse=True),
        RandomSearch(trials=3, length=6, seed=1),
        RandomSearch(length=4, seconds=0.5),
    ],
    ids=[
        "default_pipeline", "greedy", "greedy_after_default", "greedy_lazy", "beam", "beam_lazy", "beam_diverse",
        "random_search", "random_search_seconds",
    ],
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


@pytest.mark.parametrize("lazy,diverse", [(False, False), (True, False), (True, True)])
def test_beam_finds_every_reduction_on_the_small_module(small_env, lazy, diverse):
    env = small_env
    env.reset()
    Beam(width=2, depth=6, lazy=lazy, patience=2, diverse=diverse)(env)
    assert env.observation["OpCount"] == 2
    # the shortest sequence to the best state: no pass in it is wasted
    assert len(env.actions) == 2


@pytest.mark.parametrize("policy", [Greedy(lazy=True), Beam(width=1, depth=20, lazy=True, patience=1)], ids=["greedy", "beam"])
def test_lazy_search_ends_where_no_pass_helps(small_env, policy):
    from leaderboard.agents.common import try_pass

    env = small_env
    env.reset()
    policy(env)
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


def test_random_search_with_seconds_runs_trials_until_the_budget_is_spent(small_env, monkeypatch):
    import leaderboard.agents.random_search.policy as random_search

    clock = iter(range(100))  # each reading of the clock one second later
    monkeypatch.setattr(random_search, "monotonic", lambda: float(next(clock)))
    env = small_env
    resets = []
    reset = env.reset
    monkeypatch.setattr(env, "reset", lambda *a, **k: resets.append(1) or reset(*a, **k))
    RandomSearch(trials=1, length=2, seconds=3.5)(env)
    assert len(resets) == 4 + 1  # trials at 0, 1, 2 and 3 s (not `trials`), then the reset to replay the best


@pytest.mark.parametrize("seconds", [0, -1.0])
def test_random_search_refuses_a_budget_that_is_not_positive(seconds):
    with pytest.raises(ValueError, match="expected seconds > 0"):
        RandomSearch(seconds=seconds)


def test_greedy_after_default_is_never_worse_than_the_default_replay(small_env):
    env = small_env
    env.reset()
    default_pipeline(env)
    replay = env.observation["OpCount"]
    env.reset()
    Greedy(max_steps=5, after_default=True)(env)
    assert env.observation["OpCount"] <= replay


class _Fork:
    closed = False

    def close(self):
        self.closed = True


@pytest.mark.parametrize("diverse,kept", [(False, [5, 6]), (True, [5, 9])])
def test_beam_keeps_the_best_per_last_pass_when_diverse(diverse, kept):
    # op counts 5 and 6 end with pass 0, 9 with pass 1
    children = [(6, [1, 0], _Fork()), (9, [0, 1], _Fork()), (5, [0], _Fork())]
    beam = Beam(width=2, diverse=diverse)._keep(list(children))
    assert [c[0] for c in beam] == kept
    assert [c[0] for c in children if c[2].closed] == [c for c in (5, 6, 9) if c not in kept]


@pytest.mark.parametrize("setting, recorded", [
    ("off", "off"),
    ("/data/store.sqlite", "/data/store.sqlite"),
    ("postgresql://gym:s3cret@db.example:5432/xla", "postgresql://gym@db.example:5432/xla"),
    ("postgresql://gym@db.example/xla", "postgresql://gym@db.example/xla"),
])
def test_runs_record_their_store_without_its_password(monkeypatch, setting, recorded):
    from leaderboard.agents.arguments import experience_store

    monkeypatch.setenv("XLA_GYM_STORE", setting)
    assert experience_store() == recorded
    monkeypatch.delenv("XLA_GYM_STORE")
    assert experience_store() == "default"


@pytest.mark.parametrize("asked, steps", [(0, 20), (5, 5), (40, 40)])
def test_a_trained_policy_acts_the_steps_asked_or_its_runs(asked: int, steps: int) -> None:
    from leaderboard.agents.common import acting_steps

    assert acting_steps(asked, 20) == steps


@pytest.mark.parametrize("bad", [-1, "20", True, 2.5, None])
def test_acting_steps_refuse_what_is_not_an_int_at_least_0(bad: object) -> None:
    from leaderboard.agents.common import acting_steps

    with pytest.raises(ValueError, match=f"expected episode_length an int >= 0 .*got {bad!r}"):
        acting_steps(bad, 20)
