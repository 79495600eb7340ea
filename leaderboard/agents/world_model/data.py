"""Transitions ``(s, pass) -> s'`` for the world model: from the env, or a store export.

A state's features are ``log1p`` of its 133 counted opcodes (``OpcodeCounts``)
followed by ``log1p`` of its ``OpCount`` (which is *not* a function of the
opcode counts: calls are inlined and parameters and constants left out), so
one vector says both what the module holds and what the reward measures.

Two sources, one format (:class:`Transitions`, the arrays of
``xla_service/store/export.py`` that the model needs, plus an episode id):

- :func:`collect` steps the Gymnasium env (``xla_service.gym``) with any
  action chooser and records every step, in episodes (held-out splits and the
  multi-step drift need whole trajectories);
- :func:`from_export` reads ``python -m xla_service.store export OUT.npz``
  (every step the persistent experience store holds; episode ids are -1).
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from xla_service.catalog.opcodes import OPCODES
from xla_service.catalog.passes import PASS_NAMES

__all__ = [
    "N_ACTIONS", "N_FEATURES", "Transitions", "collect", "features", "from_export", "op_counts",
    "observation_features",
]

N_ACTIONS = len(PASS_NAMES)
N_FEATURES = len(OPCODES) + 1

#: ``Chooser(features, action_mask, rng) -> action``.
Chooser = Callable[[np.ndarray, np.ndarray, np.random.Generator], int]


def features(counts: Any, op_count: Any) -> np.ndarray:
    """[..., 134] float32: log1p of the opcode counts, then of the op count."""
    counts = np.asarray(counts, dtype=np.float64)
    ops = np.asarray(op_count, dtype=np.float64).reshape(counts.shape[:-1] + (1,))
    return np.log1p(np.concatenate([counts, ops], axis=-1)).astype(np.float32)


def op_counts(x: np.ndarray) -> np.ndarray:
    """The op counts that feature rows ``x`` stand for (inverse of :func:`features`)."""
    return np.expm1(np.asarray(x, dtype=np.float64)[..., -1])


def observation_features(observation: Any) -> np.ndarray:
    """The features of a ``{"OpcodeCounts", "OpCount"}`` Gymnasium observation."""
    return features(observation["OpcodeCounts"], np.asarray(observation["OpCount"]).reshape(-1)[0])


@dataclass
class Transitions:
    state: np.ndarray  # float32 [T, 134] features of s
    action: np.ndarray  # int64 [T]
    next_state: np.ndarray  # float32 [T, 134] features of s'
    reward: np.ndarray  # float64 [T]: op count of s minus op count of s'
    changed: np.ndarray  # bool [T]
    episode: np.ndarray  # int64 [T]: episode id (-1: unknown, e.g. from an export)

    def __len__(self) -> int:
        return len(self.action)

    def subset(self, index: Any) -> Transitions:
        return Transitions(**{f.name: getattr(self, f.name)[index] for f in fields(self)})

    @staticmethod
    def concat(parts: list[Transitions]) -> Transitions:
        if not parts:
            return Transitions.empty()
        return Transitions(**{f.name: np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(Transitions)})

    @staticmethod
    def empty() -> Transitions:
        return Transitions(
            np.zeros((0, N_FEATURES), np.float32), np.zeros(0, np.int64), np.zeros((0, N_FEATURES), np.float32),
            np.zeros(0), np.zeros(0, bool), np.zeros(0, np.int64),
        )

    def save(self, path: Path) -> None:
        np.savez_compressed(path, **{f.name: getattr(self, f.name) for f in fields(self)})

    @staticmethod
    def load(path: Path) -> Transitions:
        with np.load(path) as data:
            if "op_count" in data:  # a store export
                return from_export(path)
            return Transitions(**{f.name: data[f.name] for f in fields(Transitions)})

    def split(self, heldout_fraction: float, seed: int) -> tuple[Transitions, Transitions]:
        """(train, held out). An episode is held out by a draw seeded by (seed, its id),
        so it stays on its side as episodes are added; at least one is held out
        when there are two or more, and never all. Rows of unknown episodes are drawn one by one."""
        if not 0.0 <= heldout_fraction < 1.0:
            raise ValueError(f"Expected a held-out fraction in [0, 1), got {heldout_fraction}")
        episodes = np.unique(self.episode[self.episode >= 0])
        chosen = [e for e in episodes if np.random.default_rng([seed, int(e)]).random() < heldout_fraction]
        if not chosen and len(episodes) >= 2 and heldout_fraction > 0:
            chosen = [episodes[0]]
        if len(episodes) and len(chosen) == len(episodes):  # the controller needs a start state
            chosen = chosen[:-1]
        held = np.isin(self.episode, chosen) & (self.episode >= 0)
        unknown = self.episode < 0
        held |= unknown & (np.random.default_rng(seed).random(len(self)) < heldout_fraction)
        return self.subset(~held), self.subset(held)

    def episodes(self) -> list[Transitions]:
        """The known episodes, each in step order (rows are stored in step order)."""
        return [self.subset(self.episode == e) for e in np.unique(self.episode[self.episode >= 0])]

    def starts(self) -> np.ndarray:
        """The first state of every known episode (the controller's imagined starts)."""
        return np.stack([e.state[0] for e in self.episodes()]) if (self.episode >= 0).any() else self.state[:0]


def from_export(path: str | Path) -> Transitions:
    """The steps of a store export (``python -m xla_service.store export``); failed
    passes are steps without effect, as in the env."""
    with np.load(path) as data:
        names = [str(n) for n in data["pass_names"]]
        if names != list(PASS_NAMES) or [str(o) for o in data["opcodes"]] != list(OPCODES):
            raise ValueError(f"{path}: exported under another pass catalog or opcode list")
        return Transitions(
            state=features(data["state"], data["op_count"]),
            action=data["action"].astype(np.int64),
            next_state=features(data["next_state"], data["next_op_count"]),
            reward=data["reward"].astype(np.float64),
            changed=data["changed"].astype(bool),
            episode=np.full(len(data["action"]), -1, np.int64),
        )


def random_chooser(x: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> int:
    """A pass drawn uniformly among those the env's ``action_mask`` says are worth trying."""
    allowed = np.flatnonzero(mask[:N_ACTIONS])
    return int(rng.choice(allowed)) if len(allowed) else int(rng.integers(N_ACTIONS))


def collect(
    env: Any, steps: int, choose: Chooser, rng: np.random.Generator, first_episode: int = 0, progress: str = ""
) -> Transitions:
    """``steps`` real steps of ``env`` (observation ``["OpcodeCounts", "OpCount"]``,
    reward ``OpCount`` unscaled), from a fresh episode; episodes are numbered
    from ``first_episode``. With ``progress``, a progress bar of that name on
    stderr (refreshed every 30 s when stderr is not a terminal, so logs stay readable)."""
    rows: dict[str, list[Any]] = {f.name: [] for f in fields(Transitions)}
    observation, info = env.reset(seed=int(rng.integers(2**31)))
    x, episode = observation_features(observation), first_episode
    bar = tqdm(range(steps), desc=progress, unit="step", leave=False, disable=not progress,
               mininterval=1.0 if sys.stderr.isatty() else 30.0)
    for _ in bar:
        action = choose(x, np.asarray(info["action_mask"]), rng)
        observation, reward, terminated, truncated, info = env.step(action)
        after = observation_features(observation)
        for name, value in zip(rows, (x, action, after, float(reward), bool(info["changed"]), episode)):
            rows[name].append(value)
        x = after
        if terminated or truncated:
            observation, info = env.reset()
            x, episode = observation_features(observation), episode + 1
    return Transitions(
        state=np.asarray(rows["state"], np.float32).reshape(-1, N_FEATURES),
        action=np.asarray(rows["action"], np.int64),
        next_state=np.asarray(rows["next_state"], np.float32).reshape(-1, N_FEATURES),
        reward=np.asarray(rows["reward"], np.float64),
        changed=np.asarray(rows["changed"], bool),
        episode=np.asarray(rows["episode"], np.int64),
    )
