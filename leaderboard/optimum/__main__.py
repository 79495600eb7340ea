"""``python -m leaderboard.optimum``: the optimum op count of benchmarks, by exhaustive search.

One benchmark (``--benchmark URI``) or a split (``--split test``, ``--heldout``);
each gets a state graph file under ``--out`` (``leaderboard/optimum/files.py``)
and a line: states, exhausted or the bound, the optimum and its order.
``python -m leaderboard.optimum.report`` tabulates the files;
``python -m leaderboard.optimum.gap RESULTS.csv`` scores agents against them.
"""
from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from tqdm import tqdm

from leaderboard.optimum.files import default_out
from leaderboard.optimum.run import open_engine, optimum_of, validate_optimum
from leaderboard.optimum.search import Budget, StateGraph
from xla_service.catalog.passes import PASS_NAMES
from xla_service.env.datasets import SPLITS, split_benchmark_uris

__all__ = ["main", "parser", "select"]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m leaderboard.optimum",
        description="Breadth-first search over every distinct state (normalized module, by digest) "
        "reachable from each benchmark by the action set, for the optimal op count and a shortest "
        "order reaching it. Every step goes through the pass engine and the experience store "
        "($XLA_GYM_STORE). Budgets bound the search; a file says what it proved.",
    )
    which = p.add_argument_group("benchmarks")
    which.add_argument("--benchmark", action="append", default=None, metavar="URI",
                       help="search this benchmark (repeatable); overrides --split (default: none, the split)")
    which.add_argument("--split", default="test", choices=SPLITS, help="search every benchmark of this split (default: %(default)s)")
    which.add_argument("--heldout", action="store_true", help="the held-out families (same as --split heldout; default: off)")
    which.add_argument("--dataset", action="append", default=None, metavar="SUITE",
                       help="only this suite of the split, e.g. xla-gpt2-v0 (repeatable; default: every suite)")
    which.add_argument("--smallest", type=int, default=0, metavar="N",
                       help="if > 0, only the N benchmarks of the selection with the fewest initial ops "
                       "(from the manifests; default: %(default)s, every one)")
    bounds = p.add_argument_group("budget, per benchmark")
    bounds.add_argument("--max-depth", type=int, default=None, metavar="D",
                        help="expand no state at depth D: optimal among orders of length <= D (default: no bound)")
    bounds.add_argument("--max-states", type=int, default=None, metavar="N",
                        help="expand at most N states in all, counting resumed runs (default: no bound)")
    bounds.add_argument("--time-budget", type=float, default=600.0, metavar="SECONDS",
                        help="stop expanding after this many seconds of this run, checked between states "
                        "(a state takes 64 compiles; 0 or less: no bound; default: %(default)s)")
    p.add_argument("--passes", default="", metavar="A,B,...",
                   help="the action set, comma-separated pass names (default: all 64 passes of the env)")
    p.add_argument("--workers", type=int, default=2, help="XLA worker processes; passes of a state run side by side (default: %(default)s)")
    p.add_argument("--out", type=Path, default=default_out(),
                   help="results folder: one state graph JSON per benchmark, OUT/SUITE/NAME.json "
                   "(default: $XLA_GYM_RUNS/optimum, else %(default)s)")
    p.add_argument("--resume", action="store_true",
                   help="continue the graphs already in --out: expanded states are not tried again, "
                   "an exhausted graph costs nothing (default: off; then an existing file is an error)")
    p.add_argument("--checkpoint-every", type=float, default=60.0, metavar="SECONDS",
                   help="write the graph every this many seconds during a search, and at its end (default: %(default)s)")
    p.add_argument("--verbose", action="store_true",
                   help="show the engine's warnings (a worker replaced...) above the progress bar "
                   "(default: off; each file counts the workers replaced)")
    p.add_argument("--no-validate", action="store_true",
                   help="do not validate each optimum's order by execution in the stock env (default: validate)")
    return p


def select(args: argparse.Namespace) -> list[str]:
    """The benchmark URIs the flags name."""
    if args.benchmark:
        return list(args.benchmark)
    uris = split_benchmark_uris("heldout" if args.heldout else args.split, args.dataset)
    if args.smallest > 0:
        from leaderboard.report.summary import op_counts

        counts = op_counts()
        uris = sorted(uris, key=lambda u: (counts.get(u, (0, 0))[0], u))[: args.smallest]
    return uris


def _passes(text: str) -> list[str]:
    if not text.strip():
        return list(PASS_NAMES)
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in PASS_NAMES]
    if unknown:
        raise SystemExit(f"--passes: expected names of env.action_space.names, got unknown {unknown}")
    return names


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    for flag in ("max_depth", "max_states", "workers"):
        value = getattr(args, flag)
        if value is not None and value < (1 if flag == "workers" else 0):
            raise SystemExit(f"--{flag.replace('_', '-')}: expected a number >= 0, got {value}")
    if not args.verbose:  # the pool replaces workers routinely under a steady load
        logging.getLogger("xla_service.passes.pool").setLevel(logging.ERROR)
    budget = Budget(args.max_depth, args.max_states, args.time_budget if args.time_budget > 0 else None)
    passes = _passes(args.passes)
    uris = select(args)
    engine = open_engine(args.workers)
    bar = tqdm(total=len(uris), unit="benchmark", dynamic_ncols=True, file=sys.stderr)
    failed = 0
    try:
        for uri in uris:
            bar.set_description(uri.split("/")[-1][:40])

            def show(graph: StateGraph) -> None:
                waiting = graph.complete_depth
                bar.set_postfix(states=len(graph.digests), expanded=len(graph.expanded),
                                depth=waiting, best=graph.op_counts[graph.best()], refresh=True)

            try:
                data = optimum_of(engine, uri, args.out, budget, passes, args.resume, args.workers,
                                  args.checkpoint_every, show)
            except (FileExistsError, ValueError, LookupError) as e:
                tqdm.write(f"{uri}: {e}", file=sys.stderr)
                failed += 1
                bar.update()
                continue
            if not args.no_validate and data["optimum"]["validated"] is None:
                from leaderboard.optimum.files import result_path, write_result

                validate_optimum(data)
                write_result(result_path(args.out, uri), data)
            o = data["optimum"]
            tqdm.write(f"{uri}: {data['states_found']} states ({data['states_expanded']} expanded), "
                       f"{data['transitions_tried']} transitions, stopped: {data['stopped']}; "
                       f"{o['op_count']} ops ({o['bound']}) from {data['initial_op_count']}, "
                       f"order: {' '.join(o['order']) or '(none)'}, validated: {o['validated']}")
            bar.update()
    finally:
        bar.close()
        engine.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
