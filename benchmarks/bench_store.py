"""What the persistent experience store saves: warm episodes, PPO throughput, size, lookups, cold steps.

1. **episode**: the same 20-pass episode on a module no store has seen, first
   in one process (and service), then in a fresh process with a fresh service
   sharing the store: median step of each, and their ratio;
2. **PPO**: ``leaderboard.agents.rl.train`` (SB3 PPO through the Gymnasium
   env, 2 environments) on the GPT-2 train split for 3 x ``--steps`` env steps,
   store off, store cold (empty), store warm (the same run again): env steps
   per second over the first and the third ``--steps`` (from the monitor files);
3. **size**: store bytes per 1,000 stored steps, after the PPO runs;
4. **lookups**: latency of a step lookup in a store of ``--entries`` results;
5. **cold steps**: the engine's uncached step against a minimal route measured
   outside the project (one partial compile with every other pass disabled,
   the result read from XLA's dump, one HLO -> StableHLO -> HLO round trip, in
   a warm process), on a 3-layer GPT-2 training step, a mixed 12-pass sequence.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import ROOT, heading, machine_line, median, mixed_sequence, percentile, print_rows

_EPISODE = """
import json, sys, time
import compiler_gym
from compiler_gym.datasets import Benchmark
text = open(sys.argv[1]).read()
names = sys.argv[3].split(",")
with compiler_gym.make("xla-v0") as env:
    env.reset(benchmark=Benchmark.from_file_contents("benchmark://bench/" + sys.argv[2], text.encode()))
    times = []
    for n in names:
        t = time.perf_counter()
        env.step(env.action_space[n])
        times.append(time.perf_counter() - t)
    print(json.dumps({"times": times, "ops": int(env.observation["OpCount"])}))
"""


def _run_episode(store: Path, module: Path, tag: str, names: list[str]) -> dict[str, Any]:
    env = {**os.environ, "XLA_GYM_STORE": str(store)}
    done = subprocess.run(
        [sys.executable, "-c", _EPISODE, str(module), tag, ",".join(names)],
        env=env, capture_output=True, text=True, timeout=1800,
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def episode_figures(workdir: Path) -> None:
    heading("episode: 20 passes on an unseen module, then again in a fresh process and service")
    import gzip
    import re

    source = ROOT / "datasets/xla-gpt2-v0/gpt2-l3-d64-h2-s32-b2-adam-f32-train.hlo.gz"
    names = mixed_sequence(20, seed=5)
    tag = f"unseen{random.randrange(10**9)}"
    module = workdir / "unseen.hlo"
    text = gzip.open(source, "rt").read()
    module.write_text(re.sub(r"^HloModule ([^,\s]+)", rf"HloModule \1_{tag}", text, count=1))
    store = workdir / "episode.sqlite"
    first = _run_episode(store, module, tag, names)
    second = _run_episode(store, module, tag, names)
    assert first["ops"] == second["ops"]
    rows = [[label, f"{median(r['times']) * 1000:.1f}", f"{percentile(r['times'], 95) * 1000:.1f}", r["ops"]]
            for label, r in (("first process", first), ("fresh process, same store", second))]
    print_rows(rows, ["run", "median step ms", "p95 ms", "final ops"])
    print(f"ratio first/second: {median(first['times']) / median(second['times']):.0f}x (median)")


def _steps_per_second(run: Path, chunk: int) -> tuple[float, float]:
    """Env steps/s over the first and the third ``chunk`` steps, from the monitor files."""
    episodes: list[tuple[float, int]] = []
    for monitor in run.glob("monitor-*.monitor.csv"):
        with open(monitor) as f:
            next(f)  # the JSON header line
            episodes += [(float(r["t"]), int(r["l"])) for r in csv.DictReader(f)]
    episodes.sort()
    total, at = 0, {}
    for t, length in episodes:
        total += length
        for mark in (chunk, 2 * chunk, 3 * chunk):
            if total >= mark and mark not in at:
                at[mark] = t
    first = chunk / at[chunk] if chunk in at else float("nan")
    third = chunk / (at[3 * chunk] - at[2 * chunk]) if 3 * chunk in at else float("nan")
    return first, third


def ppo_figures(workdir: Path, chunk: int) -> Path | None:
    heading(f"PPO (SB3, 2 envs, GPT-2 train split): env steps/s over the first and third {chunk} steps")
    store = workdir / "ppo.sqlite"
    rows = []
    for label, setting in (("store off", "off"), ("store cold", str(store)), ("store warm", str(store))):
        out = workdir / label.replace(" ", "-")
        started = time.monotonic()
        subprocess.run(
            [sys.executable, "-m", "leaderboard.agents.rl.train", "--algo=ppo", f"--total-timesteps={3 * chunk}",
             "--n-envs=2", "--n-steps=64", f"--checkpoint-every={10 * chunk}", f"--out={out}", "--seed=0"],
            env={**os.environ, "XLA_GYM_STORE": setting}, check=True, cwd=ROOT,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        first, third = _steps_per_second(next(out.iterdir()), chunk)
        rows.append([label, f"{first:.1f}", f"{third:.1f}", f"{time.monotonic() - started:.0f}"])
    print_rows(rows, ["run", "steps/s first", "steps/s third", "wall s"])
    off, warm = float(rows[0][2]), float(rows[2][2])
    print(f"warm store / no store, third chunk: {warm / off:.1f}x")
    return store


def size_figures(store_path: Path) -> None:
    from xla_service.store.sqlite import ExperienceStore

    heading("size: bytes per 1,000 stored steps (GPT-2-sized modules, from the PPO runs)")
    store = ExperienceStore(store_path)
    stats = store.stats()
    steps = stats["results"].get("step", 0)
    print(f"{stats['bytes'] / 2**20:.1f} MiB for {steps} steps, {stats['states']} states: "
          f"{stats['bytes'] / max(steps, 1) * 1000 / 2**20:.2f} MiB per 1,000 steps")
    store.close()


def lookup_figures(workdir: Path, entries: int) -> None:
    import sqlite3

    from xla_service.store.codec import checksum
    from xla_service.store.sqlite import ExperienceStore

    heading(f"lookups: a step lookup in a store of {entries:,} results")
    store = ExperienceStore(workdir / "lookups.sqlite")
    db = sqlite3.connect(str(store.path))
    started = time.monotonic()
    rows = []
    for i in range(entries):
        key = ("step", f"{i:064x}", "cse")
        rows.append((store.semantics, *key, b"U", checksum("\0".join(key).encode(), b"U"), 0.0))
        if len(rows) == 50_000 or i == entries - 1:
            db.executemany("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
            db.commit()
            rows = []
    filled = time.monotonic() - started
    rng = random.Random(0)
    times = []
    for _ in range(2000):
        key = ("step", f"{rng.randrange(entries):064x}", "cse")
        t = time.perf_counter()
        assert store.get(key) is None
        times.append(time.perf_counter() - t)
    print(f"filled in {filled:.0f} s ({store.size() / 2**20:.0f} MiB); lookup median {median(times) * 1e6:.0f} us, "
          f"p95 {percentile(times, 95) * 1e6:.0f} us")
    store.close()


def cold_step_figures(repeats: int) -> None:
    heading("cold steps: the engine's uncached step against a minimal route, 3-layer GPT-2 training step")
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("_cold_steps.py")), str(repeats)],
        capture_output=True, text=True, timeout=3600, cwd=ROOT,
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    print(done.stdout.rstrip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--steps", type=int, default=4000, help="PPO steps per measured chunk (the run is 3 chunks)")
    parser.add_argument("--entries", type=int, default=1_000_000, help="results in the store of the lookup figure")
    parser.add_argument("--repeats", type=int, default=3, help="repetitions of the cold-step comparison")
    parser.add_argument("--skip-ppo", action="store_true", help="leave out the PPO runs (the longest part)")
    parser.add_argument("--quick", action="store_true", help="64-step PPO chunks, 20,000 entries, 1 repetition (~2 min)")
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.entries, args.repeats = 64, 20_000, 1
    print(machine_line())
    workdir = Path(tempfile.mkdtemp(prefix="xla-gym-bench-store-"))
    try:
        episode_figures(workdir)
        if not args.skip_ppo:
            store = ppo_figures(workdir, args.steps)
            if store is not None:
                size_figures(store)
        lookup_figures(workdir, args.entries)
        cold_step_figures(args.repeats)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
