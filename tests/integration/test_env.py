"""compiler_gym.make("xla-v0") end to end: real gRPC, real XLA passes."""
from __future__ import annotations

import numpy as np
import pytest
from integration.modules import SMALL_HLO

from xla_service.catalog.opcodes import OPCODE_INDEX, OPCODES
from xla_service.catalog.passes import PASS_NAMES
from xla_service.catalog.pipelines import DEMO_SEQUENCE as DEFAULT_SEQUENCE


def test_action_space_is_the_pass_catalog(env):
    assert list(env.action_space.names) == list(PASS_NAMES)
    assert len(env.action_space.names) >= 40


def test_reset_observes_the_normalized_benchmark(env):
    counts = env.reset()
    assert counts.shape == (len(OPCODES),)
    op_count = env.observation["OpCount"]
    uncounted = counts[OPCODE_INDEX["parameter"]] + counts[OPCODE_INDEX["constant"]]
    assert op_count == counts.sum() - uncounted
    assert op_count == env.observation["OpCountInitial"]
    assert env.observation["Hlo"].startswith("HloModule")
    assert env.observation["OpCountDefault"] < op_count


def test_step_reward_is_the_op_count_reduction(env):
    env.reset()
    before = env.observation["OpCount"]
    _, reward, done, info = env.step(env.action_space["cse"])
    after = env.observation["OpCount"]
    assert not done and not info["action_had_no_effect"]
    assert after < before
    assert reward == before - after
    # cse again finds nothing more to merge.
    _, reward, _, info = env.step(env.action_space["cse"])
    assert info["action_had_no_effect"] and reward == 0


def test_replaying_xla_default_pipeline_pass_by_pass_matches_it(env):
    """XLA's own passes, one step each, reach what XLA's default pipeline reaches."""
    env.reset()
    for name in DEFAULT_SEQUENCE:
        env.step(env.action_space[name])
    assert env.observation["OpCount"] == env.observation["OpCountDefault"]
    assert env.commandline() == " ".join(DEFAULT_SEQUENCE)
    assert env.commandline_to_actions(env.commandline()) == env.actions


def test_hlo_observation_is_what_the_next_pass_receives(env):
    from compiler_gym.datasets import Benchmark

    env.reset()
    env.step(env.action_space["algsimp"])
    text = env.observation["Hlo"]
    count = env.observation["OpCount"]
    # The observed module, loaded as a benchmark, is already normalized.
    env.reset(benchmark=Benchmark.from_file_contents("benchmark://test/observed", text.encode()))
    assert env.observation["Hlo"] == text
    assert env.observation["OpCount"] == count


def test_custom_benchmark(env):
    from compiler_gym.datasets import Benchmark

    env.reset(benchmark=Benchmark.from_file_contents("benchmark://test/small", SMALL_HLO))
    assert env.observation["OpCount"] == 3
    _, reward, _, _ = env.step(env.action_space["cse"])
    assert env.observation["OpCount"] == 2 and reward == 1
    counts = env.observation["OpcodeCounts"]
    assert counts[OPCODE_INDEX["add"]] == 1 and counts[OPCODE_INDEX["multiply"]] == 1


@pytest.mark.parametrize(
    "text, expected",
    [
        (b"", "expected HLO text, got nothing"),
        (b"   \n", "Empty HLO module"),
        (SMALL_HLO.replace(b"multiply(a, b)", b"multiplly(a, b)"), "line 7"),
        (SMALL_HLO[:80], "parse error"),
        (b"\xff\xfe not text", "not UTF-8"),
    ],
    ids=["empty", "blank", "bad-opcode", "truncated", "binary"],
)
def test_bad_benchmark_is_a_clear_error_and_the_service_survives(env, request, text, expected):
    from compiler_gym.datasets import Benchmark

    uri = f"benchmark://test/bad-{request.node.callspec.id}"
    with pytest.raises(ValueError, match=expected) as error:
        env.reset(benchmark=Benchmark.from_file_contents(uri, text))
    assert uri in str(error.value)
    env.reset(benchmark="benchmark://xla-gpt2-v0/gpt2-l2-d64-h4-s32-b2-adam-f32-train")
    assert env.observation["OpCount"] > 0


def test_unknown_action_is_a_clear_error(env):
    env.reset()
    with pytest.raises(ValueError, match="expected an index in"):
        env.multistep([len(PASS_NAMES) + 5])
    with pytest.raises(ValueError, match="Did you mean 'algsimp'"):
        env.commandline_to_actions("cse algsmp")
    assert env.step(env.action_space["dce"])[2] is False


def test_step_before_reset_is_a_clear_error():
    import compiler_gym
    from compiler_gym.errors import SessionNotFound

    with compiler_gym.make("xla-v0") as fresh:
        with pytest.raises(SessionNotFound, match="reset"):
            fresh.step(0)


def test_fork_is_independent(env):
    env.reset()
    env.step(env.action_space["cse"])
    fork = env.fork()
    try:
        assert fork.observation["OpCount"] == env.observation["OpCount"]
        fork.step(fork.action_space["algsimp"])
        assert fork.observation["OpCount"] < env.observation["OpCount"]
        assert env.actions == [PASS_NAMES.index("cse")]
    finally:
        fork.close()
    env.step(env.action_space["dce"])  # the parent session still works


def test_observations_are_consistent_across_spaces(env):
    env.reset()
    counts = env.observation["OpcodeCounts"]
    assert isinstance(counts, np.ndarray) and counts.dtype == np.int64
    assert counts.min() >= 0
