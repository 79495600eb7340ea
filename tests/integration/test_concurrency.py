"""Several sessions at once in one service: from threads, forks and separate client processes."""
from __future__ import annotations

import json
import subprocess
import sys
import threading

from integration.modules import mlp_step
from integration.test_validation import smallest_gpt2

from xla_service.tools.from_jax import benchmark_from_jax

SEQUENCES: tuple[tuple[str, ...], ...] = (
    ("cse", "algsimp", "dce"),
    ("algsimp", "transpose-folding", "cse"),
    ("dot_decomposer", "algsimp", "reshape-mover", "dce"),
    ("transpose-folding", "dce", "cse", "algsimp"),
)

CLIENT = """
import json, sys, compiler_gym
url, benchmark, passes = sys.argv[1], sys.argv[2], sys.argv[3].split()
with compiler_gym.make("xla-v0", service=url) as env:
    env.reset(benchmark=benchmark)
    for name in passes:
        env.step(env.action_space[name])
    print(json.dumps({"op_count": int(env.observation["OpCount"]), "hlo": env.observation["Hlo"]}))
"""


def _run_threads(targets: list[threading.Thread]) -> None:
    for t in targets:
        t.start()
    for t in targets:
        t.join(timeout=240)
        assert not t.is_alive()


def test_forks_stepped_from_threads_match_a_sequential_replay(env):
    fn, args = mlp_step()
    env.reset(benchmark=benchmark_from_jax(fn, *args))
    env.step(env.action_space["cse"])
    parent_hlo = env.observation["Hlo"]
    forks: list[object] = [None] * len(SEQUENCES)
    results: dict[int, tuple[int, str]] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            fork = env.fork()  # every thread forks the same parent at once
            forks[i] = fork
            for name in SEQUENCES[i]:
                fork.step(fork.action_space[name])
            results[i] = (fork.observation["OpCount"], fork.observation["Hlo"])
        except BaseException as e:  # reported below
            errors.append(e)

    try:
        _run_threads([threading.Thread(target=work, args=(i,)) for i in range(len(SEQUENCES))])
        assert not errors, errors
        session_ids = {f._session_id for f in forks} | {env._session_id}  # type: ignore[attr-defined]
        assert len(session_ids) == len(SEQUENCES) + 1
    finally:
        for fork in forks:
            if fork is not None:
                fork.close()  # type: ignore[attr-defined]
    # The parent is untouched; each fork's result is the sequential one.
    assert env.observation["Hlo"] == parent_hlo
    for i, sequence in enumerate(SEQUENCES):
        env.reset()
        for name in ("cse", *sequence):
            env.step(env.action_space[name])
        assert results[i] == (env.observation["OpCount"], env.observation["Hlo"]), sequence


def test_separate_client_processes_share_one_service(env):
    benchmark = smallest_gpt2(env)
    env.reset(benchmark=benchmark)
    url = env.service.connection.url
    clients = [
        subprocess.Popen(
            [sys.executable, "-c", CLIENT, url, benchmark, " ".join(s)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for s in SEQUENCES[:2]
    ]
    # Meanwhile this process steps its own session in the same service.
    for name in SEQUENCES[2]:
        env.step(env.action_space[name])
    outputs = []
    for client in clients:
        out, err = client.communicate(timeout=240)
        assert client.returncode == 0, err[-3000:]
        outputs.append(json.loads(out.strip().splitlines()[-1]))
    assert env.service.connection.process.poll() is None  # clients did not stop it
    for sequence, output in zip(SEQUENCES[:2], outputs):
        env.reset(benchmark=benchmark)
        for name in sequence:
            env.step(env.action_space[name])
        assert output == {"op_count": env.observation["OpCount"], "hlo": env.observation["Hlo"]}
