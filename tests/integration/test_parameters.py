"""Session parameters (env.send_param) and the module size limit, over real gRPC."""
from __future__ import annotations

import gzip
import json

import pytest
from compiler_gym.datasets import Benchmark
from integration.conftest import worker_pids
from integration.modules import SMALL_HLO

from xla_service.catalog.schema import DEFAULT_RUNTIME_REPETITIONS
from xla_service.env.datasets import default_benchmark_uri
from xla_service.passes.engine import MAX_MODULE_BYTES


def small(env: object) -> None:
    env.reset(benchmark=Benchmark.from_file_contents("benchmark://test/small", SMALL_HLO))  # type: ignore[attr-defined]


def test_runtime_repetitions_and_input_seed(env):
    small(env)
    assert env.send_param("xla.runtime.repetitions", "") == str(DEFAULT_RUNTIME_REPETITIONS)
    assert env.send_param("xla.runtime.repetitions", "2") == "2"
    assert env.observation["Runtime"].shape == (2,)
    assert env.send_param("xla.inputs.seed", "7") == "7"
    assert json.loads(env.send_param("xla.validate", ""))["status"] == "ok"
    for key, value in (("xla.runtime.repetitions", "0"), ("xla.runtime.repetitions", "x"), ("xla.inputs.seed", "-1")):
        with pytest.raises(ValueError, match=f"{key}: expected an integer in"):
            env.send_param(key, value)
    # Parameters belong to the session: a new episode starts from the defaults.
    small(env)
    assert env.send_param("xla.runtime.repetitions", "") == str(DEFAULT_RUNTIME_REPETITIONS)


def test_runtime_pipeline_agent_leaves_the_optimization_to_the_agent(env):
    """Under ``full`` XLA's own pipeline cse's the module again, so cse changes no executable;
    under ``agent`` XLA's optimizing passes are off, so the agent's cse makes another one."""
    small(env)
    assert env.send_param("xla.runtime.pipeline", "") == "full"
    full_start = env.observation["ExecutableDigest"]
    assert env.send_param("xla.runtime.pipeline", "agent") == "agent"
    agent_start = env.observation["ExecutableDigest"]
    assert agent_start != full_start
    assert env.observation["Runtime"].shape == (DEFAULT_RUNTIME_REPETITIONS,)
    fork = env.fork()  # a fork keeps the session's parameters
    try:
        assert fork.send_param("xla.runtime.pipeline", "") == "agent"
    finally:
        fork.close()
    env.step(env.action_space["cse"])
    assert env.observation["ExecutableDigest"] != agent_start
    assert env.observation["ExecutableDigestInitial"] == agent_start
    assert env.send_param("xla.runtime.pipeline", "full") == "full"
    assert env.observation["ExecutableDigest"] == full_start
    with pytest.raises(ValueError, match=r"xla.runtime.pipeline: expected one of \['full', 'agent'\], got 'none'"):
        env.send_param("xla.runtime.pipeline", "none")
    with pytest.raises(ValueError, match="Did you mean 'agent'"):
        env.send_param("xla.runtime.pipeline", "agnet")
    small(env)
    assert env.send_param("xla.runtime.pipeline", "") == "full"


def test_unknown_parameter_is_a_clear_error(env):
    small(env)
    with pytest.raises(ValueError, match="Unknown parameter: xla.no_such_key"):
        env.send_param("xla.no_such_key", "1")


def test_engine_stats_count_cache_hits(env):
    small(env)
    env.step(env.action_space["cse"])
    before = json.loads(env.send_param("xla.engine.stats", ""))
    assert {"hits", "misses", "cache", "workers", "step_timeout", "worker_memory_limit"} <= set(before)
    small(env)
    env.step(env.action_space["cse"])  # the same module and pass: a cache hit
    after = json.loads(env.send_param("xla.engine.stats", ""))
    assert after["hits"] > before["hits"] and after["misses"] == before["misses"]


def test_worker_count_is_a_service_parameter(env):
    small(env)
    service = env.service.connection.process.pid
    start = int(env.send_param("xla.engine.workers", ""))
    try:
        assert env.send_param("xla.engine.workers", str(start + 1)) == str(start + 1)
        assert len(worker_pids(service)) == start + 1
        assert env.send_param("xla.engine.workers", "1") == "1"
        env.step(env.action_space["cse"])
        assert json.loads(env.send_param("xla.engine.stats", ""))["workers"] == 1
    finally:
        env.send_param("xla.engine.workers", str(start))
    with pytest.raises(ValueError, match=r"expected an integer in \[1, 64\]"):
        env.send_param("xla.engine.workers", "0")


def test_step_timeout_is_bounded(env):
    """A timeout shorter than any XLA call would fail every later request (even a
    reset), so the service refuses it; the timeout itself: tests/passes/test_engine_crash.py."""
    env.reset(benchmark=default_benchmark_uri())
    for value in ("0.001", "1e-300", "-3", "1e9", "x"):
        with pytest.raises(ValueError, match=r"xla.step_timeout: expected seconds in \[1, 86400\]"):
            env.send_param("xla.step_timeout", value)
    assert env.send_param("xla.step_timeout", "") == "300"
    env.step(env.action_space["algsimp"])  # the service still serves


def test_pass_errors_are_steps_without_effect_by_default(env):
    env.reset(benchmark=default_benchmark_uri())  # XLA fails in "simplification" on it
    before = env.observation["OpCount"]
    assert env.send_param("xla.pass_errors", "") == "no_effect"
    _, reward, done, info = env.step(env.action_space["simplification"])
    assert not done and reward == 0 and info["action_had_no_effect"]
    assert info["pass_error"].startswith("simplification: XLA stopped before pass 'simplification'")
    assert env.observation["OpCount"] == before
    assert env.actions == [env.action_space["simplification"]]  # it replays identically
    _, _, _, info = env.step(env.action_space["cse"])
    assert info["pass_error"] == ""
    assert env.send_param("xla.pass_errors", "raise") == "raise"
    with pytest.raises(ValueError, match="XLA stopped before pass 'simplification'"):
        env.step(env.action_space["simplification"])
    assert env.commandline() == "simplification cse"  # the raising step is not in the history
    with pytest.raises(ValueError, match=r"expected one of \['no_effect', 'raise'\]"):
        env.send_param("xla.pass_errors", "ignore")


def test_oversized_modules_are_refused(env):
    padding = b"// padding\n" * (MAX_MODULE_BYTES // 11 + 1)
    bomb = gzip.compress(b"HloModule big\n" + padding, 9)  # small on the wire
    with pytest.raises(ValueError, match="HLO module too large: expected at most 67108864 bytes"):
        env.reset(benchmark=Benchmark.from_file_contents("benchmark://test/bomb", bomb))
    with pytest.raises(ValueError, match="HLO module too large: expected at most 67108864 bytes, got"):
        env.reset(benchmark=Benchmark.from_file_contents("benchmark://test/raw", b"HloModule big\n" + padding))
    small(env)  # the service still serves
    assert env.observation["OpCount"] == 3
