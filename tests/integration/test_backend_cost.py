"""``BackendCost`` spaces and the backend rewards through the stock client and Gymnasium.

The values are deterministic: byte-identical from two fresh services that
share nothing, and served from the experience store to a third service.
"""
from __future__ import annotations

import numpy as np
import pytest
from compiler_gym.datasets import Benchmark

from tests.integration.modules import CUSTOM_CALL_HLO
from xla_service.catalog.backend import BACKEND_KEYS, BACKEND_OBJECTIVES

SMALL_BENCHMARK = "benchmark://xla-gpt2-v0/gpt2-l1-d64-h2-s32-b2-f32-infer"
SPACES = [f"BackendCost{m}{s}" for m in ("", "Agent") for s in ("", "Initial", "Default")]
TIME = BACKEND_KEYS.index("estimated_seconds")


def _values(monkeypatch, store: str) -> dict[str, bytes]:
    import compiler_gym

    monkeypatch.setenv("XLA_GYM_STORE", store)
    with compiler_gym.make("xla-v0", benchmark=SMALL_BENCHMARK) as env:
        env.reset()
        env.multistep([env.action_space["cse"], env.action_space["algsimp"]])
        values = {name: np.asarray(env.observation[name]).tobytes() for name in SPACES}
        stats = env.send_param("xla.engine.stats", "")
    values["stats"] = stats.encode()
    return values


@pytest.mark.slow
def test_values_are_byte_identical_across_services_and_served_from_the_store(monkeypatch, tmp_path):
    import json

    first = _values(monkeypatch, "off")
    second = _values(monkeypatch, "off")
    assert all(first[name] == second[name] for name in SPACES)
    store = str(tmp_path / "store.sqlite")
    _values(monkeypatch, store)
    warm = _values(monkeypatch, store)
    assert all(first[name] == warm[name] for name in SPACES)
    cache = json.loads(warm["stats"])["cache"]
    assert cache["backing_hits"]["observation"] >= len(SPACES)


def test_spaces_rewards_and_their_relation(env):
    env.reset(benchmark=SMALL_BENCHMARK)
    for name in SPACES:
        space = env.observation.spaces[name]
        assert space.deterministic and space.platform_dependent
        value = env.observation[name]
        assert value.shape == (len(BACKEND_KEYS),) and (value >= 0).all() and value[TIME] > 0
    assert np.array_equal(env.observation["BackendCost"], env.observation["BackendCostInitial"])
    for objective, key in BACKEND_OBJECTIVES.items():
        index = BACKEND_KEYS.index(key)
        for suffix in ("", "Agent"):
            space = f"BackendCost{suffix}"
            env.reward_space = f"{objective}{suffix}Norm"
            env.reset(benchmark=SMALL_BENCHMARK)
            initial = env.observation[f"{space}Initial"][index]
            default = env.observation[f"{space}Default"][index]
            total = 0.0
            for name in ("dot_decomposer", "cse", "algsimp"):
                before = env.observation[space][index]
                _, reward, _, _ = env.step(env.action_space[name])
                after = env.observation[space][index]
                assert reward == pytest.approx((before - after) / default)
                total += reward
            assert total == pytest.approx((initial - env.observation[space][index]) / default)
            env.reward_space = f"{objective}{suffix}"
            env.reset(benchmark=SMALL_BENCHMARK)
            _, raw, _, _ = env.step(env.action_space["cse"])
            assert raw == pytest.approx(initial - env.observation[space][index])
    env.reward_space = "OpCount"


def test_a_module_the_backend_cannot_compile_names_module_and_reason(env):
    env.reset(benchmark=Benchmark.from_file_contents("benchmark://test/backend-custom-call", CUSTOM_CALL_HLO))
    for name in ("BackendCost", "BackendCostAgentDefault"):
        with pytest.raises(ValueError, match=r"benchmark://test/backend-custom-call.*" + name + ".*xla_gym_no_such_target"):
            env.observation[name]
    _, reward, done, _ = env.step(env.action_space["cse"])  # the session goes on
    assert not done and reward == 1


def test_the_gymnasium_env_takes_backend_spaces_and_rewards():
    import gymnasium

    import xla_service.gym  # noqa: F401  (registers xla-v0)

    env = gymnasium.make(
        "xla-v0", benchmarks=SMALL_BENCHMARK, observation=["OpcodeCounts", "BackendCostAgent"],
        reward="EstimatedTimeAgentNorm", max_episode_steps=3,
    )
    try:
        observation, _ = env.reset(seed=0)
        assert observation["BackendCostAgent"].shape == (len(BACKEND_KEYS),)
        start = observation["BackendCostAgent"][TIME]
        observation, reward, *_ = env.step(env.unwrapped.action_names.index("cse"))
        default = env.unwrapped.compiler_env.observation["BackendCostAgentDefault"][TIME]
        assert reward == pytest.approx((start - observation["BackendCostAgent"][TIME]) / default, rel=1e-5)
    finally:
        env.close()
