"""Summarize a backend track's results: each agent against XLA's default pipeline.

``python -m leaderboard.report.backend_summary RESULTS.csv [...] --reward EstimatedTimeAgentNorm [--validate]``

A backend track (``--reward`` of the harness: an objective of
``catalog.backend.BACKEND_OBJECTIVES`` in a pipeline mode, raw or ``Norm``)
records each result's episode return. With the reference
(``leaderboard.report.backend_reference``: the objective of each benchmark as loaded,
``initial``, and after XLA's default pipeline, ``default``), the agent's final
value is ``initial - return`` (raw) or ``initial - return * default`` (Norm),
and its score on a benchmark is ``default / final`` (> 1: better than XLA's
default). Reported per family and overall: the geometric mean of the scores
with a 95% bootstrap interval over benchmarks (``leaderboard.report.metrics``), the
share of benchmarks at least as good as the default, and with ``--validate``
how many results validate by execution. With ``--by-seed`` the CSVs are the runs
of a learned agent (``seed<k>`` in each file name; a seed's test and held-out
files together): each seed's geometric mean per family, then the mean across
seeds with a 95% Student-t interval (``leaderboard.report.seeds.across_seeds``).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from compiler_gym.compiler_env_state import CompilerEnvState

from leaderboard.declared import SeedDeclarationError, check_declared, check_file
from leaderboard.protocol import store_line
from leaderboard.report.backend_reference import DEFAULT_PATH, load_reference
from leaderboard.report.check import check_results
from leaderboard.report.metrics import Aggregate, aggregate, geomean
from leaderboard.report.seeds import across_seeds, seed_of
from leaderboard.report.summary import family, read_results
from xla_service.catalog.backend import BACKEND_KEYS, BACKEND_OBJECTIVES

__all__ = ["Track", "by_seed", "empty_scores", "parse_track", "scores", "main"]


@dataclass(frozen=True)
class Track:
    """A backend track: an objective, a pipeline mode, and whether returns are normalized."""

    objective: str
    pipeline: str
    normalized: bool

    @property
    def index(self) -> int:
        return BACKEND_KEYS.index(BACKEND_OBJECTIVES[self.objective])


def parse_track(reward: str) -> Track:
    """``EstimatedTimeAgentNorm`` -> Track("EstimatedTime", "agent", True); ValueError otherwise."""
    for objective in BACKEND_OBJECTIVES:
        for pipeline, suffix in (("agent", "Agent"), ("full", "")):
            for normalized in (True, False):
                if reward == f"{objective}{suffix}{'Norm' if normalized else ''}":
                    return Track(objective, pipeline, normalized)
    names = [f"{o}{s}{n}" for o in BACKEND_OBJECTIVES for s in ("", "Agent") for n in ("", "Norm")]
    raise ValueError(f"Expected a backend reward space, one of {names}, got {reward!r}")


def scores(
    states: Sequence[CompilerEnvState], track: Track, reference: dict[str, dict[str, dict[str, list[float]]]]
) -> dict[str, float]:
    """Benchmark -> ``default / final`` of the track's objective (states without a reference are skipped)."""
    out = {}
    for state in states:
        values = reference.get(state.benchmark, {}).get(track.pipeline)
        if values is None:
            continue
        initial, default = values["initial"][track.index], values["default"][track.index]
        scale = default if track.normalized and default > 0 else 1.0
        final = initial - float(state.reward or 0.0) * scale
        out[state.benchmark] = default / final if final > 0 and default > 0 else 1.0
    return out


@dataclass
class _Group:
    name: str
    scores: list[float] = field(default_factory=list)
    validated: int = 0
    checked: int = 0

    def line(self) -> str:
        a: Aggregate = aggregate(self.scores, geomean)
        small = " (small sample)" if a.small else ""
        share = sum(s >= 1 - 1e-9 for s in self.scores) / len(self.scores) if self.scores else float("nan")
        checked = f" | {self.validated}/{self.checked}" if self.checked else ""
        return f"| {self.name} | {a.n} | {a.value:.3f}x [{a.low:.3f}, {a.high:.3f}]{small} | {share:.0%}{checked} |"


def empty_scores(benchmarks: Sequence[str], track: Track, reference: dict) -> list[float]:
    """``default / initial`` of each benchmark: the score of the empty order (the module as loaded)."""
    out = []
    for benchmark in benchmarks:
        values = reference[benchmark][track.pipeline]
        initial, default = values["initial"][track.index], values["default"][track.index]
        out.append(default / initial if initial > 0 and default > 0 else 1.0)
    return out


def _print_empty(benchmarks: Sequence[str], track: Track, reference: dict) -> None:
    a = aggregate(empty_scores(sorted(set(benchmarks)), track, reference), geomean)
    print(f"the empty order (each module as loaded) on the same {a.n} benchmarks: {a.value:.3f}x [{a.low:.3f}, {a.high:.3f}]")


def by_seed(paths: Sequence[str], track: Track, reference: dict) -> dict[str, dict[int, float]]:
    """Family (and ``all``) -> seed -> the geometric mean of that seed's scores."""
    runs: dict[int, list[str]] = defaultdict(list)
    for path in paths:
        runs[seed_of(path)].append(path)
    out: dict[str, dict[int, float]] = defaultdict(dict)
    for seed, files in sorted(runs.items()):
        score = scores(read_results(files), track, reference)
        families: dict[str, list[float]] = defaultdict(list)
        for benchmark, value in score.items():
            families[family(benchmark)].append(value)
            families["all"].append(value)
        for name, values in families.items():
            out[name][seed] = geomean(values)
    return out


def _print_by_seed(table: dict[str, dict[int, float]]) -> None:
    print("| family | seeds | mean of seeds [95% t-interval] | each seed |")
    print("|---|---|---|---|")
    for name in sorted(table, key=lambda n: (n == "all", n)):
        values = table[name]
        m, low, high = across_seeds(list(values.values()))
        each = ", ".join(f"{seed}: {v:.3f}" for seed, v in sorted(values.items()))
        print(f"| {name} | {len(values)} | {m:.3f}x [{low:.3f}, {high:.3f}] | {each} |")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("results", nargs="+", help="results CSVs of one agent on the track")
    parser.add_argument("--reward", required=True, help="the track's reward space (the harness's --reward)")
    parser.add_argument("--reference", type=Path, default=DEFAULT_PATH, help="leaderboard.report.backend_reference's JSON")
    parser.add_argument("--validate", action="store_true", help="validate every result by execution")
    parser.add_argument("--jobs", type=int, default=1, help="envs side by side for --validate")
    parser.add_argument("--json", type=Path, default=None, help="also write the per-benchmark scores here")
    parser.add_argument("--by-seed", action="store_true",
                        help="the CSVs are a learned agent's seeds (seed<k> in each name): the mean across seeds")
    args = parser.parse_args(argv)
    track = parse_track(args.reward)
    try:  # seeds declared before the run, never extended after (leaderboard/PROTOCOL.md)
        for path in args.results:
            check_file(path)
        if args.by_seed:
            check_declared(args.results)
    except SeedDeclarationError as error:
        parser.error(str(error))
    states = read_results(args.results)
    reference = load_reference(args.reference)
    missing = sorted({s.benchmark for s in states} - set(reference))
    if missing:
        raise SystemExit(f"{len(missing)} benchmarks have no reference in {args.reference} (e.g. {missing[0]}): "
                         "run python -m leaderboard.report.backend_reference for their split")
    if args.by_seed:
        print(f"track {args.reward} ({track.objective}, {track.pipeline} pipeline): default / agent, across seeds")
        _print_by_seed(by_seed(args.results, track, reference))
        _print_empty([s.benchmark for s in states], track, reference)
        return 0
    score = scores(states, track, reference)
    checked = check_results(states, runtime=False, jobs=args.jobs, reward=args.reward) if args.validate else {}
    groups: dict[str, _Group] = defaultdict(lambda: _Group(""))
    for i, state in enumerate(states):
        for name in (family(state.benchmark), "all"):
            group = groups.setdefault(name, _Group(name))
            group.scores.append(score[state.benchmark])
            if i in checked:
                group.checked += 1
                group.validated += bool(checked[i][0])
    print(f"track {args.reward} ({track.objective}, {track.pipeline} pipeline): default / agent, geomean [95% interval]")
    print("| family | benchmarks | vs XLA's default | >= default" + (" | validated |" if checked else " |"))
    print("|---|---|---|---|" + ("---|" if checked else ""))
    for name in sorted(groups, key=lambda n: (n == "all", n)):
        print(groups[name].line())
    _print_empty(list(score), track, reference)
    for path in args.results:  # which experience store each evaluation read (leaderboard/PROTOCOL.md)
        print(store_line(path))
    if args.json:
        verdicts = {states[i].benchmark: bool(v[0]) for i, v in checked.items()}
        data = {"reward": args.reward, "scores": score, "validated": verdicts}
        args.json.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
