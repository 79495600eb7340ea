"""Our generated wire types are CompilerGym 0.2.5's, byte for byte."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest
from fake_counter_session import import_compiler_gym

from xla_service.proto import (
    Benchmark,
    DictEvent,
    Event,
    File,
    Int64Tensor,
    StepRequest,
    compiler_gym_service_pb2,
)


@pytest.fixture(scope="module")
def their_pb2() -> ModuleType:
    import_compiler_gym()
    return importlib.import_module("compiler_gym.service.proto.compiler_gym_service_pb2")


def test_descriptor_is_byte_identical(their_pb2: ModuleType) -> None:
    ours = compiler_gym_service_pb2.DESCRIPTOR
    assert ours.serialized_pb == their_pb2.DESCRIPTOR.serialized_pb
    assert ours.package == "compiler_gym"
    assert "CompilerGymService" in ours.services_by_name


def test_method_paths_match(their_pb2: ModuleType) -> None:
    ours = compiler_gym_service_pb2.DESCRIPTOR.services_by_name["CompilerGymService"]
    theirs = their_pb2.DESCRIPTOR.services_by_name["CompilerGymService"]
    assert [m.full_name for m in ours.methods] == [m.full_name for m in theirs.methods]
    assert len(ours.methods) == 8


def test_our_message_parses_with_theirs(their_pb2: ModuleType) -> None:
    event = Event(
        event_dict=DictEvent(
            event={
                "n": Event(int64_value=-7),
                "t": Event(int64_tensor=Int64Tensor(shape=[2], value=[1, 2])),
                "s": Event(string_value="héllo"),
            }
        )
    )
    request = StepRequest(session_id=3, action=[event], observation_space=[0, 2])
    parsed = their_pb2.StepRequest.FromString(request.SerializeToString())
    assert parsed.session_id == 3
    assert list(parsed.observation_space) == [0, 2]
    parsed_event = parsed.action[0].event_dict.event
    assert parsed_event["n"].int64_value == -7
    assert list(parsed_event["t"].int64_tensor.value) == [1, 2]
    assert parsed_event["s"].string_value == "héllo"


def test_their_message_parses_with_ours(their_pb2: ModuleType) -> None:
    theirs = their_pb2.Benchmark(
        uri="benchmark://x-v0/a", program=their_pb2.File(contents=b"\x00HLO")
    )
    ours = Benchmark.FromString(theirs.SerializeToString())
    assert ours == Benchmark(uri="benchmark://x-v0/a", program=File(contents=b"\x00HLO"))
    assert ours.SerializeToString() == theirs.SerializeToString()
