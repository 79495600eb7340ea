"""How many executables do pass orders make? Where a runtime search can find anything at all.

``python -m leaderboard.agents.runtime.executables --sample 1 --candidates 32 --mutate 0.5 --pipeline full``

The ``Runtime`` observation compiles the current module with XLA's full CPU
pipeline. Two modules that this pipeline turns into the same optimized HLO
(the same ``ExecutableDigest``) are the same program: their runtimes differ
only by measurement noise. So a runtime search can find a speedup over XLA's
default only among candidates whose executable differs from the default's.

For each benchmark this script proposes ``--candidates`` distinct modules, as
the runtime search does (:func:`search.propose`; the same flags as ``run.py``'s,
:class:`proposals.Proposals`), and counts:

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

from leaderboard.agents.runtime.proposals import Proposals, parse_proposals
from leaderboard.runs import runs_dir

__all__ = ["Args", "main", "markdown", "parse_args", "survey"]


@dataclass
class Args(Proposals):
    seed: int = 0
    """seed of the proposals"""
    out: str = str(runs_dir("runtime", "executables.json"))
    """JSON to write; reproduce.sh writes the committed ones in leaderboard/agents/runtime/results"""


def parse_args(argv: Sequence[str] | None = None) -> Args:
    """Every field of :class:`Args` as a ``--kebab-case`` flag, its docstring the help."""
    parser, args = parse_proposals(Args, argv, __doc__.splitlines()[0])
    if args.distinct != "module":
        parser.error(f"--distinct: expected module (the survey proposes distinct modules, then counts their executables), got {args.distinct!r}")
    return args


def survey(args: Args, on_row: Callable[[list[dict[str, Any]]], None] = lambda rows: None) -> list[dict[str, Any]]:
    """A row per benchmark: candidates, executables, not_default, not_start, start_is_default, seconds;
    ``on_row(rows so far)`` after each."""
    import compiler_gym

    from leaderboard.agents.runtime.search import orders_from_results, propose, read_result_orders

    uris = args.uris()
    result_orders = read_result_orders(args.result_files())
    rows = []
    with compiler_gym.make("xla-v0") as env:
        for uri in tqdm(uris, desc="benchmarks", file=sys.stderr):
            started = time.time()
            env.reset(benchmark=uri)
            env.send_param("xla.runtime.pipeline", args.pipeline)
            candidates = propose(
                env, args.candidates, args.max_length, seed=args.seed, explore=args.explore, mutate=args.mutate,
                orders=orders_from_results(env, result_orders),
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
