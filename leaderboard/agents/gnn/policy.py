"""A trained graph agent as a leaderboard policy.

``XLA_GYM_STORE=off XLA_GYM_GNN_RUN=leaderboard/agents/gnn/runs/gnn-gpt2-seed0 python -m leaderboard.eval
--policy "leaderboard.agents.gnn.policy:from_env()"`` evaluates the run saved
by ``leaderboard.agents.gnn.train`` (its ``model.pt``, or the checkpoint that
``$XLA_GYM_GNN_CHECKPOINT`` names, e.g. ``checkpoints/gnn_2000.pt``);
``--policy "leaderboard.agents.gnn.policy:GnnPolicy(run='RUN', checkpoint='...')"``
says the same without variables.

It sees what training saw, through the stock CompilerGym env's observation
spaces: ``HloGraphArrays`` (``xla_service.env.graph.unpack``, then
``model.to_data`` with the run's ``--max-nodes``) and, for a run trained with
``--mask known`` (the default), ``PassOutcomes`` (passes known to change nothing
or fail are masked, as the Gymnasium env's ``action_mask``; a run trained with
``--mask episode`` masks only what its own episode saw, as in training).
``PassOutcomes`` is what the service's cache and experience store know of the
current module, so a ``known`` run's choices depend on what the store holds,
e.g. passes other agents' searches found futile on the same test module; with
``XLA_GYM_STORE=off`` it knows only what its own evaluation saw, like the MLP
agents, which never read it (``reproduce.sh gnn_store_off``). As
``leaderboard.agents.rl.policy``: it takes its most likely allowed action
for the run's ``episode_length`` steps (``episode_length=N``: N steps, e.g. 20
for a run trained in shorter episodes), never retaking from the same state an
action that changed nothing or that XLA failed on, and stops early when the
stop action is its choice (``allow_stop=False`` masks it, as the MLP agents,
which have none); the best state on the trajectory (fewest ops) is
kept by resetting and replaying the best prefix (cached in the service, so
cheap). The network runs once a graph: after a step that changed nothing it
reuses the logits of the graph it last saw (the same choices, fewer forward
passes); it runs on ``threads`` torch threads (1 by default, as training),
and gives the caller's back when it is done.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from compiler_gym.envs import CompilerEnv

from leaderboard.agents.common import act_keep_best, acting_steps
from leaderboard.agents.gnn.model import GnnActorCritic, GnnConfig, batch, masked_logits, to_data
from xla_service.catalog.passes import PASS_NAMES
from xla_service.env.graph import GraphArrays, unpack

__all__ = ["GnnPolicy", "STOP", "action_mask", "from_env"]

#: The stop action's index (after the 64 passes).
STOP = len(PASS_NAMES)


def action_mask(outcomes: Any) -> np.ndarray:
    """1 for each allowed action, from ``PassOutcomes`` (2: changes nothing, 3: fails); stop is allowed."""
    known = np.asarray(outcomes, dtype=np.int64).reshape(-1)
    return np.concatenate([(known != 2) & (known != 3), [True]]).astype(np.int8)


def _digest(graph: GraphArrays) -> bytes:
    """A digest of the graph's arrays (dtype, shape and bytes): equal graphs, equal digests."""
    digest = hashlib.blake2b(digest_size=16)
    for array in (graph.node_features, graph.edge_index, graph.edge_type, graph.edge_position):
        digest.update(str((array.dtype, array.shape)).encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.digest()


@dataclass
class GnnPolicy:
    run: str | Path
    #: A checkpoint of the run to act with (default: its final ``model.pt``).
    checkpoint: str | Path | None = None
    #: Steps per benchmark (0: the run's ``episode_length``).
    episode_length: int = 0
    #: False masks the stop action: it acts every step (keep-best acting, so more steps never
    #: raise the op count), stopping only when no pass is left to try.
    allow_stop: bool = True
    #: torch threads while acting (1, as training's ``--threads``; 0 leaves torch's default, the
    #: machine's cores), the caller's restored after: beside other jobs, more threads than free
    #: cores slow the network several times over, and the logits do not depend on it
    #: (``benchmarks/measure_gnn.py``). One policy acts in one thread of Python at a time.
    threads: int = 1
    #: False runs the network on every choice, even on a graph it has just seen (the same choices,
    #: slower: ``benchmarks/measure_gnn.py`` times both).
    reuse_logits: bool = True
    #: The last graph's digest (``b""`` when logits are not reused) and the network's logits
    #: for it: a step that changed nothing leaves the graph as it was, and the network is a
    #: function of the graph, so it runs once a graph (most acting steps change nothing:
    #: ``benchmarks/measure_gnn.py`` counts them).
    _last: tuple[bytes, np.ndarray] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.run = Path(self.run)
        self.args = json.loads((self.run / "args.json").read_text())["args"]
        self.steps = acting_steps(self.episode_length, int(self.args["episode_length"]))
        for flag in ("allow_stop", "reuse_logits"):
            if not isinstance(getattr(self, flag), bool):
                raise ValueError(f"expected {flag} a bool, got {getattr(self, flag)!r}")
        if not isinstance(self.threads, int) or isinstance(self.threads, bool) or self.threads < 0:
            raise ValueError(f"expected threads an int >= 0 (0: torch's default), got {self.threads!r}")
        weights = Path(self.checkpoint) if self.checkpoint else self.run / "model.pt"
        if not weights.is_absolute() and not weights.exists():
            weights = self.run / weights
        if not weights.is_file():
            raise ValueError(f"No model at {weights}: expected model.pt or a checkpoint of {self.run}")
        state = torch.load(weights, map_location="cpu", weights_only=False)
        self.model = GnnActorCritic(GnnConfig(**state["config"]))
        self.model.load_state_dict(state["model"])
        self.model.eval()

    def logits(self, graph: GraphArrays) -> np.ndarray:
        """The network's action logits for ``graph`` (kept for the last graph seen)."""
        key = _digest(graph) if self.reuse_logits else b""
        if not self.reuse_logits or self._last is None or self._last[0] != key:
            with torch.no_grad():
                logits, _ = self.model(batch([to_data(graph, int(self.args.get("max_nodes", 0)))]))
            self._last = (key, logits[0].numpy())
        return self._last[1].copy()  # the kept logits stay as the network gave them

    def preferences(self, graph: GraphArrays, mask: np.ndarray) -> list[int]:
        """The allowed actions, most preferred first."""
        scores = masked_logits(torch.as_tensor(self.logits(graph)), torch.as_tensor(mask)).numpy()
        return [int(a) for a in np.argsort(-scores, kind="stable") if mask[a]]

    def __call__(self, env: CompilerEnv) -> None:
        known = self.args.get("mask", "known") == "known"
        self._last = None
        threads = torch.get_num_threads()

        def choose(futile: set[int]) -> int | None:
            mask = action_mask(env.observation["PassOutcomes"] if known else np.zeros(STOP))
            mask[list(futile)] = 0
            if not self.allow_stop:
                mask[STOP] = 0
            if not mask.any():  # every pass changes nothing or fails from here
                return None
            action = self.preferences(unpack(env.observation["HloGraphArrays"]), mask)[0]
            return None if action == STOP else action

        torch.set_num_threads(self.threads or threads)
        try:
            act_keep_best(env, choose, self.steps)
        finally:  # the caller's threads again
            torch.set_num_threads(threads)


def from_env() -> GnnPolicy:
    """The policy of the run folder named by ``$XLA_GYM_GNN_RUN``."""
    run = os.environ.get("XLA_GYM_GNN_RUN")
    if not run:
        raise ValueError("Set XLA_GYM_GNN_RUN to a run folder made by leaderboard.agents.gnn.train")
    return GnnPolicy(Path(run), os.environ.get("XLA_GYM_GNN_CHECKPOINT") or None)
