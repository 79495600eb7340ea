"""Resumable world-model runs: the whole training state at the start of each Dyna iteration.

``train.py`` writes ``RUN/state.pt`` when an iteration starts (the real data so far, both
networks, their optimizers, every random generator and the step counts); ``--resume``
restores it and goes on from that iteration, so a stopped run (killed, ``--max-minutes``,
or a smaller ``--total-env-steps``) loses at most the iteration it was in. A resumed run
may change its budget (``--total-env-steps``, ``--max-minutes``, ``--checkpoints``), not
the experiment.

The agent's state is restored exactly; the env's is not. With ``--mask known`` (the default)
the env's ``action_mask`` comes from what the service's cache and the experience store know
(passes known to change nothing), and a resumed run starts a new service, so from the resume
on it collects other steps than an unstopped run would, as two runs of one seed do when the
store differs. With ``--mask episode`` the mask follows only the episode's own steps, and a
seed's run is the same every time, on any store.
"""
from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from leaderboard.agents.world_model.data import Transitions

__all__ = ["MAY_CHANGE", "STATE", "Progress", "load", "save"]

STATE = "state.pt"
#: Arguments a resumed run may change: its budget and where it is, not the experiment.
MAY_CHANGE = frozenset({"total_env_steps", "max_minutes", "checkpoints", "resume", "out"})
#: Arguments added since runs were first saved, with the value those runs had.
ADDED = {"mask": "known"}


@dataclass
class Progress:
    """Where a run is: real env steps spent, Dyna iterations done, imagined steps, seconds spent."""

    real_steps: int = 0
    iteration: int = 0
    imagined: int = 0
    seconds: float = 0.0


def save(
    run: Path, args: dict[str, Any], data: Transitions, nets: dict[str, Any], rng: np.random.Generator,
    gen: torch.Generator, progress: Progress,
) -> None:
    """Write the state atomically (a killed run leaves the previous state whole).
    ``nets`` maps names to objects with ``state_dict()`` (networks and optimizers)."""
    state = {
        "args": args,
        "data": dataclasses.asdict(data),
        "nets": {name: net.state_dict() for name, net in nets.items()},
        "random": {
            "python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state(),
            "rng": rng.bit_generator.state, "generator": gen.get_state(),
        },
        "progress": dataclasses.asdict(progress),
    }
    partial = run / (STATE + ".partial")
    torch.save(state, partial)
    partial.replace(run / STATE)


def load(
    run: Path, args: dict[str, Any], nets: dict[str, Any], rng: np.random.Generator, gen: torch.Generator
) -> tuple[Transitions, Progress] | None:
    """Restore ``run``'s state into ``nets``, the random generators (global ones included) and
    return the data and progress; ``None`` when the run has no state. Raises ``ValueError``
    when the run was trained with other arguments (beyond :data:`MAY_CHANGE`)."""
    path = run / STATE
    if not path.exists():
        return None
    saved = torch.load(path, map_location="cpu", weights_only=False)
    had = {**ADDED, **saved["args"]}
    differ = [
        f"--{k.replace('_', '-')}: the run has {had.get(k)!r}, got {v!r}"
        for k, v in args.items() if k not in MAY_CHANGE and had.get(k) != v
    ]
    if differ:
        raise ValueError(f"cannot resume {run}, it was trained with other arguments: " + "; ".join(differ))
    for name, net in nets.items():
        net.load_state_dict(saved["nets"][name])
    generators = saved["random"]
    random.setstate(generators["python"])
    np.random.set_state(generators["numpy"])
    torch.set_rng_state(generators["torch"])
    rng.bit_generator.state = generators["rng"]
    gen.set_state(generators["generator"])
    return Transitions(**saved["data"]), Progress(**saved["progress"])
