"""No service or worker process outlives its client: env.close(), forks, and a killed client."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable

from integration.conftest import worker_pids

CLIENT = """
import sys, time, compiler_gym
from integration.conftest import worker_pids
env = compiler_gym.make("xla-v0")
env.reset()
env.step(env.action_space["cse"])
pid = env.service.connection.process.pid
print(pid, *worker_pids(pid), flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_gone(pids: Iterable[int], seconds: float = 30.0) -> list[int]:
    """The processes among ``pids`` still alive after ``seconds``."""
    deadline = time.monotonic() + seconds
    pids = list(pids)
    while time.monotonic() < deadline:
        pids = [p for p in pids if _alive(p)]
        if not pids:
            return []
        time.sleep(0.2)
    return pids


def test_close_leaves_no_service_or_worker_behind():
    import compiler_gym

    env = compiler_gym.make("xla-v0")
    env.reset()
    fork = env.fork()
    service = env.service.connection.process.pid
    workers = worker_pids(service)
    assert workers and _alive(service)
    env.close()  # the fork's session keeps the service
    assert _alive(service)
    fork.step(fork.action_space["cse"])
    fork.close()
    assert _wait_gone([service, *workers]) == []


def test_a_killed_client_leaves_no_service_or_worker_behind():
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    client = subprocess.Popen(
        [sys.executable, "-c", CLIENT],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": tests},
    )
    try:
        assert client.stdout is not None
        pids = [int(p) for p in client.stdout.readline().split()]
        assert len(pids) >= 2 and all(_alive(p) for p in pids), pids
        client.send_signal(signal.SIGKILL)
        client.wait(timeout=30)
        assert _wait_gone(pids) == []
    finally:
        if client.poll() is None:
            client.kill()
