"""Reward spaces: OpCountNorm, OpCountShaped (telescoping) and Runtime, over real gRPC."""
from __future__ import annotations

import numpy as np
import pytest
from compiler_gym.datasets import Benchmark
from integration.modules import SMALL_HLO, mlp_step

from xla_service.catalog.backend import BACKEND_OBJECTIVES
from xla_service.catalog.pipelines import DEMO_SEQUENCE as DEFAULT_SEQUENCE
from xla_service.env.rewards import SHAPING_GAMMA
from xla_service.tools.from_jax import benchmark_from_jax

#: Changes flops on the MLP step (algsimp folds the backward pass's scalings).
EPISODE = ("cse", "algsimp", "dce", "transpose-folding", "algsimp", "cse")


def test_reward_spaces_are_registered(env):
    backend = {f"{o}{m}{n}" for o in BACKEND_OBJECTIVES for m in ("", "Agent") for n in ("", "Norm")}
    assert set(env.reward.spaces) == {"OpCount", "OpCountNorm", "OpCountShaped", "Runtime"} | backend
    assert len(backend) == 12
    assert env.reward.spaces["OpCountNorm"].deterministic
    assert not env.reward.spaces["Runtime"].deterministic
    assert env.reward.spaces["OpCountShaped"].gamma == SHAPING_GAMMA


def test_op_count_norm_returns_one_at_the_default_pipeline(env):
    fn, args = mlp_step()
    env.reset(benchmark=benchmark_from_jax(fn, *args), reward_space="OpCountNorm")
    try:
        initial, default = env.observation["OpCountInitial"], env.observation["OpCountDefault"]
        assert initial > default
        previous = initial
        for name in DEFAULT_SEQUENCE:
            _, reward, _, _ = env.step(env.action_space[name])
            count = env.observation["OpCount"]
            assert reward == pytest.approx((previous - count) / (initial - default))
            previous = count
        assert previous == default
        assert env.episode_reward == pytest.approx(1.0)
    finally:
        env.reward_space = "OpCount"


def _shaped_episode(env, gamma: float) -> tuple[list[float], list[float], list[float]]:
    """(OpCount rewards, shaped rewards, potentials Phi(s_0..s_T)) of EPISODE."""
    fn, args = mlp_step()
    env.reset(benchmark=benchmark_from_jax(fn, *args))
    env.reward.spaces["OpCountShaped"].gamma = gamma
    initial_count = env.observation["OpCountInitial"]
    initial = env.observation["CostAnalysisInitial"]

    def phi() -> float:  # the documented potential, computed here independently
        costs = env.observation["CostAnalysis"]
        return initial_count * (1 - (costs[0] + costs[1]) / max(initial[0] + initial[1], 1))

    rewards, shaped, potentials = [], [], [phi()]
    for name in EPISODE:
        _, (r, s), _, _ = env.step(env.action_space[name], reward_spaces=["OpCount", "OpCountShaped"])
        rewards.append(r)
        shaped.append(s)
        potentials.append(phi())
    return rewards, shaped, potentials


def test_shaped_reward_is_potential_based_and_telescopes(env):
    gamma = SHAPING_GAMMA
    rewards, shaped, phi = _shaped_episode(env, gamma)
    assert phi[0] == 0 and phi[-1] != phi[0], "the episode must change flops"
    for t, (r, s) in enumerate(zip(rewards, shaped)):
        assert s == pytest.approx(r + gamma * phi[t + 1] - phi[t], abs=1e-9)
    # Discounted returns differ only by the end-point potentials.
    discounts = gamma ** np.arange(len(rewards))
    horizon = len(rewards)
    assert np.dot(discounts, shaped) == pytest.approx(
        np.dot(discounts, rewards) + gamma**horizon * phi[-1] - phi[0], abs=1e-9
    )


def test_undiscounted_shaped_return_differs_by_end_points_only(env):
    try:
        rewards, shaped, phi = _shaped_episode(env, 1.0)
    finally:
        env.reward.spaces["OpCountShaped"].gamma = SHAPING_GAMMA
    assert sum(shaped) == pytest.approx(sum(rewards) + phi[-1] - phi[0], abs=1e-9)
    assert sum(shaped) != pytest.approx(sum(rewards))


def test_runtime_reward_is_the_reduction_over_the_initial_runtime(env):
    env.reset(benchmark=Benchmark.from_file_contents("benchmark://test/small", SMALL_HLO))
    env.send_param("xla.runtime.repetitions", "3")
    previous = None
    for name in ("cse", "algsimp"):
        (runtimes,), (reward,), _, _ = env.step(
            env.action_space[name], observation_spaces=["Runtime"], reward_spaces=["Runtime"]
        )
        initial = env.reward.spaces["Runtime"].initial
        previous = initial if previous is None else previous
        assert runtimes.shape == (3,) and initial > 0
        assert reward == pytest.approx((previous - np.median(runtimes)) / initial)
        previous = float(np.median(runtimes))
