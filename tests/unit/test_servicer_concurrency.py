"""The gRPC runtime's threads, over real gRPC, with the fake counter session: concurrent forks, sessions
in parallel, one session's calls in turn, a blocked or ended session, closing all.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from counter_service import Service, T, rpc_error
from fake_counter_session import COUNT, A, CounterSession

from xla_service.proto import (
    Benchmark,
    EndSessionRequest,
    ForkSessionRequest,
    GetSpacesRequest,
    StartSessionRequest,
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
