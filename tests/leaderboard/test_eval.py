"""``--policy MODULE:FUNCTION`` loading, with and without literal arguments."""
from __future__ import annotations

import pytest

from leaderboard.agents.beam.policy import Beam
from leaderboard.agents.greedy.policy import policy as greedy
from leaderboard.eval import load_policy


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("leaderboard.agents.greedy.policy:policy", greedy),
        ("leaderboard.agents.beam.policy:Beam()", Beam()),
        ("leaderboard.agents.beam.policy:Beam(width=2, depth=3)", Beam(width=2, depth=3)),
        ("leaderboard.agents.beam.policy:Beam(5)", Beam(width=5)),
    ],
)
def test_load_policy(spec, expected):
    assert load_policy(spec) == expected


@pytest.mark.parametrize(
    "spec, message",
    [
        ("leaderboard.agents.greedy.policy", "MODULE:FUNCTION"),
        ("leaderboard.agents.greedy.policy:nope", "no attribute 'nope'"),
        ("leaderboard.agents.beam.policy:Beam(width=len('x'))", "literal arguments"),
        ("leaderboard.agents.beam.policy:Beam(width=2", "literal arguments"),
    ],
)
def test_load_policy_errors_say_what_was_expected(spec, message):
    with pytest.raises(ValueError, match=message):
        load_policy(spec)
