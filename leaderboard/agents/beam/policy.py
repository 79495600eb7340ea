"""Beam search over pass sequences, with lookahead through plateaus.

Keeps the ``width`` best states (by the objective behind the env's reward
space, ``objective.py``: the op count on the op count track; then sequence length) at each
depth, each held as a fork of the env; every candidate pass is tried from
every beam state. Unlike greedy, a pass that does not lower the op count at
once (an enabling pass such as ``dot_decomposer``) can stay in the beam. The
best state seen at any depth is then replayed on the env. States are told
apart by their opcode counts (a cheap stand-in for comparing modules): a
state seen before, at any depth, is not expanded again, so passes that undo
each other cannot make the beam go round in circles.

``diverse=True`` fills the beam with the best state for each last pass
first, then the best of the rest: a canonicalizing pass such as ``algsimp``
often raises the op count by a few ops and lets the next ``cse`` remove
hundreds, so ranking by op count alone drops it (measured on a BERT training
step: width 5 with ``diverse`` reaches 3,396 ops; width 3, with or without
it, 3,483, greedy's result).

The search stops after ``depth`` levels, when no new state turns up, or
after ``patience`` levels without a new best state.

``lazy=True`` tries from each beam state only the passes that have changed
some state so far (most of the 64 passes change nothing on a given module,
yet each try costs a compile): the first level tries every pass. When the
beam stalls, every pass is tried from the best state; the passes that
changed it join the candidates and the beam restarts from that sweep's
children. The search ends when such a sweep turns up no new pass.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from compiler_gym.envs import CompilerEnv

from leaderboard.agents.objective import Objective, env_objective

__all__ = ["Beam", "policy"]

#: (objective, actions from the start, a fork of the env in that state)
Candidate = tuple[float, list[int], CompilerEnv]


def _key(candidate: Candidate) -> tuple[float, int]:
    return candidate[0], len(candidate[1])


def _close(candidates: Iterable[Candidate]) -> None:
    for _, _, fork in candidates:
        fork.close()


@dataclass
class Beam:
    width: int = 4
    depth: int = 12
    lazy: bool = False
    patience: int | None = None
    diverse: bool = False

    def __call__(self, env: CompilerEnv) -> None:
        objective = env_objective(env)
        every = list(range(env.action_space.n))
        seen: set[tuple[int, ...]] = {tuple(env.observation["OpcodeCounts"])}
        changing: set[int] = set()  # the passes that have changed some state
        best: tuple[float, list[int]] = (objective.value(env), [])
        beam: list[Candidate] = [(best[0], [], env.fork())]
        candidates = every
        stale = 0
        try:
            for _ in range(self.depth):
                children = self._expand(beam, candidates, seen, changing, objective)
                _close(beam)
                beam, stale = self._keep(children), stale + 1
                if beam and _key(beam[0]) < (best[0], len(best[1])):
                    best, stale = (beam[0][0], beam[0][1]), 0
                stalled = not beam or (self.patience is not None and stale >= self.patience)
                if self.lazy and (stalled or candidates is every):
                    if stalled:  # sweep every pass from the best state
                        known = set(changing)
                        _close(beam)
                        root = env.fork()
                        if best[1]:
                            root.multistep(best[1])
                        children = self._expand([(best[0], best[1], root)], every, seen, changing, objective)
                        root.close()
                        beam, stale = self._keep(children), 0
                        if changing <= known:  # nothing new: a local optimum
                            break
                        if beam and _key(beam[0]) < (best[0], len(best[1])):
                            best = (beam[0][0], beam[0][1])
                    candidates = sorted(changing)
                elif stalled:
                    break
        finally:
            _close(beam)
        if best[1]:
            env.multistep(best[1])

    def _keep(self, children: list[Candidate]) -> list[Candidate]:
        """The ``width`` best children (``diverse``: the best per last pass
        first); the others' forks are closed."""
        children.sort(key=_key)
        if self.diverse:
            firsts: dict[int, Candidate] = {}  # last pass -> its best child
            for child in children:
                firsts.setdefault(child[1][-1], child)
            chosen = {id(c) for c in firsts.values()}
            children = sorted(firsts.values(), key=_key) + [c for c in children if id(c) not in chosen]
        _close(children[self.width :])
        return children[: self.width]

    @staticmethod
    def _expand(
        beam: list[Candidate], actions: list[int], seen: set[tuple[int, ...]], changing: set[int],
        objective: Objective,
    ) -> list[Candidate]:
        """Every new state one of ``actions`` leads to from a beam state."""
        children: list[Candidate] = []
        for _, path, parent in beam:
            for action in actions:
                child = parent.fork()
                try:
                    _, _, _, info = child.step(action)
                except ValueError:  # XLA failed on this pass
                    child.close()
                    continue
                if not info["action_had_no_effect"]:
                    changing.add(action)
                counts = tuple(child.observation["OpcodeCounts"])
                if info["action_had_no_effect"] or counts in seen:
                    child.close()
                    continue
                seen.add(counts)
                children.append((objective.value(child), path + [action], child))
        return children


policy = Beam()
