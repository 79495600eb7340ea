"""Beam search over pass sequences, with lookahead through plateaus.

Keeps the ``width`` best states (by op count, then sequence length) at each
depth, each held as a fork of the env; every pass is tried from every beam
state. Unlike greedy, a pass that does not lower the op count at once (an
enabling pass such as ``dot_decomposer``) can stay in the beam. The best
state seen at any depth is then replayed on the env. States with identical
opcode counts count as one (a cheap stand-in for comparing modules).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Tuple

from compiler_gym.envs import CompilerEnv

from leaderboard.agents.common import op_count

__all__ = ["Beam", "policy"]

Candidate = Tuple[int, List[int], CompilerEnv]


@dataclass
class Beam:
    width: int = 4
    depth: int = 12

    def __call__(self, env: CompilerEnv) -> None:
        best: Tuple[int, List[int]] = (op_count(env), [])
        beam: List[Candidate] = [(best[0], [], env.fork())]
        try:
            for _ in range(self.depth):
                children: List[Candidate] = []
                seen = set()
                for _, actions, parent in beam:
                    for action in range(env.action_space.n):
                        child = parent.fork()
                        try:
                            _, _, _, info = child.step(action)
                        except ValueError:  # XLA failed on this pass
                            child.close()
                            continue
                        counts = tuple(child.observation["OpcodeCounts"])
                        if info["action_had_no_effect"] or counts in seen:
                            child.close()
                            continue
                        seen.add(counts)
                        children.append((op_count(child), actions + [action], child))
                children.sort(key=lambda c: (c[0], len(c[1])))
                for _, _, dropped in children[self.width :]:
                    dropped.close()
                for _, _, old in beam:
                    old.close()
                beam = children[: self.width]
                if not beam:
                    break
                best = min(best, (beam[0][0], beam[0][1]), key=lambda c: (c[0], len(c[1])))
        finally:
            for _, _, old in beam:
                old.close()
        if best[1]:
            env.multistep(best[1])


policy = Beam()
