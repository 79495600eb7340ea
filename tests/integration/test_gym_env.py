"""xla-v0 through Gymnasium: make, make_vec, the checkers, seeds, info, graphs, and one
experience store shared with the stock CompilerGym client."""
from __future__ import annotations

import json
import subprocess
import sys

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import xla_service.gym  # noqa: F401  (registers xla-v0 with Gymnasium)
from xla_service.catalog.passes import PASS_NAMES

SMALL_SUITE = "xla-gpt2-v0:test"


def test_make_in_a_fresh_interpreter_with_the_module_id_form():
    code = (
        "import sys, gymnasium\n"
        "env = gymnasium.make('xla_service.gym:xla-v0', max_episode_steps=2)\n"
        "obs, info = env.reset(seed=3)\n"
        "obs, r, term, trunc, info = env.step(env.unwrapped.action_names.index('cse'))\n"
        "obs, r, term, trunc, info = env.step(env.unwrapped.action_names.index('dce'))\n"
        "assert trunc and not term, (term, trunc)\n"
        "assert 'jax' not in sys.modules\n"
        "print('OK', obs.shape, sorted(info))\n"
        "env.close()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "OK (133,) ['action_mask', 'benchmark', 'changed', 'pass', 'pass_error']" in done.stdout


@pytest.fixture(scope="module")
def env():
    env = gymnasium.make(
        "xla-v0", benchmarks=SMALL_SUITE, max_episode_steps=4, stop_action=True, mask="known"
    )
    yield env
    env.close()


def test_the_env_passes_gymnasiums_and_sb3s_checkers(env):
    from stable_baselines3.common.env_checker import check_env as sb3_check

    check_env(env.unwrapped, skip_render_check=True)
    sb3_check(env.unwrapped)


def test_same_seed_same_benchmark_sequence(env):
    def sequence(seed):
        first = env.reset(seed=seed)[1]["benchmark"]
        return [first] + [env.reset()[1]["benchmark"] for _ in range(4)]

    assert sequence(7) == sequence(7)
    assert len(set(sequence(7) + sequence(8))) > 1
    chosen = "benchmark://xla-gpt2-v0/gpt2-l6-d64-h2-s32-b2-f32-infer"
    assert env.reset(options={"benchmark": chosen})[1]["benchmark"] == chosen


def test_info_truncation_and_the_stop_action(env):
    env.reset(options={"benchmark": "benchmark://xla-gpt2-v0/gpt2-l6-d64-h2-s32-b2-f32-infer"})
    cse, dce = PASS_NAMES.index("cse"), PASS_NAMES.index("dce")
    _, reward, terminated, truncated, info = env.step(cse)
    assert reward > 0 and info["changed"] and info["pass"] == "cse" and info["pass_error"] == ""
    _, reward, _, _, info = env.step(cse)  # cse again: known now to change nothing here
    assert reward == 0 and not info["changed"] and info["action_mask"][cse] == 0
    assert info["action_mask"].dtype == np.int8 and info["action_mask"][-1] == 1
    _, _, terminated, truncated, _ = env.step(dce)
    assert not terminated and not truncated
    _, reward, terminated, truncated, info = env.step(len(PASS_NAMES))  # the stop action
    assert terminated and truncated and reward == 0 and info["pass"] == "stop"


def test_episode_mask_follows_only_the_episodes_own_steps(env):
    """mask="known" masks what the cache and store know; mask="episode" only what this episode
    saw, cleared when a pass changes the module: a new episode starts with every pass allowed."""
    benchmark = {"benchmark": "benchmark://xla-gpt2-v0/gpt2-l6-d64-h2-s32-b2-f32-infer"}
    cse = PASS_NAMES.index("cse")
    with gymnasium.make("xla-v0", benchmarks=SMALL_SUITE, max_episode_steps=30, mask="episode") as episode:
        for _ in range(2):  # the second episode repeats the first: the service knows its steps now
            _, info = episode.reset(options=benchmark)
            assert info["action_mask"].all()
            info = episode.step(cse)[-1]
            assert info["changed"] and info["action_mask"].all()
            info = episode.step(cse)[-1]  # changes nothing: masked until the module changes
            assert not info["changed"] and info["action_mask"].sum() == len(PASS_NAMES) - 1
        for name in PASS_NAMES:  # the first pass that changes the module clears the mask
            info = episode.step(PASS_NAMES.index(name))[-1]
            if info["changed"]:
                break
            assert info["action_mask"][PASS_NAMES.index(name)] == 0
        assert info["changed"] and info["action_mask"].all()
    env.reset(options=benchmark)  # "known": the same first step, and the cache already knows cse's next
    assert env.step(cse)[-1]["action_mask"][cse] == 0


def test_an_unknown_mask_is_refused():
    with pytest.raises(ValueError, match=r"Expected mask one of \('known', 'episode'\), got 'store'"):
        gymnasium.make("xla-v0", mask="store")


def test_dict_and_graph_observations():
    with gymnasium.make("xla-v0", observation=["OpcodeCounts", "HloGraph", "CostAnalysisDict"]) as env:
        obs, _ = env.reset(seed=0)
        graph = obs["HloGraph"]
        assert isinstance(graph, gymnasium.spaces.GraphInstance)
        assert graph.nodes.shape[0] == int(env.unwrapped.compiler_env.observation["HloGraph"].number_of_nodes())
        assert graph.edge_links.shape == (graph.edges.shape[0], 2)
        assert obs in env.observation_space
        check_env(env.unwrapped, skip_render_check=True)


def test_executable_digest_is_text():
    with gymnasium.make("xla-v0", observation=["OpCount", "ExecutableDigest", "ExecutableDigestDefault"]) as env:
        obs, _ = env.reset(seed=0)
        assert obs in env.observation_space
        assert len(obs["ExecutableDigest"]) == len(obs["ExecutableDigestDefault"]) == 64


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_make_vec(mode):
    envs = gymnasium.make_vec(
        "xla-v0", num_envs=2, vectorization_mode=mode, benchmarks=SMALL_SUITE, max_episode_steps=3,
        render_mode="rgb_array",
    )
    try:
        obs, info = envs.reset(seed=0)
        assert obs.shape == (2, 133)
        obs, rewards, terminated, truncated, info = envs.step(np.array([PASS_NAMES.index("cse")] * 2))
        assert rewards.shape == (2,) and (rewards > 0).all()
        # async forks this process, where gRPC ran: each env runs in a fresh interpreter
        assert envs.get_attr("remote") == (mode == "async",) * 2
        assert (info["action_mask"][:, PASS_NAMES.index("cse")] == 1).all()
        assert [frame.shape for frame in envs.render()] == [(480, 640, 3)] * 2
    finally:
        envs.close()


_EPISODE = """
import json, sys
import xla_service.gym, gymnasium
names = ["algsimp", "cse", "dce", "reshape-mover", "transpose-folding", "algsimp", "cse"]
kind = sys.argv[1]
if kind == "gymnasium":
    env = gymnasium.make("xla-v0", max_episode_steps=None)
    env.reset(options={"benchmark": sys.argv[2]})
    for n in names:
        env.step(env.unwrapped.action_names.index(n))
    stats = json.loads(env.unwrapped.compiler_env.send_param("xla.engine.stats", ""))
else:
    import compiler_gym
    env = compiler_gym.make("xla-v0")
    env.reset(benchmark=sys.argv[2])
    for n in names:
        env.step(env.action_space[n])
    stats = json.loads(env.send_param("xla.engine.stats", ""))
print(json.dumps(stats["cache"]))
env.close()
"""


def test_one_store_shared_by_gymnasium_and_the_stock_client(tmp_path):
    """A Gymnasium episode, then the same passes through the stock client in a fresh
    process and service: every step comes from the store written by the first."""
    import os

    env = {**os.environ, "XLA_GYM_STORE": str(tmp_path / "store.sqlite")}
    benchmark = "benchmark://xla-gpt2-v0/gpt2-l1-d64-h2-s32-b2-f32-infer"

    def run(kind):
        done = subprocess.run(
            [sys.executable, "-c", _EPISODE, kind, benchmark], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    first = run("gymnasium")
    assert first["backing_hits"] == {} and first["misses"]["step"] >= 7
    second = run("compiler_gym")
    assert second["backing_hits"]["step"] >= 7 and second["backing_hits"]["load"] == 1
