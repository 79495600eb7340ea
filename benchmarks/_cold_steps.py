"""Helper of ``bench_store.py`` (imports jax): cold engine steps against a minimal route.

The minimal route runs in this process, warm: one partial compile of the pass
with every other target-independent pass disabled (returning as soon as the
dumps prove the pass ran, as the engine does), the result read from XLA's
dump, one HLO -> StableHLO -> HLO round trip. The engine runs the same
sequence from the same module through its worker (``Engine.apply``, nothing
cached, no store). ``python benchmarks/_cold_steps.py REPEATS``.
"""
from __future__ import annotations

import gzip
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, mixed_sequence

from xla_service.catalog.passes import get_pass
from xla_service.passes import compile, hlo, xla
from xla_service.passes.dumps import read_pass_dumps
from xla_service.passes.engine import Engine

MODULE = ROOT / "datasets/xla-gpt2-v0/gpt2-l3-d64-h2-s32-b2-adam-f32-train.hlo.gz"


def minimal_step(text: str, name: str) -> str:
    spec = get_pass(name)
    dump_dir = tempfile.mkdtemp(prefix="minimal-")
    try:
        compile.compile_until_done(text, spec.disable, dump_dir)
        dumps = read_pass_dumps(dump_dir, spec.runs, spec.is_fixpoint)
        result = Path(dumps.result_path).read_text() if dumps.result_path else text
        return hlo.round_trip(result)
    finally:
        compile.settle()
        shutil.rmtree(dump_dir, ignore_errors=True)


def main(repeats: int) -> None:
    base = gzip.open(MODULE, "rt").read()
    names = mixed_sequence(12, seed=3)
    engine = Engine(workers=1)
    engine.apply(engine.load(base.replace("HloModule ", "HloModule warm_", 1)), "cse")  # a warm worker
    minimal_step(xla.normalize(base), "cse")  # a warm process
    ours, minimal = [], []
    for r in range(repeats):
        text = re.sub(r"^HloModule ([^,\s]+)", rf"HloModule \1_r{r}", base, count=1)
        state = engine.load(text)
        current = state.text
        for name in names:
            t = time.perf_counter()
            try:
                state = engine.apply(state, name)
            except ValueError:
                pass
            ours.append(time.perf_counter() - t)
            t = time.perf_counter()
            try:
                current = minimal_step(current, name)
            except Exception:  # noqa: BLE001  (XLA rejects the pass: the same in both)
                pass
            minimal.append(time.perf_counter() - t)
    engine.close()
    a, b = statistics.median(ours), statistics.median(minimal)
    print(f"  {len(ours)} steps ({repeats} x {len(names)}: {' '.join(names)})")
    print(f"  engine step median {a * 1000:.0f} ms, minimal route median {b * 1000:.0f} ms: {a / b:.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
