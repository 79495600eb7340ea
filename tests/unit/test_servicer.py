"""The gRPC runtime, over real gRPC, with the fake counter session."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from fake_counter_session import (
    BROKEN,
    COUNT,
    TEXT,
    A,
    CounterSession,
    import_compiler_gym,
)

from xla_service.proto import (
    AddBenchmarkRequest,
    Benchmark,
    CompilerGymServiceStub,
    EndSessionRequest,
    Event,
    File,
    ForkSessionRequest,
    GetSpacesRequest,
    GetVersionRequest,
    SendSessionParameterRequest,
    SessionParameter,
    StartSessionRequest,
    StepReply,
    StepRequest,
)
from xla_service.runtime import (
    DEFAULT_MAX_SIZE_IN_BYTES,
    BenchmarkCache,
    CompilerGymServicer,
    create_server,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
T = 10  # RPC timeout, seconds.


@dataclass
class Service:
    stub: CompilerGymServiceStub
    servicer: CompilerGymServicer
    port: int

    def start(self, program: bytes = b"0", observations: Sequence[int] = ()) -> int:
        benchmark = Benchmark(uri=f"benchmark://c/{program!r}", program=File(contents=program))
        request = StartSessionRequest(benchmark=benchmark, observation_space=observations)
        return int(self.stub.StartSession(request, timeout=T).session_id)

    def step(self, sid: int, actions: Sequence[int] = (), obs: Sequence[int] = ()) -> StepReply:
        request = StepRequest(
            session_id=sid,
            action=[Event(int64_value=a) for a in actions],
            observation_space=obs,
        )
        return self.stub.Step(request, timeout=T)

    def count(self, sid: int) -> int:
        return int(self.step(sid, obs=[COUNT]).observation[0].int64_value)

    def params(self, sid: int, *pairs: tuple[str, str]) -> list[str]:
        request = SendSessionParameterRequest(
            session_id=sid,
            parameter=[SessionParameter(key=k, value=v) for k, v in pairs],
        )
        return list(self.stub.SendSessionParameter(request, timeout=T).reply)


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    CounterSession.reset_class_state()
    server, port, servicer = create_server("127.0.0.1:0", CounterSession, tmp_path, 16)
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    yield Service(CompilerGymServiceStub(channel), servicer, port)
    CounterSession.release.set()
    channel.close()
    server.stop(None).wait()
    servicer.close_all()


def rpc_error(call: Callable[..., object], *args: object) -> grpc.RpcError:
    """The error that ``call(*args)`` fails with."""
    with pytest.raises(grpc.RpcError) as info:
        call(*args, timeout=T)
    return info.value


def test_version_and_spaces(service: Service) -> None:
    version = service.stub.GetVersion(GetVersionRequest(), timeout=T)
    assert (version.service_version, version.compiler_version) == (
        "0.2.5",
        "counter-1.0",
    )
    spaces = service.stub.GetSpaces(GetSpacesRequest(), timeout=T)
    assert [s.name for s in spaces.action_space_list] == ["counter"]
    assert [s.name for s in spaces.observation_space_list] == [
        "count",
        "text",
        "broken",
    ]


def test_start_step_observe(service: Service) -> None:
    reply = service.stub.StartSession(
        StartSessionRequest(
            benchmark=Benchmark(uri="benchmark://c/5", program=File(contents=b"5")),
            observation_space=[COUNT, TEXT],
        ),
        timeout=T,
    )
    assert [o.int64_value for o in reply.observation[:1]] == [5]
    assert reply.observation[1].string_value == "count=5"
    step = service.step(reply.session_id, [1, 2], [TEXT, COUNT])
    assert (step.observation[0].string_value, step.observation[1].int64_value) == (
        "count=8",
        8,
    )
    assert not step.action_had_no_effect and not step.end_of_session
    assert service.step(reply.session_id, [A["add0"]]).action_had_no_effect
    assert service.count(reply.session_id) == 8


def test_step_batch_semantics(service: Service) -> None:
    sid = service.start()
    assert not service.step(sid, [0, 2]).action_had_no_effect  # AND over the batch
    assert not service.step(sid, [2, 0]).action_had_no_effect
    assert service.step(sid, [0, 0]).action_had_no_effect
    assert service.step(sid, []).action_had_no_effect
    assert not service.step(sid, []).HasField("new_action_space")
    # The last new action space wins; observations come after all actions.
    reply = service.step(sid, [A["switch"], 1, A["switch"], 1], [COUNT])
    assert reply.new_action_space.name == "switched-5"
    assert reply.observation[0].int64_value == 6
    # end_of_session stops the batch: the action after it is not applied.
    reply = service.step(sid, [1, A["end"], 3], [COUNT])
    assert reply.end_of_session and reply.observation[0].int64_value == 7


def test_bad_observation_index_applies_no_action(service: Service) -> None:
    sid = service.start()
    error = rpc_error(
        service.stub.Step,
        StepRequest(session_id=sid, action=[Event(int64_value=3)], observation_space=[7]),
    )
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error.details() == (
        "Observation space index out of range: expected 0 <= index < 3, got 7"
    )
    assert service.count(sid) == 0


def test_bad_action_space_index(service: Service) -> None:
    request = StartSessionRequest(
        benchmark=Benchmark(uri="benchmark://c/x", program=File(contents=b"1")),
        action_space=4,
    )
    error = rpc_error(service.stub.StartSession, request)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "expected 0 <= index < 1, got 4" in error.details()
    assert service.servicer.session_count == 0


def test_fork_gets_fresh_id_and_is_independent(service: Service) -> None:
    parent = service.start(b"3")
    other = service.start()
    fork = service.stub.ForkSession(ForkSessionRequest(session_id=parent), timeout=T).session_id
    assert fork not in (parent, other)
    service.step(parent, [1])
    service.step(fork, [2])
    assert (service.count(parent), service.count(fork), service.count(other)) == (
        4,
        5,
        0,
    )


def test_concurrent_forks(service: Service) -> None:
    parent = service.start(b"3")

    def fork_and_step(k: int) -> int:
        sid = int(
            service.stub.ForkSession(ForkSessionRequest(session_id=parent), timeout=T).session_id
        )
        service.step(sid, [1] * k)
        return sid

    with ThreadPoolExecutor(12) as pool:
        forks = list(pool.map(fork_and_step, range(12)))
    assert len(set(forks)) == 12 and parent not in forks
    assert [service.count(sid) for sid in forks] == [3 + k for k in range(12)]
    assert service.count(parent) == 3
    assert service.servicer.session_count == 13


def test_end_session(service: Service) -> None:
    a, b = service.start(), service.start()
    reply = service.stub.EndSession(EndSessionRequest(session_id=a), timeout=T)
    assert reply.remaining_sessions == 1
    assert CounterSession.instances[0].closed and not CounterSession.instances[1].closed
    error = rpc_error(service.stub.Step, StepRequest(session_id=a))
    assert (error.code(), error.details()) == (
        grpc.StatusCode.NOT_FOUND,
        f"Session not found: {a}",
    )
    # Unknown id: no error, like CompilerGym.
    assert (
        service.stub.EndSession(EndSessionRequest(session_id=a), timeout=T).remaining_sessions == 1
    )
    assert (
        service.stub.EndSession(EndSessionRequest(session_id=b), timeout=T).remaining_sessions == 0
    )


@pytest.mark.parametrize(
    "call,request_",
    [
        ("Step", StepRequest(session_id=42)),
        ("ForkSession", ForkSessionRequest(session_id=42)),
        (
            "SendSessionParameter",
            SendSessionParameterRequest(
                session_id=42, parameter=[SessionParameter(key="echo", value="x")]
            ),
        ),
    ],
)
def test_unknown_session_is_not_found(service: Service, call: str, request_: object) -> None:
    error = rpc_error(getattr(service.stub, call), request_)
    assert (error.code(), error.details()) == (
        grpc.StatusCode.NOT_FOUND,
        "Session not found: 42",
    )


@pytest.mark.parametrize(
    "error_name,code",
    [
        ("ValueError", grpc.StatusCode.INVALID_ARGUMENT),
        ("LookupError", grpc.StatusCode.NOT_FOUND),
        ("IndexError", grpc.StatusCode.NOT_FOUND),
        ("NotImplementedError", grpc.StatusCode.UNIMPLEMENTED),
        ("FileNotFoundError", grpc.StatusCode.UNIMPLEMENTED),
        ("TypeError", grpc.StatusCode.FAILED_PRECONDITION),
        ("TimeoutError", grpc.StatusCode.DEADLINE_EXCEEDED),
        ("RuntimeError", grpc.StatusCode.INTERNAL),
        ("HloParseError", grpc.StatusCode.INVALID_ARGUMENT),
        ("ResourceLimitError", grpc.StatusCode.INVALID_ARGUMENT),
        ("PermissionDeniedError", grpc.StatusCode.INVALID_ARGUMENT),
        ("BenchmarkError", grpc.StatusCode.INVALID_ARGUMENT),
        # Pass failures are ValueErrors: CompilerGym's client then raises them
        # and keeps the session (it closes the env on INTERNAL).
        ("PassTimeoutError", grpc.StatusCode.INVALID_ARGUMENT),
        ("PassCrashedError", grpc.StatusCode.INVALID_ARGUMENT),
    ],
)
def test_exception_to_status(service: Service, error_name: str, code: grpc.StatusCode) -> None:
    sid = service.start()
    error = rpc_error(
        service.stub.SendSessionParameter,
        SendSessionParameterRequest(
            session_id=sid, parameter=[SessionParameter(key="raise", value=error_name)]
        ),
    )
    assert (error.code(), error.details()) == (code, "boom")


def test_action_errors_keep_session_usable(service: Service) -> None:
    sid = service.start()
    error = rpc_error(
        service.stub.Step,
        StepRequest(session_id=sid, action=[Event(int64_value=A["raise_value"])]),
    )
    assert (error.code(), error.details()) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "bad action: raise_value",
    )
    error = rpc_error(
        service.stub.Step,
        StepRequest(session_id=sid, action=[Event(int64_value=A["raise_runtime"])]),
    )
    assert (error.code(), error.details()) == (
        grpc.StatusCode.INTERNAL,
        "internal failure",
    )
    service.step(sid, [2])
    assert service.count(sid) == 2


def test_long_details_are_truncated(service: Service) -> None:
    sid = service.start()
    error = rpc_error(
        service.stub.SendSessionParameter,
        SendSessionParameterRequest(
            session_id=sid, parameter=[SessionParameter(key="fail", value="é" * 50_000)]
        ),
    )
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error.details().startswith("parameter fail failed: éé")
    assert error.details().endswith("[truncated, see the service log]")


def test_benchmark_not_found_then_added(service: Service) -> None:
    request = StartSessionRequest(
        benchmark=Benchmark(uri="benchmark://c/seven"), observation_space=[COUNT]
    )
    error = rpc_error(service.stub.StartSession, request)
    assert (error.code(), error.details()) == (
        grpc.StatusCode.NOT_FOUND,
        "Benchmark not found: benchmark://c/seven",
    )
    service.stub.AddBenchmark(
        AddBenchmarkRequest(
            benchmark=[Benchmark(uri="benchmark://c/seven", program=File(contents=b"7"))]
        ),
        timeout=T,
    )
    assert service.stub.StartSession(request, timeout=T).observation[0].int64_value == 7
    # A program sent with StartSession is cached too.
    service.start(b"9")
    sid = service.stub.StartSession(
        StartSessionRequest(benchmark=Benchmark(uri="benchmark://c/b'9'")), timeout=T
    ).session_id
    assert service.count(sid) == 9
    error = rpc_error(service.stub.StartSession, StartSessionRequest())
    assert (error.code(), error.details()) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "No benchmark URI set for StartSession()",
    )


def test_failed_start_leaks_no_session(service: Service) -> None:
    error = rpc_error(
        service.stub.StartSession,
        StartSessionRequest(
            benchmark=Benchmark(uri="benchmark://c/1", program=File(contents=b"1")),
            observation_space=[COUNT, BROKEN],
        ),
    )
    assert (error.code(), error.details()) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "broken observation: broken",
    )
    assert CounterSession.instances[0].closed
    assert service.servicer.session_count == 0


def test_session_parameters(service: Service) -> None:
    sid = service.start()
    prefix = "service.benchmark_cache."
    assert service.params(sid, ("echo", "hi"), (prefix + "get_max_size_in_bytes", "")) == [
        "hi",
        str(DEFAULT_MAX_SIZE_IN_BYTES),
    ]
    size = Benchmark(uri="benchmark://c/b'0'", program=File(contents=b"0")).ByteSize()
    assert service.params(sid, (prefix + "get_size_in_bytes", "")) == [str(size)]
    assert service.params(sid, (prefix + "set_max_size_in_bytes", "1000")) == ["1000"]
    assert service.params(sid, (prefix + "get_max_size_in_bytes", "")) == ["1000"]
    for key, value, details in [
        ("no.such.key", "", "Unknown parameter: no.such.key"),
        ("fail", "x", "parameter fail failed: x"),
        (
            prefix + "set_max_size_in_bytes",
            "-3",
            prefix + "set_max_size_in_bytes expects a non-negative integer, got '-3'",
        ),
    ]:
        error = rpc_error(
            service.stub.SendSessionParameter,
            SendSessionParameterRequest(
                session_id=sid, parameter=[SessionParameter(key=key, value=value)]
            ),
        )
        assert (error.code(), error.details()) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            details,
        )


def test_cache_eviction_via_parameters(service: Service) -> None:
    sid = service.start(b"1")
    prefix = "service.benchmark_cache."
    service.params(sid, (prefix + "set_max_size_in_bytes", "0"))
    assert service.params(sid, (prefix + "get_size_in_bytes", "")) == ["0"]
    error = rpc_error(
        service.stub.StartSession,
        StartSessionRequest(benchmark=Benchmark(uri="benchmark://c/b'1'")),
    )
    assert error.code() == grpc.StatusCode.NOT_FOUND


def test_an_unknown_benchmark_is_not_logged_as_a_failure(
    service: Service, caplog: pytest.LogCaptureFixture
) -> None:
    # CompilerGym's client asks for a benchmark by URI first, then sends it:
    # the NOT_FOUND is a protocol step, while a real failure still warns.
    with caplog.at_level("DEBUG", logger="xla_service.runtime.servicer"):
        unknown = StartSessionRequest(benchmark=Benchmark(uri="benchmark://c/unseen"))
        assert rpc_error(service.stub.StartSession, unknown).code() == grpc.StatusCode.NOT_FOUND
        assert rpc_error(service.stub.Step, StepRequest(session_id=12345)).code() == grpc.StatusCode.NOT_FOUND
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == ["Step failed with NOT_FOUND"]
    assert any(r.getMessage().startswith("StartSession: ") for r in caplog.records)


def test_benchmark_cache_is_lru_and_bounded() -> None:
    def bench(name: str, size: int) -> Benchmark:
        return Benchmark(uri=name, program=File(contents=b"x" * size))

    one = bench("a", 100).ByteSize()
    cache = BenchmarkCache(max_size_in_bytes=3 * one)
    for name in "abc":
        cache.add(bench(name, 100))
    assert cache.get("a") is not None  # a is now the most recently used
    cache.add(bench("d", 100))
    assert ("a" in cache, "b" in cache, "c" in cache, "d" in cache) == (
        True,
        False,
        True,
        True,
    )
    assert cache.size_in_bytes == 3 * one
    cache.add(bench("huge", 10_000))  # larger than the budget: kept alone
    assert len(cache) == 1 and "huge" in cache
    cache.max_size_in_bytes = 0
    assert len(cache) == 0 and cache.size_in_bytes == 0
    with pytest.raises(LookupError, match="Benchmark not found: a"):
        cache["a"]
    with pytest.raises(ValueError):
        BenchmarkCache(-1)


def test_different_sessions_run_in_parallel(service: Service) -> None:
    a, b = service.start(), service.start()
    # Each step waits on a 2-party barrier: it only passes if both run at once.
    with ThreadPoolExecutor(2) as pool:
        replies = list(pool.map(lambda sid: service.step(sid, [A["barrier"], 1], [COUNT]), [a, b]))
    assert [r.observation[0].int64_value for r in replies] == [1, 1]


def test_same_session_calls_are_serialized(service: Service) -> None:
    sid = service.start()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: service.step(sid, [A["slow_add1"]]), range(8)))
    assert service.count(sid) == 8  # no lost update
    assert CounterSession.instances[0].max_inflight == 1


def test_blocked_session_does_not_block_the_service(service: Service) -> None:
    a, b, c = service.start(), service.start(b"2"), service.start()
    with ThreadPoolExecutor(2) as pool:
        try:
            blocked = pool.submit(service.step, a, [A["block"], 1], [COUNT])
            assert CounterSession.entered.wait(T)
            start = time.monotonic()
            fork = service.stub.ForkSession(ForkSessionRequest(session_id=b), timeout=2)
            service.step(fork.session_id, [1])
            service.stub.EndSession(EndSessionRequest(session_id=c), timeout=2)
            assert service.start(b"4") not in (a, b, c, fork.session_id)
            service.stub.GetSpaces(GetSpacesRequest(), timeout=2)
            # EndSession of the busy session waits for its step, then closes it.
            ending = pool.submit(
                service.stub.EndSession, EndSessionRequest(session_id=a), timeout=T
            )
            time.sleep(0.2)
            assert not CounterSession.instances[0].closed
            assert time.monotonic() - start < 2 and not blocked.done()
        finally:
            CounterSession.release.set()
        assert blocked.result(T).observation[0].int64_value == 1
        ending.result(T)
    assert CounterSession.instances[0].closed
    assert service.count(fork.session_id) == 3


class _PausingLock:
    """Wraps the servicer's table lock: once armed, the next holder pauses just
    after releasing it, i.e. after it has looked its session up."""

    def __init__(self, inner: threading.Lock) -> None:
        self.inner = inner
        self.armed = False
        self.paused = threading.Event()
        self.resume = threading.Event()

    def __enter__(self) -> None:
        self.inner.acquire()

    def __exit__(self, *exc: object) -> None:
        pause, self.armed = self.armed, False
        self.inner.release()
        if pause:
            self.paused.set()
            self.resume.wait(T)


def test_rpc_that_looked_up_an_ended_session_sees_not_found(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    sid = service.start()
    lock = _PausingLock(service.servicer.sessions._sessions_lock)
    monkeypatch.setattr(service.servicer.sessions, "_sessions_lock", lock)
    lock.armed = True
    with ThreadPoolExecutor(1) as pool:
        queued = pool.submit(service.step, sid, [1])
        assert lock.paused.wait(T)  # the Step holds the session, not its lock yet
        service.stub.EndSession(EndSessionRequest(session_id=sid), timeout=T)
        assert CounterSession.instances[0].closed
        lock.resume.set()
        with pytest.raises(grpc.RpcError) as info:
            queued.result(T)
    assert (info.value.code(), info.value.details()) == (
        grpc.StatusCode.NOT_FOUND,
        f"Session not found: {sid}",
    )


def test_close_all(service: Service) -> None:
    for _ in range(3):
        service.start()
    assert service.servicer.close_all() == 3
    assert all(s.closed for s in CounterSession.instances)
    error = rpc_error(
        service.stub.StartSession,
        StartSessionRequest(benchmark=Benchmark(uri="benchmark://c/b'0'")),
    )
    assert error.code() == grpc.StatusCode.UNAVAILABLE


def _wait_for(path: Path, proc: subprocess.Popen[bytes], seconds: float = 20) -> str:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if path.is_file():
            return path.read_text()
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError(f"{path} not written")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_serve_subprocess(tmp_path: Path, signum: int) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(HERE)]))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fake_counter_session",
            f"--working_dir={tmp_path}",
            "--logbuflevel=-1",
            "-v=2",
            "--alsologtostderr",
            "--foo=1 --rpc_service_threads=3",
        ],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        port = int(_wait_for(tmp_path / "port.txt", proc))
        assert int((tmp_path / "pid.txt").read_text()) == proc.pid
        with grpc.insecure_channel(f"localhost:{port}") as channel:
            stub = CompilerGymServiceStub(channel)
            assert stub.GetVersion(GetVersionRequest(), timeout=T).compiler_version == "counter-1.0"
            stub.StartSession(
                StartSessionRequest(
                    benchmark=Benchmark(uri="benchmark://c/1", program=File(contents=b"1"))
                ),
                timeout=T,
            )
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr.decode()
    log = (tmp_path / "logs" / "service.log").read_text()
    assert "--logbuflevel" not in log  # CompilerGym's glog flags are accepted quietly
    assert "Ignoring unknown command line argument '--foo=1'" in log
    assert "StartSession(benchmark=benchmark://c/1)" in log  # -v=2 is DEBUG
    assert "1 sessions were still open" in log
    assert f"listening on 127.0.0.1:{port} with 3 RPC threads" in log  # not 0.0.0.0
    assert b"Service stopped" in stderr  # --alsologtostderr
    assert not list(tmp_path.glob(".*.tmp"))


def test_serve_help_and_bad_flag() -> None:
    code = (
        "import sys, fake_counter_session as f; from xla_service.runtime import serve; "
        "sys.exit(serve(f.CounterSession))"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(HERE)]))
    done = subprocess.run(
        [sys.executable, "-c", code, "--help"], env=env, capture_output=True, timeout=60
    )
    assert done.returncode == 0
    for flag in [
        b"--working_dir",
        b"--host",
        b"--port",
        b"--rpc_service_threads",
        b"--log_level",
    ]:
        assert flag in done.stdout
    done = subprocess.run(
        [sys.executable, "-c", code, "--port=notanint"],
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 2


def test_compiler_gym_connection_talks_to_us(service: Service) -> None:
    import_compiler_gym()
    from compiler_gym.errors import SessionNotFound
    from compiler_gym.service import proto as cg
    from compiler_gym.service.connection import (
        CompilerGymServiceConnection,
        ConnectionOpts,
    )

    conn = CompilerGymServiceConnection(endpoint=f"127.0.0.1:{service.port}", opts=ConnectionOpts())
    try:
        assert [s.name for s in conn.action_spaces] == ["counter"]
        request = cg.StartSessionRequest(benchmark=cg.Benchmark(uri="benchmark://c/six"))
        with pytest.raises(FileNotFoundError, match="Benchmark not found: benchmark://c/six"):
            conn(conn.stub.StartSession, request)
        conn(
            conn.stub.AddBenchmark,
            cg.AddBenchmarkRequest(
                benchmark=[cg.Benchmark(uri="benchmark://c/six", program=cg.File(contents=b"6"))]
            ),
        )
        sid = conn(conn.stub.StartSession, request).session_id
        with pytest.raises(ValueError, match="^bad action: raise_value$"):
            conn(
                conn.stub.Step,
                cg.StepRequest(session_id=sid, action=[cg.Event(int64_value=A["raise_value"])]),
            )
        with pytest.raises(FileNotFoundError, match="^Session not found: 99$"):
            conn(conn.stub.Step, cg.StepRequest(session_id=99))
        assert SessionNotFound  # the env turns the above into SessionNotFound
    finally:
        conn.close()


def test_compiler_gym_env_reset_step_fork(service: Service) -> None:
    import_compiler_gym()
    from compiler_gym.datasets import Benchmark as CgBenchmark
    from compiler_gym.service.client_service_compiler_env import (
        ClientServiceCompilerEnv,
    )

    bench = CgBenchmark.from_file_contents("benchmark://counter-v0/three", b"3")
    env = ClientServiceCompilerEnv(
        service=f"127.0.0.1:{service.port}", benchmark=bench, observation_space="count"
    )
    try:
        assert env.reset() == 3  # StartSession -> NOT_FOUND -> AddBenchmark -> retry
        observation, _, done, info = env.step(2)
        assert (observation, done, info["action_had_no_effect"]) == (5, False, False)
        fork = env.fork()
        try:
            assert fork.step(1)[0] == 6 and env.observation["count"] == 5
            assert env.observation["text"] == "count=5"
        finally:
            fork.close()
        assert env.reset() == 3  # the URI alone now: the benchmark is cached
    finally:
        env.close()
    assert service.servicer.session_count == 0


def test_compiler_gym_managed_connection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The client launches the executable, reads port.txt, and closes it: exit 0."""
    import_compiler_gym()
    from compiler_gym.service import proto as cg
    from compiler_gym.service.connection import (
        CompilerGymServiceConnection,
        ConnectionOpts,
    )

    script = tmp_path / "bin" / "counter-service"
    script.parent.mkdir()
    script.write_text(
        f"#!{sys.executable}\nimport runpy\n"
        "runpy.run_module('fake_counter_session', run_name='__main__')\n"
    )
    script.chmod(0o755)
    for var in ("COMPILER_GYM_CACHE", "COMPILER_GYM_TRANSIENT_CACHE"):
        monkeypatch.setenv(var, str(tmp_path / var))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), str(HERE)]))
    monkeypatch.setenv("COMPILER_GYM_DEBUG", "3")  # adds -v=2 --logbuflevel=-1 ...
    monkeypatch.setenv("COMPILER_GYM_SERVICE_ARGS", "--foo=1 --bar=2")
    conn = CompilerGymServiceConnection(script, ConnectionOpts(script_args=["--baz=3"]))
    process = conn.connection.process
    working_dir = conn.connection.cache.path
    conn(
        conn.stub.StartSession,
        cg.StartSessionRequest(
            benchmark=cg.Benchmark(uri="benchmark://c/1", program=cg.File(contents=b"1"))
        ),
    )
    log = (working_dir / "logs" / "service.log").read_text()
    conn.close()  # SIGTERM with a session open; raises ServiceError on a non-zero exit
    assert process.returncode == 0
    assert "--logbuflevel" not in log  # passed by CompilerGym's client: accepted quietly
    for flag in ["--foo=1", "--bar=2", "--baz=3"]:
        assert f"Ignoring unknown command line argument '{flag}'" in log


def test_runtime_imports_no_compiler() -> None:
    code = (
        "import sys, xla_service.runtime; "
        "bad = [m for m in ('jax', 'compiler_gym', 'xla_service.passes', 'numpy') "
        "if m in sys.modules]; "
        "sys.exit(f'imported {bad}' if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
