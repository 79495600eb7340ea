"""The optimum search (leaderboard/optimum): against brute force, resumed, written, scored.

Real XLA passes through an in-process engine and a real SQLite store of the
test's own; a restricted action set keeps it small (seconds).
"""
from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from leaderboard.optimum import FAILED, UNCHANGED, Budget, StateGraph, search
from leaderboard.optimum.files import (
    bound,
    graph_from_json,
    graph_to_json,
    read_result,
    result_path,
)
from leaderboard.optimum.gap import gap
from tests.leaderboard.conftest import RUNTIME_HLO
from xla_service.errors import XlaGymError
from xla_service.passes.analysis import Analysis
from xla_service.passes.engine import Engine
from xla_service.store import ExperienceStore

#: Passes with something to do on RUNTIME_HLO, and one (rng-expander) with nothing.
PASSES = ["cse", "algsimp", "dce", "transpose-folding", "tuple-simplifier", "reshape-mover", "rng-expander"]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    store = ExperienceStore(tmp_path_factory.mktemp("optimum") / "store.sqlite")
    engine = Engine(workers=2, backing=store, preempt_after=60.0)
    try:
        yield engine
    finally:
        engine.close()
        store.close()


@pytest.fixture(scope="module")
def initial(engine: Engine) -> Analysis:
    return engine.load(RUNTIME_HLO.decode())


def _computed(engine: Engine) -> int:
    """Steps the engine ran XLA for: misses of both its memory and the store."""
    stats = engine.cache.stats()
    return int(stats["misses"].get("step", 0) - stats["backing_hits"].get("step", 0))


def _brute_force(engine: Engine, initial: Analysis, length: int) -> tuple[int, set[str]]:
    """The fewest ops over every order of at most ``length`` passes of PASSES, and the states reached."""
    best, reached = initial.op_count, {initial.digest}
    for n in range(1, length + 1):
        for order in itertools.product(PASSES, repeat=n):
            state = initial
            try:
                for name in order:
                    state = engine.apply(state, name)
            except XlaGymError:
                continue
            best = min(best, state.op_count)
            reached.add(state.digest)
    return best, reached


def test_optimum_never_worse_than_brute_force(engine: Engine, initial: Analysis) -> None:
    graph = search(engine, initial, PASSES, workers=2)
    assert graph.stopped == "exhausted" and graph.exhausted and bound(graph) == "optimal"
    best = graph.best()
    brute, reached = _brute_force(engine, initial, 3)
    assert graph.op_counts[best] <= brute
    assert graph.op_counts[best] < initial.op_count  # the module has something to remove
    if max(graph.depth) <= 3:  # the reachable set closes within 3 steps: the same states, the same optimum
        assert reached == set(graph.digests)
        assert graph.op_counts[best] == brute
    # the order found reaches the optimum, and no shorter order of the action set does
    state = initial
    for name in graph.order(best):
        state = engine.apply(state, name)
    assert state.digest == graph.digests[best]
    assert all(_brute_force(engine, initial, n)[0] > graph.op_counts[best] for n in range(len(graph.order(best))))
    # every transition is recorded, each pass of each state once; rng-expander never changes anything
    assert len(graph.transitions) == len(graph.digests) * len(PASSES)
    rng = PASSES.index("rng-expander")
    assert all(graph.transitions[(i, rng)] in (UNCHANGED, FAILED) for i in range(len(graph.digests)))
    assert sum(found for found, _ in graph.growth()) == len(graph.digests)


def test_depth_bound_equals_brute_force_to_that_depth(engine: Engine, initial: Analysis) -> None:
    graph = search(engine, initial, PASSES, Budget(max_depth=2))
    assert graph.stopped in ("max_depth", "exhausted")
    brute, reached = _brute_force(engine, initial, 2)
    assert graph.op_counts[graph.best()] == brute
    assert reached == set(graph.digests)
    if not graph.exhausted:
        assert graph.complete_depth == 2 and bound(graph) == "optimal among orders of length <= 2"


def test_interrupted_search_resumes_without_recomputing(tmp_path: Path) -> None:
    def fresh(store_path: Path) -> tuple[Engine, ExperienceStore]:
        store = ExperienceStore(store_path)
        return Engine(workers=1, backing=store, preempt_after=60.0), store

    whole_engine, whole_store = fresh(tmp_path / "whole.sqlite")
    try:
        initial = whole_engine.load(RUNTIME_HLO.decode())
        whole = search(whole_engine, initial, PASSES)
        everything = _computed(whole_engine)
    finally:
        whole_engine.close()
        whole_store.close()
    assert everything == len(whole.transitions)  # each (state, pass) computed once

    engine, store = fresh(tmp_path / "parts.sqlite")
    try:
        initial = engine.load(RUNTIME_HLO.decode())
        part = search(engine, initial, PASSES, Budget(max_states=2))
        assert part.stopped == "max_states" and len(part.expanded) == 2 and not part.exhausted
        first = _computed(engine)
        saved = json.loads(json.dumps(graph_to_json(part, "benchmark://test/runtime")))
        engine.cache.clear()  # as a new process: only the saved graph and the store remain
        before = _computed(engine)
        graph = graph_from_json(saved)
        resumed = search(engine, initial, PASSES, graph=graph, state_of=lambda i: store.state(graph.digests[i]))
    finally:
        engine.close()
        store.close()
    assert _computed(engine) - before == everything - first  # nothing computed twice
    assert resumed.digests == whole.digests and resumed.transitions == whole.transitions
    assert resumed.best() == whole.best() and resumed.exhausted


def test_gap_from_a_results_csv(tmp_path: Path) -> None:
    graph = StateGraph(["cse"], digests=["a", "b"], op_counts=[10, 7], histograms=[{}, {}], depth=[0, 1],
                       parent=[None, (0, 0)], transitions={(0, 0): 1, (1, 0): UNCHANGED}, expanded={0, 1})
    out = tmp_path / "optimum"
    path = result_path(out, "benchmark://xla-x-v0/one")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(graph_to_json(graph, "benchmark://xla-x-v0/one")))
    csv = tmp_path / "results.csv"
    csv.write_text("benchmark,reward,walltime,commandline\n"
                   "benchmark://xla-x-v0/one,2.0,1.0,dce\n"
                   "benchmark://xla-x-v0/other,5.0,1.0,cse\n")
    from leaderboard.optimum.gap import optima

    known = optima(out)
    result = gap(csv, known)
    assert (result.n, result.exact, result.mean_ops_above, result.solved_optimally) == (1, 1, 1.0, 0.0)
    csv.write_text("benchmark,reward,walltime,commandline\nbenchmark://xla-x-v0/one,4.0,1.0,dce\n")
    with pytest.raises(ValueError, match="expected at least the exhausted search's optimum 7"):
        gap(csv, known)


def test_export_is_a_gzipped_dataset_the_readers_take(tmp_path: Path) -> None:
    """The export's bytes depend only on the graphs; gap and report read it as they read a search."""
    from leaderboard.optimum.export import export, main
    from leaderboard.optimum.gap import optima

    graph = StateGraph(["cse", "dce"], digests=["a", "b"], op_counts=[10, 7], histograms=[{"add": 3}, {}],
                       depth=[0, 1], parent=[None, (0, 1)], transitions={(0, 0): UNCHANGED, (0, 1): 1,
                       (1, 0): FAILED, (1, 1): UNCHANGED}, errors={(1, 0): "boom"}, expanded={0, 1})
    out = tmp_path / "runs"
    for name in ("one", "two"):
        result_path(out, f"benchmark://xla-x-v0/{name}").parent.mkdir(parents=True, exist_ok=True)
        result_path(out, f"benchmark://xla-x-v0/{name}").write_text(
            json.dumps(graph_to_json(graph, f"benchmark://xla-x-v0/{name}")))
    first, again = tmp_path / "first", tmp_path / "again"
    entries = export(out, first)
    export(out, again)
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert [str(f) for f in files] == ["index.json", "xla-x-v0/one.json.gz", "xla-x-v0/two.json.gz"]
    assert all((first / f).read_bytes() == (again / f).read_bytes() for f in files)
    assert [(e["states"], e["transitions"], e["optimum"], e["exhausted"]) for e in entries] == [(2, 4, 7, True)] * 2
    restored = graph_from_json(read_result(first / "xla-x-v0/one.json.gz"))
    assert restored.transitions == graph.transitions and restored.errors == graph.errors
    assert optima(first) == optima(out)  # the index beside the graphs is not taken for one
    with pytest.raises(SystemExit, match="other than the search's folder"):
        main([str(out), "--out", str(out)])


def test_cli_flags_say_their_defaults_and_select_benchmarks() -> None:
    from leaderboard.optimum.__main__ import main, parser, select
    from leaderboard.report.summary import op_counts

    for action in parser()._actions:
        if action.option_strings and action.dest != "help":
            assert "default" in (action.help or ""), action.option_strings
    smallest = select(parser().parse_args(["--split", "test", "--smallest", "3"]))
    counts = op_counts()
    assert len(smallest) == 3
    assert max(counts[u][0] for u in smallest) <= min(counts[u][0] for u in select(parser().parse_args([]))
                                                      if u not in smallest)
    assert select(parser().parse_args(["--benchmark", "benchmark://x/y"])) == ["benchmark://x/y"]
    with pytest.raises(SystemExit, match="unknown \\['no-such-pass'\\]"):
        main(["--benchmark", "benchmark://x/y", "--passes", "cse,no-such-pass"])


def test_result_files_resume_and_refuse_to_overwrite(
    engine: Engine, initial: Analysis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from leaderboard.optimum import run

    monkeypatch.setattr(run, "benchmark_text", lambda uri, engine: RUNTIME_HLO.decode())
    uri = "benchmark://xla-test-v0/runtime"
    first = run.optimum_of(engine, uri, tmp_path, Budget(max_states=1), PASSES, resume=False, workers=2)
    assert first["stopped"] == "max_states" and not first["exhausted"] and first["states_expanded"] == 1
    assert first["optimum"]["bound"] == "optimal among orders of length <= 1"
    with pytest.raises(FileExistsError, match="pass --resume"):
        run.optimum_of(engine, uri, tmp_path, Budget(), PASSES, resume=False)
    done = run.optimum_of(engine, uri, tmp_path, Budget(), PASSES, resume=True, workers=2)
    whole = search(engine, initial, PASSES)
    assert done["exhausted"] and done["optimum"]["op_count"] == whole.op_counts[whole.best()]
    assert done["steps_tried"] == len(whole.transitions)  # the first run's steps were not tried again
    on_disk = json.loads(result_path(tmp_path, uri).read_text())
    assert on_disk["transitions"] == done["transitions"] and len(on_disk["states"]) == len(whole.digests)
    again = run.optimum_of(engine, uri, tmp_path, Budget(), PASSES, resume=True)
    assert again["steps_tried"] == done["steps_tried"] and again["transitions"] == done["transitions"]
