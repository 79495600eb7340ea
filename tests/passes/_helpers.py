"""Shared helpers for tests/passes: benchmark text, small jax modules, isolated runs.

Importing this module does not import jax; the functions that need it do.
"""
from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GPT2_BENCHMARK = REPO / "datasets/xla-gpt2-v0/gpt2-l2-d64-h4-s32-b2-adam-f32-train.hlo.gz"
RUNNER = Path(__file__).with_name("_pass_runner.py")


def gpt2_text() -> str:
    """The bundled GPT-2 (2 layers) training-step benchmark, as HLO text."""
    with gzip.open(GPT2_BENCHMARK, "rt") as f:
        return f.read()


def lower(fn, *args) -> str:
    """HLO text of ``jax.jit(fn)`` at ``args``, as the dataset generator lowers it."""
    import jax

    return jax.jit(fn).lower(*args).compiler_ir("hlo").as_hlo_text()


def varied_module() -> str:
    """A small module with a bit of everything: dot, calls, loops, gather, sort...

    The gather is written in XLA's "simplified" form (indices of rank 2,
    index_vector_dim last, no collapsed dims): the CPU backend aborts the
    process on any other gather when ``gather_simplifier`` did not run (see
    ``test_engine_crash.py``), which would make every step of this test abort.
    """
    import jax
    import jax.numpy as jnp
    from jax import lax

    @jax.jit
    def inner(x):
        return jnp.tanh(x) * 2.0

    def f(x, w, idx, v):
        y = jnp.dot(x, w)
        y = inner(y)
        y = y.reshape(4, 8).T  # [8, 4]

        def body(i, c):
            # cos(w[0, 0]) is loop-invariant: while-loop-invariant-code-motion food
            return c + jnp.sin(c) * jnp.cos(w[0, 0]) + 0.0

        y = lax.fori_loop(0, 3, body, y)
        dn = lax.GatherDimensionNumbers(
            offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0,)
        )
        g = lax.gather(y, idx, dn, slice_sizes=(1, 4), mode=lax.GatherScatterMode.CLIP)

        def wbody(c):
            return (c[0] + 1, c[1] * 1.5, c[2])

        _, z, _ = lax.while_loop(lambda c: c[0] < 5, wbody, (0, g, w))
        s = jnp.sort(v)
        b = jnp.einsum("bij,bjk->bik", x.reshape(2, 2, 8), w.reshape(2, 8, 4))
        return (
            z.sum()
            + jnp.exp(x).sum()
            + jnp.log1p(jnp.abs(s)).sum()
            + jax.nn.sigmoid(b).sum()
            + jnp.cumsum(v).sum()
        )

    args = (
        jnp.ones((4, 8)),
        jnp.ones((8, 8)),
        jnp.array([[0], [2], [1]], dtype=jnp.int32),
        jnp.arange(16.0)[::-1],
    )
    return lower(f, *args)


@dataclass
class IsolatedResult:
    """What one pass did in :func:`run_isolated`."""

    name: str
    status: str  # "changed", "unchanged", "error" or "lost"
    text: str | None = None
    error_type: str = ""
    error: str = ""
    #: XLA aborted the process running the pass (the result then came from its dumps).
    aborted: bool = False
    abort_message: str = ""


@dataclass
class _Chunk:
    jobs: list[tuple[str, str, str]]
    results: dict[str, IsolatedResult] = field(default_factory=dict)
    aborted: dict[str, str] = field(default_factory=dict)


def _fatal_line(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines()]
    fatal = [ln for ln in lines if ln.startswith("F") or "Check failed" in ln]
    return fatal[-1] if fatal else (lines[-1] if lines else "no message")


def run_isolated(
    text: str, names: Sequence[str], chunks: int = 2, timeout: float = 300.0
) -> dict[str, IsolatedResult]:
    """Run each pass of ``names`` on ``text`` with ``xla.run_pass``, in subprocesses.

    The passes are split into ``chunks`` processes that run concurrently. When
    XLA aborts a process, the pass it was running is finished from its dumps
    (``xla.finish_pass``) by a fresh process, which then runs the rest.
    """
    work = Path(tempfile.mkdtemp(prefix="xla-gym-every-pass-"))
    try:
        return _run_isolated(work, text, names, chunks, timeout)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run_isolated(
    work: Path, text: str, names: Sequence[str], chunks: int, timeout: float
) -> dict[str, IsolatedResult]:
    state = []
    for c in range(chunks):
        mine = list(names[c::chunks])
        jobs = [("run", n, str(work / f"dump-{n}")) for n in mine]
        for _, _, d in jobs:
            os.makedirs(d)
        state.append(_Chunk(jobs))
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    attempt = 0
    while any(ch.jobs for ch in state):
        attempt += 1
        running = []
        for c, ch in enumerate(state):
            if not ch.jobs:
                continue
            jobs_path = work / f"jobs-{c}-{attempt}.json"
            results_path = work / f"results-{c}-{attempt}.jsonl"
            stderr_path = work / f"stderr-{c}-{attempt}.txt"
            jobs_path.write_text(json.dumps({"text": text, "jobs": ch.jobs}))
            with open(stderr_path, "w") as err:
                proc = subprocess.Popen(
                    [sys.executable, str(RUNNER), str(jobs_path), str(results_path)],
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    env=env,
                    cwd=str(REPO),
                )
            running.append((ch, proc, results_path, stderr_path))
        for ch, proc, results_path, stderr_path in running:
            try:
                code = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                code = None
            records = []
            if results_path.exists():
                records = [json.loads(ln) for ln in results_path.read_text().splitlines()]
            done = set()
            current = None
            for r in records:
                if r["event"] == "start":
                    current = (r["kind"], r["name"], r["dump_dir"])
                    continue
                current = None
                done.add((r["kind"], r["name"]))
                res = IsolatedResult(
                    r["name"], r["status"], r.get("text"), r.get("error_type", ""),
                    r.get("error", ""),
                )
                if r["name"] in ch.aborted:
                    res.aborted, res.abort_message = True, ch.aborted[r["name"]]
                ch.results[r["name"]] = res
            rest = [j for j in ch.jobs if (j[0], j[1]) not in done]
            if code == 0 and not rest:
                ch.jobs = []
                continue
            # The process died (XLA abort) or hung while running ``current``.
            message = f"exit code {code}: {_fatal_line(stderr_path.read_text())}"
            if current is None:
                raise RuntimeError(f"pass runner failed before its first pass: {message}")
            kind, name, dump_dir = current
            rest = [j for j in rest if (j[0], j[1]) != (kind, name)]
            if kind == "run":
                ch.aborted[name] = message
                ch.jobs = [("finish", name, dump_dir)] + rest
            else:  # even reading the dumps aborted: nothing more to learn
                ch.results[name] = IsolatedResult(
                    name, "lost", aborted=True, abort_message=ch.aborted.get(name, message)
                )
                ch.jobs = rest
    merged: dict[str, IsolatedResult] = {}
    for ch in state:
        merged.update(ch.results)
    return merged


def opcode_zoo_module() -> str:
    """A module using the opcodes whose HLO text name is not their enum name.

    exp, expm1, log1p, sin, cos, clz, popcnt, optimization barrier and top-k are
    spelled ``exponential``, ``exponential-minus-one``, ``log-plus-one``,
    ``sine``, ``cosine``, ``count-leading-zeros``, ``popcnt``, ``opt-barrier``
    and ``topk`` in HLO text; the rest (log, tanh, sort, while, dot, ...) is
    there for breadth.
    """
    import jax.numpy as jnp
    from jax import lax

    def f(x, i, w):
        a = jnp.exp(x) + jnp.log(jnp.abs(x) + 1) + jnp.sin(x) + jnp.cos(x) + jnp.tanh(x)
        a = a + jnp.expm1(x) + jnp.log1p(jnp.abs(x))
        b = lax.clz(i) + lax.population_count(i)
        a, b = lax.optimization_barrier((a, b))
        v, k = lax.top_k(a, 3)
        s = jnp.sort(a)
        _, z = lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0), (0, s))
        d = jnp.dot(w, w.T)
        return (
            z.sum() + v.sum() + k.sum() + b.sum() + d.sum()
            + jnp.sqrt(jnp.abs(x)).sum() + lax.rsqrt(x * x + 1).sum()
        )

    return lower(f, jnp.ones(8), jnp.ones(8, jnp.int32), jnp.ones((3, 4)))


def nested_jit_module() -> str:
    """jax.jit inside jax.jit: the inner functions become ``call`` instructions."""
    import jax
    import jax.numpy as jnp

    @jax.jit
    def inner(x):
        return jnp.tanh(x) * 2.0

    @jax.jit
    def tril(x):
        return jnp.tril(x) + 1.0

    def f(x):
        return inner(x) + tril(inner(x * 3.0)) + tril(x)

    return lower(f, jnp.ones((4, 4)))


def plain_jax_module() -> str:
    """A jax function without nested jit (no ``call`` after lowering)."""
    import jax.numpy as jnp

    def f(x, y):
        return jnp.tanh(x @ y).sum(axis=0) + jnp.exp(y).mean()

    return lower(f, jnp.ones((4, 8)), jnp.ones((8, 8)))


def take_module() -> str:
    """``jnp.take`` twice: a non-simplified gather (and a common subexpression).

    The CPU backend aborts the process (``Check failed:
    GatherSimplifier::IsSimplifiedGather(gather)``) when it compiles a gather
    that ``gather_simplifier`` has not rewritten, i.e. after every partial
    pipeline that does not run that pass. The HLO passes have finished by then.
    """
    import jax.numpy as jnp

    def f(x, i):
        return jnp.take(x, i, axis=0) * 2.0 + jnp.take(x, i, axis=0)

    return lower(f, jnp.ones((8, 4)), jnp.array([1, 2, 3]))


def computations(text: str) -> dict[str, list[str]]:
    """Opcode names per computation, in order, keyed by computation name."""
    from xla_service.catalog.opcodes import OPCODES
    from xla_service.passes import xla
    from xla_service.passes.jaxlib import hlo

    index = {member: i for i, member in enumerate(hlo.HloOpcode.__members__.values())}
    return {
        c.name: [OPCODES[index[i.opcode]] for i in c.instructions()]
        for c in xla.parse(text).computations()
    }


def entry_opcodes(text: str) -> list[str]:
    """Opcode names of the entry computation's instructions."""
    import re

    name = re.search(r"^ENTRY %?([^\s{(]+)", text, re.M)[1]
    return computations(text)[name]


def raw_histogram(text: str) -> dict[str, int]:
    """Instructions per opcode of ``text`` as written, every computation once (no
    op count rule: a shared callee is counted once, ``call`` instructions too)."""
    from xla_service.catalog.opcodes import OPCODES
    from xla_service.passes import hlo

    counts = hlo.opcode_counts(hlo.parse(text))
    return {OPCODES[i]: c for i, c in enumerate(counts) if c}
