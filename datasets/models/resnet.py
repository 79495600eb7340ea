"""ResNet variants (basic and bottleneck blocks, batch norm): training steps and inference.

Faithful to He et al. (2016) at small widths and CIFAR-sized inputs: a 3x3
convolution stem, four residual stages of widths ``w, 2w, 4w, 8w`` whose
first block downsamples with stride 2 (stages 2-4) and uses a 1x1 projection
shortcut with batch norm when the shape changes, global average pooling and
a linear classifier. Basic blocks: two 3x3 convolutions; bottleneck blocks:
1x1 -> 3x3 (stride) -> 1x1 with expansion 4. Every convolution is followed by
batch norm (no bias); ReLU after each norm and after the residual sum.

Batch norm in training uses batch statistics and returns updated running
statistics (momentum 0.9); inference uses the running statistics. Training
step: softmax cross-entropy plus L2 weight decay, SGD with momentum or Adam;
returns ``(new_params, new_batch_stats, new_opt_state, loss)``. Layout NHWC.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any

import jax
import jax.numpy as jnp
from xla_gym_datasets.models import common

FAMILY = "resnet"
NUM_CLASSES = 10

#: arch -> (block type, blocks per stage)
ARCHS = {
    "resnet10": ("basic", (1, 1, 1, 1)),
    "resnet18": ("basic", (2, 2, 2, 2)),
    "resnet34": ("basic", (3, 4, 6, 3)),
    "resnet14": ("bottleneck", (1, 1, 1, 1)),
    "resnet26": ("bottleneck", (2, 2, 2, 2)),
    "resnet50": ("bottleneck", (3, 4, 6, 3)),
}


@dataclasses.dataclass(frozen=True)
class Config:
    arch: str
    width: int
    image: int
    batch: int
    optimizer: str | None  # "sgd" | "adam"; None for inference
    mode: str  # "train" | "infer"
    block: str = ""
    stages: tuple = ()
    model: str = "resnet"

    def __post_init__(self):
        block, stages = ARCHS[self.arch]
        object.__setattr__(self, "block", block)
        object.__setattr__(self, "stages", stages)

    @property
    def name(self) -> str:
        opt = f"-{self.optimizer}" if self.mode == "train" else ""
        return f"{self.arch}-w{self.width}-i{self.image}-b{self.batch}{opt}-{self.mode}"


WIDTHS = (8, 16)
IMAGE_BATCH = ((32, 2), (64, 1))
MODES = (("sgd", "train"), ("adam", "train"), (None, "infer"))
#: The deep variants make training graphs of 3,600-6,900 instructions: they
#: get one input size and no Adam, to keep the suite's size and build time modest.
DEEP = ("resnet34", "resnet50")
DEEP_MODES = (("sgd", "train"), (None, "infer"))


def configs() -> list[Config]:
    out = []
    for arch in ARCHS:
        ib = IMAGE_BATCH[:1] if arch in DEEP else IMAGE_BATCH
        modes = DEEP_MODES if arch in DEEP else MODES
        for w, (i, b), (opt, mode) in itertools.product(WIDTHS, ib, modes):
            out.append(Config(arch, w, i, b, opt, mode))
    return out


def _conv_init(kg, k, c_in, c_out):
    std = math.sqrt(2.0 / (k * k * c_in))  # He initialization
    return kg.normal((k, k, c_in, c_out), std)


def _bn_init(c):
    return {"g": jnp.ones((c,), jnp.float32), "b": jnp.zeros((c,), jnp.float32)}


def _bn_stats(c):
    return {"mean": jnp.zeros((c,), jnp.float32), "var": jnp.ones((c,), jnp.float32)}


def init(cfg: Config, seed: int = 0):
    """``(params, batch_stats)``."""
    kg = common.KeyGen(seed)
    w = cfg.width
    params: dict[str, Any] = {"stem": {"conv": _conv_init(kg, 3, 3, w), "bn": _bn_init(w)}, "stages": []}
    stats: dict[str, Any] = {"stem": _bn_stats(w), "stages": []}
    c_in = w
    for si, n_blocks in enumerate(cfg.stages):
        c_mid = w * 2**si
        c_out = c_mid * 4 if cfg.block == "bottleneck" else c_mid
        pstage: list[Any] = []
        sstage: list[Any] = []
        for bi in range(n_blocks):
            stride = 2 if (si > 0 and bi == 0) else 1
            if cfg.block == "basic":
                shapes = [(3, c_in, c_mid), (3, c_mid, c_out)]
            else:
                shapes = [(1, c_in, c_mid), (3, c_mid, c_mid), (1, c_mid, c_out)]
            pb: dict[str, Any] = {"convs": [_conv_init(kg, k, a, b) for k, a, b in shapes], "bns": [_bn_init(b) for _, _, b in shapes]}
            sb: dict[str, Any] = {"bns": [_bn_stats(b) for _, _, b in shapes]}
            if stride != 1 or c_in != c_out:
                pb["proj"] = {"conv": _conv_init(kg, 1, c_in, c_out), "bn": _bn_init(c_out)}
                sb["proj"] = _bn_stats(c_out)
            pstage.append(pb)
            sstage.append(sb)
            c_in = c_out
        params["stages"].append(pstage)
        stats["stages"].append(sstage)
    params["head"] = common.dense_init(kg, c_in, NUM_CLASSES, std=0.01)
    return params, stats


def conv(x, w, stride=1):
    k = w.shape[0]
    pad = (k - 1) // 2
    return jax.lax.conv_general_dilated(
        x, w, (stride, stride), [(pad, pad), (pad, pad)], dimension_numbers=("NHWC", "HWIO", "NHWC")
    )


def batch_norm(p, s, x, train: bool, momentum=0.9, eps=1e-5):
    """Returns ``(y, new_stats)``."""
    if train:
        mean = jnp.mean(x, axis=(0, 1, 2))
        var = jnp.mean(jnp.square(x - mean), axis=(0, 1, 2))
        new = {
            "mean": momentum * s["mean"] + (1 - momentum) * jax.lax.stop_gradient(mean),
            "var": momentum * s["var"] + (1 - momentum) * jax.lax.stop_gradient(var),
        }
    else:
        mean, var, new = s["mean"], s["var"], s
    y = (x - mean) * jax.lax.rsqrt(var + eps) * p["g"] + p["b"]
    return y, new


def forward(params, stats, images, cfg: Config, train: bool):
    """``(logits, new_stats)``."""
    new_stats: dict[str, Any] = {"stem": None, "stages": []}
    x = conv(images, params["stem"]["conv"])
    x, new_stats["stem"] = batch_norm(params["stem"]["bn"], stats["stem"], x, train)
    x = jax.nn.relu(x)
    for si, (pstage, sstage) in enumerate(zip(params["stages"], stats["stages"])):
        nstage = []
        for bi, (pb, sb) in enumerate(zip(pstage, sstage)):
            stride = 2 if (si > 0 and bi == 0) else 1
            nb: dict[str, Any] = {"bns": []}
            shortcut = x
            if "proj" in pb:
                shortcut, nb["proj"] = batch_norm(pb["proj"]["bn"], sb["proj"], conv(x, pb["proj"]["conv"], stride), train)
            h = x
            n = len(pb["convs"])
            for ci, (w, pbn, sbn) in enumerate(zip(pb["convs"], pb["bns"], sb["bns"])):
                # The strided convolution: the 3x3 one (first of basic, second of bottleneck).
                s = stride if (ci == 0 if cfg.block == "basic" else ci == 1) else 1
                h, st = batch_norm(pbn, sbn, conv(h, w, s), train)
                nb["bns"].append(st)
                if ci < n - 1:
                    h = jax.nn.relu(h)
            x = jax.nn.relu(h + shortcut)
            nstage.append(nb)
        new_stats["stages"].append(nstage)
    x = jnp.mean(x, axis=(1, 2))  # global average pooling
    return common.dense(params["head"], x), new_stats


def build(cfg: Config, seed: int = 0):
    params, stats = init(cfg, seed)
    kg = common.KeyGen(seed + 1)
    images = kg.normal((cfg.batch, cfg.image, cfg.image, 3), 1.0)
    labels = kg.randint((cfg.batch,), 0, NUM_CLASSES)

    if cfg.mode == "infer":

        def infer(params, stats, images):
            return forward(params, stats, images, cfg, train=False)[0]

        return jax.jit(infer), (params, stats, images)

    def loss_fn(params, stats, images, labels):
        logits, new_stats = forward(params, stats, images, cfg, train=True)
        l2 = sum(jnp.sum(jnp.square(w)) for w in jax.tree_util.tree_leaves(params) if w.ndim == 4)
        return common.cross_entropy(logits, labels) + 5e-4 * 0.5 * l2, new_stats

    opt = common.make_optimizer(cfg.optimizer)

    def step(params, stats, opt_state, images, labels):
        (loss, new_stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, stats, images, labels)
        new_params, new_opt_state = opt.update(grads, opt_state, params)
        return new_params, new_stats, new_opt_state, loss

    return jax.jit(step), (params, stats, opt.init(params), images, labels)
