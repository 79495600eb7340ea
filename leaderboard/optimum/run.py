"""Run the optimum search on benchmarks: the engine in process, the store behind it, files out.

The search drives the pass engine in this process (``Engine.apply``), not the
stock client: each step is one call into the engine's cache, which looks the
step up in the experience store before it runs XLA and writes what it
computes there, so every step lands in the store as an env's would, and a
state costs no gRPC round trip, fork or observation (the engine never
imports jax; its workers do). The optimum's order is then validated by
execution the way the leaderboard validates results: replayed in the stock
env (``leaderboard.report.check``, ``env.validate``).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from leaderboard.optimum.files import (
    graph_from_json,
    graph_to_json,
    read_result,
    result_path,
    write_result,
)
from leaderboard.optimum.search import Budget, StateGraph, search
from xla_service.passes.analysis import Analysis
from xla_service.passes.engine import Engine

__all__ = ["benchmark_text", "open_engine", "optimum_of", "validate_optimum"]


#: Seconds a step waits for a worker to finish its last compile's tail rather than replace it:
#: the search keeps every worker busy, where the service's default (0.5 s, for fairness between
#: sessions) replaced a worker every other step and took 2.2x the time (2 states of a ResNet).
PREEMPT_AFTER = 60.0


def open_engine(workers: int) -> Engine:
    """An engine with ``workers`` XLA workers and the experience store of ``$XLA_GYM_STORE`` behind it."""
    from xla_service.store import open_store

    return Engine(workers=workers, backing=open_store(), preempt_after=PREEMPT_AFTER)


def benchmark_text(uri: str, engine: Engine) -> str:
    """The HLO text of a dataset benchmark (or a generator seed), as the env's session reads it."""
    from xla_service.env.datasets import get_xla_datasets
    from xla_service.session.xla_session import _benchmark_text

    for dataset in get_xla_datasets():
        if uri.startswith(f"{dataset.name}/"):
            return _benchmark_text(dataset.benchmark(uri).proto, engine)
    names = ", ".join(d.name for d in get_xla_datasets())
    raise LookupError(f"Expected a benchmark URI of one of {names}, got {uri!r}")


def optimum_of(
    engine: Engine,
    uri: str,
    out: Path,
    budget: Budget,
    passes: Sequence[str],
    resume: bool,
    workers: int = 2,
    checkpoint_every: float = 60.0,
    progress: Callable[[StateGraph], None] | None = None,
) -> dict[str, Any]:
    """Search ``uri``'s states within ``budget`` and write its result file; returns its contents.

    With ``resume``, a result file already there is continued: the states it
    expanded and the transitions it tried are not tried again (an exhausted
    graph costs nothing). Without it, an existing file is an error.
    """
    path = result_path(out, uri)
    graph: StateGraph | None = None
    previous: dict[str, Any] | None = None
    seconds = 0.0
    if path.exists():
        if not resume:
            raise FileExistsError(f"{path} exists: pass --resume to continue it, or remove it")
        previous = read_result(path)
        if previous["benchmark"] != uri:
            raise ValueError(f"Expected a state graph of {uri} at {path}, got one of {previous['benchmark']}")
        graph = graph_from_json(previous)
        seconds = float(previous.get("seconds", 0.0))
    initial = engine.load(benchmark_text(uri, engine))
    stored = getattr(engine.cache.backing, "state", None)

    def state_of(i: int) -> Analysis | None:
        return stored(graph_now.digests[i]) if stored is not None else None

    started = time.monotonic()
    last_save = [started]
    graph_now = graph or StateGraph(list(passes))

    before = _engine_counts(engine)

    def extra() -> dict[str, Any]:
        now = _engine_counts(engine)
        return {"seconds": round(seconds + time.monotonic() - started, 1),
                "budget": {"max_depth": budget.max_depth, "max_states": budget.max_states,
                           "time_budget": budget.time_budget},
                "last_run": {k: now[k] - before[k] for k in now}}

    def checkpoint(g: StateGraph) -> None:
        if progress is not None:
            progress(g)
        if time.monotonic() - last_save[0] >= checkpoint_every:
            write_result(path, graph_to_json(g, uri, extra()))
            last_save[0] = time.monotonic()

    # with a store, frontier states are read back from it; without, held in memory
    search(engine, initial, passes, budget, graph_now, state_of=state_of if stored is not None else None,
           workers=workers, progress=checkpoint)
    data = graph_to_json(graph_now, uri, extra())
    if previous is not None and previous["optimum"]["order"] == data["optimum"]["order"]:
        data["optimum"]["validated"] = previous["optimum"]["validated"]  # the same order: its verdict stands
    write_result(path, data)
    return data


def _engine_counts(engine: Engine) -> dict[str, int]:
    """Steps the engine computed (XLA ran), read from the store, and workers it replaced."""
    cache = engine.cache.stats()
    misses, from_store = cache["misses"].get("step", 0), cache["backing_hits"].get("step", 0)
    return {"steps_computed": misses - from_store, "steps_from_store": from_store,
            "workers_replaced": engine.workers_replaced}


def validate_optimum(data: dict[str, Any], jobs: int = 1) -> bool:
    """Replay the optimum's order in the stock env and validate it by execution
    (``env.validate``, as ``leaderboard.report.summary --validate`` does); records the verdict in ``data``."""
    from compiler_gym.compiler_env_state import CompilerEnvState

    from leaderboard.report.check import check_results

    optimum = data["optimum"]
    state = CompilerEnvState(
        benchmark=data["benchmark"],
        commandline=" ".join(optimum["order"]),
        walltime=float(data.get("seconds", 0.0)),
        reward=float(data["initial_op_count"] - optimum["op_count"]),
    )
    okay = bool(check_results([state], runtime=False, jobs=jobs)[0][0])
    optimum["validated"] = okay
    return okay
