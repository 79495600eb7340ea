"""The stock compiler_gym entry points, each in a fresh interpreter."""
from __future__ import annotations

import subprocess
import sys

from xla_service.passes.catalog import PASS_NAMES


def _run(*args: str, stdin: str = "") -> str:
    done = subprocess.run(
        [sys.executable, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_make_in_a_fresh_interpreter_without_importing_the_project():
    out = _run(
        "-c",
        "import sys, compiler_gym\n"
        "assert 'xla_service.env.xla_env' not in sys.modules\n"
        "env = compiler_gym.make('xla-v0')\n"
        "env.reset()\n"
        "before = env.observation['OpCount']\n"
        "env.step(env.action_space['cse'])\n"
        "print(before, env.observation['OpCount'])\n"
        "assert 'jax' not in sys.modules, 'the client side must not import jax'\n"
        "env.close()\n",
    )
    before, after = map(int, out.split())
    assert after < before


def test_compiler_gym_service_tool_lists_spaces_and_datasets():
    out = _run("-m", "compiler_gym.bin.service", "--env=xla-v0")
    assert "benchmark://xla-gpt2-v0" in out
    for name in ("Hlo", "OpCount", "OpcodeCounts", "OpCountDefault"):
        assert f"| {name} " in out
    assert "algsimp" in out and "cse" in out


def test_compiler_gym_make_with_module_prefix():
    out = _run(
        "-c",
        "import compiler_gym\n"
        "with compiler_gym.make('xla_service:xla-v0') as env:\n"
        "    env.reset()\n"
        "    print(len(env.action_space.names))\n",
    )
    assert int(out) == len(PASS_NAMES)
