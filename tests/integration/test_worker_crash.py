"""A worker killed mid-step: a clear error or a completed step, never a lost session."""
from __future__ import annotations

import os
import signal
import threading
import time

from integration.conftest import worker_pids


def test_killed_workers_are_replaced_and_the_session_keeps_its_state(env):
    env.reset()
    env.step(env.action_space["cse"])
    before = env.observation["OpCount"]
    service_pid = env.service.connection.process.pid
    victims = worker_pids(service_pid)
    assert victims, "the service should run worker processes"

    outcome = {}

    def step() -> None:
        try:
            env.step(env.action_space["algsimp"])
            outcome["ok"] = True
        except ValueError as e:
            outcome["error"] = str(e)

    thread = threading.Thread(target=step)
    thread.start()
    time.sleep(0.05)  # mid-step: a partial compile of this module takes longer
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    thread.join(timeout=120)
    assert not thread.is_alive()

    if "error" in outcome:  # the step lost its worker: state unchanged
        assert "crashed" in outcome["error"] and "keeps its state" in outcome["error"]
        assert env.observation["OpCount"] == before
    else:
        assert env.observation["OpCount"] < before

    # New workers serve the next steps, and the result is XLA's.
    env.step(env.action_space["algsimp"])
    after = env.observation["OpCount"]
    assert after < before
    assert set(worker_pids(service_pid)).isdisjoint(victims)
