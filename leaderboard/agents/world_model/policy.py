"""The controller of a world-model run as a leaderboard policy.

``XLA_GYM_STORE=off python -m leaderboard.eval --policy
"leaderboard.agents.world_model.policy:WorldModelPolicy(run='RUN')"``
(or ``XLA_GYM_WM_RUN=RUN ... --policy "...policy:from_env()"``) acts with the
run's ``model.pt`` in the real env it is handed: at each step the actor's
most preferred pass among those the world model predicts change the module
(P(changed) >= the run's threshold; all passes if it predicts none does), and
never a pass that just left the real module unchanged (or that XLA failed
on) from the same state. After ``episode_length`` steps (default: the run's)
the best state on the trajectory (fewest ops) is kept: the env is reset and
the best prefix of changing passes replayed, so the result replays exactly.

With ``plan="lookahead"`` the model also plans (one-step model-predictive
control): each pass is scored by its predicted return, P(changed) x the
predicted reduction + gamma x the critic's value of the predicted next state
(ensemble means), and the passes are tried best score first, those predicted
to change the module before the rest, as with the actor. ``plan="score"``
tries them by that score alone: P(changed) weighs the predicted reduction
instead of splitting the passes in two, so a pass the classifier doubts but
whose predicted return is high comes before one it trusts to change the
module for the worse.

``plan="tiered"`` fits the way the policy acts: it keeps the best state on
the trajectory, so a pass that makes the module worse costs one step and can
be undone, while a pass that changes nothing is a step wasted for sure. It
tries first the passes whose score beats changing nothing (gamma x the
critic's value of the state itself), then the rest of those predicted to
change the module, then the others, each group best score first. A model
wrong about the sign of a change (as one trained on GPT-2 alone can be on
ResNets, the family it errs most on) then still tries the
passes it predicts change the module, after the few it predicts gain,
before those it predicts change nothing.

With ``search=K`` the model guides a search in the real env, as
CompilerDream's guided search: at each step the first K passes of the plan's
order are tried on forks of the real env, the one that lowers the op count
most is applied, and the search stops where none of the K lowers it (or
after ``episode_length`` steps). Greedy search tries every pass at every
step; the model decides which K are worth a try.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from compiler_gym.envs import CompilerEnv

from leaderboard.agents.common import act_keep_best, best_pass, improving_passes, op_count
from leaderboard.agents.world_model.controller import ActorCritic
from leaderboard.agents.world_model.data import N_ACTIONS, features
from leaderboard.agents.world_model.model import WorldModel

__all__ = ["PLANS", "WorldModelPolicy", "from_env", "tiered_order"]

PLANS = ("actor", "lookahead", "score", "tiered")


@dataclass
class WorldModelPolicy:
    run: str | Path
    #: Steps per benchmark (0: the run's ``episode_length``).
    episode_length: int = 0
    #: Real env steps of the checkpoint to act with (``checkpoints/model-STEPS.pt``); 0: the final ``model.pt``.
    checkpoint: int = 0
    #: torch CPU threads of this process (small networks: 1 avoids contending with XLA's).
    threads: int = 1
    #: "actor": the controller's preference; "lookahead": the model's one-step predicted return, passes
    #: predicted to change the module first; "score": that return alone; "tiered": returns above changing nothing first,
    #: then the other passes predicted to change the module, then the rest (the module docstring).
    plan: str = "actor"
    #: Passes tried on forks of the real env at each step, the plan's first K (0: no search, act on its choice).
    search: int = 0

    def __post_init__(self) -> None:
        if self.plan not in PLANS:
            raise ValueError(f"plan: expected one of {', '.join(PLANS)}, got {self.plan!r}")
        if not 0 <= self.search <= N_ACTIONS:
            raise ValueError(f"search: expected 0 to {N_ACTIONS} passes tried a step, got {self.search}")
        torch.set_num_threads(self.threads)
        path = Path(self.run) / (f"checkpoints/model-{self.checkpoint}.pt" if self.checkpoint else "model.pt")
        if not path.is_file():
            raise ValueError(f"No model at {path}: expected a run of leaderboard.agents.world_model.train")
        saved = torch.load(path, map_location="cpu", weights_only=False)
        self.args = saved["args"]
        self.model = WorldModel(self.args["ensemble"], self.args["hidden"])
        self.model.load_state_dict(saved["world_model"])
        self.controller = ActorCritic(self.args["controller_hidden"])
        self.controller.load_state_dict(saved["controller"])
        self.model.eval()
        self.controller.eval()
        self.steps = self.episode_length or int(self.args["episode_length"])

    @torch.no_grad()
    def preferences(self, x: np.ndarray) -> list[int]:
        """Every pass, best first: by :meth:`lookahead` with ``plan="score"``; in the tiers of the module
        docstring with ``plan="tiered"``; else those predicted to change the state first, each group best
        first (by the actor's logits, or by :meth:`lookahead`)."""
        xt = torch.as_tensor(x).unsqueeze(0)
        if self.plan == "actor":
            scores, p_changed = self.controller.actor(xt)[0].numpy(), self.model.changed_probs(xt)[0].numpy()
        else:
            scores, p_changed = self._lookahead(xt)  # its prediction already holds P(changed)
        order = np.argsort(-scores, kind="stable")
        if self.plan == "score":
            return [int(a) for a in order]
        changes = p_changed >= self.args["change_threshold"]
        if self.plan == "tiered":
            return tiered_order(scores, self.args["gamma"] * float(self.controller.value(xt)[0]), changes)
        return [int(a) for a in order if changes[a]] + [int(a) for a in order if not changes[a]]

    def lookahead(self, xt: torch.Tensor) -> np.ndarray:
        """[A]: each pass's predicted return from state ``xt`` [1, F]: P(changed) x reward
        + gamma x V(predicted next state), the ensemble's mean prediction."""
        return self._lookahead(xt)[0]

    @torch.no_grad()
    def _lookahead(self, xt: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
        """(:meth:`lookahead`'s scores, P(changed) of every pass) from one prediction."""
        pred = self.model.step(xt.expand(N_ACTIONS, -1), torch.arange(N_ACTIONS), threshold=self.args["change_threshold"])
        scores = pred.p_changed * pred.reward_pct + self.args["gamma"] * self.controller.value(pred.next_state)
        return scores.numpy(), pred.p_changed.numpy()

    def __call__(self, env: CompilerEnv) -> None:
        if self.search:
            self.guided_search(env)
            return

        def choose(futile: set[int]) -> int | None:
            x = features(env.observation["OpcodeCounts"], op_count(env))
            return next((a for a in self.preferences(x) if a not in futile), None)

        act_keep_best(env, choose, self.steps)

    def guided_search(self, env: CompilerEnv) -> None:
        """Greedy search over the plan's first ``search`` passes at each step (the module docstring)."""
        for _ in range(self.steps):
            current = op_count(env)
            tried = self.preferences(features(env.observation["OpcodeCounts"], current))[: self.search]
            improving = improving_passes(env, tried, current)
            if not improving:
                return
            env.step(best_pass(improving))


def tiered_order(scores: np.ndarray, nothing: float, changes: np.ndarray) -> list[int]:
    """The passes of ``plan="tiered"``: those scoring above ``nothing`` (the score of changing nothing,
    gamma x V(s)), then the other ones ``changes`` predicts change the module, then the rest; each tier
    best score first, ties by pass index."""
    tier = np.where(scores > nothing, 0, np.where(changes, 1, 2))
    return [int(a) for a in np.lexsort((-scores, tier))]  # the last key sorts first; lexsort is stable


def from_env() -> WorldModelPolicy:
    """The policy of the run folder named by ``$XLA_GYM_WM_RUN``."""
    run = os.environ.get("XLA_GYM_WM_RUN")
    if not run:
        raise ValueError("Set XLA_GYM_WM_RUN to a run folder made by leaderboard.agents.world_model.train")
    return WorldModelPolicy(run)
