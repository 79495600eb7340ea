"""The floor of a step: one pass's partial compile, its result read back and normalized.

Measured inside one warm worker process of the pass engine (jax imported, a
compile already done), with no gRPC, session or engine logic: the worker's
own clock around ``xla.run_pass`` (request ``timed``), for a fixed mixed
sequence of passes on each benchmark. ``run_pass`` replies as soon as XLA's
dumps prove that every target-independent pass ran; the rest of the compile
(the CPU backend, whose verdict a step ignores) finishes before the next
request, and is reported as "backend after reply". Aborts are counted: XLA
killing the worker after its reply costs a step nothing, before it the step
is finished from the dumps by a second worker.

Also prints the cost of the first load of each benchmark (normalization).
"""
from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

from _common import (
    BENCHMARKS,
    Progress,
    add_benchmarks_flag,
    benchmark_names,
    heading,
    hlo_text,
    median,
    mixed_sequence,
    print_header,
    print_rows,
    script_parser,
    summary,
)

from xla_service.passes.analysis import Analysis
from xla_service.passes.workers import Worker, WorkerDied

_SCRATCH = "/dev/shm" if Path("/dev/shm").is_dir() else tempfile.gettempdir()


class FloorWorker:
    """One engine worker process, kept warm, replaced if XLA kills it."""

    def __init__(self) -> None:
        self.log_dir = Path(tempfile.mkdtemp(prefix="xla-gym-bench-floor-"))
        self.worker = Worker(self.log_dir)
        self.aborts = 0
        self.warm()

    def timed(self, method: str, *args: object) -> tuple[float, object, str | None]:
        """``(seconds inside the worker, result, error)``; an abort is finished from the dumps."""
        self._ensure_alive()
        start = time.perf_counter()
        try:
            seconds, result, error = self.worker.call("timed", method, *args)
            return seconds, result, error
        except WorkerDied:
            # XLA aborted the worker before it replied: the floor of such a step
            # is the time until the abort (seen from here) and the time to read
            # the result from the dumps in a warm worker (the replacement's
            # start-up is not counted).
            until_abort = time.perf_counter() - start
            self.aborts += 1
            self._replace()
            if method != "run_pass":
                raise
            _, name, dump_dir = args[:3]
            seconds, result, error = self.worker.call("timed", "finish_pass", dump_dir, name, "aborted")
            return until_abort + seconds, result, error

    def backend_after_reply(self) -> float:
        """Wait for the backend of the last compile; its time from now (seconds)."""
        start = time.perf_counter()
        try:
            settle = getattr(self.worker, "settle", None)  # (absent before the speed-ups)
            if settle is not None:
                settle()
        except WorkerDied:
            self.aborts += 1
            self._replace()
        return time.perf_counter() - start

    def _ensure_alive(self) -> None:
        if self.worker.process.poll() is not None:
            self._replace()

    def _replace(self) -> None:
        self.worker.kill()
        self.worker.close()
        self.worker = Worker(self.log_dir)
        self.warm()

    def warm(self) -> None:
        """Import jax and compile once (off the clock): the worker is warm."""
        small = self.worker.call("load", hlo_text("small"))
        dump_dir = tempfile.mkdtemp(prefix="xla-gym-floor-", dir=_SCRATCH)
        try:
            self.worker.call("run_pass", small.text, "cse", dump_dir)
            self.backend_after_reply()
        except WorkerDied:
            self.worker = Worker(self.log_dir)
        finally:
            shutil.rmtree(dump_dir, ignore_errors=True)

    def close(self) -> None:
        self.worker.close()
        shutil.rmtree(self.log_dir, ignore_errors=True)


def measure_step(floor: FloorWorker, state: Analysis, name: str) -> dict[str, object]:
    """Time ``run_pass`` of ``name`` on ``state`` in the worker, as the engine calls it."""
    floor.backend_after_reply()  # nothing of the previous step may overlap
    dump_dir = tempfile.mkdtemp(prefix="xla-gym-floor-", dir=_SCRATCH)
    mlir = getattr(state, "mlir", b"")  # the compile input the engine passes along
    try:
        args = (state.text, name, dump_dir) + ((mlir,) if mlir else ())
        seconds, result, error = floor.timed("run_pass", *args)
        backend = floor.backend_after_reply()
    finally:
        shutil.rmtree(dump_dir, ignore_errors=True)
    changed = isinstance(result, Analysis) and result.text != state.text
    outcome = "failed" if error else ("changed" if changed else "unchanged")
    return {"pass": name, "seconds": seconds, "backend": backend, "outcome": outcome,
            "result": result if changed else state}


def walk(floor: FloorWorker, state: Analysis, sequence: list[str], progress: Progress) -> list[dict[str, object]]:
    """Measure each step of ``sequence`` from ``state``, following the results."""
    rows = []
    for name in sequence:
        row = measure_step(floor, state, name)
        rows.append(row)
        state = row["result"]  # type: ignore[assignment]
        progress.step(f"{name}: {row['outcome']}")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    add_benchmarks_flag(parser)
    parser.add_argument("--steps", type=int, default=30, help="passes in the mixed sequence run on each benchmark (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the mixed pass sequence (default: %(default)s)")
    parser.add_argument("--quick", action="store_true", help="small and gpt2, 8 steps each (< 60 s)")
    args = parser.parse_args(argv)
    if args.quick:
        args.benchmarks, args.steps = "small,gpt2", 8
    names = benchmark_names(args.benchmarks)
    print_header(argv)
    floor = FloorWorker()
    try:
        table = []
        for name in names:
            text = hlo_text(name)
            load_seconds, state, _ = floor.timed("load", text)
            assert isinstance(state, Analysis)
            sequence = mixed_sequence(args.steps, args.seed)
            rows = walk(floor, state, sequence, Progress(name, len(sequence)))
            heading(f"{name}: {BENCHMARKS[name][1]}, {state.op_count} ops normalized")
            print(f"  first load (parse + normalize): {load_seconds * 1000:.1f} ms")
            for outcome in ("changed", "unchanged", "failed"):
                xs = [r["seconds"] for r in rows if r["outcome"] == outcome and r["seconds"] == r["seconds"]]
                print(f"  floor, {outcome:9s}: {summary(xs)}")  # type: ignore[arg-type]
            every = [r["seconds"] for r in rows if r["seconds"] == r["seconds"]]
            backend = [r["backend"] for r in rows]
            print(f"  FLOOR {name}: {summary(every)}")  # type: ignore[arg-type]
            print(f"  backend after reply (not on a step's path): {summary(backend)}")  # type: ignore[arg-type]
            table.append([name, state.op_count, len(rows), f"{median(every) * 1000:.1f}", f"{median(backend) * 1000:.1f}"])  # type: ignore[arg-type]
        heading("summary (median ms)")
        print_rows(table, ["benchmark", "ops", "steps", "floor", "backend after reply"])
        print(f"  worker aborts: {floor.aborts}")
    finally:
        floor.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
