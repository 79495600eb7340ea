"""The world model: an ensemble of MLPs from (features of s, pass) to s', reward, "changed".

Each member reads the 134 features of s (``data.features``: log1p opcode
counts and op count) and the pass (one-hot, 64) and has three heads:

- ``changed``: the logit that the pass changes the module at all (most passes
  change nothing at most states, so this is the first thing to get right);
- ``delta``: ``features(s') - features(s)`` *given* that it changed (a
  deterministic residual in log space: passes remove or rewrite a fraction of
  some opcodes, which is a small additive change of log counts);
- ``reward``: the op-count reduction given a change, in percent of the op
  count of s (the scale of ``reward_scale="initial"``, comparable across modules).

The delta and reward heads train on the changed rows only; the imagined step
is ``s + delta`` if the pass is predicted to change the module, else ``s``.
Members train on bootstrap resamples of the data; their disagreement on the
delta measures how far from the data an imagined state is (MBPO, MOPO).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
import torch
from torch import nn

from leaderboard.agents.world_model.data import N_ACTIONS, N_FEATURES, Transitions

__all__ = ["Prediction", "WorldModel", "fit", "targets"]


class _Member(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(N_FEATURES + N_ACTIONS, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU()
        )
        self.delta = nn.Linear(hidden, N_FEATURES)
        self.changed = nn.Linear(hidden, 1)
        self.reward = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor, a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        h = self.body(torch.cat([x, nn.functional.one_hot(a, N_ACTIONS).float()], dim=-1))
        return self.delta(h), self.changed(h).squeeze(-1), self.reward(h).squeeze(-1)


@dataclass
class Prediction:
    next_state: torch.Tensor  # [B, F]: s + delta where predicted changed, else s
    p_changed: torch.Tensor  # [B]
    reward_pct: torch.Tensor  # [B]: the op-count reduction given a change, % of s's op count
    disagreement: torch.Tensor  # [B]: std of the members' deltas, averaged over features


class WorldModel(nn.Module):
    def __init__(self, members: int = 5, hidden: int = 256) -> None:
        super().__init__()
        if members < 1 or hidden < 1:
            raise ValueError(f"Expected members >= 1 and hidden >= 1, got {members}, {hidden}")
        self.members = nn.ModuleList(_Member(hidden) for _ in range(members))

    def forward(self, x: torch.Tensor, a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Every member's (delta [E, B, F], changed logit [E, B], reward [E, B])."""
        outs = [m(x, a) for m in self.members]
        return tuple(torch.stack(parts) for parts in zip(*outs))  # type: ignore[return-value]

    @torch.no_grad()
    def step(self, x: torch.Tensor, a: torch.Tensor, member: int | None = None, threshold: float = 0.5) -> Prediction:
        """The imagined step: the ensemble mean, or one member's (as MBPO samples one)."""
        delta, logit, reward = self(x, a)
        p = torch.sigmoid(logit).mean(0)
        d = delta.mean(0) if member is None else delta[member]
        r = reward.mean(0) if member is None else reward[member]
        changed = (p >= threshold).float().unsqueeze(-1)
        spread = delta.std(0).mean(-1) if len(self.members) > 1 else torch.zeros_like(p)
        return Prediction(x + changed * d, p, r, spread)

    @torch.no_grad()
    def changed_probs(self, x: torch.Tensor) -> torch.Tensor:
        """[B, A]: the probability that each pass changes each state (ensemble mean).

        The imagination's hot spot (every imagined state, every pass), so the
        first layer is split: W [x; onehot(a)] = W_x x + W_a[:, a], the state's
        part computed once for all passes, and the delta and reward heads skipped."""
        probs = []
        for member in self.members:
            m = cast(_Member, member)
            first = cast(nn.Linear, m.body[0])
            w_x, w_a = first.weight[:, :N_FEATURES], first.weight[:, N_FEATURES:]
            h = (x @ w_x.T + first.bias).unsqueeze(1) + w_a.T.unsqueeze(0)  # [B, A, H]
            probs.append(torch.sigmoid(m.changed(m.body[1:](h)).squeeze(-1)))  # SiLU, Linear, SiLU, head
        return torch.stack(probs).mean(0)


def targets(data: Transitions) -> dict[str, torch.Tensor]:
    """The tensors the model trains on (reward in percent of s's op count)."""
    ops = np.maximum(np.expm1(data.state[:, -1].astype(np.float64)), 1.0)
    return {
        "x": torch.as_tensor(data.state),
        "a": torch.as_tensor(data.action),
        "delta": torch.as_tensor(data.next_state - data.state),
        "changed": torch.as_tensor(data.changed.astype(np.float32)),
        "reward_pct": torch.as_tensor((100.0 * data.reward / ops).astype(np.float32)),
    }


def loss(member: nn.Module, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, float]]:
    """One member's: BCE of "changed", plus MSE of delta and reward on the changed rows."""
    delta, logit, reward = member(batch["x"], batch["a"])
    w = batch["changed"]
    denom = w.sum().clamp(min=1.0)
    bce = nn.functional.binary_cross_entropy_with_logits(logit, w)
    mse_delta = (((delta - batch["delta"]) ** 2).mean(-1) * w).sum() / denom
    mse_reward = (((reward - batch["reward_pct"]) ** 2) * w).sum() / denom
    total = bce + mse_delta + 0.01 * mse_reward
    parts = {"loss": total.item(), "changed_bce": bce.item(), "delta_mse": mse_delta.item(), "reward_mse": mse_reward.item()}
    return total, parts


def fit(
    model: WorldModel,
    optimizer: torch.optim.Optimizer,
    data: Transitions,
    epochs: int,
    batch_size: int,
    generator: torch.Generator,
    min_updates: int = 0,
) -> list[dict[str, float]]:
    """Train for ``epochs`` passes over ``data`` (members draw their own bootstrap
    minibatches), and for more passes if that is fewer than ``min_updates``
    gradient steps: on the few hundred transitions of a small budget an epoch
    is one minibatch, and 20 steps leave the model at its initialization.
    Returns the mean losses of every epoch, averaged over members."""
    if len(data) == 0:
        raise ValueError("No transitions to train the world model on")
    t = targets(data)
    n = len(data)
    batches = max(n // batch_size, 1)
    history = []
    for _ in range(max(epochs, -(-min_updates // batches))):
        sums: dict[str, float] = {}
        scale = 1.0 / (batches * len(model.members))
        for _ in range(batches):
            optimizer.zero_grad()
            for member in model.members:  # each member its own bootstrap minibatch
                index = torch.randint(n, (min(batch_size, n),), generator=generator)
                total, parts = loss(member, {k: v[index] for k, v in t.items()})
                total.backward()
                for k, v in parts.items():
                    sums[k] = sums.get(k, 0.0) + v * scale
            optimizer.step()
        history.append(sums)
    return history
