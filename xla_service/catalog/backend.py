"""The backend-cost observations: their layout and the roofline's fixed constants.

Pure Python. ``BackendCost`` (and its ``Agent``, ``Initial`` and ``Default``
variants) is a vector in :data:`BACKEND_KEYS` order, computed from the module
XLA's CPU backend makes of the current module (``passes/backend.py``): XLA's
own numbers (``cost_analysis()`` and the compiled memory stats of the
executable) beside an **estimated time**, a roofline over the optimized
module (``passes/roofline.py``) with the fixed constants below, so that the
same module gives the same value on every machine.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BACKEND_KEYS", "BACKEND_OBJECTIVES", "Roofline", "ROOFLINE", "BACKEND_SEMANTICS_VERSION"]

#: ``BackendCost`` vector order.
#: ``estimated_seconds``: the roofline estimate (``ROOFLINE``) of one execution;
#: ``flops``, ``transcendentals``, ``bytes_accessed``: XLA's ``cost_analysis()`` of the
#: optimized module; ``temp_bytes``: the executable's temporary buffers (XLA's buffer
#: assignment, ``temp_size_in_bytes``); ``fusions``: fusion instructions in the
#: optimized module; ``kernels``: instructions that do work (not tuples, parameters,
#: bitcasts, control flow), each counted once however often a loop runs it.
BACKEND_KEYS: tuple[str, ...] = (
    "estimated_seconds", "flops", "transcendentals", "bytes_accessed", "temp_bytes", "fusions", "kernels",
)

#: The objectives the reward spaces are built on: reward name stem -> key.
BACKEND_OBJECTIVES: dict[str, str] = {
    "EstimatedTime": "estimated_seconds",
    "TempBytes": "temp_bytes",
    "BytesAccessed": "bytes_accessed",
}

#: Bumped whenever a value of ``BackendCost`` changes for the same module and
#: jaxlib (the roofline's rules or constants): stored values key on it.
#: 2: a scatter's flops are its updates', not its operand's (2026-12-03).
BACKEND_SEMANTICS_VERSION = 2


@dataclass(frozen=True)
class Roofline:
    """The constants of the estimated time: a kernel (a fusion, or an unfused
    instruction that does work) takes ``overhead + max(flops / flops_per_second +
    transcendentals / transcendentals_per_second, bytes / bytes_per_second)``
    seconds; a module, the sum over its kernels, each times how often loops run it."""

    #: Fixed cost of launching one kernel, seconds.
    overhead: float
    #: Peak arithmetic rate, floating point (and integer) operations per second.
    flops_per_second: float
    #: Peak rate of transcendental functions (exp, log, tanh, ...), per second.
    transcendentals_per_second: float
    #: Peak memory bandwidth, bytes per second.
    bytes_per_second: float


#: The estimated time's constants, fixed so that the value is the same on every
#: machine: a single core of a current x86 server (AVX2 FMA at ~3 GHz: 2 x 8 x 2
#: flops a cycle, about a fifth of that reached by XLA's generated loops; ~20 GB/s
#: from memory; polynomial transcendentals at ~1 ns each; ~1 us to dispatch a kernel).
#: ``benchmarks/backend_vs_runtime.py`` measures how the estimate ranks against
#: measured runtime, and fits per-machine constants beside these.
ROOFLINE = Roofline(
    overhead=1e-6,
    flops_per_second=2e10,
    transcendentals_per_second=1e9,
    bytes_per_second=2e10,
)
