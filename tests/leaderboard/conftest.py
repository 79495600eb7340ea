"""Small benchmarks and a shared env for the leaderboard tests (tiny budgets)."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

#: A module where cse, algsimp and dce each have something to do.
SMALL_HLO = b"""HloModule small, entry_computation_layout={(f32[8]{0}, f32[8]{0})->f32[8]{0}}

ENTRY main {
  p = f32[8]{0} parameter(0)
  q = f32[8]{0} parameter(1)
  a = f32[8]{0} add(p, q)
  b = f32[8]{0} add(p, q)
  n = f32[8]{0} negate(a)
  nn = f32[8]{0} negate(n)
  ROOT m = f32[8]{0} multiply(nn, b)
}
"""


@pytest.fixture(scope="module")
def small_env() -> Iterator[object]:
    import compiler_gym
    from compiler_gym.datasets import Benchmark

    env = compiler_gym.make("xla-v0")
    env.reset(benchmark=Benchmark.from_file_contents("benchmark://test/small-lb", SMALL_HLO))
    try:
        yield env
    finally:
        env.close()
