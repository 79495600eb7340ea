"""BERT encoder: masked-language-model training steps and inference forwards.

Faithful to BERT's architecture at small widths: token, position and
segment (token-type) embeddings summed and layer-normalized; post-layer-norm
encoder layers (``x = LN(x + attn(x))``, ``x = LN(x + ffn(x))``) with
bidirectional self-attention masked only at padding, a 4x feed-forward with
exact (erf) GELU; the MLM head (dense + GELU + LN, then a decoder tied to the
token embedding plus an output bias), applied, as in BERT's pre-training
code, only at the masked positions, which are gathered from the sequence.
No next-sentence head (as in RoBERTa).

Training step: weighted cross-entropy over the masked positions,
``jax.value_and_grad``, AdamW (BERT's optimizer) or SGD with momentum;
returns ``(new_params, new_opt_state, loss)``. Inference: MLM logits at every
position (fill-mask). ``bf16`` is mixed precision as in ``gpt2.py``.
"""
from __future__ import annotations

import dataclasses
import itertools

import jax
import jax.numpy as jnp
from xla_gym_datasets.models import common

FAMILY = "bert"
VOCAB = 512
TYPE_VOCAB = 2


@dataclasses.dataclass(frozen=True)
class Config:
    n_layer: int
    d_model: int
    n_head: int
    seq_len: int
    batch: int
    optimizer: str | None  # "adamw" | "sgd"; None for inference
    precision: str  # "f32" | "bf16"
    mode: str  # "train" | "infer"
    vocab: int = VOCAB
    model: str = "bert"

    @property
    def n_predictions(self) -> int:
        """Masked positions per sequence (BERT's max_predictions_per_seq, 15%)."""
        return max(1, round(0.15 * self.seq_len))

    @property
    def name(self) -> str:
        opt = f"-{self.optimizer}" if self.mode == "train" else ""
        return (
            f"bert-l{self.n_layer}-d{self.d_model}-h{self.n_head}-s{self.seq_len}"
            f"-b{self.batch}{opt}-{self.precision}-{self.mode}"
        )


LAYERS = (1, 2, 3, 4, 6)
WIDTH_HEADS = ((64, 2), (128, 4))
SEQ_BATCH = ((32, 2), (64, 1))
#: (optimizer, precision, mode)
MODES = (("adamw", "f32", "train"), ("adamw", "bf16", "train"), (None, "f32", "infer"))


def configs() -> list[Config]:
    return [
        Config(nl, d, h, s, b, opt, prec, mode)
        for nl, (d, h), (s, b), (opt, prec, mode) in itertools.product(LAYERS, WIDTH_HEADS, SEQ_BATCH, MODES)
    ]


def init_params(cfg: Config, seed: int = 0):
    kg = common.KeyGen(seed)
    d = cfg.d_model
    layers = []
    for _ in range(cfg.n_layer):
        layers.append(
            {
                "attn": common.attention_init(kg, d),
                "ln_attn": common.ln_init(d),
                "ffn": {
                    "fc": common.dense_init(kg, d, 4 * d, std=0.02),
                    "out": common.dense_init(kg, 4 * d, d, std=0.02),
                },
                "ln_ffn": common.ln_init(d),
            }
        )
    return {
        "emb": {
            "word": common.normal(kg, (cfg.vocab, d), 0.02),
            "pos": common.normal(kg, (cfg.seq_len, d), 0.02),
            "type": common.normal(kg, (TYPE_VOCAB, d), 0.02),
            "ln": common.ln_init(d),
        },
        "layers": layers,
        "mlm": {
            "transform": common.dense_init(kg, d, d, std=0.02),
            "ln": common.ln_init(d),
            "bias": jnp.zeros((cfg.vocab,), jnp.float32),
        },
    }


def encode(p, input_ids, token_type_ids, attention_mask, cfg: Config):
    """Sequence output [batch, seq, d] (``p`` already cast to the compute dtype)."""
    b, s = input_ids.shape
    e = p["emb"]
    x = e["word"][input_ids] + e["pos"][None, :s] + e["type"][token_type_ids]
    x = common.layer_norm(e["ln"], x, eps=1e-12)
    mask = (attention_mask > 0)[:, None, None, :]  # bidirectional, padding only
    for layer in p["layers"]:
        x = common.layer_norm(layer["ln_attn"], x + common.multi_head_attention(layer["attn"], x, cfg.n_head, mask), eps=1e-12)
        h = jax.nn.gelu(common.dense(layer["ffn"]["fc"], x), approximate=False)
        x = common.layer_norm(layer["ln_ffn"], x + common.dense(layer["ffn"]["out"], h), eps=1e-12)
    return x


def mlm_logits(p, x):
    m = p["mlm"]
    h = common.layer_norm(m["ln"], jax.nn.gelu(common.dense(m["transform"], x), approximate=False), eps=1e-12)
    return h @ p["emb"]["word"].T + m["bias"]  # decoder tied to the word embedding


def make_batch(cfg: Config, seed: int = 1):
    kg = common.KeyGen(seed)
    b, s, n = cfg.batch, cfg.seq_len, cfg.n_predictions
    input_ids = kg.randint((b, s), 0, cfg.vocab)
    token_type_ids = (jnp.arange(s)[None, :] >= s // 2).astype(jnp.int32) * jnp.ones((b, 1), jnp.int32)
    lengths = kg.randint((b,), s // 2, s + 1)
    attention_mask = (jnp.arange(s)[None, :] < lengths[:, None]).astype(jnp.int32)
    positions = jnp.sort(kg.randint((b, n), 0, s // 2), axis=-1)
    labels = kg.randint((b, n), 0, cfg.vocab)
    weights = jnp.ones((b, n), jnp.float32)
    return input_ids, token_type_ids, attention_mask, positions, labels, weights


def build(cfg: Config, seed: int = 0):
    params = init_params(cfg, seed)
    input_ids, token_type_ids, attention_mask, positions, labels, weights = make_batch(cfg, seed + 1)
    dtype = common.DTYPES[cfg.precision]

    if cfg.mode == "infer":

        def infer(params, input_ids, token_type_ids, attention_mask):
            p = common.cast_tree(params, dtype)
            return mlm_logits(p, encode(p, input_ids, token_type_ids, attention_mask, cfg))

        return jax.jit(infer), (params, input_ids, token_type_ids, attention_mask)

    def loss_fn(params, input_ids, token_type_ids, attention_mask, positions, labels, weights):
        p = common.cast_tree(params, dtype)
        x = encode(p, input_ids, token_type_ids, attention_mask, cfg)
        x = jnp.take_along_axis(x, positions[..., None], axis=1)  # gather masked positions
        return common.cross_entropy(mlm_logits(p, x), labels, weights)

    opt = common.make_optimizer(cfg.optimizer)
    step = common.train_step_fn(loss_fn, opt)
    batch = (input_ids, token_type_ids, attention_mask, positions, labels, weights)
    return jax.jit(step), (params, opt.init(params)) + batch
