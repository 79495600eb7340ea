"""The shared experience store on a real PostgreSQL server, started and stopped by this test."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from xla_service.catalog.opcodes import OPCODES
from xla_service.errors import PassCrashedError
from xla_service.passes.analysis import Analysis
from xla_service.passes.cache import MISS, Failure
from xla_service.store import open_store, postgres_server
from xla_service.store.postgres import PostgresStore


@pytest.fixture(scope="module")
def postgres_url():
    folder = Path(tempfile.mkdtemp(prefix="xla-gym-pg-"))
    url = postgres_server.start(folder, port=postgres_server.free_port())
    try:
        yield url
    finally:
        postgres_server.stop(folder)
        shutil.rmtree(folder, ignore_errors=True)


def _state(tag: str) -> Analysis:
    counts = [0] * len(OPCODES)
    counts[OPCODES.index("add")] = 3
    return Analysis(f"HloModule {tag}\nENTRY e {{ }}\n", tuple(counts))


def test_values_round_trip_and_versions_stay_apart(postgres_url):
    store = open_store(postgres_url)
    assert isinstance(store, PostgresStore) and "***" not in store.location  # no password in this URL
    a, b = _state("a"), _state("b")
    store.put(("step", a.digest, "cse"), b)
    store.put(("step", a.digest, "dce"), None)
    store.put(("step", a.digest, "gather_simplifier"), Failure(PassCrashedError, "RET_CHECK"))
    store.put(("observation", a.digest, "cost_analysis"), (1.0, 2.0, 0.0, 0.0))
    other = PostgresStore(postgres_url, semantics="jaxlib-9.9/engine-1")
    assert other.get(("step", a.digest, "cse")) is MISS
    again = PostgresStore(postgres_url)
    assert again.get(("step", a.digest, "cse")) == b and again.get(("step", a.digest, "dce")) is None
    assert isinstance(again.get(("step", a.digest, "gather_simplifier")), Failure)
    assert again.get(("observation", a.digest, "cost_analysis")) == (1.0, 2.0, 0.0, 0.0)
    assert again.outcomes(a.digest) == {"cse": "changed", "dce": "unchanged", "gather_simplifier": "failed"}
    assert again.verify() == {"rows": 5, "bad_results": 0, "bad_states": 0}


_EPISODE = """
import json, sys, compiler_gym
with compiler_gym.make("xla-v0") as env:
    env.reset(benchmark="benchmark://xla-gpt2-v0/gpt2-l1-d64-h2-s32-b2-f32-infer")
    for name in ["algsimp", "cse", "dce", "reshape-mover", "transpose-folding"]:
        env.step(env.action_space[name])
    print(json.dumps({"ops": int(env.observation["OpCount"]),
                      "cache": json.loads(env.send_param("xla.engine.stats", ""))["cache"]}))
"""


def test_two_services_reuse_each_others_transitions(postgres_url):
    env = {**os.environ, "XLA_GYM_STORE": postgres_url}

    def run():
        done = subprocess.run([sys.executable, "-c", _EPISODE], env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    first, second = run(), run()
    assert first["ops"] == second["ops"]
    assert first["cache"]["misses"].get("step", 0) >= 5 and not first["cache"]["backing_hits"].get("step")
    assert second["cache"]["backing_hits"]["step"] >= 5 and second["cache"]["backing_hits"]["load"] == 1
