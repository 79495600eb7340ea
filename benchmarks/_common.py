"""Shared helpers of the benchmark scripts: inputs, pass sequences, statistics, /proc.

The inputs are copies of bundled benchmarks (``benchmarks/hlo/``, byte-identical
to ``datasets/xla-gpt2-v0/`` when copied), so that figures and result digests
stay comparable while the bundled suites are regenerated.
"""
from __future__ import annotations

import argparse
import gzip
import os
import random
import statistics
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HLO_DIR = Path(__file__).resolve().parent / "hlo"

from xla_service.catalog.passes import PASS_NAMES  # noqa: E402  (jax-free)

# The scripts measure the engine: services they start compute every uncached
# step (bench_store.py measures the experience store and sets its own).
os.environ.setdefault("XLA_GYM_STORE", "off")

#: name -> (file in benchmarks/hlo/, what it is). Sizes are normalized op counts.
BENCHMARKS: dict[str, tuple[str, str]] = {
    "small": ("gpt2-l1-d64-h4-s32-b2-f32-infer.hlo.gz", "GPT-2 1 layer, inference (~150 ops)"),
    "medium": ("gpt2-l1-d64-h4-s32-b2-sgd-f32-train.hlo.gz", "GPT-2 1 layer, SGD training step (~600 ops)"),
    "gpt2": ("gpt2-l2-d64-h4-s32-b2-adam-f32-train.hlo.gz", "GPT-2 2 layers, Adam training step (~1,100 ops)"),
    "large": ("gpt2-l4-d64-h4-s32-b2-adam-f32-train.hlo.gz", "GPT-2 4 layers, Adam training step (~2,000 ops)"),
}

def benchmark_names(spec: str) -> list[str]:
    """Parse a comma-separated ``--benchmarks`` value."""
    names = [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        raise SystemExit(f"unknown benchmark(s) {unknown}: expected some of {list(BENCHMARKS)}")
    return names


def hlo_bytes(name: str) -> bytes:
    """The gzip-compressed HLO text of a benchmark."""
    return (HLO_DIR / BENCHMARKS[name][0]).read_bytes()


def hlo_text(name: str) -> str:
    return gzip.decompress(hlo_bytes(name)).decode()


def benchmark_uri(name: str) -> str:
    return f"benchmark://xla-bench-v0/{BENCHMARKS[name][0].split('.')[0]}"


def client_benchmark(name: str):  # -> compiler_gym.datasets.Benchmark
    """The benchmark as a custom CompilerGym benchmark (sent to the service over gRPC)."""
    from compiler_gym.datasets import Benchmark

    return Benchmark.from_file_contents(benchmark_uri(name), hlo_bytes(name))


def variant(name: str, tag: str):  # -> compiler_gym.datasets.Benchmark
    """The benchmark under another module name: the same program, digests of its own."""
    import gzip as _gzip
    import re

    from compiler_gym.datasets import Benchmark

    text = re.sub(r"^HloModule ([^,\s]+)", rf"HloModule \1_{tag}", hlo_text(name), count=1)
    return Benchmark.from_file_contents(f"benchmark://xla-bench-v0/{name}-{tag}", _gzip.compress(text.encode()))


def mixed_sequence(length: int, seed: int = 0) -> list[str]:
    """A deterministic mixed pass sequence, as an agent's episode might go.

    XLA's default CPU pipeline, pass by pass and in its order (which takes a
    module through the states that upset the CPU backend most: dots
    decomposed, calls inlined, gathers not yet simplified), each pass followed
    by one or two passes drawn from the whole catalog; again from the start
    when it is exhausted.
    """
    from xla_service.catalog.pipelines import DEMO_SEQUENCE as DEFAULT_SEQUENCE  # jax-free

    rng = random.Random(seed)
    sequence: list[str] = []
    while len(sequence) < length:
        for name in DEFAULT_SEQUENCE:
            sequence.append(name)
            sequence.extend(rng.choice(PASS_NAMES) for _ in range(rng.randint(1, 2)))
    return sequence[:length]


# ----------------------------------------------------------------- statistics


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def percentile(xs: Sequence[float], q: float) -> float:
    if not xs:
        return float("nan")
    ordered = sorted(xs)
    k = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


def summary(xs: Sequence[float]) -> str:
    """``median / p90 / mean (n)`` in milliseconds."""
    if not xs:
        return "n/a"
    return (
        f"median {median(xs) * 1000:7.1f} ms  p90 {percentile(xs, 90) * 1000:7.1f} ms  "
        f"mean {statistics.fmean(xs) * 1000:7.1f} ms  (n={len(xs)})"
    )


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b > 0 else "n/a"


class Progress:
    """Progress on stderr: one updating line on a terminal, else a line every ~10%."""

    def __init__(self, label: str, total: int) -> None:
        self.label, self.total, self.done = label, max(total, 1), 0
        self.start = time.perf_counter()
        self._tty = sys.stderr.isatty()
        self._next_report = 0.0

    def step(self, note: str = "") -> None:
        self.done += 1
        fraction = self.done / self.total
        elapsed = time.perf_counter() - self.start
        line = f"  [{self.label}] {self.done}/{self.total} ({elapsed:.0f} s) {note}"
        if self._tty:
            sys.stderr.write("\r" + line[:100].ljust(100))
            if self.done >= self.total:
                sys.stderr.write("\n")
        elif fraction >= self._next_report or self.done >= self.total:
            sys.stderr.write(line + "\n")
            self._next_report = fraction + 0.1
        sys.stderr.flush()


def heading(text: str) -> None:
    print(f"\n== {text}", flush=True)


def machine_line() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"machine: {os.cpu_count()} cores, load average {load:.2f} at start"


# -------------------------------------------------------------- command lines


def script_parser(doc: str) -> argparse.ArgumentParser:
    """A script's parser: its docstring's first line as the description, the rest as the epilog."""
    return argparse.ArgumentParser(
        description=doc.splitlines()[0], epilog=doc.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter
    )


def add_benchmarks_flag(parser: argparse.ArgumentParser, default: str = "small,medium,gpt2", what: str = "comma-separated") -> None:
    """``--benchmarks``: names of :data:`BENCHMARKS` (check them with :func:`benchmark_names`)."""
    parser.add_argument("--benchmarks", default=default, help=f"{what}, from {list(BENCHMARKS)} (default: %(default)s)")


def print_header(argv: Sequence[str] | None) -> None:
    """The machine line and the command, first lines of every script's output."""
    print(machine_line())
    print(f"command: {' '.join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])])}")


# ----------------------------------------------------------------------- /proc


def rss_bytes(pid: int) -> int:
    """Resident set size of ``pid`` (VmRSS), 0 if it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def pss_bytes(pid: int) -> int:
    """Proportional set size of ``pid`` (shared pages split between sharers), 0 if gone."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def memory(pid: int) -> dict[str, int]:
    """``rss``, ``pss`` and ``uss`` (private pages) of ``pid`` in bytes; zeros if gone."""
    fields = {"Rss": 0, "Pss": 0, "Private_Clean": 0, "Private_Dirty": 0}
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            key = line.split(":", 1)[0]
            if key in fields:
                fields[key] = int(line.split()[1]) * 1024
    except OSError:
        pass
    return {"rss": fields["Rss"], "pss": fields["Pss"], "uss": fields["Private_Clean"] + fields["Private_Dirty"]}


def child_pids(parent: int, marker: bytes | None = None) -> list[int]:
    """Live children of ``parent`` whose command line contains ``marker``."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) != parent or fields[0] == "Z":
                continue
            cmdline = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if marker is None or marker in cmdline:
            pids.append(int(stat.parent.name))
    return sorted(pids)


def worker_pids(service_pid: int) -> list[int]:
    return child_pids(service_pid, b"xla_service.passes.worker")


def mib(n: float) -> str:
    return f"{n / 2**20:7.1f} MiB"


def print_rows(rows: Iterable[Sequence[object]], header: Sequence[str]) -> None:
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(header)]
    print("  " + "  ".join(h.ljust(w) for h, w in zip(header, widths)))
    for r in cells:
        print("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)))
