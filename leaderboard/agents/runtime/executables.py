"""How many executables do pass orders make? Where a runtime search can find anything at all.

``python -m leaderboard.agents.runtime.executables --sample 4 --candidates 32 --mutate 0.5``

The ``Runtime`` observation compiles the current module with XLA's full CPU
pipeline. Two modules that this pipeline turns into the same optimized HLO
(the same ``ExecutableDigest``) are the same program: their runtimes differ
only by measurement noise. So a runtime search can find a speedup over XLA's
default only among candidates whose executable differs from the default's.

For each benchmark this script proposes ``--candidates`` distinct modules, as
the runtime search does (:func:`search.propose`, the same arguments), and counts:

- ``executables``: the distinct executables they compile to;
- ``not_default``: those other than the executable of XLA's default module
  (``ExecutableDigestDefault``, what ``RuntimeDefault`` times);
- ``not_start``: those other than the start module's (``ExecutableDigestInitial``);
- ``start_is_default``: whether the start module already compiles to XLA's default executable.

It compiles (one compile a candidate) but runs nothing, so it needs no quiet
machine. Writes ``--out`` (JSON: arguments, versions, rows) after every
benchmark, and prints a Markdown table per benchmark, then per suite. A run
stopped and started again recomputes little: the steps and digests are in
the experience store.
"""
from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from leaderboard.agents.arguments import dataclass_parser
from xla_service.catalog.schema import RUNTIME_PIPELINES
from xla_service.env.datasets import SPLITS

__all__ = ["Args", "main", "markdown", "parse_args", "survey"]


@dataclass
class Args:
    split: str = "test"
    """split whose benchmarks to survey (train, validation, test)"""
    datasets: str = ""
    """comma-separated suites, e.g. xla-rnn-v0 (empty: every suite)"""
    sample: int = 4
    """benchmarks per suite, drawn with --sample-seed (0: the whole split)"""
    sample_seed: int = 0
    """seed of --sample's draw (the leaderboard's sample uses 0)"""
    benchmarks: str = ""
    """comma-separated benchmark URIs to survey instead of the sample"""
    candidates: int = 32
    """distinct candidate modules proposed per benchmark"""
    max_length: int = 12
    """longest random pass sequence of a candidate"""
    explore: float = 0.2
    """probability that a proposed pass is any of the 64, not one of the default pipeline's"""
    mutate: float = 0.5
    """fraction of the proposed sequences that are XLA's default order with 1-3 random edits"""
    pipeline: str = "full"
    """how the modules compile (xla.runtime.pipeline): full, XLA's whole CPU pipeline; agent, without its optimizing passes"""
    seed: int = 0
    """seed of the proposals"""
    out: str = "leaderboard/agents/runtime/results/executables-sample4.json"
    """JSON to write"""


def parse_args(argv: Sequence[str] | None = None) -> Args:
    """Every field of :class:`Args` as a ``--kebab-case`` flag, its docstring the help."""
    parser = dataclass_parser(Args, __doc__.splitlines()[0])
    args = Args(**vars(parser.parse_args(argv)))
    if args.split not in SPLITS:
        parser.error(f"--split: expected one of {', '.join(SPLITS)}, got {args.split!r}")
    if args.pipeline not in RUNTIME_PIPELINES:
        parser.error(f"--pipeline: expected one of {', '.join(RUNTIME_PIPELINES)}, got {args.pipeline!r}")
    if args.candidates < 1 or args.max_length < 1:
        parser.error("--candidates and --max-length must be >= 1")
    for name in ("explore", "mutate"):
        if not 0 <= getattr(args, name) <= 1:
            parser.error(f"--{name}: expected a fraction in [0, 1], got {getattr(args, name)}")
    return args


def survey(args: Args, on_row: Callable[[list[dict[str, Any]]], None] = lambda rows: None) -> list[dict[str, Any]]:
    """A row per benchmark: candidates, executables, not_default, not_start, start_is_default, seconds;
    ``on_row(rows so far)`` after each."""
    import compiler_gym

    from leaderboard.agents.runtime.search import propose
    from leaderboard.harness import sample_per_suite
    from xla_service.env.datasets import split_benchmark_uris

    uris = sorted(split_benchmark_uris(args.split, [d for d in args.datasets.split(",") if d] or None))
    if args.sample > 0:
        uris = sample_per_suite(uris, args.sample, args.sample_seed)
    if args.benchmarks:
        uris = [u for u in args.benchmarks.split(",") if u]
    rows = []
    with compiler_gym.make("xla-v0") as env:
        for uri in tqdm(uris, desc="benchmarks", file=sys.stderr):
            started = time.time()
            env.reset(benchmark=uri)
            env.send_param("xla.runtime.pipeline", args.pipeline)
            candidates = propose(
                env, args.candidates, args.max_length, seed=args.seed, explore=args.explore, mutate=args.mutate
            )
            start, default = str(env.observation["ExecutableDigestInitial"]), str(env.observation["ExecutableDigestDefault"])
            executables = set()
            for candidate in candidates:
                fork = env.fork()
                try:
                    for action in candidate.actions:
                        fork.step(action)
                    executables.add(str(fork.observation["ExecutableDigest"]))
                finally:
                    fork.close()
            rows.append({
                "benchmark": uri, "candidates": len(candidates), "executables": len(executables),
                "not_default": len(executables - {default}), "not_start": len(executables - {start}),
                "start_is_default": start == default, "seconds": round(time.time() - started, 1),
            })
            on_row(rows)
    return rows


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The per-benchmark table, then one row per suite (sums; benchmarks with any executable other than the default's)."""
    head = "| benchmark | candidate modules | executables | other than the default's | other than the start's | start compiles to the default's |"
    lines = [head, "|---|---|---|---|---|---|"]
    lines += [f"| {r['benchmark'].split('://')[-1]} | {r['candidates']} | {r['executables']} | {r['not_default']} | "
              f"{r['not_start']} | {'yes' if r['start_is_default'] else 'no'} |" for r in rows]
    suites: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        suites[r["benchmark"].split("://")[-1].split("/")[0]].append(r)
    lines += ["", "| suite | benchmarks | candidate modules | executables | other than the default's | benchmarks with one |",
              "|---|---|---|---|---|---|"]
    for suite, group in sorted(suites.items()):
        sums = {k: sum(r[k] for r in group) for k in ("candidates", "executables", "not_default")}
        with_one = sum(r["not_default"] > 0 for r in group)
        lines.append(f"| {suite} | {len(group)} | {sums['candidates']} | {sums['executables']} | {sums['not_default']} | {with_one} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    from leaderboard.agents.runtime.run import _versions

    args = parse_args(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    versions = _versions()

    def write(rows: list[dict[str, Any]]) -> None:
        out.write_text(json.dumps({"args": dataclasses.asdict(args), "versions": versions, "rows": rows}, indent=1) + "\n")

    write([])
    print(markdown(survey(args, on_row=write)))
    print(f"\nwrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
