"""generator://xla-random-v0 through the stock client, CompilerGym's wrappers, the Gymnasium env
and the service tool: the service generates in its workers, the client never imports jax."""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from xla_service.env.generator import generator_metadata

DATASET = "generator://xla-random-v0"
SMALL = "?ops=50-300"


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Iterator[str]:
    """A disk cache of this module's own, inherited by the services it starts."""
    folder = str(tmp_path_factory.mktemp("generated"))
    before = os.environ.get("XLA_GYM_GENERATED")
    os.environ["XLA_GYM_GENERATED"] = folder
    yield folder
    if before is None:
        del os.environ["XLA_GYM_GENERATED"]
    else:
        os.environ["XLA_GYM_GENERATED"] = before


@pytest.fixture(scope="module")
def env(cache) -> Iterator[object]:
    import compiler_gym

    env = compiler_gym.make("xla-v0")
    try:
        yield env
    finally:
        env.close()


def test_reset_to_a_seed_steps_and_validates(env):
    env.reset(benchmark=f"{DATASET}/7")
    initial = env.observation["OpCountInitial"]
    assert generator_metadata(7)["op_count"] == initial  # the metadata, from the disk cache
    for name in ("cse", "algsimp", "dce"):
        env.step(env.action_space[name])
    assert env.observation["OpCount"] <= initial
    assert env.validate().okay()
    assert "jax" not in sys.modules


def test_bad_seeds_are_clear_errors_and_keep_the_service(env):
    with pytest.raises(LookupError, match=r"expected generator://xla-random-v0/<seed>"):
        env.reset(benchmark=f"{DATASET}/-3")
    with pytest.raises(LookupError, match=r"\[0, 4294967295\]"):
        env.reset(benchmark=f"{DATASET}/twelve")
    with pytest.raises(ValueError, match="out of range"):
        env.reset(benchmark=f"{DATASET}/4294967296")
    from compiler_gym.datasets import Benchmark

    with pytest.raises(ValueError, match="Malformed generator recipe"):
        env.reset(benchmark=Benchmark.from_file_contents("benchmark://x/y", b"xla-gym-generator v1 seed=1 bad"))
    env.reset(benchmark=f"{DATASET}/1{SMALL}")  # the service still serves
    assert 50 <= env.observation["OpCountInitial"] <= 300


def test_env_datasets_and_wrappers(env):
    from compiler_gym.wrappers import IterateOverBenchmarks

    dataset = env.datasets[DATASET]
    assert dataset.size == 0 and dataset.validatable == "Yes"
    assert DATASET in [d.name for d in env.datasets]
    wrapped = IterateOverBenchmarks(env, benchmarks=[f"{DATASET}/{s}{SMALL}" for s in (2, 3)])
    seen = []
    for _ in range(2):
        wrapped.reset()
        seen.append(str(wrapped.benchmark.uri))
    assert seen == [f"{DATASET}/2{SMALL}", f"{DATASET}/3{SMALL}"]


def test_service_tool_lists_the_generator(cache):
    out = subprocess.run(
        [sys.executable, "-m", "compiler_gym.bin.service", "--env=xla-v0"],
        capture_output=True, text=True, timeout=300,
    ).stdout
    assert any(line.startswith(f"| {DATASET} ") or f"{DATASET} " in line for line in out.splitlines()), out[-3000:]


def test_gymnasium_env_draws_seeds_from_its_rng(cache):
    import gymnasium

    import xla_service.gym  # noqa: F401
    from xla_service.gym.env import resolve_benchmarks

    every = resolve_benchmarks(DATASET)
    assert len(every) == 2**32 and resolve_benchmarks(every) is every  # lazy, never listed
    assert len(resolve_benchmarks([f"{DATASET}/0-9", DATASET])) == 10 + 2**32
    env = gymnasium.make("xla_service.gym:xla-v0", benchmarks=f"{DATASET}/0-99{SMALL}", max_episode_steps=2)
    try:
        observation, info = env.reset(seed=1)
        first = info["benchmark"]
        assert first.startswith(f"{DATASET}/") and first.endswith(SMALL)
        env.step(env.unwrapped.action_names.index("cse"))
        assert env.reset(seed=1)[1]["benchmark"] == first
    finally:
        env.close()
