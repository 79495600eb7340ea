"""How the experience store writes what the engine caches, and checks it on the way back.

Every row carries a checksum of its key and value (BLAKE2b, 16 bytes): a row
whose bytes do not match is never served (a torn or corrupt write reads as a
miss). A state's text is also checked against its digest, which is the
SHA-256 of the text.
"""
from __future__ import annotations

import hashlib
import json
import struct
import zlib
from typing import Any

from xla_service import errors
from xla_service.passes.analysis import Analysis
from xla_service.passes.cache import Failure

__all__ = ["checksum", "encode_value", "decode_value", "encode_state", "decode_state", "deferred_state", "CorruptRow"]

#: Tags of encoded values.
_STATE, _UNCHANGED, _FAILURE, _JSON, _BYTES = b"S", b"U", b"F", b"J", b"B"


class CorruptRow(ValueError):
    """A stored row whose checksum or digest does not match its bytes."""


def checksum(*parts: bytes) -> bytes:
    digest = hashlib.blake2b(digest_size=16)
    for part in parts:
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.digest()


def encode_value(value: Any) -> tuple[bytes, Analysis | None]:
    """``(bytes, state to store beside it)`` for a cached value.

    A state (:class:`Analysis`) is stored by digest in the states table and
    referred to; ``None`` (a step that changed nothing) and a :class:`Failure`
    get their own tags; tuples, lists, strings and numbers go as JSON; bytes as they are.
    """
    if isinstance(value, Analysis):
        return _STATE + value.digest.encode(), value
    if value is None:
        return _UNCHANGED, None
    if isinstance(value, Failure):
        return _FAILURE + json.dumps({"type": value.error_type.__name__, "message": value.message}).encode(), None
    if isinstance(value, bytes):
        return _BYTES + value, None
    if isinstance(value, (str, int, float, tuple, list, dict)):
        return _JSON + json.dumps(value).encode(), None
    raise TypeError(f"Cannot store a {type(value).__name__}: expected a state, None, a failure, JSON or bytes")


def decode_value(data: bytes, load_state: Any) -> Any:
    """The value of :func:`encode_value`'s bytes; ``load_state(digest)`` fetches a state
    (None if it is gone, then the whole value is a miss: None is returned as ``_MISS``)."""
    tag, body = data[:1], data[1:]
    if tag == _STATE:
        return load_state(body.decode())
    if tag == _UNCHANGED:
        return None
    if tag == _FAILURE:
        record = json.loads(body)
        error_type = getattr(errors, record["type"], None)
        if not (isinstance(error_type, type) and issubclass(error_type, errors.XlaGymError)):
            raise CorruptRow(f"unknown error type {record['type']!r}")
        return Failure(error_type, record["message"])
    if tag == _JSON:
        value = json.loads(body)
        return tuple(value) if isinstance(value, list) else value
    if tag == _BYTES:
        return bytes(body)
    raise CorruptRow(f"unknown tag {tag!r}")


def encode_state(state: Analysis) -> tuple[bytes, bytes]:
    """``(compressed text, opcode counts)`` of a state."""
    counts = b"".join(int(c).to_bytes(4, "little") for c in state.opcode_counts)
    return zlib.compress(state.text.encode(), 6), counts


def _counts(counts: bytes) -> tuple[int, ...]:
    if len(counts) % 4:
        raise CorruptRow(f"opcode counts of {len(counts)} bytes: expected a multiple of 4")
    return struct.unpack(f"<{len(counts) // 4}I", counts)


def decode_state(digest: str, text: bytes, counts: bytes) -> Analysis:
    """The state, its text decompressed and checked against ``digest`` now."""
    state = Analysis(zlib.decompress(text).decode(), _counts(counts))
    if state.digest != digest:
        raise CorruptRow(f"state {digest[:12]} holds text of digest {state.digest[:12]}")
    return state


def deferred_state(digest: str, text: bytes, counts: bytes) -> Analysis:
    """The state, its text decompressed and checked against ``digest`` on first use
    (``Analysis.deferred``): a warm step reads only the digest and the counts. The
    row's checksum, checked before, covers these bytes."""
    return Analysis.deferred(digest, _counts(counts), lambda: zlib.decompress(text).decode(), len(text))
