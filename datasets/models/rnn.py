"""Recurrent models through ``lax.scan`` (XLA while loops): LSTM and GRU.

Two tasks, both with stacked recurrent layers, each layer one ``lax.scan``
over time (as in Keras / Flax ``nn.RNN``), so every layer becomes an XLA
``while`` loop, and its gradient another one running backwards in time:

- ``lm``: character-level language model: embedding -> stacked unidirectional
  LSTM/GRU -> linear decoder to the vocabulary; next-token cross-entropy.
- ``bicls``: sequence classifier: embedding -> stacked bidirectional layers
  (a forward scan and a ``reverse=True`` scan, outputs concatenated) ->
  masked mean pooling over the valid time steps -> linear classifier.

Cells: LSTM (input, forget, cell, output gates; forget bias 1) and GRU (reset,
update, candidate, as in Cho et al. / cuDNN). Training step: loss,
``jax.value_and_grad`` (backpropagation through time), gradient clipping by
global norm, then Adam or SGD; returns ``(new_params, new_opt_state, loss)``.
Inference: the forward pass (logits).
"""
from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any

import jax
import jax.numpy as jnp
from xla_gym_datasets.models import common

FAMILY = "rnn"
VOCAB = 128
NUM_CLASSES = 4


@dataclasses.dataclass(frozen=True)
class Config:
    cell: str  # "lstm" | "gru"
    task: str  # "lm" | "bicls"
    n_layer: int
    hidden: int
    seq_len: int
    batch: int
    optimizer: str | None
    mode: str  # "train" | "infer"
    vocab: int = VOCAB
    model: str = ""

    def __post_init__(self):
        object.__setattr__(self, "model", f"{self.cell}-{self.task}")

    @property
    def name(self) -> str:
        opt = f"-{self.optimizer}" if self.mode == "train" else ""
        return f"{self.cell}-{self.task}-l{self.n_layer}-h{self.hidden}-s{self.seq_len}-b{self.batch}{opt}-{self.mode}"


CELLS = ("lstm", "gru")
TASKS = ("lm", "bicls")
LAYERS = (1, 2, 3, 4)
HIDDEN = (32, 64)
MODES = (("adam", "train"), (None, "infer"))
SEQ_LEN, BATCH = 32, 4


def configs() -> list[Config]:
    return [
        Config(cell, task, nl, h, SEQ_LEN, BATCH, opt, mode)
        for cell, task, nl, h, (opt, mode) in itertools.product(CELLS, TASKS, LAYERS, HIDDEN, MODES)
    ]


def _gates(cell):
    return 4 if cell == "lstm" else 3


def _cell_init(kg, cell, n_in, h):
    g = _gates(cell)
    p = {
        "wi": kg.normal((n_in, g * h), 1.0 / math.sqrt(n_in)),
        "wh": kg.normal((h, g * h), 1.0 / math.sqrt(h)),
        "b": jnp.zeros((g * h,), jnp.float32),
    }
    if cell == "lstm":
        p["b"] = p["b"].at[h : 2 * h].set(1.0)  # forget-gate bias 1
    else:
        p["bh"] = jnp.zeros((g * h,), jnp.float32)  # GRU has a separate recurrent bias
    return p


def lstm_step(p, carry, x):
    h, c = carry
    z = x @ p["wi"] + h @ p["wh"] + p["b"]
    i, f, g, o = jnp.split(z, 4, axis=-1)
    c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
    h = jax.nn.sigmoid(o) * jnp.tanh(c)
    return (h, c), h


def gru_step(p, carry, x):
    (h,) = carry
    xi = x @ p["wi"] + p["b"]
    hh = h @ p["wh"] + p["bh"]
    xr, xz, xn = jnp.split(xi, 3, axis=-1)
    hr, hz, hn = jnp.split(hh, 3, axis=-1)
    r = jax.nn.sigmoid(xr + hr)
    z = jax.nn.sigmoid(xz + hz)
    n = jnp.tanh(xn + r * hn)
    h = (1.0 - z) * n + z * h
    return (h,), h


def run_layer(p, xs, cell: str, hidden: int, reverse: bool = False):
    """xs: [time, batch, features] -> hs: [time, batch, hidden]."""
    b = xs.shape[1]
    zeros = jnp.zeros((b, hidden), xs.dtype)
    carry = (zeros, zeros) if cell == "lstm" else (zeros,)
    step = lstm_step if cell == "lstm" else gru_step
    _, hs = jax.lax.scan(lambda c, x: step(p, c, x), carry, xs, reverse=reverse)
    return hs


def init_params(cfg: Config, seed: int = 0):
    kg = common.KeyGen(seed)
    h = cfg.hidden
    p = {"embed": kg.normal((cfg.vocab, h), 0.1), "layers": []}
    n_in = h
    for _ in range(cfg.n_layer):
        if cfg.task == "lm":
            p["layers"].append({"fwd": _cell_init(kg, cfg.cell, n_in, h)})
            n_in = h
        else:
            p["layers"].append({"fwd": _cell_init(kg, cfg.cell, n_in, h), "bwd": _cell_init(kg, cfg.cell, n_in, h)})
            n_in = 2 * h
    n_out = cfg.vocab if cfg.task == "lm" else NUM_CLASSES
    p["out"] = common.dense_init(kg, n_in, n_out)
    return p


def forward(params, tokens, lengths, cfg: Config):
    xs = params["embed"][tokens].transpose(1, 0, 2)  # time-major
    for layer in params["layers"]:
        fwd = run_layer(layer["fwd"], xs, cfg.cell, cfg.hidden)
        if cfg.task == "lm":
            xs = fwd
        else:
            bwd = run_layer(layer["bwd"], xs, cfg.cell, cfg.hidden, reverse=True)
            xs = jnp.concatenate([fwd, bwd], axis=-1)
    if cfg.task == "lm":
        return common.dense(params["out"], xs.transpose(1, 0, 2))  # [b, t, vocab]
    t = xs.shape[0]
    mask = (jnp.arange(t)[:, None] < lengths[None, :]).astype(xs.dtype)[..., None]
    pooled = jnp.sum(xs * mask, axis=0) / jnp.maximum(jnp.sum(mask, axis=0), 1.0)
    return common.dense(params["out"], pooled)


def clip_by_global_norm(grads, max_norm=1.0):
    norm = jnp.sqrt(sum(jnp.sum(jnp.square(g)) for g in jax.tree_util.tree_leaves(grads)))
    scale = jnp.minimum(1.0, max_norm / (norm + 1e-6))
    return jax.tree_util.tree_map(lambda g: g * scale, grads)


def build(cfg: Config, seed: int = 0):
    params = init_params(cfg, seed)
    kg = common.KeyGen(seed + 1)
    tokens = kg.randint((cfg.batch, cfg.seq_len + 1), 0, cfg.vocab)
    lengths = kg.randint((cfg.batch,), cfg.seq_len // 2, cfg.seq_len + 1)
    labels = kg.randint((cfg.batch,), 0, NUM_CLASSES)

    if cfg.mode == "infer":
        if cfg.task == "lm":
            return jax.jit(lambda params, tokens: forward(params, tokens, None, cfg)), (params, tokens[:, :-1])
        return jax.jit(lambda params, tokens, lengths: forward(params, tokens, lengths, cfg)), (
            params,
            tokens[:, :-1],
            lengths,
        )

    opt = common.make_optimizer(cfg.optimizer)
    if cfg.task == "lm":

        def loss_fn(params, tokens):
            return common.cross_entropy(forward(params, tokens[:, :-1], None, cfg), tokens[:, 1:])

        batch: tuple[Any, ...] = (tokens,)
    else:

        def loss_fn(params, tokens, lengths, labels):  # type: ignore[misc]
            return common.cross_entropy(forward(params, tokens, lengths, cfg), labels)

        batch = (tokens[:, :-1], lengths, labels)

    def step(params, opt_state, *batch):
        loss, grads = jax.value_and_grad(loss_fn)(params, *batch)
        new_params, new_state = opt.update(clip_by_global_norm(grads), opt_state, params)
        return new_params, new_state, loss

    return jax.jit(step), (params, opt.init(params)) + batch
