"""Every failure while making, resetting or closing an env ends the process (issue 62).

An env whose constructor failed half-way used to be finalized at interpreter
exit, where closing its gRPC channel waits for gRPC's polling threads, which no
longer run: the process printed its error and never exited. Each case runs in
its own interpreter, with a timeout.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

GPT2 = "benchmark://xla-gpt2-v0/gpt2-l6-d64-h2-s32-b2-f32-infer"
#: (code, what stderr must say); each must exit nonzero with that message.
FAILURES = {
    "unknown benchmark": (
        "import compiler_gym\ncompiler_gym.make('xla-v0', benchmark='benchmark://xla-gpt2-v0/nope')",
        "Benchmark not found: benchmark://xla-gpt2-v0/nope",
    ),
    "unknown reward": (
        "import compiler_gym\ncompiler_gym.make('xla-v0', reward_space='NoSuchReward')",
        "Reward space not found: NoSuchReward",
    ),
    "unknown dataset": (
        "import compiler_gym\ncompiler_gym.make('xla-v0', benchmark='benchmark://nope-v0/x')",
        "Dataset not found: benchmark://nope-v0",
    ),
    "reset to an unknown benchmark": (
        "import compiler_gym\nenv = compiler_gym.make('xla-v0')\nenv.reset()\n"
        "env.reset(benchmark='benchmark://nope-v0/x')",
        "Dataset not found: benchmark://nope-v0",
    ),
    "gymnasium, reset to an unknown benchmark": (
        "import gymnasium, xla_service.gym\nenv = gymnasium.make('xla-v0')\n"
        "env.reset(seed=0, options={'benchmark': 'benchmark://xla-gpt2-v0/nope'})",
        "Benchmark not found: benchmark://xla-gpt2-v0/nope",
    ),
}


def _run(code: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"the process hung; stderr:\n{e.stderr!r}") from None


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_a_failure_ends_the_process(case):
    code, message = FAILURES[case]
    done = _run(code)
    assert done.returncode != 0, (done.stdout, done.stderr)
    assert message in done.stderr, done.stderr[-3000:]
    assert "Traceback" in done.stderr


def test_an_env_made_after_the_exit_handlers_still_exits():
    """An env made by a late exit handler is finalized with the interpreter: only
    its service is stopped (no gRPC then), and the process exits."""
    code = (
        "import atexit\n"
        "envs = []\n"
        "def late():\n"
        "    import compiler_gym\n"
        f"    env = compiler_gym.make('xla-v0', benchmark={GPT2!r})\n"
        "    env.reset()\n"
        "    envs.append(env)\n"
        "    print(env.service.connection.process.pid, flush=True)\n"
        "atexit.register(late)  # runs after xla-v0's own exit handler\n"
        "import compiler_gym\n"
        "compiler_gym.make('xla-v0').close()\n"
    )
    done = _run(code)
    assert done.returncode == 0, done.stderr[-3000:]
    pid = int(done.stdout.split()[-1])
    from integration.test_cleanup import _wait_gone

    assert _wait_gone([pid]) == []
