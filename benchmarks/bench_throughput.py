"""Steps per second with 1, 2 and 4 concurrent sessions of one xla-v0 service.

One service (``compiler_gym.make("xla-v0")``, its default worker pool), N
sessions (the env and N-1 forks of it, each reset to its own copy of the
benchmark), each driven by its own thread through a fixed mixed sequence of
passes. Every copy of the module gets its own name, so no session ever hits
a result that another computed: every step is a real, uncached compile. Then
the same episodes replayed, a reset and the same sequence again: every step a
cache hit (the gRPC path alone, and resets).

Throughput is all sessions' steps over the wall time from the first step to
the last; scaling is relative to one session in the same run.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

from _common import (
    BENCHMARKS,
    benchmark_names,
    heading,
    median,
    mixed_sequence,
    print_header,
    print_rows,
    script_parser,
    variant,
)


def run_sessions(env: Any, name: str, sessions: int, steps: int, tag: str, replays: int) -> dict[str, Any]:
    """Run ``sessions`` threads of ``steps`` steps each (uncached), or, with
    ``replays``, of that many episodes (a reset and the same ``steps``, every
    one a cache hit) each; returns timings."""
    envs = [env] + [env.fork() for _ in range(sessions - 1)]
    benchmarks = [variant(name, f"{tag}s{i}") for i in range(sessions)]
    sequences = [mixed_sequence(steps, seed=i) for i in range(sessions)]
    for e, b in zip(envs, benchmarks):
        e.reset(benchmark=b)
    if replays:  # compute everything once, off the clock
        for e, seq in zip(envs, sequences):
            for p in seq:
                try:
                    e.step(e.action_space[p])
                except ValueError:
                    pass
    latencies: list[list[float]] = [[] for _ in range(sessions)]
    barrier = threading.Barrier(sessions + 1)
    errors: list[BaseException] = []

    def drive(i: int) -> None:
        e, seq = envs[i], sequences[i]
        actions = [e.action_space[p] for p in seq]
        barrier.wait()
        for _ in range(max(replays, 1)):
            if replays:
                e.reset(benchmark=benchmarks[i])
            for a in actions:
                start = time.perf_counter()
                try:
                    e.step(a)
                except ValueError:  # XLA failed in the pass: a step all the same
                    pass
                except BaseException as error:  # noqa: B036  (reported below)
                    errors.append(error)
                    return
                latencies[i].append(time.perf_counter() - start)

    threads = [threading.Thread(target=drive, args=(i,)) for i in range(sessions)]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    for e in envs[1:]:
        e.close()
    if errors:
        raise errors[0]
    done = sum(len(x) for x in latencies)
    return {
        "sessions": sessions,
        "steps": done,
        "wall": wall,
        "throughput": done / wall,
        "latency": median([t for x in latencies for t in x]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--benchmark", default="gpt2", choices=list(BENCHMARKS), help="benchmark every session runs a copy of (default: %(default)s)")
    parser.add_argument("--sessions", default="1,2,4", help="comma-separated session counts (default: %(default)s)")
    parser.add_argument("--steps", type=int, default=16, help="steps of each session's pass sequence (default: %(default)s)")
    parser.add_argument("--replays", type=int, default=10, help="cached episodes per session: a reset, then the sequence again, every step a cache hit (default: %(default)s)")
    parser.add_argument("--workers", type=int, default=None, help="XLA_GYM_WORKERS for the service (default: the service's own default, one per core up to 4)")
    parser.add_argument("--quick", action="store_true", help="small benchmark, 1 and 2 sessions, 6 steps and 5 replays each (< 60 s)")
    args = parser.parse_args(argv)
    if args.quick:
        args.benchmark, args.sessions, args.steps, args.replays = "small", "1,2", 6, 5
    benchmark_names(args.benchmark)
    counts = [int(c) for c in args.sessions.split(",") if c.strip()]
    print_header(argv)
    if args.workers is not None:
        os.environ["XLA_GYM_WORKERS"] = str(args.workers)
    import compiler_gym

    env = compiler_gym.make("xla-v0")
    results: dict[str, list[dict[str, Any]]] = {"uncached": [], "cached": []}
    try:
        env.reset(benchmark=variant(args.benchmark, "warm"))
        workers = json.loads(env.send_param("xla.engine.stats", ""))["workers"]
        print(f"service: {workers} engine workers; benchmark {args.benchmark}: {BENCHMARKS[args.benchmark][1]}")
        for kind, replays in (("uncached", 0), ("cached", args.replays)):
            for n in counts:
                r = run_sessions(env, args.benchmark, n, args.steps, f"{kind[0]}{n}", replays)
                results[kind].append(r)
                print(f"  {kind:8s} {n} session(s): {r['steps']} steps in {r['wall']:.2f} s -> {r['throughput']:.2f} steps/s", file=sys.stderr, flush=True)
    finally:
        env.close()
    for kind, rows in results.items():
        heading(f"{kind} steps, {args.benchmark}")
        base = rows[0]["throughput"] if rows else float("nan")
        print_rows(
            [
                [r["sessions"], r["steps"], f"{r['wall']:.2f}", f"{r['throughput']:.2f}", f"{r['throughput'] / base:.2f}x", f"{r['latency'] * 1000:.1f}"]
                for r in rows
            ],
            ["sessions", "steps", "wall s", "steps/s", "vs 1 session", "median step ms"],
        )
        for r in rows:
            print(f"THROUGHPUT {kind} {r['sessions']} sessions: {r['throughput']:.2f} steps/s ({r['throughput'] / base:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
