"""The README documents every space, reward and session parameter, with the code's numbers."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from xla_service.env.compat import restore_numpy_names

restore_numpy_names()

from xla_service.catalog.schema import (  # noqa: E402
    DEFAULT_RUNTIME_REPETITIONS,
    DEFAULT_TOLERANCE,
    INPUT_INT_HIGH,
    MAX_RUNTIME_REPETITIONS,
    TOLERANCES,
)
from xla_service.env.rewards import SHAPING_GAMMA, default_rewards  # noqa: E402
from xla_service.passes.engine import MAX_MODULE_BYTES  # noqa: E402
from xla_service.session.parameters import MAX_WORKERS, PARAMETERS  # noqa: E402
from xla_service.session.spaces import OBSERVATION_SPACES  # noqa: E402

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


@pytest.mark.parametrize("name", [s.name for s in OBSERVATION_SPACES])
def test_every_observation_space_is_in_the_spaces_table(name):
    assert re.search(rf"^\| `{name}` \|", README, re.M)


@pytest.mark.parametrize("name", [r.name for r in default_rewards()])
def test_every_reward_is_in_the_spaces_table(name):
    assert f"| reward `{name}` |" in README


@pytest.mark.parametrize("key", sorted(PARAMETERS))
def test_every_session_parameter_is_documented(key):
    assert re.search(rf"^\| `{re.escape(key)}` \|", README, re.M)


def test_numbers_match_the_code():
    assert f"`gamma = {SHAPING_GAMMA}`" in README
    assert f"({MAX_MODULE_BYTES} bytes)" in README
    assert f"1..{MAX_RUNTIME_REPETITIONS}, default {DEFAULT_RUNTIME_REPETITIONS}" in README
    assert f"| 1..{MAX_WORKERS} |" in README
    assert f"uniform in [0, {INPUT_INT_HIGH})" in README
    rows = dict(re.findall(r"^\s*\| ([\w ,.()]+) \| ([\de.-]+ \| [\de.-]+) \|$", README, re.M))
    for dtype, (rtol, atol) in TOLERANCES.items():
        row = next(v for k, v in rows.items() if dtype in k.split(", "))
        assert [float(x) for x in row.split(" | ")] == [rtol, atol], dtype
    assert [float(x) for x in rows["narrower floats (float8, ...)"].split(" | ")] == list(DEFAULT_TOLERANCE)
