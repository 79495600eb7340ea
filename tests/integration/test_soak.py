"""Many short sessions keep a node healthy: open file descriptors and memory stay bounded
(CompilerGym's users ran out of descriptors, and into 27-42 GiB services, under Ray)."""
from __future__ import annotations

import os
from pathlib import Path

import compiler_gym

from xla_service.passes.workers import rss_bytes


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _service_tree_rss(pid: int) -> int:
    children = [int(p.name) for p in Path("/proc").glob("[0-9]*") if _parent(int(p.name)) == pid]
    return rss_bytes(pid) + sum(rss_bytes(c) for c in children)


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def test_many_short_sessions_from_many_clients(tmp_path):
    with compiler_gym.make("xla-v0") as env:
        env.reset()
        service = env.service.connection.process.pid
        url = env.service.connection.url

        def session_burst(count: int) -> None:
            for i in range(count):
                with compiler_gym.make("xla-v0", service=url) as other:
                    other.reset()
                    other.step(other.action_space["cse" if i % 2 else "dce"])
                    with other.fork() as fork:
                        fork.step(fork.action_space["algsimp"])

        session_burst(10)  # warm: caches filled, workers started
        fds, rss, own = _fds(service), _service_tree_rss(service), _fds(os.getpid())
        session_burst(60)
        assert _fds(service) - fds <= 8, "the service's open files grow with sessions"
        assert _fds(os.getpid()) - own <= 8, "the client's open files grow with envs"
        assert _service_tree_rss(service) - rss < 300 * 2**20, "memory grows with sessions"
        env.step(env.action_space["cse"])  # the first session still steps
        assert env.observation["OpCount"] > 0
