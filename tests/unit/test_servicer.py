"""The gRPC runtime, over real gRPC, with the fake counter session: the RPCs, their errors, the benchmark cache."""

from __future__ import annotations

import grpc
import pytest
from counter_service import Service, T, rpc_error
from fake_counter_session import (
    BROKEN,
    COUNT,
    TEXT,
    A,
    CounterSession,
)

from xla_service.proto import (
    AddBenchmarkRequest,
    Benchmark,
    EndSessionRequest,
    Event,
    File,
    ForkSessionRequest,
    GetSpacesRequest,
    GetVersionRequest,
    SendSessionParameterRequest,
    SessionParameter,
    StartSessionRequest,
    StepRequest,
)
from xla_service.runtime import DEFAULT_MAX_SIZE_IN_BYTES, BenchmarkCache


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
