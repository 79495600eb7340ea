"""Exhaustive (a) against adaptive (b) runtime search, side by side (CleanRL style).

``python -m leaderboard.agents.runtime.run --sample 1 --candidates 24 --budget 8``

One file reads top to bottom: arguments (a dataclass, every field a flag,
``--help`` shows the defaults), seeding, the benchmarks (``--sample`` of each
suite's ``--split``, drawn with ``--sample-seed`` as the leaderboard's
sample), then for each benchmark: one set of candidates (:func:`search.propose`),
searched by both modes in turn (which goes first alternates), each winner
measured again apart from the search (interleaved with the baseline, a
bootstrap interval), and the cost model's held-out rank correlation on the
exhaustive mode's measurements (all candidates; 5-fold within the benchmark,
and, with several benchmarks, fit on the others). Writes ``--out`` (JSON:
hyperparameters, versions, every row) and the same rows as CSV next to it;
``--save-measurements`` keeps the exhaustive measurements (features and
targets) for ``RuntimeSearch(prior=...)``, ``--transfer`` lets the adaptive
mode's model start from the benchmarks before.
"""
from __future__ import annotations

import csv
import dataclasses
import json
import logging
import platform
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from leaderboard.agents.runtime.proposals import Proposals, parse_proposals
from leaderboard.runs import runs_dir

__all__ = ["Args", "main", "parse_args", "run"]

logger = logging.getLogger("leaderboard.agents.runtime.run")


@dataclass
class Args(Proposals):
    budget: int = 8
    """measurements of the adaptive mode (b)"""
    per_round: int = 4
    """measurements per adaptive round (k-means clusters, minus the exploited)"""
    exploit: int = 1
    """per round, candidates measured because the cost model ranks them fastest"""
    promising: float = 0.5
    """fraction of the unmeasured candidates, fastest predicted first, that is clustered"""
    alpha: float = 1.0
    """ridge penalty of the cost model"""
    folds: int = 5
    """folds of the cost model's held-out rank correlation"""
    repetitions: int = 5
    """runs per Runtime observation (xla.runtime.repetitions)"""
    baseline_rounds: int = 3
    """Runtime observations of the baseline before a search (its reference median)"""
    final_rounds: int = 5
    """interleaved (baseline, winner) observation pairs of the final measurement, per session"""
    final_sessions: int = 3
    """fresh pairs of envs (new compiles and processes) of the final measurement (0: the search's own envs)"""
    baseline: str = "initial"
    """initial (the start module, compiled by XLA's pipeline) or default (RuntimeDefault)"""
    confidence: float = 0.95
    """confidence of the bootstrap intervals"""
    tolerance: float = 0.0
    """speedups within 1 +- tolerance count as noise"""
    refresh_every: int = 4
    """a baseline observation after every N candidate measurements of a search (0: never)"""
    graph: bool = False
    """add HloGraphArrays features (edges, critical path, elements) to the cost model's"""
    transfer: bool = False
    """adaptive mode's cost model also fits the exhaustive measurements of the benchmarks before"""
    finalists: int = 1
    """re-measure the search's fastest N (interleaved) and take the fastest of them (1: the search's best)"""
    save_measurements: str = ""
    """an .npz to write the exhaustive measurements to (features, log relative runtimes), for RuntimeSearch(prior=...)"""
    seed: int = 0
    """seed of Python, NumPy, the proposals and k-means"""
    out: str = str(runs_dir("runtime", "runtime-sample1.json"))
    """JSON to write (the CSV goes next to it); reproduce.sh writes the committed ones in leaderboard/agents/runtime/results"""


def parse_args(argv: Sequence[str] | None = None) -> Args:
    """Every field of :class:`Args` as a ``--kebab-case`` flag, its docstring the help."""
    parser, args = parse_proposals(Args, argv, __doc__.splitlines()[0])
    if args.baseline not in ("initial", "default"):
        parser.error(f"--baseline: expected initial or default, got {args.baseline!r}")
    for name in ("budget", "per_round", "repetitions", "baseline_rounds", "final_rounds", "finalists"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.final_sessions < 0 or args.final_sessions * args.final_rounds == 1:
        parser.error(f"--final-sessions: expected 0 or >= 1 with >= 2 final rounds in all, got {args.final_sessions}")
    return args


def run(args: Args) -> dict[str, Any]:
    import compiler_gym

    from leaderboard.agents.runtime.cost_model import (
        held_out_spearman,
        leave_one_group_out_spearman,
        save_measurements,
    )
    from leaderboard.agents.runtime.policy import RuntimeSearch
    from leaderboard.agents.runtime.search import (
        baseline_keys,
        orders_from_results,
        propose,
        read_result_orders,
    )

    random.seed(args.seed)
    np.random.seed(args.seed)
    uris = args.uris()
    result_orders = read_result_orders(args.result_files())
    settings = {k: getattr(args, k) for k in ("max_length", "explore", "mutate", "budget", "per_round", "exploit", "promising", "alpha",
                                               "repetitions", "baseline_rounds", "final_rounds", "final_sessions", "baseline", "confidence",
                                               "tolerance", "refresh_every", "graph", "finalists", "seed", "distinct", "pipeline")}
    rows: list[dict[str, Any]] = []
    groups: list[tuple[np.ndarray, np.ndarray]] = []
    measured_uris: list[str] = []
    started = time.time()
    env = compiler_gym.make("xla-v0")
    try:
        for n, uri in enumerate(uris):
            env.reset(benchmark=uri)
            env.send_param("xla.runtime.repetitions", str(args.repetitions))
            env.send_param("xla.runtime.pipeline", args.pipeline)
            t = time.time()
            candidates = propose(
                env, args.candidates, args.max_length, seed=args.seed, explore=args.explore,
                graph=args.graph, mutate=args.mutate, distinct=args.distinct,
                orders=orders_from_results(env, result_orders),
                exclude=baseline_keys(env, args.distinct, args.baseline),
            )
            propose_seconds = time.time() - t
            modes = ("exhaustive", "adaptive") if n % 2 == 0 else ("adaptive", "exhaustive")
            prior = (np.vstack([g[0] for g in groups]), np.concatenate([g[1] for g in groups])) if args.transfer and groups else None
            reports = {
                mode: RuntimeSearch(mode=mode, candidates=args.candidates, **settings).search(env, candidates, prior=prior)
                for mode in modes
            }
            X = np.stack([c.features for c in candidates]) if candidates else np.zeros((0, 0))
            measured = reports["exhaustive"]["measured"]
            y = np.array([measured[i] for i in range(len(candidates))])
            if len(candidates):
                groups.append((X, y))
                measured_uris.append(uri)
            rho = held_out_spearman(X, y, folds=args.folds, alpha=args.alpha, seed=args.seed) if len(y) >= 3 else float("nan")
            for mode in ("exhaustive", "adaptive"):
                r = reports[mode]
                final = r["final"]
                rows.append({
                    "benchmark": uri, "mode": mode, "candidates": len(candidates), "measurements": r["measurements"],
                    "baseline_observations": r["baseline_observations"],
                    "finalist_observations": 2 * args.final_rounds * len(r["finalists"]),
                    "speedup": final["speedup"], "low": final["low"], "high": final["high"],
                    "within_noise": final["within_noise"], "search_speedup": r["search_speedup"],
                    "search_seconds": round(r["search_seconds"], 2), "propose_seconds": round(propose_seconds, 2),
                    "heldout_spearman": rho, "commandline": " ".join(env.action_space.flags[a] for a in r["actions"]),
                })
                logger.info("[%d/%d] %s %s: %d/%d measured, speedup %.3f [%.3f, %.3f]%s (%.0f s so far)",
                            n + 1, len(uris), uri, mode, r["measurements"], len(candidates), final["speedup"],
                            final["low"], final["high"], " noise" if final["within_noise"] else "", time.time() - started)
            logger.info("[%d/%d] cost model held-out Spearman (exhaustive measurements): %.3f", n + 1, len(uris), rho)
    finally:
        env.close()
    if args.save_measurements:
        save_measurements(args.save_measurements, [(uri, X, y) for uri, (X, y) in zip(measured_uris, groups)])
        logger.info("wrote the measurements to %s", args.save_measurements)
    across = leave_one_group_out_spearman(groups, alpha=args.alpha) if len(groups) >= 2 else []
    for uri, rho in zip(measured_uris, across):
        logger.info("cost model fit on the other benchmarks, Spearman on %s: %.3f", uri, rho)
    return {
        "args": dataclasses.asdict(args), "versions": _versions(), "seconds": time.time() - started, "rows": rows,
        "leave_one_benchmark_out_spearman": dict(zip(measured_uris, across)),
    }


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    args = parse_args(argv)
    logger.info("hyperparameters: %s", json.dumps(dataclasses.asdict(args)))
    result = run(args)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=float) + "\n")
    with out.with_suffix(".csv").open("w", newline="") as f:
        if result["rows"]:
            writer = csv.DictWriter(f, fieldnames=list(result["rows"][0]))
            writer.writeheader()
            writer.writerows(result["rows"])
    logger.info("wrote %s and %s", out, out.with_suffix(".csv"))
    return 0


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for package in ("numpy", "compiler_gym", "jaxlib"):
        try:
            out[package] = version(package)
        except Exception:  # not installed under that name
            out[package] = "unknown"
    return out


if __name__ == "__main__":
    sys.exit(main())
