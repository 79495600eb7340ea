"""The runtime table: leaderboard results' speedups over XLA's default, measured with hygiene.

``python -m leaderboard.report.runtime_table measure "LABEL=RESULTS.csv" ... --sample 1 --out REPORT.json``
replays each results file's module for every benchmark of a test-split sample
and measures it against ``RuntimeDefault`` (the module of XLA's default
pipeline) in ``--sessions`` fresh pairs of envs, ``--rounds`` interleaved rounds
each (baseline and agent in turns, the order alternating:
``agents/runtime/measure.interleaved``). Each benchmark gets a speedup (ratio of
the pooled medians) with a bootstrap interval that resamples sessions, then
rounds within them, and a verdict: faster, slower, or within noise. Per row:
the geometric mean over the benchmarks with a bootstrap interval over
benchmarks, and how many were faster and slower beyond noise. ``python -m
leaderboard.report.runtime_table show REPORT.json`` prints the table as Markdown (the
leaderboard README's, unedited).

A row's results are a ``leaderboard.eval`` results CSV, or a runtime search's
CSV (``agents/runtime/run.py``'s) as ``PATH:MODE``: its winners in that mode
(exhaustive or adaptive). Several files, comma-separated, make one row: each
benchmark's module from the last file that has it (a search run again on some
benchmarks, over an earlier run on all). ``--pipeline agent`` compiles every module, the
baseline's too, without XLA's optimizing passes (``xla.runtime.pipeline``), as
the runtime searches in that pipeline measured them.

Why sessions: every round of one pair of envs shares one compile, one set of
worker processes and one stretch of time, and the same module measured in two
pairs can differ by several percent, more than the rounds of one pair vary
(``benchmarks/measure_runtime_noise.py``: so does one executable measured
against itself in one process, so the machine's interference, more than the
compile, is what differs). Intervals over the rounds of one pair call such
differences real; fresh pairs make them part of the noise.

Runtimes need a quiet machine: run nothing else beside a measurement. The first
two rows (unless ``--no-control``) are built in. A control: the benchmark as
loaded measured in the same way against itself (A/A), the same module on both
sides; its spread is the measurement's noise, and a speedup beyond noise there
is a false positive of the measurement. A reference: the benchmark as loaded,
no passes, against XLA's default module: both are compiled with XLA's full CPU
pipeline, so this is what running XLA's default passes before that pipeline
buys (or costs); an agent's row says more than this one only where it differs.
"""
from __future__ import annotations

import argparse
import csv
import json
import platform
import sys
import time
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

from leaderboard.report.metrics import Aggregate, aggregate, geomean
from xla_service.catalog.schema import RUNTIME_PIPELINES

__all__ = ["AS_LOADED", "CONTROL", "main", "measure", "read_commandlines", "table"]

#: The control row: the benchmark as loaded against itself (A/A).
CONTROL = "control: the benchmark as loaded against itself (A/A)"
#: The reference row: the benchmark as loaded (no passes; what XLA compiles by default) against XLA's default.
AS_LOADED = "the benchmark as loaded, no passes"


def _split_mode(results: str) -> tuple[str, str]:
    """``PATH:MODE`` -> (PATH, MODE) for a runtime search's CSV; a results CSV's path -> (path, "")."""
    path, sep, mode = results.rpartition(":")
    return (path, mode) if sep and mode in ("exhaustive", "adaptive") else (results, "")


def read_commandlines(results: str) -> dict[str, str]:
    """Benchmark URI -> commandline of ``results``: a ``leaderboard.eval`` results CSV, or
    ``PATH:MODE``, the winners of a runtime search's CSV (``run.py``'s) in that mode; several,
    comma-separated, each benchmark's from the last that has it."""
    if "," in results:
        merged: dict[str, str] = {}
        for part in results.split(","):
            merged.update(read_commandlines(part))
        return merged
    from leaderboard.report.summary import read_results

    path, mode = _split_mode(results)
    if not mode:
        return {s.benchmark: s.commandline for s in read_results([path])}
    with open(path) as f:
        reader = csv.DictReader(f)
        missing = [c for c in ("benchmark", "mode", "commandline") if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{results}: expected a runtime search's CSV (run.py's), got one without columns {missing}")
        rows = [row for row in reader if row["mode"] == mode]
    if not rows:
        raise ValueError(f"{results}: expected a runtime search's CSV with {mode} rows, got none")
    return {row["benchmark"]: row["commandline"] for row in rows}


def _entries(specs: Sequence[str]) -> list[tuple[str, str]]:
    entries: list[tuple[str, str]] = []
    for spec in specs:
        label, sep, path = spec.partition("=")
        if not sep or not label or not path:
            raise ValueError(f"expected LABEL=RESULTS.csv, got {spec!r}")
        if label in (CONTROL, AS_LOADED) or label in dict(entries):
            raise ValueError(f"expected a label per row, got {label!r} twice")
        for part in path.split(","):
            if not part or not Path(_split_mode(part)[0]).is_file():
                raise ValueError(f"{label}: expected a results CSV, got {part!r} (no such file)")
        entries.append((label, path))
    return entries


def measure(
    entries: Sequence[tuple[str, str]], benchmarks: Sequence[str], rounds: int = 4, repetitions: int = 10,
    sessions: int = 3, confidence: float = 0.95, seed: int = 0, control: bool = True, pipeline: str = "full",
) -> dict[str, Any]:
    """Measure every (label, results CSV) on ``benchmarks``, after the :data:`CONTROL` and
    :data:`AS_LOADED` rows (with ``control``): per benchmark, ``sessions`` fresh pairs of envs (new services, so new
    compiles and worker processes), ``rounds`` interleaved rounds each, every module compiled
    in ``pipeline`` (``xla.runtime.pipeline``); the report (``show`` prints it)."""
    from leaderboard.agents.runtime.measure import compare_in_sessions

    if rounds < 1 or sessions < 1 or rounds * sessions < 2:
        raise ValueError(f"rounds, sessions: expected >= 1 and 2 rounds in all, got {rounds} and {sessions}")
    if pipeline not in RUNTIME_PIPELINES:
        raise ValueError(f"pipeline: expected one of {', '.join(RUNTIME_PIPELINES)}, got {pipeline!r}")
    commandlines: dict[str, dict[str, str]] = {}
    for label, path in entries:
        by_uri = read_commandlines(path)
        missing = [uri for uri in benchmarks if uri not in by_uri]
        if missing:
            more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
            raise ValueError(f"{label}: {path} has no result for {missing[0]}{more}")
        commandlines[label] = by_uri
    rows, started = [], time.monotonic()
    built_in = [(CONTROL, "", "initial"), (AS_LOADED, "", "default")] if control else []
    for label, path, baseline in built_in + [(label, path, "default") for label, path in entries]:
        per_benchmark = []
        for j, uri in enumerate(benchmarks):
            commandline = commandlines[label][uri] if path else ""
            s = compare_in_sessions(uri, commandline, sessions=sessions, rounds=rounds, baseline=baseline,
                                    repetitions=repetitions, confidence=confidence, seed=seed, pipeline=pipeline)
            per_benchmark.append({"benchmark": uri, "commandline": commandline, **s.to_dict()})
            print(f"[{label} {j + 1}/{len(benchmarks)}] {uri}: {s.speedup:.3f} [{s.low:.3f}, {s.high:.3f}]"
                  f"{' noise' if s.within_noise else ''} ({time.monotonic() - started:.0f} s so far)", file=sys.stderr)
        speedups = [b["speedup"] for b in per_benchmark]
        rows.append({
            "label": label, "results": path, "benchmarks": per_benchmark,
            "geomean": aggregate(speedups, geomean, seed=seed).to_json(),
            "faster": sum(not b["within_noise"] and b["speedup"] > 1 for b in per_benchmark),
            "slower": sum(not b["within_noise"] and b["speedup"] < 1 for b in per_benchmark),
        })
    return {
        "rows": rows, "rounds": rounds, "sessions": sessions, "repetitions": repetitions, "confidence": confidence,
        "pipeline": pipeline,
        "seed": seed, "seconds": time.monotonic() - started,
        "versions": {"python": platform.python_version(), **{p: version(p) for p in ("jaxlib", "compiler-gym")}},
    }


def _cell_names(uris: list[str]) -> list[str]:
    """Each benchmark's name in a row: its family (``vit``) where the row has one benchmark per family,
    else the benchmark's own name (``vit-l6-d64-h2-p8-i32-b2-infer``)."""
    families = [uri.split("/")[2].removeprefix("xla-").removesuffix("-v0") for uri in uris]
    if len(set(families)) == len(families):
        return families
    return [uri.rstrip("/").rsplit("/", 1)[-1] for uri in uris]


def table(report: dict[str, Any]) -> list[str]:
    """The report's Markdown table (a row per results file), then a line on what was measured."""
    if not report.get("rows"):
        raise ValueError("expected a runtime_table report with rows, got none")
    lines = [
        "| results | benchmarks | speedup over XLA's default (geomean) [95% interval over benchmarks] "
        "| faster beyond noise | slower beyond noise | per benchmark [95% interval over sessions and rounds] |",
        "|---|---|---|---|---|---|",
    ]
    for row in report["rows"]:
        g = Aggregate.from_json(row["geomean"])
        interval = f" [{g.low:.3f}, {g.high:.3f}]" if g.n > 1 else ""
        flag = " (one benchmark: no interval over benchmarks)" if g.n < 2 else " (too few benchmarks to mean much)" if g.small else ""
        names = _cell_names([b["benchmark"] for b in row["benchmarks"]])
        cells = "; ".join(
            f"{name} {b['speedup']:.3f} [{b['low']:.3f}, {b['high']:.3f}]" for name, b in zip(names, row["benchmarks"])
        )
        lines.append(f"| {row['label']} | {g.n} | {g.value:.3f}x{interval}{flag} "
                     f"| {row['faster']} | {row['slower']} | {cells} |")
    lines += ["", f"- per benchmark {report['sessions']} sessions (fresh pairs of envs) of {report['rounds']} interleaved "
              f"rounds, {report['repetitions']} runs an observation, intervals resampling sessions then rounds; "
              f"{report['seconds'] / 60:.0f} min, jaxlib {report['versions']['jaxlib']}"
              + ("; every module compiled without XLA's optimizing passes (pipeline agent)"
                 if report.get("pipeline", "full") == "agent" else "")]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    m = commands.add_parser("measure", help="measure results files; write the report",
                            formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    m.add_argument("entries", nargs="+", metavar="LABEL=RESULTS.csv",
                   help="a row: its label and results file (a runtime search's CSV as PATH:MODE, its winners in that mode; "
                        "several comma-separated: each benchmark's module from the last file that has it)")
    m.add_argument("--split", default="test", help="split whose benchmarks to sample")
    m.add_argument("--datasets", default="", help="comma-separated suites, e.g. xla-vit-v0 (empty: every suite)")
    m.add_argument("--sample", type=int, default=1, help="benchmarks per suite, drawn with --sample-seed (0: the whole split)")
    m.add_argument("--sample-seed", type=int, default=0, help="seed of --sample's draw (the runtime runs' is 0)")
    m.add_argument("--benchmarks", default="", help="comma-separated benchmark URIs to measure instead of the sample")
    m.add_argument("--sessions", type=int, default=3,
                   help="fresh pairs of envs per benchmark (new compiles and processes: their differences count as noise)")
    m.add_argument("--rounds", type=int, default=4, help="interleaved (baseline, agent) rounds per session")
    m.add_argument("--repetitions", type=int, default=10, help="runs per Runtime observation")
    m.add_argument("--seed", type=int, default=0, help="seed of the bootstrap intervals")
    m.add_argument("--pipeline", default="full", choices=RUNTIME_PIPELINES,
                   help="how every module compiles (xla.runtime.pipeline): full, XLA's whole CPU pipeline after the passes; "
                        "agent, without XLA's optimizing passes")
    m.add_argument("--control", action=argparse.BooleanOptionalAction, default=True,
                   help="first the built-in rows: the benchmark as loaded against itself (A/A), and against XLA's default")
    m.add_argument("--out", required=True, help="the JSON report to write")
    s = commands.add_parser("show", help="print a report's Markdown table")
    s.add_argument("report", help="a JSON report of measure")
    args = parser.parse_args(argv)
    if args.command == "show":
        if not Path(args.report).is_file():
            parser.error(f"expected a runtime_table report, got {args.report} (no such file)")
        print("\n".join(table(json.loads(Path(args.report).read_text()))))
        return 0
    from leaderboard.harness import select_benchmarks

    try:
        entries = _entries(args.entries)
        suites = [d for d in args.datasets.split(",") if d]
        benchmarks = ([b for b in args.benchmarks.split(",") if b]
                      or select_benchmarks(args.split, suites, args.sample, args.sample_seed))
        report = measure(entries, benchmarks, args.rounds, args.repetitions, args.sessions, seed=args.seed,
                         control=args.control, pipeline=args.pipeline)
    except (ValueError, LookupError) as e:
        parser.error(str(e))
    report["args"] = vars(args)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print("\n".join(table(report)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
