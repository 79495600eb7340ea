"""The Gymnasium env used like a library (issue 62): SB3's vector envs with their
defaults, ``action_masks()`` for sb3-contrib's MaskablePPO, a default mask that
a seeded run repeats whatever the store knows, and your own modules as benchmarks."""
from __future__ import annotations

import subprocess
import sys

import gymnasium
import numpy as np
import pytest

import xla_service.gym  # noqa: F401  (registers xla-v0 with Gymnasium)
from xla_service.catalog.passes import PASS_NAMES

GPT2 = "benchmark://xla-gpt2-v0/gpt2-l1-d64-h2-s32-b2-f32-infer"


def test_sb3_make_vec_env_with_its_defaults_and_maskable_ppo():
    """make_vec_env asks for render_mode="rgb_array"; MaskablePPO reads action_masks()."""
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
    from stable_baselines3.common.env_util import make_vec_env

    vec = make_vec_env(
        "xla_service.gym:xla-v0", n_envs=2, seed=0,
        env_kwargs={"benchmarks": [GPT2], "max_episode_steps": 3, "observation": "OpCount"},
    )
    try:
        assert vec.render_mode == "rgb_array" and is_masking_supported(vec)
        vec.reset()
        frames = vec.get_images()
        assert [f.shape for f in frames] == [(480, 640, 3)] * 2 and frames[0].dtype == np.uint8
        assert (frames[0] < 128).any() and (frames[0] > 128).any()  # text on a background
        masks = get_action_masks(vec)
        assert masks.shape == (2, len(PASS_NAMES)) and masks.dtype == bool and masks.all()
        model = MaskablePPO("MlpPolicy", vec, n_steps=4, batch_size=8, n_epochs=1, seed=0)
        model.learn(total_timesteps=8)
        assert model.num_timesteps == 8
    finally:
        vec.close()


_ACTIONS = ["cse", "cse", "dce"]


def _masks(mask: str | None) -> list[list[int]]:
    kwargs = {} if mask is None else {"mask": mask}
    with gymnasium.make("xla-v0", benchmarks=[GPT2], max_episode_steps=None, **kwargs) as env:
        _, info = env.reset(seed=0)
        masks = [info["action_mask"].tolist()]
        for name in _ACTIONS:
            env.step(PASS_NAMES.index(name))
            masks.append(env.unwrapped.action_masks().astype(int).tolist())
    return masks


def test_the_default_mask_repeats_on_a_fresh_and_a_warm_store(tmp_path, monkeypatch):
    """The same seed and actions give the same masks by default whatever the store knows;
    the store-informed mask (mask="known", opt-in) does not."""
    monkeypatch.setenv("XLA_GYM_STORE", str(tmp_path / "store.sqlite"))
    fresh, warm = _masks(None), _masks(None)  # on a fresh store, then on the store it filled
    assert fresh == warm
    cse = PASS_NAMES.index("cse")
    assert fresh[1][cse] == 1 and fresh[2][cse] == 0  # masked once tried and seen to change nothing
    known = _masks("known")  # the store knows the second cse changes nothing before it is tried
    assert known[1][cse] == 0 and known != fresh


def test_own_modules_as_benchmarks(tmp_path):
    """A list of your own modules: a JAX function, HLO text and an HLO file (the test
    makes them with JAX; the env's side never imports it)."""
    import jax.numpy as jnp

    from xla_service.tools.from_jax import benchmark_from_jax, hlo_text_from_jax

    def scaled_tanh(x):
        return jnp.tanh(x @ x.T) * 2.0

    from_jax = benchmark_from_jax(scaled_tanh, jnp.ones((8, 4)))
    text = hlo_text_from_jax(lambda x: jnp.exp(x) * 2.0 + 1.0, jnp.ones((4,)))
    path = tmp_path / "product.hlo"
    path.write_text(hlo_text_from_jax(lambda x, y: x * y + x, jnp.ones((3,)), jnp.ones((3,))))
    with gymnasium.make("xla-v0", benchmarks=[from_jax, text, path, GPT2], observation="OpCount") as env:
        uris = list(env.unwrapped.benchmarks)
        assert uris[0] == str(from_jax.uri) and uris[3] == GPT2
        assert uris[1].startswith("benchmark://hlo-v0/") and uris[2].startswith("benchmark://file-v0/product-")
        seen = {env.reset(seed=seed)[1]["benchmark"] for seed in range(12)}
        assert seen <= set(uris) and len(seen) > 1
        for uri in uris:
            obs, info = env.reset(options={"benchmark": uri})
            assert info["benchmark"] == uri and obs[0] > 0
            env.step(PASS_NAMES.index("algsimp"))
            assert env.unwrapped.compiler_env.benchmark.uri == uri
        assert env.unwrapped.compiler_env.validate().okay()
    with pytest.raises(FileNotFoundError, match="Expected an HLO text file, got .*missing.hlo"):
        gymnasium.make("xla-v0", benchmarks=[tmp_path / "missing.hlo"])


_FORKED = f"""
import multiprocessing, os, sys
import compiler_gym
from xla_service.errors import ForkedClientError
env = compiler_gym.make("xla-v0", benchmark={GPT2!r})
env.reset()
pid = os.fork()
if pid == 0:  # the parent's env is the parent's: exiting here must leave its service alone
    del env
    sys.exit(0)
os.waitpid(pid, 0)
env.step(env.action_space["cse"])  # the parent's session and service live on
try:
    with multiprocessing.get_context("fork").Pool(1) as pool:
        pool.apply(compiler_gym.make, ("xla-v0",))
except ForkedClientError as e:
    print("refused:", e)
env.close()
"""


def test_a_client_forked_after_grpc_ran_is_refused_and_leaves_the_parents_alone():
    """gRPC does not survive fork(): a client made in a forked child could hang for ever,
    so it is refused at once (XlaGymEnv runs itself afresh there instead: test_make_vec)."""
    done = subprocess.run([sys.executable, "-c", _FORKED], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "refused: Expected a process that gRPC has not run in" in done.stdout
    assert "'forkserver'" in done.stdout
