"""A benchmark's state graph as JSON: the results of the search, and its checkpoint.

One file per benchmark, ``OUT/<suite>/<name>.json`` (:func:`result_path`)::

    benchmark, semantics (xla_service.catalog.semantics_key()), passes,
    states: [{digest, depth, op_count, opcodes: {opcode: count}, parent: [state, pass] | null,
              expanded}],
    transitions: [[state, pass, outcome]]   outcome: next state's index, or
                                            "unchanged" or "failed" (errors: [[state, pass, message]]),
    stopped, exhausted, complete_depth, growth: [[found, expanded] per depth],
    optimum: {op_count, state, order, bound, validated},
    initial_op_count, seconds (over every run), steps_tried, budget (the last run's),
    last_run: {steps_computed (XLA ran), steps_from_store, workers_replaced}

``states`` and ``transitions`` are the benchmark's whole MDP under the op
count (when ``exhausted``): the dataset for offline RL and for scoring a
world model's predictions. The same file is the checkpoint a ``--resume``
continues from.
"""
from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from leaderboard.optimum.search import FAILED, UNCHANGED, StateGraph
from xla_service.catalog import semantics_key

__all__ = [
    "INDEX", "default_out", "graph_files", "graph_from_json", "graph_to_json", "read_result", "result_path", "write_result",
]

#: An export's index (``leaderboard.optimum.export``), beside its graphs.
INDEX = "index.json"
_OUTCOMES = {UNCHANGED: "unchanged", FAILED: "failed"}
_CODES = {v: k for k, v in _OUTCOMES.items()}


def default_out() -> Path:
    """``$XLA_GYM_RUNS/optimum`` (default ``~/.cache/xla-gym/runs/optimum``): outside the checkout."""
    runs = os.environ.get("XLA_GYM_RUNS") or os.path.join(os.path.expanduser("~"), ".cache", "xla-gym", "runs")
    return Path(runs) / "optimum"


def result_path(out: Path, benchmark: str) -> Path:
    """``benchmark://xla-gpt2-v0/name`` -> ``out/xla-gpt2-v0/name.json``."""
    tail = benchmark.split("://", 1)[-1]
    if not tail or ".." in tail.split("/"):
        raise ValueError(f"Expected a benchmark URI such as benchmark://xla-gpt2-v0/NAME, got {benchmark!r}")
    return out / f"{tail}.json"


def bound(graph: StateGraph) -> str:
    """What the best state is: the optimum, or optimal among orders up to a length, or only the best found."""
    if graph.exhausted:
        return "optimal"
    depth = graph.complete_depth
    return f"optimal among orders of length <= {depth}" if depth else "best found"


def graph_to_json(graph: StateGraph, benchmark: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    best = graph.best()
    data: dict[str, Any] = {
        "benchmark": benchmark,
        "semantics": semantics_key(),
        "passes": graph.passes,
        "initial_op_count": graph.op_counts[0],
        "states_found": len(graph.digests),
        "states_expanded": len(graph.expanded),
        "transitions_tried": len(graph.transitions),
        "stopped": graph.stopped,
        "exhausted": graph.exhausted,
        "complete_depth": graph.complete_depth,
        "growth": graph.growth(),
        "optimum": {
            "op_count": graph.op_counts[best],
            "state": best,
            "order": graph.order(best),
            "bound": bound(graph),
            "validated": None,
        },
        "steps_tried": graph.steps_tried,
    }
    data.update(extra or {})
    data["states"] = [
        {"digest": d, "depth": graph.depth[i], "op_count": graph.op_counts[i], "opcodes": graph.histograms[i],
         "parent": list(step) if (step := graph.parent[i]) is not None else None, "expanded": i in graph.expanded}
        for i, d in enumerate(graph.digests)
    ]
    data["transitions"] = [[i, p, _OUTCOMES.get(o, o)] for (i, p), o in sorted(graph.transitions.items())]
    data["errors"] = [[i, p, message] for (i, p), message in sorted(graph.errors.items())]
    return data


def graph_from_json(data: dict[str, Any]) -> StateGraph:
    """The graph of a result file (for ``--resume``); refuses one of other semantics."""
    if data.get("semantics") != semantics_key():
        raise ValueError(f"Expected a state graph of semantics {semantics_key()!r}, got {data.get('semantics')!r}: "
                         "recompute it (another jaxlib, engine or pass catalog)")
    states = data["states"]
    graph = StateGraph(
        list(data["passes"]),
        digests=[s["digest"] for s in states],
        op_counts=[int(s["op_count"]) for s in states],
        histograms=[dict(s["opcodes"]) for s in states],
        depth=[int(s["depth"]) for s in states],
        parent=[tuple(s["parent"]) if s["parent"] is not None else None for s in states],  # type: ignore[misc]
        transitions={(int(i), int(p)): _CODES.get(o, o) for i, p, o in data["transitions"]},
        errors={(int(i), int(p)): str(m) for i, p, m in data.get("errors", [])},
        expanded={i for i, s in enumerate(states) if s["expanded"]},
        stopped=str(data.get("stopped", "")),
        steps_tried=int(data.get("steps_tried", 0)),
    )
    return graph


def write_result(path: Path, data: dict[str, Any]) -> None:
    """Write atomically (a killed run leaves the previous checkpoint)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(data, separators=(",", ":")))
    partial.replace(path)


def graph_files(folder: Path) -> Iterator[Path]:
    """The state graph files below ``folder``, sorted: a search's ``NAME.json`` files, or an
    export's ``NAME.json.gz`` (``python -m leaderboard.optimum.export``)."""
    found = [*folder.rglob("*.json"), *folder.rglob("*.json.gz")]
    yield from sorted(path for path in found if path.name != INDEX)


def read_result(path: Path) -> dict[str, Any]:
    """A state graph file, plain or gzipped."""
    try:
        raw = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
        data = json.loads(raw)
    except (OSError, EOFError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"Expected a state graph JSON at {path}, got an unreadable file: {e}") from None
    if not isinstance(data, dict) or "states" not in data or "benchmark" not in data:
        raise ValueError(f"Expected a state graph JSON (benchmark, states, transitions) at {path}, got another file")
    return data
