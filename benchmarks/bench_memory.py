"""Memory of the xla-v0 service and its engine workers, per session, and over a long run.

Read from /proc (``smaps_rollup``): RSS, PSS (shared pages split between the
processes that map them: the workers share jaxlib's libraries) and USS (pages
of that process alone). Measured, through the stock client and one service:

1. after each benchmark size is loaded and stepped (service and workers);
2. per session, on each benchmark: K extra sessions (forks) on the same
   benchmark, then K on K different copies of it (each holds its own states);
3. a long run (``--steps``, default 1,000): episodes of 20 uncached steps,
   each on a fresh copy of the benchmark, then the same number of cached
   (replayed) steps. Service growth is compared with the growth of the
   engine's result cache (``cache_bytes`` of ``xla.engine.stats``, bounded);
   what the cache does not explain would be a leak. Workers hold no state:
   their USS should stay flat (a replaced worker starts afresh).
"""
from __future__ import annotations

import json
import sys
import time
from typing import Any

from _common import (
    BENCHMARKS,
    Progress,
    add_benchmarks_flag,
    benchmark_names,
    heading,
    memory,
    mib,
    mixed_sequence,
    print_header,
    print_rows,
    script_parser,
    worker_pids,
)
from bench_throughput import variant


def snapshot(service_pid: int) -> dict[str, Any]:
    workers = worker_pids(service_pid)
    ws = [memory(p) for p in workers]
    return {
        "service": memory(service_pid),
        "workers": ws,
        "worker_pids": workers,
        "workers_rss": sum(w["rss"] for w in ws),
        "workers_pss": sum(w["pss"] for w in ws),
        "workers_uss": sum(w["uss"] for w in ws),
    }


def stats(env: Any) -> dict[str, Any]:
    return json.loads(env.send_param("xla.engine.stats", ""))


def steps(env: Any, passes: list[str]) -> None:
    for p in passes:
        try:
            env.step(env.action_space[p])
        except ValueError:
            pass


def by_size(env: Any, service_pid: int, names: list[str], n_steps: int) -> list[list[str]]:
    rows = []
    for name in names:
        env.reset(benchmark=variant(name, "size"))
        steps(env, mixed_sequence(n_steps, seed=1))
        time.sleep(0.2)  # let the workers finish their last compile
        s = snapshot(service_pid)
        rows.append([
            name, str(int(env.observation["OpCount"])), mib(s["service"]["rss"]).strip(),
            mib(s["service"]["uss"]).strip(), mib(max(w["rss"] for w in s["workers"])).strip(),
            mib(max(w["uss"] for w in s["workers"])).strip(), mib(s["workers_pss"]).strip(),
        ])
    return rows


def per_session(env: Any, service_pid: int, name: str, k: int) -> dict[str, float]:
    env.reset(benchmark=variant(name, "base"))
    time.sleep(0.2)
    before = memory(service_pid)["uss"]
    same = []
    for _ in range(k):
        fork = env.fork()
        fork.reset(benchmark=variant(name, "base"))
        same.append(fork)
    after_same = memory(service_pid)["uss"]
    distinct = []
    for i in range(k):
        fork = env.fork()
        fork.reset(benchmark=variant(name, f"distinct{i}"))
        distinct.append(fork)
    after_distinct = memory(service_pid)["uss"]
    for f in same + distinct:
        f.close()
    return {
        "same": (after_same - before) / k,
        "distinct": (after_distinct - after_same) / k,
    }


def long_run(env: Any, service_pid: int, name: str, total: int, checkpoint: int) -> dict[str, Any]:
    episode = 20
    points: list[dict[str, Any]] = []
    progress = Progress(f"{name} long run", 2 * total)
    done = 0
    start_replaced = stats(env)["workers_replaced"]
    benchmarks = []

    def record(phase: str) -> None:
        s = snapshot(service_pid)
        st = stats(env)
        points.append({"phase": phase, "steps": done, "service_uss": s["service"]["uss"], "service_rss": s["service"]["rss"],
                       "workers_uss": s["workers_uss"], "cache_bytes": st.get("cache_bytes", 0), "entries": st["cached_results"],
                       "replaced": st["workers_replaced"] - start_replaced})

    record("start")
    for phase in ("uncached", "cached"):
        for e in range(total // episode):
            if phase == "uncached":
                benchmarks.append(variant(name, f"long{e}"))
            env.reset(benchmark=benchmarks[e])
            for p in mixed_sequence(episode, seed=e):
                try:
                    env.step(env.action_space[p])
                except ValueError:
                    pass
                done += 1
                progress.step(phase)
                if done % checkpoint == 0:
                    record(phase)
    return {"points": points}


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    add_benchmarks_flag(parser, "small,medium,gpt2,large", "sizes to load")
    parser.add_argument("--size-steps", type=int, default=10, help="steps run on each size before measuring (default: %(default)s)")
    parser.add_argument("--sessions", type=int, default=20, help="extra sessions opened on each benchmark to measure per-session memory (default: %(default)s)")
    parser.add_argument("--steps", type=int, default=1000, help="uncached steps of the long run, then as many cached ones (default: %(default)s)")
    parser.add_argument("--run-benchmark", default="small", choices=list(BENCHMARKS), help="benchmark of the long run (default: %(default)s)")
    parser.add_argument("--checkpoint", type=int, default=100, help="measure every this many steps of the long run (default: %(default)s)")
    parser.add_argument("--quick", action="store_true", help="small and gpt2, 5 sessions, a 100-step run (< 60 s)")
    args = parser.parse_args(argv)
    if args.quick:
        args.benchmarks, args.size_steps, args.sessions, args.steps, args.checkpoint = "small,gpt2", 4, 5, 100, 20
    names = benchmark_names(args.benchmarks)
    print_header(argv)
    import compiler_gym

    env = compiler_gym.make("xla-v0")
    try:
        env.reset(benchmark=variant("small", "warm"))
        service_pid = env.service.connection.process.pid
        time.sleep(0.2)
        s = snapshot(service_pid)
        heading("idle service after its first session")
        print(f"  service: RSS {mib(s['service']['rss'])}, USS {mib(s['service']['uss'])}")
        for pid, w in zip(s["worker_pids"], s["workers"]):
            print(f"  worker {pid}: RSS {mib(w['rss'])}, PSS {mib(w['pss'])}, USS {mib(w['uss'])}")

        heading("by benchmark size (after loading it and a few steps)")
        print_rows(by_size(env, service_pid, names, args.size_steps),
                   ["benchmark", "ops", "service RSS", "service USS", "worker RSS (max)", "worker USS (max)", "workers PSS (sum)"])

        heading(f"per session: service USS of {args.sessions} more sessions, each (KiB)")
        rows = []
        for name in names:
            per = per_session(env, service_pid, name, args.sessions)
            rows.append([name, f"{per['same'] / 1024:.1f}", f"{per['distinct'] / 1024:.1f}"])
            print(f"PER SESSION {name}: same benchmark {per['same'] / 1024:.1f} KiB, distinct copies {per['distinct'] / 1024:.1f} KiB")
        print_rows(rows, ["benchmark", "on the same benchmark", "each on its own copy"])

        heading(f"long run: {args.steps} uncached + {args.steps} cached steps on {args.run_benchmark}")
        run = long_run(env, service_pid, args.run_benchmark, args.steps, args.checkpoint)
    finally:
        env.close()
    points = run["points"]
    print_rows(
        [[p["phase"], p["steps"], mib(p["service_rss"]).strip(), mib(p["service_uss"]).strip(), mib(p["cache_bytes"]).strip(),
          p["entries"], mib(p["workers_uss"]).strip(), p["replaced"]] for p in points],
        ["phase", "steps", "service RSS", "service USS", "cache bytes", "cache entries", "workers USS", "workers replaced"],
    )
    # Growth after warm-up (the first checkpoint) to the end of each phase.
    warm = next(p for p in points if p["steps"] > 0)
    end_uncached = [p for p in points if p["phase"] == "uncached"][-1]
    end = points[-1]
    grown = end_uncached["service_uss"] - warm["service_uss"]
    cache = end_uncached["cache_bytes"] - warm["cache_bytes"]
    print(f"LEAK uncached phase, steps {warm['steps']}-{end_uncached['steps']}: service USS {grown / 2**20:+.1f} MiB, "
          f"of which result cache {cache / 2**20:+.1f} MiB; unexplained {(grown - cache) / 2**20:+.1f} MiB")
    grown_cached = end["service_uss"] - end_uncached["service_uss"]
    print(f"LEAK cached phase, steps {end_uncached['steps']}-{end['steps']}: service USS {grown_cached / 2**20:+.1f} MiB "
          f"(cache {(end['cache_bytes'] - end_uncached['cache_bytes']) / 2**20:+.1f} MiB)")
    same_workers = [p for p in points if p["replaced"] == warm["replaced"]]
    last = same_workers[-1]
    print(f"LEAK workers, steps {warm['steps']}-{last['steps']} (no replacement in between): "
          f"USS {(last['workers_uss'] - warm['workers_uss']) / 2**20:+.1f} MiB; replaced during the run: {end['replaced']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
