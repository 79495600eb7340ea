"""GPT-2 (decoder-only transformer) training steps and inference forwards.

Faithful to GPT-2's architecture at small widths: learned token and position
embeddings, pre-layer-norm blocks (``x + attn(ln1(x))``, ``x + mlp(ln2(x))``),
causal multi-head self-attention with a fused QKV projection, a 4x MLP with
tanh-GELU, a final layer norm, and an LM head tied to the token embedding.
Residual projections use GPT-2's ``0.02 / sqrt(2 * n_layer)`` initialization.

Training step: next-token cross-entropy, ``jax.value_and_grad``, then SGD
(momentum) or Adam; returns ``(new_params, new_opt_state, loss)``. Precision
``bf16`` is mixed precision: f32 master weights and optimizer state, bf16
activations and matmuls, f32 layer-norm statistics, softmax and loss.
Inference: the forward pass returning the logits.
"""
from __future__ import annotations

import dataclasses
import itertools
import math

import jax
import jax.numpy as jnp
from xla_gym_datasets.models import common

FAMILY = "gpt2"
VOCAB = 512


@dataclasses.dataclass(frozen=True)
class Config:
    n_layer: int
    d_model: int
    n_head: int
    seq_len: int
    batch: int
    optimizer: str | None  # "sgd" | "adam"; None for inference
    precision: str  # "f32" | "bf16"
    mode: str  # "train" | "infer"
    vocab: int = VOCAB
    model: str = "gpt2"

    @property
    def name(self) -> str:
        opt = f"-{self.optimizer}" if self.mode == "train" else ""
        return (
            f"gpt2-l{self.n_layer}-d{self.d_model}-h{self.n_head}-s{self.seq_len}"
            f"-b{self.batch}{opt}-{self.precision}-{self.mode}"
        )


# The grid. (width, heads) pairs, (seq, batch) pairs.
LAYERS = (1, 2, 3, 4, 6)
WIDTH_HEADS = ((64, 2), (64, 4), (128, 4))
SEQ_BATCH = ((32, 2), (64, 1))
OPTIMIZERS = ("sgd", "adam")
PRECISIONS = ("f32", "bf16")

#: The project's bundled default benchmark (see datasets/DEFAULT_BENCHMARK).
DEFAULT = Config(2, 64, 4, 32, 2, "adam", "f32", "train")


def configs() -> list[Config]:
    out = []
    for nl, (d, h), (s, b), prec in itertools.product(LAYERS, WIDTH_HEADS, SEQ_BATCH, PRECISIONS):
        for opt in OPTIMIZERS:
            out.append(Config(nl, d, h, s, b, opt, prec, "train"))
        out.append(Config(nl, d, h, s, b, None, prec, "infer"))
    return out


def init_params(cfg: Config, seed: int = 0):
    kg = common.KeyGen(seed)
    d = cfg.d_model
    proj_std = 0.02 / math.sqrt(2 * cfg.n_layer)
    blocks = []
    for _ in range(cfg.n_layer):
        blocks.append(
            {
                "ln1": common.ln_init(d),
                "attn": common.attention_init(kg, d, out_std=proj_std),
                "ln2": common.ln_init(d),
                "mlp": {
                    "fc": common.dense_init(kg, d, 4 * d, std=0.02),
                    "proj": common.dense_init(kg, 4 * d, d, std=proj_std),
                },
            }
        )
    return {
        "wte": common.normal(kg, (cfg.vocab, d), 0.02),
        "wpe": common.normal(kg, (cfg.seq_len, d), 0.01),
        "blocks": blocks,
        "ln_f": common.ln_init(d),
    }


def forward(params, tokens, cfg: Config):
    """Logits [batch, seq, vocab]."""
    dtype = common.DTYPES[cfg.precision]
    p = common.cast_tree(params, dtype)
    b, s = tokens.shape
    x = p["wte"][tokens] + p["wpe"][None, :s, :]
    causal = jnp.tril(jnp.ones((s, s), dtype=bool))[None, None]
    for blk in p["blocks"]:
        x = x + common.multi_head_attention(blk["attn"], common.layer_norm(blk["ln1"], x), cfg.n_head, causal)
        h = common.gelu(common.dense(blk["mlp"]["fc"], common.layer_norm(blk["ln2"], x)))
        x = x + common.dense(blk["mlp"]["proj"], h)
    x = common.layer_norm(p["ln_f"], x)
    return x @ p["wte"].T  # tied LM head


def build(cfg: Config, seed: int = 0):
    params = init_params(cfg, seed)
    tokens = common.KeyGen(seed + 1).randint((cfg.batch, cfg.seq_len + 1), 0, cfg.vocab)
    if cfg.mode == "infer":

        def infer(params, tokens):
            return forward(params, tokens, cfg)

        return jax.jit(infer), (params, tokens[:, :-1])

    def loss_fn(params, inputs, targets):
        return common.cross_entropy(forward(params, inputs, cfg), targets)

    opt = common.make_optimizer(cfg.optimizer)
    step = common.train_step_fn(loss_fn, opt)
    return jax.jit(step), (params, opt.init(params), tokens[:, :-1], tokens[:, 1:])
