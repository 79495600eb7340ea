"""Small benchmarks and shared envs for the leaderboard tests (tiny budgets)."""
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


#: A module on which many passes (cse, algsimp, dce, transpose-folding,
#: tuple-simplifier, ...) have something to do: many distinct candidates.
RUNTIME_HLO = b"""HloModule rt, entry_computation_layout={(f32[16,16]{1,0}, f32[16,16]{1,0})->f32[16,16]{1,0}}

ENTRY main {
  p = f32[16,16]{1,0} parameter(0)
  q = f32[16,16]{1,0} parameter(1)
  a = f32[16,16]{1,0} add(p, q)
  b = f32[16,16]{1,0} add(p, q)
  n = f32[16,16]{1,0} negate(a)
  nn = f32[16,16]{1,0} negate(n)
  t = f32[16,16]{1,0} transpose(q), dimensions={1,0}
  d = f32[16,16]{1,0} dot(nn, t), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  r1 = f32[256]{0} reshape(d)
  r2 = f32[16,16]{1,0} reshape(r1)
  c1 = f32[] constant(2)
  c2 = f32[] constant(3)
  c3 = f32[] add(c1, c2)
  bc = f32[16,16]{1,0} broadcast(c3), dimensions={}
  tu = (f32[16,16]{1,0}, f32[16,16]{1,0}) tuple(r2, b)
  g0 = f32[16,16]{1,0} get-tuple-element(tu), index=0
  g1 = f32[16,16]{1,0} get-tuple-element(tu), index=1
  dead = f32[16,16]{1,0} exponential(p)
  m = f32[16,16]{1,0} multiply(g0, g1)
  ROOT o = f32[16,16]{1,0} add(m, bc)
}
"""


def _env_on(uri: str, hlo: bytes) -> Iterator[object]:
    """An xla-v0 env reset to the module ``hlo`` named ``uri``, closed when the fixture ends."""
    import compiler_gym
    from compiler_gym.datasets import Benchmark

    env = compiler_gym.make("xla-v0")
    env.reset(benchmark=Benchmark.from_file_contents(uri, hlo))
    try:
        yield env
    finally:
        env.close()


@pytest.fixture(scope="module")
def small_env() -> Iterator[object]:
    yield from _env_on("benchmark://test/small-lb", SMALL_HLO)


@pytest.fixture(scope="module")
def runtime_env() -> Iterator[object]:
    """The runtime agent's tests' env (test_runtime_policy.py): RUNTIME_HLO."""
    yield from _env_on("benchmark://test/runtime-lb", RUNTIME_HLO)
