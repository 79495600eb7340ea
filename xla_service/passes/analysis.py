"""A module state as the engine hands it out: normalized text and its counted opcodes.

Pure Python, so the service process (which never imports jax) can hold it.
"""
from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from typing import Any

from xla_service.catalog.opcodes import OPCODE_INDEX, OPCODES, UNCOUNTED_OPCODES
from xla_service.errors import StoredStateError

__all__ = ["Analysis"]

_UNCOUNTED = tuple(OPCODE_INDEX[name] for name in UNCOUNTED_OPCODES)


class Analysis:
    """A normalized HLO module and its opcode counts, in ``OPCODES`` order. Immutable.

    The counts follow the op count rule (``schema.OP_COUNT_RULE``): the module
    as XLA's ``flatten-call-graph`` and ``call-inliner`` leave it, every call
    site with its own copy of the callee (``xla.count_opcodes``), so they can
    differ from the instructions of ``text`` where calls share a callee.

    ``digest`` is the SHA-256 of ``text``. A state read back from the
    experience store is made with :meth:`deferred`: its text is made on first
    use (a warm step needs only the digest and the counts) and checked
    against the digest then. Two states are equal when their digests and
    counts are.
    """

    text: str
    opcode_counts: tuple[int, ...]
    digest: str
    #: zlib-compressed MLIR of ``text``, which a compile of it starts from, if
    #: known (normalization computes it): the next step then skips parsing
    #: ``text`` and converting it again (``xla.run_pass``).
    mlir: bytes

    def __init__(self, text: str, opcode_counts: tuple[int, ...], mlir: bytes = b"") -> None:
        _set(self, "_text", text)
        _set(self, "_make_text", None)
        _set(self, "_held", len(text))
        _set(self, "opcode_counts", opcode_counts)
        _set(self, "mlir", mlir)
        _set(self, "digest", hashlib.sha256(text.encode()).hexdigest())

    @classmethod
    def deferred(cls, digest: str, opcode_counts: tuple[int, ...], make_text: Callable[[], str], held: int) -> Analysis:
        """The state ``digest`` whose text ``make_text()`` makes on first use (then checked
        against ``digest``: :class:`~xla_service.errors.StoredStateError` if it does not match); ``held``:
        bytes the state holds until then (for the cache's bound)."""
        state = object.__new__(cls)
        for name, value in (("_text", None), ("_make_text", make_text), ("_held", held),
                            ("opcode_counts", opcode_counts), ("mlir", b""), ("digest", digest)):
            _set(state, name, value)
        return state

    @property  # type: ignore[no-redef]
    def text(self) -> str:
        text: str | None = self.__dict__["_text"]
        if text is None:
            text = self.__dict__["_make_text"]()
            actual = hashlib.sha256(text.encode()).hexdigest()
            if actual != self.digest:
                raise StoredStateError(f"state {self.digest[:12]} holds text of digest {actual[:12]}")
            _set(self, "_text", text)
            _set(self, "_make_text", None)
            _set(self, "_held", len(text))
        return text

    @property
    def op_count(self) -> int:
        """Counted instructions (calls inlined), other than parameters and constants."""
        return sum(self.opcode_counts) - sum(self.opcode_counts[i] for i in _UNCOUNTED)

    def nbytes(self) -> int:
        """Bytes it holds (its text, or what makes it, and carried MLIR), for the cache's bound."""
        return int(self.__dict__["_held"]) + len(self.mlir) + 8 * len(self.opcode_counts)

    def histogram(self) -> dict[str, int]:
        """Nonzero opcode counts by name."""
        return {OPCODES[i]: c for i, c in enumerate(self.opcode_counts) if c}

    # ------------------------------------------------------ value semantics

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Analysis):
            return NotImplemented
        return self.digest == other.digest and self.opcode_counts == other.opcode_counts

    def __hash__(self) -> int:
        return hash((self.digest, self.opcode_counts))

    def __repr__(self) -> str:
        return f"Analysis(text={self.text!r}, opcode_counts={self.opcode_counts!r})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def __getstate__(self) -> dict[str, Any]:
        """Pickled with its text (what makes a deferred text may not pickle)."""
        return {**self.__dict__, "_text": self.text, "_make_text": None}


def _set(state: Analysis, name: str, value: Any) -> None:
    object.__setattr__(state, name, value)
