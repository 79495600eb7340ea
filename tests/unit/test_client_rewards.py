"""Reward classes of xla-v0 against a fake observation view (no service)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from xla_service.env.rewards import (
    SHAPING_GAMMA,
    OpCountNormReward,
    OpCountShapedReward,
    RuntimeReward,
    default_rewards,
)


class View(dict):
    """An observation view: a dict that counts lookups."""

    def __init__(self, values: dict[str, Any]) -> None:
        super().__init__(values)
        self.lookups = 0

    def __getitem__(self, key: str) -> Any:
        self.lookups += 1
        return super().__getitem__(key)


def test_every_reward_is_registered():
    names = [r.name for r in default_rewards()]
    assert names[:4] == ["OpCount", "OpCountNorm", "OpCountShaped", "Runtime"]
    assert names[4:] == [
        f"{objective}{mode}{norm}"
        for mode in ("", "Agent")
        for objective in ("EstimatedTime", "TempBytes", "BytesAccessed")
        for norm in ("", "Norm")
    ]


def test_op_count_norm():
    reward = OpCountNormReward()
    view = View({"OpCountInitial": 100, "OpCountDefault": 80})
    reward.reset("benchmark://x/y", view)
    assert reward.update([0], [90], view) == pytest.approx(0.5)
    assert reward.update([0], [80], view) == pytest.approx(0.5)
    assert reward.update([0], [85], view) == pytest.approx(-0.25)
    # The default pipeline may add ops (bf16 modules): the denominator is then 1.
    view = View({"OpCountInitial": 100, "OpCountDefault": 120})
    reward.reset("benchmark://x/z", view)
    assert reward.update([0], [97], view) == 3


def test_op_count_shaped_formula():
    reward = OpCountShapedReward()
    assert reward.gamma == SHAPING_GAMMA == 0.99
    view = View({"OpCountInitial": 10, "CostAnalysisInitial": np.array([90.0, 10.0, 5.0, 0.0])})
    reward.reset("benchmark://x/y", view)
    # Phi(s0) = 0; Phi(s1) = 10 * (1 - 50/100) = 5.
    assert reward.update([0], [8, np.array([45.0, 5.0, 1.0, 0.0])], view) == pytest.approx(2 + 0.99 * 5)
    # No change: r = 0, Phi stays 5: (gamma - 1) * 5.
    assert reward.update([0], [8, np.array([45.0, 5.0, 1.0, 0.0])], view) == pytest.approx(-0.05)
    with pytest.raises(ValueError, match="Expected gamma in"):
        OpCountShapedReward(gamma=1.5)


def test_runtime_reward():
    reward = RuntimeReward()
    view = View({"RuntimeInitial": np.array([2.0, 4.0, 3.0])})
    reward.reset("benchmark://x/y", view)
    assert reward.update([0], [np.array([1.5, 1.5, 9.0])], view) == pytest.approx(0.5)
    assert reward.update([0], [np.array([3.0])], view) == pytest.approx(-0.5)
    assert view.lookups == 1
    assert not reward.deterministic and reward.platform_dependent
