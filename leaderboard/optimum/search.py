"""Breadth-first search over a benchmark's distinct states, for the optimum op count.

A state is a normalized module, identified by its digest (as the engine's
cache and the experience store key it). From the initial state every pass of
the action set is tried on every state, breadth first, through the engine
(``xla_service.passes.engine``), so every step lands in the experience store
behind its cache; a transposition table (digest -> state) expands each
distinct state once, whichever order reached it, so passes that commute or
undo each other cost one lookup, not a subtree. A pass that leaves a state
unchanged or fails is recorded and not followed. Every transition is kept:
``(state, pass) -> next state | unchanged | failed``.

The search stops when no state is left to expand (the reachable set is
*exhausted*: the best state found is the optimum over every order of any
length), or at a budget: ``max_depth`` (states at that depth are found but
not expanded), ``max_states`` expanded states, or ``time_budget`` seconds.
Breadth first, so when every state of depth < D was expanded, the best state
found is optimal among the orders of length <= D (:attr:`StateGraph.complete_depth`).
An interrupted graph resumes where it stopped: the states expanded and the
transitions tried are not tried again.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

from xla_service.errors import XlaGymError
from xla_service.passes.analysis import Analysis

__all__ = ["Budget", "StateGraph", "Stepper", "UNCHANGED", "FAILED", "search"]

#: Transition outcomes other than a next state's index.
UNCHANGED = -1
FAILED = -2


class Stepper(Protocol):
    """What the search needs of the engine: ``Engine.apply`` (the same object when unchanged)."""

    def apply(self, state: Analysis, name: str) -> Analysis: ...


@dataclass(frozen=True)
class Budget:
    """Where a search stops short of exhaustion (None: no bound)."""

    max_depth: int | None = None
    max_states: int | None = None
    time_budget: float | None = None

    def __post_init__(self) -> None:
        for name in ("max_depth", "max_states", "time_budget"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name}: expected a number >= 0 or None, got {value!r}")


@dataclass
class StateGraph:
    """The states and transitions found so far from one initial state.

    ``states[i]`` is ``(digest, op_count, opcode histogram)``; state 0 is the
    initial one; ``depth[i]`` its distance from it (breadth first: the length
    of a shortest order reaching it), ``parent[i]`` ``(state, pass)`` of that
    order's last step. ``transitions`` maps ``(state, pass index)`` to the next
    state's index, :data:`UNCHANGED` or :data:`FAILED` (``errors`` holds XLA's
    message). ``expanded`` holds the states every pass was tried on.
    """

    passes: list[str]
    digests: list[str] = field(default_factory=list)
    op_counts: list[int] = field(default_factory=list)
    histograms: list[dict[str, int]] = field(default_factory=list)
    depth: list[int] = field(default_factory=list)
    parent: list[tuple[int, int] | None] = field(default_factory=list)
    transitions: dict[tuple[int, int], int] = field(default_factory=dict)
    errors: dict[tuple[int, int], str] = field(default_factory=dict)
    expanded: set[int] = field(default_factory=set)
    #: Why the last search stopped: "exhausted", "max_depth", "max_states" or "time_budget".
    stopped: str = ""
    #: Steps the engine computed and looked up (its cache or the store), over every run.
    steps_tried: int = 0

    def __post_init__(self) -> None:
        if len(set(self.passes)) != len(self.passes) or not self.passes:
            raise ValueError(f"Expected a non-empty list of distinct passes, got {self.passes!r}")
        self._index = {d: i for i, d in enumerate(self.digests)}
        self._cursor = 0
        if any(a > b for a, b in zip(self.depth, self.depth[1:])):
            raise ValueError(f"Expected states in breadth-first order (depths never decreasing), got depths {self.depth}")

    def add(self, state: Analysis, depth: int, parent: tuple[int, int] | None) -> int:
        """The index of ``state``, added if new."""
        known = self._index.get(state.digest)
        if known is not None:
            return known
        self._index[state.digest] = len(self.digests)
        self.digests.append(state.digest)
        self.op_counts.append(state.op_count)
        self.histograms.append(state.histogram())
        self.depth.append(depth)
        self.parent.append(parent)
        return len(self.digests) - 1

    def index(self, digest: str) -> int | None:
        return self._index.get(digest)

    def order(self, i: int) -> list[str]:
        """A shortest pass order from the initial state to state ``i``."""
        names: list[str] = []
        while (step := self.parent[i]) is not None:
            i, p = step
            names.append(self.passes[p])
        return names[::-1]

    def frontier(self) -> list[int]:
        """The states not expanded yet, breadth first (found in order of depth: index order)."""
        return [i for i in range(self.next_state() or 0, len(self.digests)) if i not in self.expanded]

    def next_state(self) -> int | None:
        """The first state not expanded yet (breadth first), or None: states are found in
        order of depth and expanded in index order, so the states before it never change."""
        cursor = getattr(self, "_cursor", 0)
        while cursor < len(self.digests) and cursor in self.expanded:
            cursor += 1
        self._cursor = cursor
        return cursor if cursor < len(self.digests) else None

    @property
    def exhausted(self) -> bool:
        """Every reachable state was expanded: the best state is the optimum."""
        return bool(self.digests) and len(self.expanded) == len(self.digests)

    @property
    def complete_depth(self) -> int | None:
        """D such that the best state is optimal among the orders of length <= D
        (every state of depth < D expanded); None when exhausted (no bound)."""
        waiting = self.next_state()
        return None if waiting is None else self.depth[waiting]

    def best(self) -> int:
        """The state with the fewest ops, the shallowest of them, then the first found."""
        return min(range(len(self.digests)), key=lambda i: (self.op_counts[i], self.depth[i], i))

    def growth(self) -> list[tuple[int, int]]:
        """Per depth: (states found, states expanded)."""
        deepest = max(self.depth, default=-1)
        found = [0] * (deepest + 1)
        done = [0] * (deepest + 1)
        for i, d in enumerate(self.depth):
            found[d] += 1
            done[d] += i in self.expanded
        return list(zip(found, done))


def search(
    engine: Stepper,
    initial: Analysis,
    passes: Sequence[str],
    budget: Budget = Budget(),
    graph: StateGraph | None = None,
    state_of: Callable[[int], Analysis | None] | None = None,
    workers: int = 1,
    progress: Callable[[StateGraph], None] | None = None,
) -> StateGraph:
    """Expand ``graph`` (a new one from ``initial`` if None) breadth first, within ``budget``.

    ``state_of(i)`` may hand back a known state's module (e.g. from the
    experience store) when resuming; otherwise a frontier state is rebuilt by
    replaying its order (engine lookups). ``workers`` passes of a state run at
    once (the engine's worker processes). ``progress`` is called after each
    expanded state (e.g. to save a checkpoint).
    """
    if graph is None:
        graph = StateGraph(list(passes))
    elif list(passes) != graph.passes:
        raise ValueError(f"Expected the graph's passes {graph.passes}, got {list(passes)}")
    if not graph.digests:
        graph.add(initial, 0, None)
    elif graph.digests[0] != initial.digest:
        raise ValueError(f"Expected the initial state {graph.digests[0][:12]}, got {initial.digest[:12]}")
    modules: dict[int, Analysis] = {0: initial}
    started = time.monotonic()
    expanded_now = 0
    graph.stopped = ""
    with ThreadPoolExecutor(max(1, workers)) as pool:
        while True:
            found = graph.next_state()
            if found is None:
                graph.stopped = "exhausted"
                break
            i = found
            if budget.max_depth is not None and graph.depth[i] >= budget.max_depth:
                graph.stopped = "max_depth"
                break
            if budget.max_states is not None and len(graph.expanded) >= budget.max_states:
                graph.stopped = "max_states"
                break
            if budget.time_budget is not None and time.monotonic() - started >= budget.time_budget:
                graph.stopped = "time_budget"
                break
            _expand(engine, graph, i, _module(engine, graph, i, modules, state_of), modules, pool,
                    hold=state_of is None)
            expanded_now += 1
            if progress is not None:
                progress(graph)
    return graph


def _module(
    engine: Stepper, graph: StateGraph, i: int, modules: dict[int, Analysis],
    state_of: Callable[[int], Analysis | None] | None,
) -> Analysis:
    """State ``i``'s module: held, or handed back by ``state_of``, or replayed from its parent."""
    if i in modules:
        return modules[i]
    found = state_of(i) if state_of is not None else None
    if found is None:
        step = graph.parent[i]
        if step is None:
            raise ValueError("the initial state's module must be given")
        found = engine.apply(_module(engine, graph, step[0], modules, state_of), graph.passes[step[1]])
    if found.digest != graph.digests[i]:
        raise ValueError(f"Expected state {graph.digests[i][:12]} on replay, got {found.digest[:12]}: "
                         "the engine's results differ from the graph's (another jaxlib or engine semantics?)")
    modules[i] = found
    return found


def _expand(
    engine: Stepper, graph: StateGraph, i: int, module: Analysis, modules: dict[int, Analysis],
    pool: ThreadPoolExecutor, hold: bool,
) -> None:
    """Try every pass not yet tried on state ``i``; children are numbered in pass order.
    ``hold``: keep the children's modules in memory (else ``state_of`` hands them back)."""
    todo = [p for p in range(len(graph.passes)) if (i, p) not in graph.transitions]

    def step(p: int) -> Analysis | str:
        try:
            return engine.apply(module, graph.passes[p])
        except XlaGymError as e:  # a transient failure (a timeout) is marked so
            return f"{'transient ' if e.transient else ''}{type(e).__name__}: {e}"

    for p, result in zip(todo, pool.map(step, todo)):
        graph.steps_tried += 1
        if isinstance(result, str):
            graph.transitions[(i, p)] = FAILED
            graph.errors[(i, p)] = result
        elif result.digest == module.digest:
            graph.transitions[(i, p)] = UNCHANGED
        else:
            child = graph.add(result, graph.depth[i] + 1, (i, p))
            if hold:
                modules.setdefault(child, result)
            graph.transitions[(i, p)] = child
    graph.expanded.add(i)
    if i != 0:
        modules.pop(i, None)  # expanded: its module is needed again only to replay a child
