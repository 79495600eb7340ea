"""The client's ``Step`` replies, parsed without protobuf's per-element checks.

With protobuf's pure-Python implementation (protobuf 3.20 on Python 3.11),
parsing a ``StepReply`` that carries ``OpcodeCounts`` checks and appends each
of its 133 integers one call at a time, which costs as much as the rest of a
warm step. :func:`parse_step_reply` reads the usual reply (its flags and
events) itself and builds the same ``StepReply`` message, the integers of an
``Int64Tensor`` put in at once; anything else it hands to protobuf's parser.
:func:`install` gives a connection's stub a ``Step`` that parses this way.
The message is equal, field for field, to ``StepReply.FromString``'s
(``tests/unit/test_warm_path.py``).
"""
from __future__ import annotations

from typing import Any

from compiler_gym.service.proto import StepReply, StepRequest

__all__ = ["install", "parse_step_reply"]

_STEP = "/compiler_gym.CompilerGymService/Step"
_INT64_TENSOR = 0x5A  # Event.int64_tensor: field 11, length-delimited
_MARK = "_xla_gym_fast_step"


class _Unusual(Exception):
    """A reply this parser leaves to protobuf."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise _Unusual


def _packed(data: bytes, zigzag: bool) -> list[int]:
    """A packed repeated field's values: ``uint64`` (``Int64Tensor.shape``), or
    ``sint64`` with ``zigzag`` (``Int64Tensor.value``)."""
    values, value, shift = [], 0, 0
    for byte in data:
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            if shift == 63 and byte > 1:  # past 64 bits: protobuf would cut it
                raise _Unusual
            values.append((value >> 1) ^ -(value & 1) if zigzag else value)
            value = shift = 0
        else:
            shift += 7
            if shift > 63:
                raise _Unusual
    if shift:
        raise _Unusual
    return values


def _tensor(event: Any, data: bytes) -> None:
    """``Int64Tensor`` bytes (packed ``uint64 shape``, packed ``sint64 value``) into ``event.int64_tensor``."""
    tensor = event.int64_tensor
    tensor.SetInParent()
    pos, end = 0, len(data)
    while pos < end:
        tag = data[pos]
        if tag not in (0x0A, 0x12):  # shape (1) and value (2), packed
            raise _Unusual
        length, pos = _varint(data, pos + 1)
        if pos + length > end:
            raise _Unusual
        field = tensor.shape if tag == 0x0A else tensor.value
        field.MergeFrom(_packed(data[pos : pos + length], zigzag=tag == 0x12))
        pos += length


def _parse(data: bytes) -> StepReply:
    reply = StepReply()
    pos, end = 0, len(data)
    while pos < end:
        tag = data[pos]
        if tag in (0x08, 0x10):  # end_of_session, action_had_no_effect
            value, pos = _varint(data, pos + 1)
            if tag == 0x08:
                reply.end_of_session = bool(value)
            else:
                reply.action_had_no_effect = bool(value)
        elif tag == 0x22:  # an observation
            length, pos = _varint(data, pos + 1)
            if pos + length > end:
                raise _Unusual
            event = reply.observation.add()
            body = data[pos : pos + length]
            if body[:1] == bytes([_INT64_TENSOR]):
                inner, start = _varint(body, 1)
                if start + inner != len(body):
                    raise _Unusual
                _tensor(event, body[start:])
            else:
                event.MergeFromString(body)
            pos += length
        else:  # new_action_space, or anything unknown
            raise _Unusual
    return reply


def parse_step_reply(data: bytes) -> StepReply:
    """``StepReply.FromString(data)``, faster for the usual replies."""
    try:
        return _parse(data)
    except (_Unusual, IndexError):
        return StepReply.FromString(data)


def install(stub: Any, channel: Any) -> None:
    """Give ``stub`` (a connection's ``CompilerGymServiceStub`` on ``channel``) a ``Step``
    that parses replies with :func:`parse_step_reply`; once per stub."""
    if getattr(stub, _MARK, False):
        return
    stub.Step = channel.unary_unary(
        _STEP, request_serializer=StepRequest.SerializeToString, response_deserializer=parse_step_reply
    )
    setattr(stub, _MARK, True)
