"""The controller: an actor-critic trained on rollouts imagined in the world model.

From a batch of real start states, :func:`imagine` rolls the actor out for
``horizon`` steps inside the model: at each imagined state the passes the
model predicts change nothing (P(changed) < ``threshold``) are masked out of
the actor's logits (if it predicts that none changes anything, the most
likely to is left), an action is sampled, one ensemble member (drawn per
step, as in MBPO) gives the next state, and the reward is the expected
op-count reduction in percent, P(changed) x reward head, minus
``disagreement_penalty`` x the members' disagreement (MOPO's pessimism).

:func:`update` is one actor-critic step on such a batch: lambda-returns
bootstrapped by the critic (as Dreamer's), REINFORCE with the normalized
advantage for the discrete actions, an entropy bonus, and an MSE critic.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch
from torch import nn

from leaderboard.agents.world_model.data import N_ACTIONS, N_FEATURES
from leaderboard.agents.world_model.model import Prediction

__all__ = ["ActorCritic", "Dynamics", "ImagineConfig", "imagine", "masked_logits", "update"]


class Dynamics(Protocol):
    """What the controller needs of a world model (``model.WorldModel`` has it)."""

    members: nn.ModuleList

    def changed_probs(self, x: torch.Tensor) -> torch.Tensor: ...

    def step(self, x: torch.Tensor, a: torch.Tensor, member: int | None = None, threshold: float = 0.5) -> Prediction: ...


class ActorCritic(nn.Module):
    def __init__(self, hidden: int = 256) -> None:
        super().__init__()
        self.actor = nn.Sequential(nn.Linear(N_FEATURES, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, N_ACTIONS))
        self.critic = nn.Sequential(nn.Linear(N_FEATURES, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def value(self, x: torch.Tensor) -> torch.Tensor:
        return self.critic(x).squeeze(-1)


@dataclass
class ImagineConfig:
    horizon: int = 15
    threshold: float = 0.5
    gamma: float = 0.99
    lam: float = 0.95
    entropy_coef: float = 0.01
    disagreement_penalty: float = 0.0


def masked_logits(logits: torch.Tensor, p_changed: torch.Tensor, threshold: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(logits with the masked passes at -inf, the mask): passes predicted to change
    nothing are masked; a row with none left keeps its most likely changing pass."""
    mask = p_changed >= threshold
    empty = ~mask.any(-1)
    if empty.any():
        mask[empty, p_changed[empty].argmax(-1)] = True
    return logits.masked_fill(~mask, float("-inf")), mask


def imagine(model: Dynamics, ac: ActorCritic, starts: torch.Tensor, config: ImagineConfig, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """Imagined rollouts from ``starts`` [B, F]: states [H+1, B, F], actions, log-probs,
    entropies, rewards and masks [H, B, A] (the model is not differentiated)."""
    x = starts
    roll: dict[str, list[torch.Tensor]] = {k: [] for k in ("states", "actions", "logp", "entropy", "rewards", "masks")}
    roll["states"].append(x)
    for _ in range(config.horizon):
        logits, mask = masked_logits(ac.actor(x), model.changed_probs(x), config.threshold)
        dist = torch.distributions.Categorical(logits=logits)
        a = torch.multinomial(dist.probs.detach(), 1, generator=generator).squeeze(-1)
        member = int(torch.randint(len(model.members), (1,), generator=generator))
        pred = model.step(x, a, member=member, threshold=config.threshold)
        mean = model.step(x, a, threshold=config.threshold)
        reward = mean.p_changed * pred.reward_pct - config.disagreement_penalty * mean.disagreement
        x = pred.next_state
        for key, value in zip(roll, (x, a, dist.log_prob(a), dist.entropy(), reward, mask)):
            roll[key].append(value)
    return {k: torch.stack(v) for k, v in roll.items()}


def lambda_returns(rewards: torch.Tensor, values: torch.Tensor, gamma: float, lam: float) -> torch.Tensor:
    """[H, B] returns from rewards [H, B] and values [H+1, B] (the last bootstraps)."""
    out = torch.zeros_like(rewards)
    following = values[-1]
    for t in reversed(range(rewards.shape[0])):
        following = rewards[t] + gamma * ((1 - lam) * values[t + 1] + lam * following)
        out[t] = following
    return out


def update(model: Dynamics, ac: ActorCritic, optimizer: torch.optim.Optimizer, starts: torch.Tensor, config: ImagineConfig, generator: torch.Generator) -> dict[str, float]:
    """One actor-critic update on a batch imagined from ``starts``; returns its statistics."""
    if starts.ndim != 2 or starts.shape[1] != N_FEATURES or len(starts) == 0:
        raise ValueError(f"Expected start states [B, {N_FEATURES}], got {tuple(starts.shape)}")
    roll = imagine(model, ac, starts, config, generator)
    values = ac.value(roll["states"])
    with torch.no_grad():
        returns = lambda_returns(roll["rewards"], values.detach(), config.gamma, config.lam)
        advantage = returns - values[:-1].detach()
        advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
    actor_loss = -(roll["logp"] * advantage).mean() - config.entropy_coef * roll["entropy"].mean()
    critic_loss = 0.5 * ((values[:-1] - returns) ** 2).mean()
    optimizer.zero_grad()
    (actor_loss + critic_loss).backward()
    nn.utils.clip_grad_norm_(ac.parameters(), 1.0)
    optimizer.step()
    return {
        "actor_loss": actor_loss.item(),
        "critic_loss": critic_loss.item(),
        "entropy": roll["entropy"].mean().item(),
        "imagined_return": roll["rewards"].sum(0).mean().item(),
        "allowed_actions": roll["masks"].float().sum(-1).mean().item(),
    }
