"""Reading a compile's result from XLA's pass dumps (no jax needed).

XLA writes ``module_NNNN.<module>.SSSS.<pipeline>.after_<pass>.before_<next>.txt``
at every pipeline start and after every pass that changed the module. A pass
run alone changed nothing if it left no dump, provided the compile went past
every target-independent pass, which a dump of ``layout-assignment`` (or of a
pass after it in its pipeline) or the start of a later pipeline proves. That
proof lets a step survive a compile that XLA fails or aborts afterwards, in
the backend, and reply before the backend is done (``xla.run_pass``).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from xla_service.catalog.pipelines import AFTER_LAYOUT, LATER_PIPELINES, LAYOUT_PIPELINE
from xla_service.errors import PassCrashedError

__all__ = ["PassDumps", "read_pass_dumps", "default_pipeline_dump", "target_independent_done"]

_DUMP = re.compile(r"\.(\d{4})\.([^.]+)\.after_(.+?)\.before_(.+?)\.txt$")

@dataclass(frozen=True)
class _Dump:
    seq: int
    pipeline: str
    after: str
    path: str


@dataclass(frozen=True)
class PassDumps:
    """What one partial compile left behind."""

    #: The dump holding the pass's result, or None if it changed nothing.
    result_path: str | None
    #: Whether the compile got past every target-independent pass.
    completed: bool


def _target_independent(dump_dir: str) -> tuple[list[_Dump], bool]:
    """Dumps before layout-assignment, in order, and whether it was reached."""
    dumps = []
    for name in os.listdir(dump_dir):
        m = _DUMP.search(name)
        if m:
            dumps.append(_Dump(int(m[1]), m[2], m[3], os.path.join(dump_dir, name)))
    dumps.sort(key=lambda d: d.seq)
    for i, d in enumerate(dumps):
        if _proves_done(d.pipeline, d.after):
            return dumps[:i], True
    return dumps, False


def _proves_done(pipeline: str, after: str) -> bool:
    """Whether a dump comes after every target-independent pass."""
    if pipeline in LATER_PIPELINES:
        return True
    return pipeline == LAYOUT_PIPELINE and after in AFTER_LAYOUT


def target_independent_done(dump_dir: str) -> bool:
    """Whether a running compile's dumps already prove that every
    target-independent pass ran (cheap enough to poll).

    XLA writes the dumps one after another from the compiling thread, so once
    the proof exists, every dump before it is complete.
    """
    try:
        names = os.listdir(dump_dir)
    except FileNotFoundError:
        return False
    for name in names:
        m = _DUMP.search(name)
        if m and _proves_done(m[2], m[3]):
            return True
    return False


def read_pass_dumps(dump_dir: str, runs: tuple[str, ...], fixpoint: bool) -> PassDumps:
    """Find the result of a pass that ran with only the passes ``runs`` enabled.

    A plain pass's result is its first dump (a pass may stand twice in the
    pipelines). In a fixpoint pipeline the result is the last dump: the outer
    pipeline may not dump it, for XLA's fixpoint reports "unchanged" when it
    stops at its iteration limit. Raises :class:`PassCrashedError` if a pass
    outside ``runs`` changed the module, which would mean the catalog's
    disable list is incomplete for this jaxlib.
    """
    dumps, completed = _target_independent(dump_dir)
    changed = [d for d in dumps if d.after != "pipeline-start"]
    intruders = {d.after for d in changed} - set(runs)
    if intruders:
        raise PassCrashedError(
            f"Running {runs[-1]!r}, XLA also ran {sorted(intruders)}: the pass "
            "catalog does not match this jaxlib"
        )
    if not changed:
        return PassDumps(None, completed)
    return PassDumps((changed[-1] if fixpoint else changed[0]).path, completed)


def default_pipeline_dump(dump_dir: str) -> str | None:
    """The last dump before ``layout-assignment`` ran in a full compile.

    That module is XLA's target-independent result: everything later is
    target-dependent.
    """
    dumps, completed = _target_independent(dump_dir)
    return dumps[-1].path if dumps and completed else None
