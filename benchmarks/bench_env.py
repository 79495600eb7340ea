"""Client latency of xla-v0 against the floor, measured in the same run.

Through the stock ``compiler_gym`` client and real gRPC (``compiler_gym.make("xla-v0")``,
the service and its engine workers as a user gets them), on each benchmark:

- ``env.reset`` (first: the benchmark is sent and normalized; then: a reset
  of a benchmark the service has seen);
- uncached ``env.step`` over a fixed mixed pass sequence (the default
  observation ``OpcodeCounts`` and reward ``OpCount``), each step followed, off
  the clock, by the floor of the same (module, pass) measured in a warm worker
  of this script (see ``bench_floor.py``), after the service has gone quiet.
  Whether a step was a cache miss is read from ``xla.engine.stats``;
- cached steps: the same sequence replayed after a reset (every step a hit);
- ``env.fork`` and closing a fork;
- every observation space: first computation and again (memoized or not).

Ratios are step / floor on the same (module, pass) pairs: the median of the
per-step ratios (the target's measure: the mix of fast unchanged and slow
changed steps cancels out), the ratio of the medians, and of the totals.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from _common import (
    BENCHMARKS,
    Progress,
    add_benchmarks_flag,
    benchmark_names,
    client_benchmark,
    heading,
    median,
    mixed_sequence,
    ms,
    print_header,
    print_rows,
    script_parser,
    summary,
    worker_pids,
)
from bench_floor import FloorWorker, measure_step

#: Targets of the issue (docs: benchmarks/README.md).
TARGET_RATIO = 1.3
TARGET_CACHED_SECONDS = 0.005
TINY = b"""HloModule tiny, entry_computation_layout={(f32[8]{0})->f32[8]{0}}

ENTRY main {
  p = f32[8]{0} parameter(0)
  a = f32[8]{0} add(p, p)
  ROOT m = f32[8]{0} multiply(a, a)
}
"""
#: Observation spaces that execute the module (seconds each), by name prefix: only with --runtime.
EXECUTING = "Runtime"


def engine_stats(env: Any) -> dict[str, Any]:
    return json.loads(env.send_param("xla.engine.stats", ""))


def cpu_ticks(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total


def wait_quiet(pids: list[int], settle: float = 0.03, limit: float = 3.0) -> None:
    """Wait until ``pids`` use no CPU for ``settle`` seconds (their background work is done)."""
    deadline = time.perf_counter() + limit
    last = cpu_ticks(pids)
    while time.perf_counter() < deadline:
        time.sleep(settle)
        now = cpu_ticks(pids)
        if now == last:
            return
        last = now


def timed_step(env: Any, action: int) -> tuple[float, str]:
    start = time.perf_counter()
    try:
        _, _, _, info = env.step(action)
        outcome = "unchanged" if info.get("action_had_no_effect") else "changed"
    except ValueError:
        outcome = "failed"
    return time.perf_counter() - start, outcome


def bench_benchmark(
    env: Any, floor: FloorWorker, name: str, steps: int, seed: int, runtime: bool
) -> dict[str, Any]:
    benchmark = client_benchmark(name)
    out: dict[str, Any] = {"name": name}

    start = time.perf_counter()
    env.reset(benchmark=benchmark)
    out["reset_first"] = time.perf_counter() - start
    resets = []
    for _ in range(5):
        start = time.perf_counter()
        env.reset(benchmark=benchmark)
        resets.append(time.perf_counter() - start)
    out["reset"] = resets
    out["ops"] = int(env.observation["OpCount"])

    service_workers = worker_pids(env.service.connection.process.pid)
    sequence = mixed_sequence(steps, seed)
    actions = [env.action_space[p] for p in sequence]
    uncached: list[dict[str, Any]] = []
    progress = Progress(f"{name} uncached", len(sequence))
    # The floor worker follows the same states (with the compile input the engine keeps).
    text = env.observation["Hlo"]
    _, state, _ = floor.timed("load", text)
    states: dict[str, Any] = {text: state}
    out["same_results"] = True
    for pass_name, action in zip(sequence, actions):
        before = engine_stats(env)["misses"]
        seconds, outcome = timed_step(env, action)
        missed = engine_stats(env)["misses"] > before
        after = env.observation["Hlo"]
        if missed:
            wait_quiet(service_workers)
            row = measure_step(floor, states[text], pass_name)
            uncached.append({"pass": pass_name, "step": seconds, "floor": row["seconds"], "outcome": outcome})
            states[row["result"].text] = row["result"]  # type: ignore[attr-defined]
            out["same_results"] &= row["result"].text == after  # type: ignore[attr-defined]
        if after not in states:  # a cached step: the floor worker catches up, off the clock
            _, states[after], _ = floor.timed("load", after)
        text = after
        progress.step(f"{pass_name}: {outcome}{'' if missed else ' (cache hit)'}")
    out["uncached"] = uncached

    env.reset(benchmark=benchmark)
    hits = engine_stats(env)["hits"]
    cached = [timed_step(env, a)[0] for a in actions]
    out["cached"] = cached
    out["cached_all_hits"] = engine_stats(env)["hits"] - hits >= len(actions)

    forks, fork_closes = [], []
    for _ in range(5):
        start = time.perf_counter()
        fork = env.fork()
        forks.append(time.perf_counter() - start)
        start = time.perf_counter()
        fork.close()
        fork_closes.append(time.perf_counter() - start)
    out["fork"], out["fork_close"] = forks, fork_closes

    observations = []
    for space in env.observation.spaces:
        if space.startswith(EXECUTING) and not runtime:
            continue
        times = []
        for _ in range(2):
            start = time.perf_counter()
            env.observation[space]
            times.append(time.perf_counter() - start)
        observations.append((space, times[0], times[1]))
    out["observations"] = observations
    return out


def report(r: dict[str, Any]) -> tuple[float, float]:
    heading(f"{r['name']}: {BENCHMARKS[r['name']][1]}, {r['ops']} ops normalized")
    print(f"  env.reset, first (benchmark sent, normalized): {ms(r['reset_first'])}")
    print(f"  env.reset, seen benchmark: {summary(r['reset'])}")
    rows = r["uncached"]
    for outcome in ("changed", "unchanged", "failed"):
        sel = [x for x in rows if x["outcome"] == outcome]
        if sel:
            s, f = [x["step"] for x in sel], [x["floor"] for x in sel]
            print(f"  uncached step, {outcome:9s}: {summary(s)}; floor median {median(f) * 1000:.1f} ms; ratio {median(s) / median(f):.2f}x")
    steps, floors = [x["step"] for x in rows], [x["floor"] for x in rows]
    per_step = median([x["step"] / x["floor"] for x in rows]) if rows else float("nan")
    of_medians = median(steps) / median(floors) if rows else float("nan")
    of_totals = sum(steps) / sum(floors) if rows else float("nan")
    print(f"  STEP {r['name']}: uncached env.step {summary(steps)}")
    print(f"  FLOOR {r['name']}: same pairs in a warm worker {summary(floors)}")
    print(f"  RATIO {r['name']}: step/floor, median of per-step ratios {per_step:.2f}x; "
          f"of the medians {of_medians:.2f}x; of the totals {of_totals:.2f}x")
    print(f"  floor worker and service reached the same states: {r['same_results']}")
    print(f"  CACHED {r['name']}: env.step {summary(r['cached'])}{'' if r['cached_all_hits'] else ' (NOT all cache hits)'}")
    print(f"  env.fork: {summary(r['fork'])}; closing a fork: {summary(r['fork_close'])}")
    print("  observation spaces (first, again):")
    print_rows(
        [(space, f"{a * 1000:.1f} ms", f"{b * 1000:.1f} ms") for space, a, b in r["observations"]],
        ["space", "first", "again"],
    )
    return per_step, median(r["cached"])


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    add_benchmarks_flag(parser)
    parser.add_argument("--steps", type=int, default=40, help="passes in the mixed sequence on each benchmark (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the mixed pass sequence (default: %(default)s)")
    parser.add_argument("--runtime", action="store_true", help=f"also time the observation spaces that execute the module ({EXECUTING}*)")
    parser.add_argument("--quick", action="store_true", help="small and gpt2, 8 steps each (< 60 s)")
    args = parser.parse_args(argv)
    if args.quick:
        args.benchmarks, args.steps = "small,gpt2", 8
    names = benchmark_names(args.benchmarks)
    print_header(argv)

    import compiler_gym

    floor = FloorWorker()
    from compiler_gym.datasets import Benchmark

    start = time.perf_counter()
    env = compiler_gym.make("xla-v0")
    try:
        env.reset(benchmark=Benchmark.from_file_contents("benchmark://xla-bench-v0/tiny", TINY))
        print(f"service start and first reset (a 3-op module): {ms(time.perf_counter() - start)}")
        results = [bench_benchmark(env, floor, n, args.steps, args.seed, args.runtime) for n in names]
        stats = engine_stats(env)
    finally:
        env.close()
        floor.close()
    summary_rows = []
    verdicts = {}
    for r in results:
        ratio, cached = report(r)
        summary_rows.append([r["name"], r["ops"], len(r["uncached"]), f"{median([x['step'] for x in r['uncached']]) * 1000:.1f}", f"{median([x['floor'] for x in r['uncached']]) * 1000:.1f}", f"{ratio:.2f}x", f"{cached * 1000:.2f}", f"{median(r['reset']) * 1000:.1f}", f"{median(r['fork']) * 1000:.1f}"])
        verdicts[r["name"]] = (ratio, cached)
    heading("summary (medians)")
    print_rows(summary_rows, ["benchmark", "ops", "uncached", "step ms", "floor ms", "step/floor (per-step median)", "cached ms", "reset ms", "fork ms"])
    print(f"  engine: {stats}")
    if "gpt2" in verdicts:
        ratio, cached = verdicts["gpt2"]
        print(f"TARGET step/floor on gpt2 <= {TARGET_RATIO}x (median of per-step ratios): {ratio:.2f}x {'MET' if ratio <= TARGET_RATIO else 'NOT MET'}")
    worst_cached = max(c for _, c in verdicts.values())
    print(f"TARGET cached step < {TARGET_CACHED_SECONDS * 1000:.0f} ms: worst median {worst_cached * 1000:.2f} ms {'MET' if worst_cached < TARGET_CACHED_SECONDS else 'NOT MET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
