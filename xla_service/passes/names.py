"""Canonical computation names, so that normalization reaches a fixpoint.

Pure text processing (no jax): see :func:`canonicalize_computation_names`.
"""
from __future__ import annotations

import re

__all__ = ["canonicalize_computation_names"]

_HEADER = re.compile(r"^(ENTRY )?(%?)([^\s{(]+)(.*\{)$", re.M)
_REF_KEYS = (
    "to_apply|calls|body|condition|true_computation|false_computation"
    "|branch_computations|called_computations"
)
_REF = re.compile(r"\b(" + _REF_KEYS + r")=(\{[^}]*\}|%?[^\s,{}()]+)")
_SUFFIX = re.compile(r"(\.\d+)+$")


def canonicalize_computation_names(text: str) -> str:
    """Rename every non-entry computation ``<base>.<k>``, ``k`` its rank among same-base ones.

    The StableHLO -> HLO export appends a ``.N`` to the name of every
    computation that was a ``func.func`` (the targets of ``call``), on every
    trip, so a module with calls never reaches a textual fixpoint
    (``tril.1`` -> ``tril.1.1`` -> ...). Renaming them by order of appearance
    after stripping numeric suffixes makes the result stable; nothing but
    names changes. A new name never takes the entry's, and a non-entry
    computation is never called ``main``: jaxlib's HLO -> StableHLO converter
    would rename the entry and take that one for the entry on the way back.
    """
    headers = list(_HEADER.finditer(text))
    taken = {m.group(3) for m in headers if m.group(1)}  # the entry keeps its name
    mapping = {}
    seen: dict[str, int] = {}
    for m in headers:
        if m.group(1):
            continue
        old = m.group(3)
        base = _SUFFIX.sub("", old) or old
        if base == "main":  # jaxlib's converter takes a computation "main" for the entry
            base = "main_fn"
        k = seen.get(base, 0)
        while f"{base}.{k}" in taken:
            k += 1
        seen[base] = k + 1
        mapping[old] = f"{base}.{k}"
        taken.add(mapping[old])
    if all(k == v for k, v in mapping.items()):
        return text

    def header(m):
        if m.group(1):
            return m.group(0)
        return f"{m.group(2)}{mapping.get(m.group(3), m.group(3))}{m.group(4)}"

    def one(name: str) -> str:
        bare = name.lstrip("%")
        return name[: len(name) - len(bare)] + mapping.get(bare, bare)

    def ref(m):
        value = m.group(2)
        if value.startswith("{"):
            names = [one(n.strip()) for n in value[1:-1].split(",") if n.strip()]
            return f"{m.group(1)}={{{', '.join(names)}}}"
        return f"{m.group(1)}={one(value)}"

    return _REF.sub(ref, _HEADER.sub(header, text))
