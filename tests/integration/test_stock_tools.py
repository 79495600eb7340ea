"""The stock compiler_gym entry points, each in a fresh interpreter."""
from __future__ import annotations

import re

from integration.test_stock_tools_full import _run as run_python

from xla_service.catalog.passes import PASS_NAMES


def _run(*args: str) -> str:
    code, output = run_python(*args)
    assert code == 0, output[-3000:]
    return output


def test_make_in_a_fresh_interpreter_without_importing_the_project():
    out = _run(
        "-c",
        "import sys, compiler_gym\n"
        "assert 'xla_service.env.xla_env' not in sys.modules\n"
        "env = compiler_gym.make('xla-v0')\n"
        "env.reset()\n"
        "before = env.observation['OpCount']\n"
        "env.step(env.action_space['cse'])\n"
        "print('RESULT', before, env.observation['OpCount'])\n"
        "assert 'jax' not in sys.modules, 'the client side must not import jax'\n"
        "env.close()\n",
    )
    before, after = map(int, re.search(r"RESULT (\d+) (\d+)", out).groups())
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
        "    print('RESULT', len(env.action_space.names))\n",
    )
    assert f"RESULT {len(PASS_NAMES)}" in out
