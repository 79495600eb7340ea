"""``Step`` replies put together from their observations' wire bytes.

With protobuf's pure-Python implementation (what protobuf 3.20 has on
Python 3.11), building a ``StepReply`` of an ``OpcodeCounts`` event and
serializing it costs more than the step itself when the engine knows the
result: every element is type-checked, copied, then varint-encoded again. A
session hands each observation over serialized (and may keep those bytes per
state, ``CompilationSession.get_observation_bytes``); :class:`EncodedStepReply`
writes the reply around them, byte for byte what ``StepReply.SerializeToString``
writes for the same fields (fields in number order, each observation a
length-delimited field 4), and ``step_handler`` has gRPC send it.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from xla_service.proto import ActionSpace, StepReply, StepRequest

__all__ = ["EncodedStepReply", "step_handler", "varint"]

_SERVICE = "compiler_gym.CompilerGymService"
# Tags of StepReply's fields (field number << 3 | wire type).
_END_OF_SESSION, _NO_EFFECT, _ACTION_SPACE, _OBSERVATION = b"\x08", b"\x10", b"\x1a", b"\x22"


def varint(value: int) -> bytes:
    """``value`` (>= 0) as a protobuf base-128 varint."""
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class EncodedStepReply:
    """A ``StepReply`` whose observations are serialized ``Event``s."""

    __slots__ = ("end_of_session", "action_had_no_effect", "new_action_space", "observations")

    def __init__(self, action_had_no_effect: bool = False) -> None:
        self.end_of_session = False
        self.action_had_no_effect = action_had_no_effect
        self.new_action_space: ActionSpace | None = None
        self.observations: list[bytes] = []

    def SerializeToString(self) -> bytes:  # noqa: N802  (protobuf's name, which gRPC's serializer calls)
        parts = []
        if self.end_of_session:
            parts.append(_END_OF_SESSION + b"\x01")
        if self.action_had_no_effect:
            parts.append(_NO_EFFECT + b"\x01")
        if self.new_action_space is not None:
            space = self.new_action_space.SerializeToString()
            parts.append(_ACTION_SPACE + varint(len(space)) + space)
        for event in self.observations:
            parts.append(_OBSERVATION + varint(len(event)) + event)
        return b"".join(parts)

    def message(self) -> StepReply:
        """The ``StepReply`` it encodes."""
        return StepReply.FromString(self.SerializeToString())


def _serialize(reply: Any) -> bytes:
    """An :class:`EncodedStepReply`, or the ``StepReply`` of a failed call."""
    return reply.SerializeToString()  # type: ignore[no-any-return]


def step_handler(step: Callable[[StepRequest, grpc.ServicerContext], Any]) -> grpc.GenericRpcHandler:
    """A handler of ``Step`` that sends what ``step`` returns as above: registered
    before the generated handlers, it takes ``Step`` from them (gRPC asks generic
    handlers in order)."""
    return grpc.method_handlers_generic_handler(_SERVICE, {
        "Step": grpc.unary_unary_rpc_method_handler(
            step, request_deserializer=StepRequest.FromString, response_serializer=_serialize
        ),
    })
