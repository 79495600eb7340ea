"""Selective state-space language models (Mamba-style): a linear recurrence, two ways.

Held out from all training (``datasets/splits.py``): its structure differs from
the six training families. A small Mamba (Gu & Dao, 2023) character-level
language model: token embedding, ``n_layer`` residual blocks, RMS norm, and a
decoder tied to the embedding. Each block:

- RMS norm, an input projection to ``2 * d_inner`` (the stream ``x`` and the
  gate ``z``);
- a causal depthwise 1-D convolution of width 4 over time
  (``feature_group_count = d_inner``) and SiLU;
- the selective scan: input-dependent step ``delta = softplus(W x + b)`` and
  input-dependent ``B``, ``C`` (``d_state`` each); ``A = -exp(A_log)``;
  ``h_t = exp(delta_t A) * h_{t-1} + delta_t B_t x_t``, ``y_t = C_t . h_t + D x_t``;
- ``y * silu(z)`` and an output projection.

The recurrence is the axis that varies the structure: ``sequential`` runs it
as ``lax.scan`` (an XLA ``while`` loop, as the RNN family does), ``parallel``
as ``lax.associative_scan`` over the pairs ``(a, b) -> (a2 a1, a2 b1 + b2)``
(a tree of strided slices, pads and concatenations, no loop).

Training step: next-token cross-entropy, ``jax.value_and_grad``, Adam;
returns ``(new_params, new_opt_state, loss)``. Inference: the logits.
"""
from __future__ import annotations

import dataclasses
import itertools
import math

import jax
import jax.numpy as jnp
from xla_gym_datasets.models import common

FAMILY = "ssm"
VOCAB, D_STATE, CONV = 128, 8, 4


@dataclasses.dataclass(frozen=True)
class Config:
    scan: str  # "sequential" | "parallel"
    n_layer: int
    d_model: int
    seq_len: int
    batch: int
    optimizer: str | None
    mode: str  # "train" | "infer"
    model: str = "mamba"

    @property
    def d_inner(self) -> int:
        return 2 * self.d_model

    @property
    def name(self) -> str:
        opt = f"-{self.optimizer}" if self.mode == "train" else ""
        return (
            f"mamba-{self.scan}-l{self.n_layer}-d{self.d_model}-s{self.seq_len}-b{self.batch}{opt}-{self.mode}"
        )


SCANS = ("sequential", "parallel")
LAYERS = (1, 2)
D_MODELS = (32, 64)
MODES = (("adam", "train"), (None, "infer"))
SEQ_LEN, BATCH = 32, 2


def configs() -> list[Config]:
    return [
        Config(scan, nl, d, SEQ_LEN, BATCH, opt, mode)
        for scan, nl, d, (opt, mode) in itertools.product(SCANS, LAYERS, D_MODELS, MODES)
    ]


def rms_norm(g, x, eps: float = 1e-5):
    return x * jax.lax.rsqrt(jnp.mean(jnp.square(x), axis=-1, keepdims=True) + eps) * g


def init_params(cfg: Config, seed: int = 0):
    kg = common.KeyGen(seed)
    d, di = cfg.d_model, cfg.d_inner
    blocks = []
    for _ in range(cfg.n_layer):
        blocks.append(
            {
                "norm": jnp.ones((d,), jnp.float32),
                "in": common.dense_init(kg, d, 2 * di, bias=False),
                "conv_w": kg.normal((CONV, 1, di), 1.0 / math.sqrt(CONV)),
                "conv_b": jnp.zeros((di,), jnp.float32),
                "x_proj": common.dense_init(kg, di, 1 + 2 * D_STATE, bias=False),
                "dt": {"w": kg.normal((1, di), 0.5), "b": jnp.full((di,), -3.0, jnp.float32)},
                # S4D-real initialization: A = -(1, 2, ..., d_state) for every channel.
                "A_log": jnp.log(jnp.tile(jnp.arange(1, D_STATE + 1, dtype=jnp.float32), (di, 1))),
                "D": jnp.ones((di,), jnp.float32),
                "out": common.dense_init(kg, di, d, bias=False),
            }
        )
    return {"embed": kg.normal((VOCAB, d), 0.1), "blocks": blocks, "norm": jnp.ones((d,), jnp.float32)}


def causal_conv(w, b, x):
    """Depthwise causal convolution over time: ``x`` ``[b, t, c]``, ``w`` ``[k, 1, c]``."""
    c = x.shape[-1]
    x = jnp.pad(x, ((0, 0), (CONV - 1, 0), (0, 0)))
    y = jax.lax.conv_general_dilated(
        x, w, (1,), "VALID", dimension_numbers=("NWC", "WIO", "NWC"), feature_group_count=c
    )
    return y + b


def linear_recurrence(a, bx, scan: str):
    """``h_t = a_t * h_{t-1} + bx_t`` over axis 1 (time) from ``h_0 = 0``."""
    if scan == "parallel":

        def combine(left, right):
            a1, b1 = left
            a2, b2 = right
            return a2 * a1, a2 * b1 + b2

        _, h = jax.lax.associative_scan(combine, (a, bx), axis=1)
        return h

    def step(h, inputs):
        a_t, bx_t = inputs
        h = a_t * h + bx_t
        return h, h

    h0 = jnp.zeros(bx.shape[:1] + bx.shape[2:], bx.dtype)
    _, hs = jax.lax.scan(step, h0, (a.swapaxes(0, 1), bx.swapaxes(0, 1)))
    return hs.swapaxes(0, 1)


def mamba_block(p, x, cfg: Config):
    di = cfg.d_inner
    xz = common.dense(p["in"], rms_norm(p["norm"], x))
    u, z = xz[..., :di], xz[..., di:]
    u = jax.nn.silu(causal_conv(p["conv_w"], p["conv_b"], u))
    proj = common.dense(p["x_proj"], u)
    dt_in, B, C = proj[..., :1], proj[..., 1 : 1 + D_STATE], proj[..., 1 + D_STATE :]
    delta = jax.nn.softplus(dt_in @ p["dt"]["w"] + p["dt"]["b"])  # [b, t, di]
    A = -jnp.exp(p["A_log"])  # [di, n]
    a = jnp.exp(delta[..., None] * A)  # [b, t, di, n]
    bx = (delta * u)[..., None] * B[:, :, None, :]
    h = linear_recurrence(a, bx, cfg.scan)
    y = jnp.einsum("btdn,btn->btd", h, C) + p["D"] * u
    return x + common.dense(p["out"], y * jax.nn.silu(z))


def forward(params, tokens, cfg: Config):
    x = params["embed"][tokens]
    for blk in params["blocks"]:
        x = mamba_block(blk, x, cfg)
    return rms_norm(params["norm"], x) @ params["embed"].T


def build(cfg: Config, seed: int = 0):
    params = init_params(cfg, seed)
    kg = common.KeyGen(seed + 1)
    tokens = kg.randint((cfg.batch, cfg.seq_len + 1), 0, VOCAB)
    if cfg.mode == "infer":
        return jax.jit(lambda params, tokens: forward(params, tokens, cfg)), (params, tokens[:, :-1])

    def loss_fn(params, tokens):
        return common.cross_entropy(forward(params, tokens[:, :-1], cfg), tokens[:, 1:])

    opt = common.make_optimizer(cfg.optimizer)
    return jax.jit(common.train_step_fn(loss_fn, opt)), (params, opt.init(params), tokens)
