"""The stock contract: CompilerGym's client, tools and wrappers work unchanged, and no
client can hurt another's session. Each test names the item of the README's
"Stock contract" it covers; isolation tests use a second client process."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import grpc
import numpy as np
import pytest
from compiler_gym.datasets import Benchmark
from integration.modules import SMALL_HLO

from xla_service.env.datasets import default_benchmark_uri
from xla_service.proto import CompilerGymServiceStub, Event, StepRequest

GPT2 = default_benchmark_uri()
#: Parses, but an add of f32[4] and f32[5] is not a consistent module.
INCONSISTENT = b"""HloModule bad
ENTRY main {
  p0 = f32[4] parameter(0)
  p1 = f32[5] parameter(1)
  ROOT r = f32[4] add(p0, p1)
}
"""
#: A valid module whose input alone needs 4 TB.
HUGE_INPUT = b"""HloModule huge
ENTRY main {
  p0 = f32[1000000,1000000] parameter(0)
  ROOT n = f32[1000000,1000000] negate(p0)
}
"""


def _other_client(url: str, script: str) -> dict:
    """Run ``script`` in another process with ``env`` connected to ``url``; its JSON output."""
    code = "import json, sys, compiler_gym\n" + textwrap.dedent(script)
    done = subprocess.run(
        [sys.executable, "-c", code, url], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _small(env) -> None:
    env.reset(benchmark=Benchmark.from_file_contents("benchmark://test/small", SMALL_HLO))


def _unseen_small(env, name: str) -> None:
    """A small module of a shape no other test uses, so no step of it is in the
    test run's experience store and every step needs a worker."""
    size = 1000 + uuid.uuid4().int % 1_000_000
    text = SMALL_HLO.replace(b"f32[8]", f"f32[{size}]".encode()).replace(b"HloModule small", f"HloModule {name}".encode())
    env.reset(benchmark=Benchmark.from_file_contents(f"benchmark://test/{name}", text))


# 2. Errors caused by a module or a resource limit are ValueErrors; other sessions live on.
def test_bad_modules_are_value_errors_and_other_clients_keep_their_sessions(env):
    env.reset(benchmark=GPT2)
    env.step(env.action_space["algsimp"])
    before = env.observation["OpCount"]
    url = env.service.connection.url
    result = _other_client(
        url,
        f"""
        from compiler_gym.datasets import Benchmark
        out = {{}}
        with compiler_gym.make("xla-v0", service=sys.argv[1]) as env:
            for name, text in (("inconsistent", {INCONSISTENT!r}), ("huge", {HUGE_INPUT!r})):
                try:
                    env.reset(benchmark=Benchmark.from_file_contents("benchmark://test/" + name, text))
                    env.observation["Runtime"]
                    out[name] = "no error"
                except ValueError as e:
                    out[name] = str(e)
        print(json.dumps(out))
        """,
    )
    assert "XLA rejects this module" in result["inconsistent"]
    assert "requires the same shape" in result["inconsistent"]
    assert "inputs need 4,000,000,000,000 bytes, more than the limit" in result["huge"]
    env.step(env.action_space["cse"])  # this client's session is untouched
    assert env.observation["OpCount"] < before


# 3. A failing step never poisons the episode; validate() never changes it.
def test_a_failed_pass_replays_identically_and_validate_leaves_the_episode_alone(env):
    env.reset(benchmark=GPT2)
    for name in ("algsimp", "simplification", "cse"):  # XLA fails in simplification here
        env.step(env.action_space[name])
    count, reward, commandline = env.observation["OpCount"], env.episode_reward, env.commandline()
    result = env.validate()
    assert result.okay(), result.error_details
    assert (env.observation["OpCount"], env.episode_reward, env.commandline()) == (count, reward, commandline)


# 4. A batch is all-or-nothing.
def test_multistep_is_all_or_nothing(env):
    env.reset(benchmark=GPT2)
    env.send_param("xla.pass_errors", "raise")
    count = env.observation["OpCount"]
    with pytest.raises(ValueError, match="simplification"):
        env.multistep([env.action_space["algsimp"], env.action_space["simplification"]])
    assert env.observation["OpCount"] == count and env.actions == [] and env.episode_reward == 0
    env.multistep([env.action_space["algsimp"], env.action_space["cse"]])  # the episode goes on
    assert env.episode_reward == count - env.observation["OpCount"] > 0


# 5. One client's long compile tails do not hold the workers another client needs.
def test_a_small_session_is_not_starved_by_anothers_tails(env):
    import threading
    import time

    _unseen_small(env, "not_starved")
    env.step(env.action_space["cse"])
    workers = int(env.send_param("xla.engine.workers", ""))
    # Another client keeps every worker busy for a minute after each reply.
    url = env.service.connection.url
    hog = threading.Thread(
        target=_other_client,
        args=(url, f"""
        with compiler_gym.make("xla-v0", service=sys.argv[1]) as env:
            env.reset()
            for _ in range({workers}):
                env.send_param("xla.debug.settle_for", "60")
        print(json.dumps({{}}))
        """),
    )
    hog.start()
    hog.join()
    started = time.monotonic()
    env.step(env.action_space["algsimp"])
    assert time.monotonic() - started < 30  # preempted after 2 s, plus a worker start
    assert json.loads(env.send_param("xla.engine.stats", ""))["workers_preempted"] >= 1


# 6. Sessions and service-wide settings belong to their owners.
def test_another_process_can_neither_use_a_session_nor_change_the_service(env):
    env.reset(benchmark=GPT2)
    own = env._session_id
    result = _other_client(
        env.service.connection.url,
        """
        from compiler_gym.service.proto import StepRequest, Event
        out = {"found": []}
        with compiler_gym.make("xla-v0", service=sys.argv[1]) as env:
            env.reset()
            for guess in range(64):  # ids are 63-bit random numbers, not 0, 1, 2...
                if guess == env._session_id:
                    continue
                try:
                    env.service(env.service.stub.Step, StepRequest(session_id=guess, action=[Event(int64_value=0)]))
                    out["found"].append(guess)
                except Exception:
                    pass
            for key, value in (("xla.step_timeout", "5"), ("xla.engine.workers", "8")):
                try:
                    env.send_param(key, value)
                    out[key] = "changed"
                except ValueError as e:
                    out[key] = str(e)
        print(json.dumps(out))
        """,
    )
    assert result["found"] == []
    for key in ("xla.step_timeout", "xla.engine.workers"):
        assert "only the client that launched it" in result[key]
    assert env.send_param("xla.step_timeout", "") == "300"
    assert env.send_param("xla.step_timeout", "120") == "120"  # the launching client may
    env.send_param("xla.step_timeout", "300")
    assert own == env._session_id and own > 2**32


def test_a_remote_service_requires_a_token(tmp_path):
    service = str(Path(sys.executable).with_name("xla-gym-service"))
    refused = subprocess.run(
        [service, f"--working_dir={tmp_path / 'a'}", "--host=0.0.0.0"],
        capture_output=True, text=True, timeout=120,
    )
    assert refused.returncode == 1 and "needs a token" in refused.stderr
    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    working = tmp_path / "b"
    proc = subprocess.Popen([service, f"--working_dir={working}", "--host=0.0.0.0", f"--auth_token_file={token}"])
    try:
        port = _wait_for_port(working, proc)
        with grpc.insecure_channel(f"localhost:{port}") as channel:
            stub = CompilerGymServiceStub(channel)
            with pytest.raises(grpc.RpcError) as denied:
                stub.Step(StepRequest(session_id=1, action=[Event(int64_value=0)]), timeout=30)
            assert denied.value.code() == grpc.StatusCode.UNAUTHENTICATED
        import compiler_gym

        with compiler_gym.make("xla-v0", service=f"localhost:{port}", auth_token="s3cret-token") as env:
            _small(env)
            env.step(env.action_space["cse"])
            assert env.observation["OpCount"] == 2
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    assert proc.returncode == 0


def _wait_for_port(working: Path, proc: subprocess.Popen) -> int:
    import time

    deadline = time.time() + 120
    while time.time() < deadline:
        if (working / "port.txt").is_file():
            return int((working / "port.txt").read_text())
        assert proc.poll() is None, "the service exited"
        time.sleep(0.1)
    raise TimeoutError("no port.txt")


# 7. A fork keeps the reward's state.
def test_a_fork_continues_the_rewards_of_its_parent(env):
    env.reset(benchmark=GPT2, reward_space="OpCount")
    _, first, _, _ = env.step(env.action_space["algsimp"])
    assert first > 0
    with env.fork() as fork:
        _, forked, _, _ = fork.step(fork.action_space["algsimp"])
        _, parent, _, _ = env.step(env.action_space["algsimp"])
        assert forked == parent == 0.0  # algsimp already reached its fixpoint
        assert fork.episode_reward == env.episode_reward == first


# 8. CompilerGym's own action-space wrappers take xla-v0.
def test_compiler_gyms_commandline_wrappers(env):
    from compiler_gym.spaces import Commandline
    from compiler_gym.wrappers import CommandlineWithTerminalAction, ConstrainedCommandline

    env.reset(benchmark=GPT2)
    assert isinstance(env.action_space, Commandline) and env.action_space.flags == env.action_space.names
    constrained = ConstrainedCommandline(env, flags=["algsimp", "cse", "dce"])
    constrained.reset(benchmark=GPT2)
    _, reward, _, _ = constrained.step(0)
    assert reward > 0 and constrained.actions == [0] and env.commandline() == "algsimp"
    terminal = CommandlineWithTerminalAction(env)
    terminal.reset(benchmark=GPT2)
    _, _, done, info = terminal.step(len(terminal.action_space.flags) - 1)
    assert done and info["terminal_action"]


# 10. Every space has a default: what the client returns once the service is gone.
def test_defaults_when_the_service_dies():
    import compiler_gym

    with compiler_gym.make("xla-v0") as env:
        env.reset(benchmark=GPT2)
        for name, spec in env.observation.spaces.items():
            assert spec.default_value is not None, name
        env.service.connection.process.kill()
        env.service.connection.process.wait()
        observation, reward, done, info = env.step(env.action_space["cse"])
        assert done and "error_details" in info
        assert isinstance(observation, np.ndarray) and observation.shape == (133,) and not observation.any()


# 11. Listed among CompilerGym's environments.
def test_manual_env_lists_xla_v0():
    done = subprocess.run(
        [sys.executable, "-m", "compiler_gym.bin.manual_env", "--ls_env"],
        capture_output=True, text=True, timeout=120,
    )
    assert "xla-v0" in done.stdout.split(), done.stdout + done.stderr[-2000:]


# 12. Smaller: malformed events, unknown pass names, a killed worker, stale folders.
@pytest.mark.parametrize(
    "event, kind",
    [(Event(string_value="cse"), "a string_value"), (Event(double_value=1.0), "a double_value"), (Event(), "an empty event")],
)
def test_malformed_actions_are_refused(env, event, kind):
    _small(env)
    with pytest.raises(ValueError, match=f"expected an int64 pass index .* got {kind}"):
        env.service(env.service.stub.Step, StepRequest(session_id=env._session_id, action=[event]))
    assert env.actions == [] and env.observation["OpCount"] == 3


def test_unknown_pass_names_get_suggestions(env):
    env.reset(benchmark=GPT2)
    with pytest.raises(ValueError, match="Did you mean 'algsimp'"):
        env.action_space["algsimpp"]


def test_workers_killed_from_outside_are_replaced(env):
    import time

    from integration.conftest import worker_pids

    _small(env)
    service = env.service.connection.process.pid
    stats = json.loads(env.send_param("xla.engine.stats", ""))
    env.send_param("xla.pass_errors", "raise")
    for pid in worker_pids(service):
        os.kill(pid, 9)
    time.sleep(0.5)
    # The kill lands between requests (and may hit the pool's started spare):
    # the next load and step take fresh workers and work.
    _unseen_small(env, "after_kill")
    env.step(env.action_space["cse"])
    assert env.observation["OpCount"] == 2
    assert json.loads(env.send_param("xla.engine.stats", ""))["workers_replaced"] > stats["workers_replaced"]


def test_a_second_sigterm_during_shutdown_leaks_nothing(tmp_path):
    import signal
    import time

    service = str(Path(sys.executable).with_name("xla-gym-service"))
    working = tmp_path / "w"
    proc = subprocess.Popen([service, f"--working_dir={working}"])
    port = _wait_for_port(working, proc)
    import compiler_gym

    env = compiler_gym.make("xla-v0", service=f"localhost:{port}")
    _small(env)
    env.step(env.action_space["cse"])  # the engine and its workers run
    scratch = [p for p in Path("/dev/shm").glob(f"xla-gym-dumps-{proc.pid}-*")]
    assert scratch, "the service's dump folder"
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    env.close()
    assert proc.returncode == 0
    assert not any(p.exists() for p in scratch)


def test_stale_dump_folders_of_killed_services_are_removed(tmp_path):
    from xla_service.passes.scratch import clean_stale_scratch

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f"xla-gym-dumps-{int(dead.stdout)}-abc"
    (stale / "step-1").mkdir(parents=True)
    alive = tmp_path / f"xla-gym-dumps-{os.getpid()}-def"
    alive.mkdir()
    assert clean_stale_scratch(str(tmp_path)) == 1
    assert not stale.exists() and alive.exists()
