"""What makes a warm step cheap changes no result (no XLA): deferred states, encoded replies, memos."""
from __future__ import annotations

import dataclasses
import pickle
import sqlite3
import zlib

import pytest

from xla_service.catalog.opcodes import OPCODES
from xla_service.errors import StoredStateError
from xla_service.passes.analysis import Analysis
from xla_service.passes.cache import Cache
from xla_service.proto import ActionSpace, Event, Int64Tensor, StepReply
from xla_service.runtime.replies import EncodedStepReply, varint
from xla_service.session.loaded import LoadedBenchmarks
from xla_service.store.codec import checksum
from xla_service.store.sqlite import ExperienceStore


def _state(tag: str, ops: int = 3) -> Analysis:
    counts = [0] * len(OPCODES)
    counts[OPCODES.index("add")] = ops
    counts[OPCODES.index("parameter")] = 2**31 + 5  # counts are unsigned 32-bit in the store
    return Analysis(f"HloModule {tag}\nENTRY e {{ }}\n" + "x" * 300, tuple(counts))


def test_a_stored_state_reads_its_text_only_when_used_and_equals_the_computed_one(tmp_path):
    store = ExperienceStore(tmp_path / "s.sqlite")
    a, b = _state("a"), _state("b", ops=7)
    store.put(("step", a.digest, "cse"), b)
    read = store.get(("step", a.digest, "cse"))
    assert read.__dict__["_text"] is None  # not decompressed, not hashed yet
    assert read.digest == b.digest and read.opcode_counts == b.opcode_counts and read.op_count == b.op_count
    assert read == b and hash(read) == hash(b) and read != a
    assert read.text == b.text and read.__dict__["_text"] == b.text
    again = pickle.loads(pickle.dumps(store.get(("step", a.digest, "cse"))))  # pickles with its text
    assert again == b and again.text == b.text
    with pytest.raises(dataclasses.FrozenInstanceError):
        read.digest = "x"  # type: ignore[misc]
    store.close()


def test_a_stored_state_whose_text_does_not_hash_to_its_digest_fails_when_used_and_is_never_cached(tmp_path):
    store = ExperienceStore(tmp_path / "s.sqlite")
    a, b = _state("a"), _state("b")
    store.put(("step", a.digest, "cse"), b)
    forged = zlib.compress(b"HloModule forged")  # a row written wrong, with a matching checksum
    db = sqlite3.connect(str(store.path))
    counts = db.execute("SELECT counts FROM states WHERE digest=?", (b.digest,)).fetchone()[0]
    db.execute("UPDATE states SET text=?, checksum=? WHERE digest=?",
               (forged, checksum(b.digest.encode(), forged, counts), b.digest))
    db.commit()
    read = store.get(("step", a.digest, "cse"))
    cache = Cache()
    with pytest.raises(StoredStateError, match="holds text of digest"):
        cache.get_or_compute(("observation", b.digest, "hlo"), lambda: read.text)
    assert ("observation", b.digest, "hlo") not in cache  # transient: never kept as XLA's verdict
    store.close()


@pytest.mark.parametrize("end,no_effect,space,events", [
    (False, False, False, []),
    (True, True, False, [Event(int64_value=5), Event(string_value="")]),
    (False, True, True, [Event(int64_tensor=Int64Tensor(shape=[200], value=list(range(0, 2000, 10)))),
                         Event(string_value="é" * 100), Event(int64_value=2**40)]),
])
def test_an_encoded_step_reply_is_byte_for_byte_the_step_reply(end, no_effect, space, events):
    message = StepReply(end_of_session=end, action_had_no_effect=no_effect)
    encoded = EncodedStepReply(action_had_no_effect=no_effect)
    encoded.end_of_session = end
    if space:
        action_space = ActionSpace(name="passes")
        message.new_action_space.CopyFrom(action_space)
        encoded.new_action_space = action_space
    message.observation.extend(events)
    encoded.observations = [e.SerializeToString() for e in events]
    assert encoded.SerializeToString() == message.SerializeToString()
    assert encoded.message() == message


def test_varint_matches_protobuf():
    for value in (0, 1, 127, 128, 300, 2**14, 2**35 + 3):
        assert varint(value) == Int64Tensor(shape=[value]).SerializeToString()[2:]  # packed: tag, length, varint


def test_loaded_benchmarks_are_kept_by_program_bytes_and_bounded():
    loaded = LoadedBenchmarks(entries=2, max_bytes=10**6)
    a, b, c = _state("a"), _state("b"), _state("c")
    loaded.put(b"A", a)
    loaded.put(b"B", b)
    assert loaded.get(b"A") is a  # A is now the most recently used
    loaded.put(b"C", c)
    assert loaded.get(b"B") is None and loaded.get(b"A") is a and loaded.get(b"C") is c and len(loaded) == 2
    small = LoadedBenchmarks(max_bytes=a.nbytes())  # a state bigger than the bound is not kept
    small.put(b"A", a)
    assert small.get(b"A") is None


def test_the_client_parses_step_replies_as_protobuf_does():
    from compiler_gym.service.proto import ActionSpace as ClientActionSpace
    from compiler_gym.service.proto import Event as ClientEvent
    from compiler_gym.service.proto import Int64Tensor as ClientTensor
    from compiler_gym.service.proto import StepReply as ClientStepReply

    from xla_service.env.replies import parse_step_reply

    replies = [ClientStepReply(), ClientStepReply(end_of_session=True, action_had_no_effect=True)]
    usual = ClientStepReply(action_had_no_effect=True)
    usual.observation.extend([
        ClientEvent(int64_tensor=ClientTensor(shape=[133], value=[(i * 37) % 5000 for i in range(133)])),
        ClientEvent(int64_value=-3), ClientEvent(string_value="pass: XLA's message é"),
        ClientEvent(int64_tensor=ClientTensor(shape=[2, 2], value=[-1, 2**63 - 1, 0, -(2**63)])),
        ClientEvent(int64_tensor=ClientTensor()),
    ])
    replies.append(usual)
    other = ClientStepReply()
    other.new_action_space.CopyFrom(ClientActionSpace(name="passes"))  # left to protobuf
    replies.append(other)
    for reply in replies:
        data = reply.SerializeToString()
        parsed = parse_step_reply(data)
        assert parsed == reply and parsed.SerializeToString() == data
        assert [e.WhichOneof("value") for e in parsed.observation] == [e.WhichOneof("value") for e in reply.observation]
    with pytest.raises(Exception):  # noqa: B017  (protobuf's own error for a cut reply)
        ClientStepReply.FromString(usual.SerializeToString()[:-3])
    with pytest.raises(Exception):  # noqa: B017  (the same error: the cut reply reaches protobuf)
        parse_step_reply(usual.SerializeToString()[:-3])
