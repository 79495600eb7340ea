"""How noisy a runtime comparison is, by how it pairs the two modules: A/A measurements side by side.

Every comparison here is of one program with itself: the module as loaded
against a "twin", a module of other HLO text that XLA's CPU pipeline compiles
to the same executable (equal ``ExecutableDigest``: the first of a few cheap
passes that changes the text and not the executable). Any ratio away from 1.0
is noise. Four ways of pairing the two, one session (fresh services) of each
in turn, so that the machine's drift falls on all alike:

- two services: the module as loaded in one env, the twin in another (each
  env its own service, so its own compiles and worker processes), interleaved
  rounds: how ``leaderboard.report.runtime_table`` and the runtime search's final
  measurements pair them;
- one service, its workers: one env at the twin, ``RuntimeInitial`` against
  ``Runtime``, served by the service's pool of workers (``XLA_GYM_WORKERS``,
  by default one per core, at most 4), which takes turns: how the runtime
  search measures candidates on forks beside its baseline;
- one service, one worker: the same with ``xla.engine.workers=1``, so both
  executables live in one process;
- one worker, one executable: ``Runtime`` against ``Runtime`` at the module
  as loaded, one worker (one compile, cached: only run-to-run noise is left).

Per pairing, and per statistic of a side's runs (their median, as the
runtime scripts take it, or their minimum: interference from other work
only ever adds time): the spread of the per-session log ratio (sd), the
geometric mean ratio with a 95% t-interval over sessions (a pairing with a
bias shows here), and the sessions a 95% interval of +-5% would need at that
spread.

    .venv/bin/python benchmarks/measure_runtime_noise.py            # 10 sessions a pairing, ~10 min, a quiet machine
    .venv/bin/python benchmarks/measure_runtime_noise.py --quick    # 2 sessions on a small module, < 1 min
"""
from __future__ import annotations

import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import heading, print_header, print_rows, script_parser  # noqa: E402

DEFAULT = "benchmark://xla-vit-v0/vit-l6-d64-h2-p4-i32-b2-adamw-train"
QUICK = "benchmark://xla-gpt2-v0/gpt2-l1-d64-h4-s32-b2-f32-infer"
#: Passes tried, in order, for a twin: cheap, and XLA's pipeline runs them again.
TWIN_PASSES = ("cse", "dce", "algsimp", "reshape-mover", "tuple-simplifier", "sort-simplifier")
#: How a side's runs become one runtime: the median (as ``agents/runtime/measure.py``), or the fastest run.
STATISTICS: dict[str, Callable[[np.ndarray], float]] = {"median": lambda x: float(np.median(x)), "minimum": lambda x: float(np.min(x))}
PAIRINGS = ("two services", "one service, its workers", "one service, one worker", "one worker, one executable")


def find_twin(uri: str) -> str:
    """The first of :data:`TWIN_PASSES` that changes the module's text but not its executable."""
    import compiler_gym

    with compiler_gym.make("xla-v0") as env:
        env.reset(benchmark=uri)
        text, digest = env.observation["Hlo"], env.observation["ExecutableDigestInitial"]
        for name in TWIN_PASSES:
            fork = env.fork()
            try:
                fork.step(env.action_space[name])
                if fork.observation["Hlo"] != text and fork.observation["ExecutableDigest"] == digest:
                    return name
            finally:
                fork.close()
    raise SystemExit(f"{uri}: none of {list(TWIN_PASSES)} changes the text and keeps the executable; "
                     "expected a benchmark where one does (try another --benchmark)")


def session(pairing: str, uri: str, twin: str, rounds: int, repetitions: int) -> tuple[np.ndarray, np.ndarray]:
    """One fresh session of ``pairing``: the runs of the module as loaded, and of the twin."""
    import compiler_gym

    from leaderboard.agents.runtime.measure import abba

    def observe(env, name: str) -> Callable[[], np.ndarray]:
        return lambda: np.asarray(env.observation[name], dtype=np.float64).ravel()

    def both(sides: tuple[list[np.ndarray], list[np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
        return np.concatenate(sides[0]), np.concatenate(sides[1])

    def prepared(env, step: bool):
        env.reset(benchmark=uri)
        if "one worker" in pairing:
            env.send_param("xla.engine.workers", "1")
        env.send_param("xla.runtime.repetitions", str(repetitions))
        if step:
            env.step(env.action_space[twin])
        return env

    if pairing == "two services":
        with compiler_gym.make("xla-v0") as a, compiler_gym.make("xla-v0") as b:
            prepared(a, False)
            prepared(b, True)
            return both(abba(observe(a, "Runtime"), observe(b, "Runtime"), rounds))
    with compiler_gym.make("xla-v0") as env:
        prepared(env, pairing != "one worker, one executable")
        if pairing == "one worker, one executable":
            return both(abba(observe(env, "Runtime"), observe(env, "Runtime"), rounds))
        return both(abba(observe(env, "RuntimeInitial"), observe(env, "Runtime"), rounds))


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b > 0 else "undefined (a spread of 0)"


def t95(n: int) -> float:
    """Student's t quantile (0.975) for n - 1 degrees of freedom, n >= 2: from a table, the entry of the
    largest n it has up to this one (a wider interval between its entries; 2.04 from n = 31 on)."""
    table = {2: 12.71, 3: 4.30, 4: 3.18, 5: 2.78, 6: 2.57, 7: 2.45, 8: 2.36, 9: 2.31, 10: 2.26, 12: 2.20, 15: 2.14,
             20: 2.09, 31: 2.04}
    return table[max(k for k in table if k <= n)]


def main(argv: list[str] | None = None) -> int:
    parser = script_parser(__doc__)
    parser.add_argument("--benchmark", default=DEFAULT, help="the module (a URI) (default: %(default)s)")
    parser.add_argument("--sessions", type=int, default=10, help="fresh sessions per pairing (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds a side per session (default: %(default)s)")
    parser.add_argument("--repetitions", type=int, default=10, help="runs per Runtime observation (default: %(default)s)")
    parser.add_argument("--quick", action="store_true", help=f"2 sessions of 3 runs on {QUICK} (default: off)")
    args = parser.parse_args(argv)
    if args.quick:
        args.benchmark, args.sessions, args.repetitions = QUICK, 2, 3
    if args.sessions < 2 or args.rounds < 1 or args.repetitions < 1:
        parser.error(f"expected --sessions >= 2, --rounds >= 1, --repetitions >= 1, got {args.sessions}, "
                     f"{args.rounds}, {args.repetitions}")
    print_header(argv)
    twin = find_twin(args.benchmark)
    print(f"benchmark: {args.benchmark}; twin: the module after {twin} (other text, the same ExecutableDigest)")
    runs: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {p: [] for p in PAIRINGS}
    started = time.monotonic()
    for k in range(args.sessions):
        for pairing in PAIRINGS:
            runs[pairing].append(session(pairing, args.benchmark, twin, args.rounds, args.repetitions))
        print(f"session {k + 1}/{args.sessions}: "
              + ", ".join(f"{p} {float(np.median(r[-1][0]) / np.median(r[-1][1])):.3f}" for p, r in runs.items())
              + f" ({time.monotonic() - started:.0f} s)", file=sys.stderr)
    sds: dict[tuple[str, str], float] = {}
    for statistic, of in STATISTICS.items():
        heading(f"A/A, the {statistic} of each side's runs: {args.sessions} sessions a pairing, {args.rounds} rounds "
                f"a side, {args.repetitions} runs an observation")
        rows = []
        for pairing, sides in runs.items():
            logs = [math.log(of(a) / of(b)) for a, b in sides]
            sd, mean = statistics.stdev(logs), statistics.fmean(logs)
            half = t95(len(logs)) * sd / math.sqrt(len(logs))
            sds[statistic, pairing] = sd
            need = math.ceil((1.96 * sd / math.log(1.05)) ** 2)
            rows.append((pairing, f"{sd:.3f}", f"{math.exp(mean):.3f} [{math.exp(mean - half):.3f}, "
                         f"{math.exp(mean + half):.3f}]", f"{math.exp(min(logs)):.3f}-{math.exp(max(logs)):.3f}", need))
        print_rows(rows, ("pairing", "sd of log ratio", "geomean ratio [95% t]", "range", "sessions for +-5%"))
    for statistic in STATISTICS:
        for pairing in PAIRINGS[1:]:
            print(f"NOISE RATIO {statistic}, {pairing} / two services: {_ratio(sds[statistic, pairing], sds[statistic, PAIRINGS[0]])}")
    for pairing in PAIRINGS:
        print(f"NOISE RATIO minimum / median, {pairing}: {_ratio(sds['minimum', pairing], sds['median', pairing])}")
    print(f"seconds: {time.monotonic() - started:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
