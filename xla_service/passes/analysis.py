"""A module state as the engine hands it out: normalized text and its counted opcodes.

Pure Python, so the service process (which never imports jax) can hold it.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from xla_service.catalog.opcodes import OPCODE_INDEX, OPCODES, UNCOUNTED_OPCODES

__all__ = ["Analysis"]

_UNCOUNTED = tuple(OPCODE_INDEX[name] for name in UNCOUNTED_OPCODES)


@dataclass(frozen=True)
class Analysis:
    """A normalized HLO module and its opcode counts, in ``OPCODES`` order.

    The counts follow the op count rule (``schema.OP_COUNT_RULE``): the module
    as XLA's ``flatten-call-graph`` and ``call-inliner`` leave it, every call
    site with its own copy of the callee (``xla.count_opcodes``), so they can
    differ from the instructions of ``text`` where calls share a callee.
    """

    text: str
    opcode_counts: tuple[int, ...]
    digest: str = field(init=False, compare=False, repr=False)
    #: zlib-compressed MLIR of ``text``, which a compile of it starts from, if
    #: known (normalization computes it): the next step then skips parsing
    #: ``text`` and converting it again (``xla.run_pass``).
    mlir: bytes = field(default=b"", compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "digest", hashlib.sha256(self.text.encode()).hexdigest())

    @property
    def op_count(self) -> int:
        """Counted instructions (calls inlined), other than parameters and constants."""
        return sum(self.opcode_counts) - sum(self.opcode_counts[i] for i in _UNCOUNTED)

    def nbytes(self) -> int:
        """Bytes it holds (its text and carried MLIR), for the cache's bound."""
        return len(self.text) + len(self.mlir) + 8 * len(self.opcode_counts)

    def histogram(self) -> dict[str, int]:
        """Nonzero opcode counts by name."""
        return {OPCODES[i]: c for i, c in enumerate(self.opcode_counts) if c}
