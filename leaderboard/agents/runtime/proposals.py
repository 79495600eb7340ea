"""The arguments the runtime scripts share: which benchmarks, and how candidates are proposed on each.

:class:`Proposals` is the base of ``run.py``'s and ``executables.py``'s
argument dataclasses (every field a flag, its docstring the help), so the two
scripts select the same benchmarks and propose the same candidates from the
same flags; :func:`parse_proposals` reads one from the command line.
"""
from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from leaderboard.agents.runtime.search import DISTINCT, missing_paths, result_paths
from xla_service.catalog.schema import RUNTIME_PIPELINES
from xla_service.env.datasets import SPLITS

__all__ = ["Proposals", "parse_proposals"]

P = TypeVar("P", bound="Proposals")


@dataclass
class Proposals:
    split: str = "test"
    """split whose benchmarks to search (train, validation, test)"""
    datasets: str = ""
    """comma-separated suites, e.g. xla-rnn-v0 (empty: every suite)"""
    sample: int = 1
    """benchmarks per suite, drawn with --sample-seed (0: the whole split)"""
    sample_seed: int = 0
    """seed of --sample's draw (the leaderboard's sample uses 0)"""
    max_benchmarks: int = 0
    """if > 0, only the first N benchmarks of the sample"""
    benchmarks: str = ""
    """comma-separated benchmark URIs to search instead of the sample (e.g. the smallest, for a tiny run)"""
    candidates: int = 24
    """distinct candidate modules proposed per benchmark"""
    max_length: int = 12
    """longest random pass sequence of a candidate"""
    explore: float = 0.2
    """probability that a proposed pass is any of the 64, not one of the default pipeline's"""
    mutate: float = 0.0
    """fraction of the proposed sequences that are XLA's default order with 1-3 random edits (local search around it)"""
    from_results: str = ""
    """comma-separated results CSVs (leaderboard.eval's) whose pass order for each benchmark is a candidate too, right
    after the default order, and a base of the --mutate edits"""
    pipeline: str = "full"
    """how Runtime compiles a module (xla.runtime.pipeline): full, XLA's whole CPU pipeline after the passes; agent, without
    XLA's optimizing passes (the candidate's passes are the optimization)"""
    distinct: str = "module"
    """candidates told apart by module (HLO text) or by executable (ExecutableDigest: one compile each, no run; the
    baseline's executable excluded): same executable, same runtime but for noise"""

    def problems(self) -> list[str]:
        """What is wrong with the values, one "--flag: expected X, got Y" each (empty: nothing)."""
        out = []
        for name, value, choices in (("split", self.split, SPLITS), ("pipeline", self.pipeline, RUNTIME_PIPELINES),
                                     ("distinct", self.distinct, DISTINCT)):
            if value not in choices:
                out.append(f"--{name}: expected one of {', '.join(choices)}, got {value!r}")
        for name in ("candidates", "max_length"):
            if getattr(self, name) < 1:
                out.append(f"--{name.replace('_', '-')}: expected >= 1, got {getattr(self, name)}")
        for name in ("explore", "mutate"):
            if not 0 <= getattr(self, name) <= 1:
                out.append(f"--{name}: expected a fraction in [0, 1], got {getattr(self, name)}")
        out += [f"--from-results: expected a results CSV, got {path!r} (no such file)" for path in missing_paths(self.result_files())]
        return out

    def result_files(self) -> list[str]:
        """The paths of ``--from-results``."""
        return result_paths(self.from_results)

    def uris(self) -> list[str]:
        """The benchmarks: ``--benchmarks``, else ``--sample`` of each suite's ``--split`` (the first ``--max-benchmarks``)."""
        from leaderboard.harness import select_benchmarks

        if self.benchmarks:
            return [u for u in self.benchmarks.split(",") if u]
        suites = [d for d in self.datasets.split(",") if d]
        return select_benchmarks(self.split, suites, self.sample, self.sample_seed, self.max_benchmarks)


def parse_proposals(cls: type[P], argv: Sequence[str] | None, description: str) -> tuple[argparse.ArgumentParser, P]:
    """``cls`` (a :class:`Proposals`) from the command line, every field a ``--kebab-case`` flag; exits on
    any of its :meth:`~Proposals.problems`. The parser is returned for the script's own checks."""
    from leaderboard.agents.arguments import dataclass_parser

    parser = dataclass_parser(cls, description)
    args = cls(**vars(parser.parse_args(argv)))
    for problem in args.problems():
        parser.error(problem)
    return parser, args
