"""Stored transitions as a dataset for offline RL and world models (NumPy arrays).

``python -m xla_service.store export OUT.npz`` writes one row per stored step
``(s, pass) -> s'`` of the current semantics, with these arrays:

==================  ==============  ===========================================
name                dtype, shape    meaning
==================  ==============  ===========================================
``state``           int64 [T, 133]  ``OpcodeCounts`` of s (``catalog.opcodes.OPCODES`` order)
``action``          int64 [T]       the pass, as an index of ``catalog.passes.PASS_NAMES``
``next_state``      int64 [T, 133]  ``OpcodeCounts`` of s' (= ``state`` if unchanged or failed)
``op_count``        int64 [T]       ``OpCount`` of s
``next_op_count``   int64 [T]       ``OpCount`` of s'
``reward``          float64 [T]     ``op_count - next_op_count`` (the ``OpCount`` reward)
``changed``         bool [T]        the pass changed the module
``failed``          bool [T]        XLA failed or aborted in the pass
``state_digest``    str [T]         SHA-256 of s's normalized HLO text
``next_digest``     str [T]         SHA-256 of s''s
``error``           str [T]         XLA's message where ``failed``, else ""
==================  ==============  ===========================================

and the scalars ``semantics`` (jaxlib, engine, catalog, op count rule),
``pass_names`` and ``opcodes``. Steps whose states are gone from the store
(evicted) are skipped.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from xla_service.catalog.opcodes import OPCODES
from xla_service.catalog.passes import PASS_NAMES
from xla_service.passes.cache import MISS, Failure
from xla_service.store.codec import decode_value
from xla_service.store.sql import SqlStore

__all__ = ["export_transitions"]

_INDEX = {name: i for i, name in enumerate(PASS_NAMES)}


def export_transitions(store: SqlStore, out: Path) -> int:
    """Write the store's steps to ``out`` (``.npz``); returns how many rows."""
    columns: dict[str, list[object]] = {
        k: []
        for k in (
            "state", "action", "next_state", "op_count", "next_op_count", "reward",
            "changed", "failed", "state_digest", "next_digest", "error",
        )
    }
    states: dict[str, Any] = {}

    def state(digest: str) -> Any:
        if digest not in states:
            states[digest] = store.state(digest) or MISS
        return states[digest]

    for (digest, name), value in store.results("step"):
        if name not in _INDEX:
            continue  # the default pipeline's result, not an action
        s = state(digest)
        if s is MISS:
            continue
        try:
            result = decode_value(value, state)
        except ValueError:
            continue
        if result is MISS:
            continue
        failed = isinstance(result, Failure)
        after = s if result is None or failed else result
        columns["state"].append(s.opcode_counts)
        columns["action"].append(_INDEX[name])
        columns["next_state"].append(after.opcode_counts)
        columns["op_count"].append(s.op_count)
        columns["next_op_count"].append(after.op_count)
        columns["reward"].append(float(s.op_count - after.op_count))
        columns["changed"].append(after is not s)
        columns["failed"].append(failed)
        columns["state_digest"].append(digest)
        columns["next_digest"].append(after.digest)
        columns["error"].append(result.message if failed else "")
    rows = len(columns["action"])
    arrays = {
        "state": np.asarray(columns["state"], dtype=np.int64).reshape(rows, len(OPCODES)),
        "action": np.asarray(columns["action"], dtype=np.int64),
        "next_state": np.asarray(columns["next_state"], dtype=np.int64).reshape(rows, len(OPCODES)),
        "op_count": np.asarray(columns["op_count"], dtype=np.int64),
        "next_op_count": np.asarray(columns["next_op_count"], dtype=np.int64),
        "reward": np.asarray(columns["reward"], dtype=np.float64),
        "changed": np.asarray(columns["changed"], dtype=bool),
        "failed": np.asarray(columns["failed"], dtype=bool),
        "state_digest": np.asarray(columns["state_digest"], dtype=str),
        "next_digest": np.asarray(columns["next_digest"], dtype=str),
        "error": np.asarray(columns["error"], dtype=str),
    }
    arrays["semantics"] = np.asarray(store.semantics)
    arrays["pass_names"] = np.asarray(PASS_NAMES)
    arrays["opcodes"] = np.asarray(OPCODES)
    np.savez_compressed(out, **arrays)  # type: ignore[arg-type]
    return rows
