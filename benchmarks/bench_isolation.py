"""Isolation, fairness and authorization of one xla-v0 service shared by several clients.

Figures (all on one service, its default worker pool, the store off):

- **fairness**: the step latency of a small session (the bundled 1-layer
  GPT-2 inference graph, a fixed mixed sequence of uncached steps) alone, then
  while another client process steps a huge generated module (a chain of
  ``--huge-ops`` elementwise instructions, each step compiling all of it);
  median and p95, and their ratio;
- **isolation**: what a second client process can do to the first one's
  session (guessing session ids) and to the service (its settings): nothing;
- **bad input**: malformed modules sent by a client: each answered with a
  ValueError naming the problem, the other session still stepping.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from typing import Any

from _common import (
    client_benchmark,
    heading,
    machine_line,
    median,
    mixed_sequence,
    print_rows,
    variant,
)

_HOG = """
import json, sys, time, compiler_gym
from compiler_gym.datasets import Benchmark
url, ops, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
lines = ["HloModule huge", "ENTRY main {", "  p0 = f32[64,64] parameter(0)", "  v0 = f32[64,64] add(p0, p0)"]
for i in range(1, ops):
    op = ("multiply", "add", "subtract", "maximum")[i % 4]
    lines.append(f"  v{i} = f32[64,64] {op}(v{i - 1}, p0)")
lines[-1] = lines[-1].replace(f"  v{ops - 1} =", f"  ROOT v{ops - 1} =")
lines.append("}")
steps = 0
with compiler_gym.make("xla-v0", service=url) as env:
    env.reset(benchmark=Benchmark.from_file_contents("benchmark://bench/huge", "\\n".join(lines).encode()))
    print("loaded", flush=True)
    stop = time.time() + seconds
    names = ["algsimp", "cse", "reshape-mover", "dce", "transpose-folding", "tuple-simplifier"]
    while time.time() < stop:
        env.step(env.action_space[names[steps % len(names)]])
        steps += 1
print(json.dumps({"steps": steps}))
"""

_INTRUDER = """
import json, sys, compiler_gym
from compiler_gym.service.proto import StepRequest, Event, EndSessionRequest
out = {"guessed": 0, "found": 0, "settings_refused": 0}
with compiler_gym.make("xla-v0", service=sys.argv[1]) as env:
    env.reset()
    for guess in list(range(256)) + [2**62 + g for g in range(256)]:
        if guess == env._session_id:
            continue
        out["guessed"] += 1
        try:
            env.service(env.service.stub.Step, StepRequest(session_id=guess, action=[Event(int64_value=0)]))
            out["found"] += 1
        except Exception:
            pass
    for key, value in (("xla.step_timeout", "1"), ("xla.engine.workers", "64")):
        try:
            env.send_param(key, value)
        except ValueError:
            out["settings_refused"] += 1
print(json.dumps(out))
"""

MALFORMED = {
    "empty": b"",
    "not HLO": b"hello world",
    "truncated": b"HloModule t\nENTRY main {\n  p0 = f32[4] parameter(0)\n",
    "no ENTRY": b"HloModule t\nfoo {\n  ROOT p0 = f32[4] parameter(0)\n}\n",
    "inconsistent shapes": b"HloModule t\nENTRY main {\n  a = f32[4] parameter(0)\n  b = f32[5] parameter(1)\n  ROOT r = f32[4] add(a, b)\n}\n",
    "unknown opcode": b"HloModule t\nENTRY main {\n  a = f32[4] parameter(0)\n  ROOT r = f32[4] frobnicate(a)\n}\n",
    "not UTF-8": b"\xff\xfe\x00HloModule",
    "bad gzip": b"\x1f\x8b\x08\x00garbage",
}


def _latencies(env: Any, benchmark: Any, steps: int, seed: int) -> list[float]:
    env.reset(benchmark=benchmark)
    times = []
    for name in mixed_sequence(steps, seed=seed):
        started = time.perf_counter()
        env.step(env.action_space[name])
        times.append(time.perf_counter() - started)
    return times


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def main(argv: Any = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--steps", type=int, default=40, help="small-session steps per measurement")
    parser.add_argument("--huge-ops", type=int, default=30000, help="instructions of the other client's huge module")
    parser.add_argument("--quick", action="store_true", help="12 steps, a 3,000-instruction module (< 60 s)")
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.huge_ops = 12, 3000
    print(machine_line())
    import compiler_gym
    from compiler_gym.datasets import Benchmark

    rows: list[list[Any]] = []
    with compiler_gym.make("xla-v0") as env:
        url = env.service.connection.url
        small = client_benchmark("small")
        alone = _latencies(env, variant("small", "alone"), args.steps, seed=1)
        hog = subprocess.Popen(
            [sys.executable, "-c", _HOG, url, str(args.huge_ops), "100000"], stdout=subprocess.PIPE, text=True
        )
        assert hog.stdout is not None
        loaded = hog.stdout.readline().strip() == "loaded"
        time.sleep(2.0)  # its first step's compile is under way
        shared = _latencies(env, variant("small", "shared"), args.steps, seed=2)
        hog.kill()
        hog.wait()
        stats = json.loads(env.send_param("xla.engine.stats", ""))
        heading(f"fairness: small-session steps alone and beside a {args.huge_ops:,}-instruction module")
        rows = [
            ["alone", len(alone), f"{median(alone) * 1000:.0f}", f"{_p95(alone) * 1000:.0f}"],
            ["beside the huge module", len(shared), f"{median(shared) * 1000:.0f}", f"{_p95(shared) * 1000:.0f}"],
        ]
        print_rows(rows, ["small session", "steps", "median ms", "p95 ms"])
        print(f"ratio beside/alone: median {median(shared) / median(alone):.2f}x, p95 {_p95(shared) / _p95(alone):.2f}x; "
              f"huge module loaded: {loaded}; workers preempted: {stats['workers_preempted']}, "
              f"replaced: {stats['workers_replaced']}")

        intruder = subprocess.run([sys.executable, "-c", _INTRUDER, url], capture_output=True, text=True, timeout=600)
        found = json.loads(intruder.stdout.strip().splitlines()[-1])
        heading("isolation: a second client process against the first one's session and the service")
        print(f"session ids guessed: {found['guessed']}, sessions reached: {found['found']}; "
              f"service-wide settings refused: {found['settings_refused']}/2")

        heading("bad input: malformed modules from one client, while another session steps")
        answered = 0
        for index, (name, data) in enumerate(MALFORMED.items()):
            with env.fork() as other:
                try:
                    other.reset(benchmark=Benchmark.from_file_contents(f"benchmark://bench/bad-{index}", data))
                    verdict = "accepted (!)"
                except ValueError as e:
                    answered += 1
                    verdict = f"ValueError: {str(e).splitlines()[0][:90]}"
            print(f"  {name:<20} {verdict}")
        env.reset(benchmark=small)
        env.step(env.action_space["cse"])
        print(f"{answered}/{len(MALFORMED)} answered with a ValueError; the other session still steps: "
              f"{env.observation['OpCount']} ops after cse")
    return 0


if __name__ == "__main__":
    sys.exit(main())
