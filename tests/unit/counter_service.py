"""A CompilerGym service of the fake counter session over real gRPC, for the runtime's tests.

The ``service`` fixture (``conftest.py``) yields a ``Service``: the servicer, a stub
on a channel to it, and shortcuts for the calls the tests make.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from fake_counter_session import COUNT, CounterSession

from xla_service.proto import (
    Benchmark,
    CompilerGymServiceStub,
    Event,
    File,
    SendSessionParameterRequest,
    SessionParameter,
    StartSessionRequest,
    StepReply,
    StepRequest,
)
from xla_service.runtime import CompilerGymServicer, create_server

__all__ = ["T", "Service", "rpc_error", "running_service"]

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


@contextmanager
def running_service(tmp_path: Path) -> Iterator[Service]:
    """A service of counter sessions on a free port, with a fresh ``CounterSession`` class state."""
    CounterSession.reset_class_state()
    server, port, servicer = create_server("127.0.0.1:0", CounterSession, tmp_path, 16)
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield Service(CompilerGymServiceStub(channel), servicer, port)
    finally:
        CounterSession.release.set()
        channel.close()
        server.stop(None).wait()
        servicer.close_all()


def rpc_error(call: Callable[..., object], *args: object) -> grpc.RpcError:
    """The error that ``call(*args)`` fails with."""
    with pytest.raises(grpc.RpcError) as info:
        call(*args, timeout=T)
    return info.value
