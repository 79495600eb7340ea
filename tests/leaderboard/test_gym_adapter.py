"""The Gymnasium adapter passes Gymnasium's and SB3's environment checkers."""
from __future__ import annotations

import numpy as np
import pytest

from leaderboard.gym_adapter import XlaGymnasiumEnv


@pytest.fixture(scope="module")
def adapter():
    env = XlaGymnasiumEnv(["benchmark://xla-gpt2-v0/gpt2-l2-d64-h4-s32-b2-adam-f32-train"], episode_length=3)
    try:
        yield env
    finally:
        env.close()


def test_gymnasium_and_sb3_check_env(adapter):
    from gymnasium.utils.env_checker import check_env as gymnasium_check
    from stable_baselines3.common.env_checker import check_env as sb3_check

    gymnasium_check(adapter, skip_render_check=True)
    sb3_check(adapter, warn=True)


def test_episode_truncates_and_rewards_are_normalized(adapter):
    obs, info = adapter.reset(seed=0)
    assert obs.shape == adapter.observation_space.shape and obs.dtype == np.float32
    cse = list(adapter.env.action_space.names).index("cse")
    _, reward, terminated, truncated, _ = adapter.step(cse)
    initial = adapter.env.observation["OpCountInitial"]
    assert reward == pytest.approx((initial - adapter.env.observation["OpCount"]) / initial)
    assert reward > 0 and not terminated and not truncated
    adapter.step(cse)
    assert adapter.step(cse)[3] is True


def test_rejects_bad_arguments():
    with pytest.raises(ValueError, match="at least one benchmark"):
        XlaGymnasiumEnv([])
