"""Scale-out on Ray: RLlib PPO throughput by env runners, a projection to clusters, and eval on Ray.

1. **RLlib PPO** (``train.py --backend rllib``, GPT-2 train split) with 1 and 2
   env runners on a fresh store, then 2 runners again on the warm store:
   env steps per second while training (setup excluded) and setup seconds;
2. **projection** to 8 and 64 nodes from those measurements and a store
   lookup's latency, with the assumptions printed beside the numbers;
3. **evaluation** of the test sample (4 benchmarks of each suite) with a
   small greedy search, serially and with ``--ray``: walltime, and whether the
   rows (benchmark, reward, commandline) are equal.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import ROOT, heading, machine_line, print_rows


def _train(out: Path, store: Path, runners: int, steps: int) -> dict[str, Any]:
    subprocess.run(
        [sys.executable, "-m", "leaderboard.agents.rl.train", "--backend=rllib", "--algo=ppo",
         f"--num-env-runners={runners}", f"--total-timesteps={steps}", "--n-steps=64", f"--out={out}"],
        env={**os.environ, "XLA_GYM_STORE": str(store)}, check=True, cwd=ROOT,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    return json.loads(next(out.iterdir()).joinpath("result.json").read_text())


def rllib_figures(workdir: Path, steps: int) -> dict[str, float]:
    heading(f"RLlib PPO, {steps} env steps a run")
    cold, warm = workdir / "cold.sqlite", workdir / "warm.sqlite"
    rows, rates = [], {}
    for label, runners, store in (("1 runner, fresh store", 1, cold), ("2 runners, fresh store", 2, warm),
                                  ("2 runners, warm store", 2, warm)):
        result = _train(workdir / label.replace(" ", "-").replace(",", ""), store, runners, steps)
        rates[label] = result["env_steps_per_second"]
        rows.append([label, f"{result['env_steps_per_second']:.1f}", f"{result['setup_seconds']:.0f}", result["timesteps"]])
    print_rows(rows, ["run", "env steps/s", "setup s", "steps"])
    return rates


def projection(rates: dict[str, float], lookup_ms: float) -> None:
    heading("projection to clusters (from the measurements above)")
    cold = rates["1 runner, fresh store"]
    warm = rates["2 runners, warm store"] / 2
    cores = 32
    print(f"  per runner: {cold:.1f} steps/s on new states, {warm:.1f} steps/s on stored ones (measured here)")
    for nodes in (8, 64):
        runners = nodes * cores
        print(f"  {nodes} nodes x {cores} cores = {runners} runners: {runners * cold:,.0f} steps/s on new states, "
              f"up to {runners * warm:,.0f} steps/s on stored ones")
    print(f"  assumptions: one runner (one service, one XLA worker) per core; runners do not slow each other "
          f"(each has a core); the learner keeps up (PPO's update is small next to XLA's steps); a shared-store "
          f"lookup adds {lookup_ms:.1f} ms a step over the network (a measured SQLite lookup plus 1 ms), which caps "
          f"a warm runner at {1000 / max(lookup_ms, 1e-3):,.0f} steps/s")


def eval_figures(workdir: Path, per_suite: int) -> None:
    heading(f"evaluation of the test sample ({per_suite} per suite), serial and on Ray")
    policy = "leaderboard.agents.greedy.policy:Greedy(max_steps=3, lazy=True)"
    rows, outputs = [], {}
    for label, extra in (("serial", []), ("--ray (local, 2 CPUs)", ["--ray"])):
        results = workdir / f"{label[:6].strip('-')}.csv"
        started = time.monotonic()
        subprocess.run(
            [sys.executable, "-m", "leaderboard.eval", f"--policy={policy}", f"--sample={per_suite}",
             f"--leaderboard_results={results}", *extra],
            env={**os.environ, "XLA_GYM_STORE": str(workdir / f"eval-{label[:6]}.sqlite")}, check=True, cwd=ROOT,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        lines = results.read_text().splitlines()[1:]
        outputs[label] = [(b, r, c) for b, r, _, c in (line.split(",") for line in lines)]
        rows.append([label, len(lines), f"{time.monotonic() - started:.0f}"])
    print_rows(rows, ["run", "results", "wall s"])
    serial, spread = outputs.values()
    print(f"rows equal (benchmark, reward, commandline, in order): {serial == spread}")


def main(argv: Any = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--steps", type=int, default=2000, help="env steps of each RLlib run")
    parser.add_argument("--per-suite", type=int, default=4, help="test benchmarks of each suite in the evaluation")
    parser.add_argument("--quick", action="store_true", help="128-step runs and 1 benchmark a suite")
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.per_suite = 128, 1
    print(machine_line())
    workdir = Path(tempfile.mkdtemp(prefix="xla-gym-bench-ray-"))
    try:
        rates = rllib_figures(workdir, args.steps)
        from xla_service.store.sqlite import ExperienceStore

        store = ExperienceStore(workdir / "warm.sqlite")
        started = time.perf_counter()
        for _ in range(200):
            store.get(("step", "0" * 64, "cse"))
        projection(rates, (time.perf_counter() - started) / 200 * 1000 + 1.0)
        eval_figures(workdir, args.per_suite)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
