"""Vision Transformer (ViT): image-classification training steps and inference.

Faithful to Dosovitskiy et al. (2021) at small widths and 32x32 images: a
patch embedding as a convolution with kernel = stride = patch size, a learned
class token prepended, learned position embeddings, pre-layer-norm encoder
blocks (bidirectional multi-head self-attention; MLP 4x with exact GELU), a
final layer norm and a linear head on the class token.

Training step: softmax cross-entropy with label smoothing 0.1,
``jax.value_and_grad``, AdamW (ViT's optimizer) or SGD with momentum;
returns ``(new_params, new_opt_state, loss)``. Inference: class logits.
"""
from __future__ import annotations

import dataclasses
import itertools
import math

import jax
import jax.numpy as jnp
from xla_gym_datasets.models import common

FAMILY = "vit"
NUM_CLASSES = 10
IMAGE = 32


@dataclasses.dataclass(frozen=True)
class Config:
    n_layer: int
    d_model: int
    n_head: int
    patch: int
    batch: int
    optimizer: str | None
    mode: str  # "train" | "infer"
    image: int = IMAGE
    model: str = "vit"

    @property
    def n_patches(self) -> int:
        return (self.image // self.patch) ** 2

    @property
    def name(self) -> str:
        opt = f"-{self.optimizer}" if self.mode == "train" else ""
        return f"vit-l{self.n_layer}-d{self.d_model}-h{self.n_head}-p{self.patch}-i{self.image}-b{self.batch}{opt}-{self.mode}"


LAYERS = (1, 2, 3, 4, 6)
WIDTH_HEADS = ((64, 2), (128, 4))
PATCHES = (4, 8)
MODES = (("adamw", "train"), (None, "infer"))
BATCH = 2


def configs() -> list[Config]:
    return [
        Config(nl, d, h, p, BATCH, opt, mode)
        for nl, (d, h), p, (opt, mode) in itertools.product(LAYERS, WIDTH_HEADS, PATCHES, MODES)
    ]


def init_params(cfg: Config, seed: int = 0):
    kg = common.KeyGen(seed)
    d = cfg.d_model
    blocks = []
    for _ in range(cfg.n_layer):
        blocks.append(
            {
                "ln1": common.ln_init(d),
                "attn": common.attention_init(kg, d),
                "ln2": common.ln_init(d),
                "mlp": {"fc": common.dense_init(kg, d, 4 * d), "proj": common.dense_init(kg, 4 * d, d)},
            }
        )
    fan_in = cfg.patch * cfg.patch * 3
    return {
        "patch": {"w": kg.normal((cfg.patch, cfg.patch, 3, d), 1.0 / math.sqrt(fan_in)), "b": jnp.zeros((d,), jnp.float32)},
        "cls": jnp.zeros((1, 1, d), jnp.float32),
        "pos": kg.normal((1, cfg.n_patches + 1, d), 0.02),
        "blocks": blocks,
        "ln": common.ln_init(d),
        "head": {"w": jnp.zeros((d, NUM_CLASSES), jnp.float32), "b": jnp.zeros((NUM_CLASSES,), jnp.float32)},
    }


def forward(params, images, cfg: Config):
    p = cfg.patch
    x = jax.lax.conv_general_dilated(
        images, params["patch"]["w"], (p, p), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC")
    )
    x = x + params["patch"]["b"]
    b = x.shape[0]
    x = x.reshape(b, -1, cfg.d_model)
    x = jnp.concatenate([jnp.broadcast_to(params["cls"], (b, 1, cfg.d_model)), x], axis=1)
    x = x + params["pos"]
    for blk in params["blocks"]:
        x = x + common.multi_head_attention(blk["attn"], common.layer_norm(blk["ln1"], x, eps=1e-6), cfg.n_head)
        h = jax.nn.gelu(common.dense(blk["mlp"]["fc"], common.layer_norm(blk["ln2"], x, eps=1e-6)), approximate=False)
        x = x + common.dense(blk["mlp"]["proj"], h)
    x = common.layer_norm(params["ln"], x, eps=1e-6)
    return common.dense(params["head"], x[:, 0])


def smoothed_cross_entropy(logits, labels, smoothing=0.1):
    n = logits.shape[-1]
    target = jax.nn.one_hot(labels, n) * (1 - smoothing) + smoothing / n
    return -jnp.mean(jnp.sum(target * jax.nn.log_softmax(logits), axis=-1))


def build(cfg: Config, seed: int = 0):
    params = init_params(cfg, seed)
    kg = common.KeyGen(seed + 1)
    images = kg.normal((cfg.batch, cfg.image, cfg.image, 3), 1.0)
    labels = kg.randint((cfg.batch,), 0, NUM_CLASSES)
    if cfg.mode == "infer":
        return jax.jit(lambda params, images: forward(params, images, cfg)), (params, images)

    def loss_fn(params, images, labels):
        return smoothed_cross_entropy(forward(params, images, cfg), labels)

    opt = common.make_optimizer(cfg.optimizer)
    return jax.jit(common.train_step_fn(loss_fn, opt)), (params, opt.init(params), images, labels)
