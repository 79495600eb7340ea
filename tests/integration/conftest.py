"""Fixtures that start the real service through compiler_gym.make("xla-v0")."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def env() -> Iterator[object]:
    import compiler_gym

    env = compiler_gym.make("xla-v0")
    try:
        yield env
    finally:
        env.close()


def worker_pids(service_pid: int) -> list[int]:
    """The pass-engine worker processes started by the service ``service_pid``."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == service_pid and b"xla_service.passes.worker" in cmdline:
            pids.append(int(stat.parent.name))
    return pids
