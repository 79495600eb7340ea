"""U-Net diffusion denoisers (DDPM): skip connections across resolutions.

Held out from all training (``datasets/splits.py``): its structure differs from
the six training families. A DDPM noise-prediction U-Net (Ho et al., 2020) at
small widths on 16x16 and 32x32 images:

- a sinusoidal embedding of the diffusion step ``t`` through a two-layer MLP
  (SiLU), added to every residual block;
- an encoder of ``levels`` resolutions, each a residual block (group norm,
  SiLU, 3x3 convolution, twice; a 1x1 convolution on the skip when the
  channels change) then 2x2 average pooling (``reduce_window``);
- a middle residual block with single-head self-attention over the pixels;
- a decoder mirroring the encoder: nearest-neighbour upsampling (a broadcast
  and reshape), concatenation with the encoder's activation at the same
  resolution (the U-Net skip), a residual block;
- group norm, SiLU and a 3x3 convolution back to the image's channels.

Training step: the forward diffusion ``x_t = sqrt(abar_t) x_0 +
sqrt(1 - abar_t) eps`` under the cosine schedule (computed from ``t``, not
a table), the mean squared error of the predicted noise, ``jax.value_and_grad``,
AdamW; returns ``(new_params, new_opt_state, loss)``. Inference: one DDIM
denoising step from ``x_t`` to ``x_{t-1}`` (eta 0).
"""
from __future__ import annotations

import dataclasses
import itertools
import math

import jax
import jax.numpy as jnp
from xla_gym_datasets.models import common

FAMILY = "unet"
IMAGE, CHANNELS, GROUPS, STEPS = 16, 3, 4, 1000


@dataclasses.dataclass(frozen=True)
class Config:
    levels: int
    width: int  # channels at the first resolution, doubled at every level
    batch: int
    optimizer: str | None
    mode: str  # "train" | "infer"
    image: int = IMAGE
    model: str = "unet-ddpm"

    @property
    def name(self) -> str:
        opt = f"-{self.optimizer}" if self.mode == "train" else ""
        return f"unet-ddpm-v{self.levels}-w{self.width}-i{self.image}-b{self.batch}{opt}-{self.mode}"


LEVELS = (2, 3)
WIDTHS = (16, 32)
IMAGES = (16, 32)
MODES = (("adamw", "train"), (None, "infer"))
BATCH = 2


def configs() -> list[Config]:
    return [
        Config(lv, w, BATCH, opt, mode, image)
        for lv, w, image, (opt, mode) in itertools.product(LEVELS, WIDTHS, IMAGES, MODES)
    ]


# ---------------------------------------------------------------------------
# Layers
# ---------------------------------------------------------------------------


def conv_init(kg: common.KeyGen, k: int, c_in: int, c_out: int):
    return {"w": kg.normal((k, k, c_in, c_out), 1.0 / math.sqrt(k * k * c_in)), "b": jnp.zeros((c_out,), jnp.float32)}


def conv(p, x):
    y = jax.lax.conv_general_dilated(x, p["w"], (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return y + p["b"]


def group_norm(p, x, groups: int = GROUPS, eps: float = 1e-5):
    b, h, w, c = x.shape
    g = x.reshape(b, h, w, groups, c // groups)
    mean = jnp.mean(g, axis=(1, 2, 4), keepdims=True)
    var = jnp.mean(jnp.square(g - mean), axis=(1, 2, 4), keepdims=True)
    g = (g - mean) * jax.lax.rsqrt(var + eps)
    return g.reshape(b, h, w, c) * p["g"] + p["b"]


def res_init(kg: common.KeyGen, c_in: int, c_out: int, t_dim: int):
    p = {
        "n1": common.ln_init(c_in),
        "c1": conv_init(kg, 3, c_in, c_out),
        "t": common.dense_init(kg, t_dim, c_out),
        "n2": common.ln_init(c_out),
        "c2": conv_init(kg, 3, c_out, c_out),
    }
    if c_in != c_out:
        p["skip"] = conv_init(kg, 1, c_in, c_out)
    return p


def res_block(p, x, temb):
    h = conv(p["c1"], jax.nn.silu(group_norm(p["n1"], x)))
    h = h + common.dense(p["t"], jax.nn.silu(temb))[:, None, None, :]
    h = conv(p["c2"], jax.nn.silu(group_norm(p["n2"], h)))
    return h + (conv(p["skip"], x) if "skip" in p else x)


def pixel_attention(p, x):
    """Single-head self-attention over the pixels of an ``[b, h, w, c]`` map."""
    b, hh, ww, c = x.shape
    q = group_norm(p["n"], x).reshape(b, hh * ww, c)
    qkv = common.dense(p["qkv"], q)
    q, k, v = jnp.split(qkv, 3, axis=-1)
    att = jax.nn.softmax(jnp.einsum("bqc,bkc->bqk", q, k) / math.sqrt(c), axis=-1)
    out = common.dense(p["out"], jnp.einsum("bqk,bkc->bqc", att, v))
    return x + out.reshape(b, hh, ww, c)


def avg_pool(x):
    s = jax.lax.reduce_window(x, 0.0, jax.lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return s / 4.0


def upsample(x):
    b, h, w, c = x.shape
    x = jnp.broadcast_to(x[:, :, None, :, None, :], (b, h, 2, w, 2, c))
    return x.reshape(b, 2 * h, 2 * w, c)


def timestep_embedding(t, dim: int):
    half = dim // 2
    freqs = jnp.exp(-math.log(10000.0) * jnp.arange(half, dtype=jnp.float32) / half)
    args = t.astype(jnp.float32)[:, None] * freqs[None, :]
    return jnp.concatenate([jnp.sin(args), jnp.cos(args)], axis=-1)


def alpha_bar(t):
    """The cosine schedule (Nichol & Dhariwal, 2021) at integer steps ``t``."""
    s = 0.008
    f = jnp.cos((t.astype(jnp.float32) / STEPS + s) / (1 + s) * math.pi / 2)
    f0 = math.cos(s / (1 + s) * math.pi / 2)
    return jnp.clip(jnp.square(f) / f0**2, 1e-5, 0.9999)


# ---------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------


def init_params(cfg: Config, seed: int = 0):
    kg = common.KeyGen(seed)
    w, t_dim = cfg.width, 4 * cfg.width
    widths = [w * 2**i for i in range(cfg.levels)]
    p = {
        "t1": common.dense_init(kg, w, t_dim),
        "t2": common.dense_init(kg, t_dim, t_dim),
        "stem": conv_init(kg, 3, CHANNELS, w),
        "down": [],
        "up": [],
    }
    c = w
    for c_out in widths:
        p["down"].append(res_init(kg, c, c_out, t_dim))
        c = c_out
    p["mid"] = {
        "res": res_init(kg, c, c, t_dim),
        "attn": {"n": common.ln_init(c), "qkv": common.dense_init(kg, c, 3 * c), "out": common.dense_init(kg, c, c)},
    }
    for c_skip in reversed(widths):
        p["up"].append(res_init(kg, c + c_skip, c_skip, t_dim))
        c = c_skip
    p["out_norm"] = common.ln_init(c)
    p["out"] = conv_init(kg, 3, c, CHANNELS)
    return p


def denoiser(params, x, t, cfg: Config):
    """Predict the noise in ``x`` (``[b, h, w, 3]``) at steps ``t`` (``[b]`` int32)."""
    temb = common.dense(params["t1"], timestep_embedding(t, cfg.width))
    temb = common.dense(params["t2"], jax.nn.silu(temb))
    h = conv(params["stem"], x)
    skips = []
    for blk in params["down"]:
        h = res_block(blk, h, temb)
        skips.append(h)
        h = avg_pool(h)
    h = pixel_attention(params["mid"]["attn"], res_block(params["mid"]["res"], h, temb))
    for blk in params["up"]:
        h = jnp.concatenate([upsample(h), skips.pop()], axis=-1)
        h = res_block(blk, h, temb)
    return conv(params["out"], jax.nn.silu(group_norm(params["out_norm"], h)))


def ddim_step(params, x_t, t, cfg: Config):
    """One deterministic DDIM step from ``x_t`` at ``t`` to ``t - 1``."""
    eps = denoiser(params, x_t, t, cfg)
    a_t = alpha_bar(t)[:, None, None, None]
    a_prev = alpha_bar(jnp.maximum(t - 1, 0))[:, None, None, None]
    x0 = jnp.clip((x_t - jnp.sqrt(1 - a_t) * eps) / jnp.sqrt(a_t), -1.0, 1.0)
    return jnp.sqrt(a_prev) * x0 + jnp.sqrt(1 - a_prev) * eps


def diffusion_loss(params, x0, noise, t, cfg: Config):
    a = alpha_bar(t)[:, None, None, None]
    x_t = jnp.sqrt(a) * x0 + jnp.sqrt(1 - a) * noise
    return jnp.mean(jnp.square(denoiser(params, x_t, t, cfg) - noise))


def build(cfg: Config, seed: int = 0):
    params = init_params(cfg, seed)
    kg = common.KeyGen(seed + 1)
    shape = (cfg.batch, cfg.image, cfg.image, CHANNELS)
    images = kg.uniform(shape, -1.0, 1.0)
    noise = kg.normal(shape, 1.0)
    t = kg.randint((cfg.batch,), 1, STEPS)
    if cfg.mode == "infer":
        return jax.jit(lambda params, x_t, t: ddim_step(params, x_t, t, cfg)), (params, noise, t)

    def loss_fn(params, images, noise, t):
        return diffusion_loss(params, images, noise, t, cfg)

    opt = common.make_optimizer(cfg.optimizer)
    return jax.jit(common.train_step_fn(loss_fn, opt)), (params, opt.init(params), images, noise, t)
