"""The service's watch on its client process, and the engine's memo."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from xla_service.lifeline import client_alive, watch_client
from xla_service.passes.memo import Memo


def test_client_alive():
    assert client_alive(os.getpid(), child_of_client=False)
    assert client_alive(os.getppid(), child_of_client=True)
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not client_alive(child.pid, child_of_client=False)  # reaped: gone


def test_a_zombie_is_not_alive():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped
    try:
        assert not client_alive(child.pid, child_of_client=False)
    finally:
        child.wait()


def test_no_variable_no_watch(monkeypatch):
    monkeypatch.delenv("XLA_GYM_TEST_CLIENT", raising=False)
    assert watch_client("XLA_GYM_TEST_CLIENT") is None


def test_memo_counts_and_evicts():
    memo = Memo(2)
    calls = []
    for key in ("a", "b", "a", "c", "b"):
        memo.get(key, lambda k=key: calls.append(k) or k.upper())
    assert calls == ["a", "b", "c", "b"]  # "b" was evicted by "c"
    assert (memo.hits, memo.misses, len(memo)) == (1, 4, 2)
    with pytest.raises(ValueError, match="at least 1"):
        Memo(0)
