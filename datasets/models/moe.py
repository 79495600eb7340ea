"""Mixture-of-experts routing and data-dependent control flow.

Three models, chosen to exercise what the dense families do not: ``sort``,
``top-k``, ``gather``/``scatter``, ``while`` loops with data-dependent trip
counts, ``conditional`` (``lax.cond`` / ``lax.switch``), dynamic slices and
in-place cache updates.

- ``moe``: a GPT-style decoder (pre-LN, causal attention, tied embeddings)
  whose feed-forward in every other layer is a mixture of experts with
  token-choice top-k routing and expert capacity (Switch / GShard): router
  softmax -> ``lax.top_k`` -> position of every assignment inside its expert
  by a stable ``argsort`` of expert ids and a ``scatter``-add histogram ->
  dispatch into ``[experts, capacity, d]`` buffers by ``scatter`` (overflow
  dropped) -> batched expert MLPs -> combine by ``gather`` and
  ``scatter``-add, weighted by the gates; plus the Switch load-balancing
  loss. Training step (Adam) and inference.
- ``decode``: autoregressive generation with a KV cache inside one
  ``lax.while_loop`` that stops when every sequence has emitted EOS (or at
  the maximum length); the prompt is teacher-forced through ``lax.cond``;
  next token by greedy argmax or by top-k sampling (``lax.top_k`` then a
  Gumbel-max draw with ``jax.random`` inside the loop). Inference only.
- ``act``: an adaptive-computation-time encoder (Graves 2016, as in the
  Universal Transformer): a ``lax.while_loop`` applies shared layers, chosen
  per step with ``lax.switch``, until every position has halted. Inference
  only (reverse-mode differentiation of a while loop does not exist).
"""
from __future__ import annotations

import dataclasses
import itertools
import math

import jax
import jax.numpy as jnp
from xla_gym_datasets.models import common

FAMILY = "moe"
VOCAB = 256
EOS = 1


@dataclasses.dataclass(frozen=True)
class Config:
    model: str  # "moe" | "decode" | "act"
    d_model: int
    n_layer: int
    n_head: int
    seq_len: int
    batch: int
    mode: str  # "train" | "infer"
    optimizer: str | None = None
    n_experts: int = 0  # moe
    top_k: int = 0  # moe: experts per token; decode: k of top-k sampling (0 = greedy)
    max_steps: int = 0  # act: ponder steps; decode: tokens generated
    vocab: int = VOCAB

    @property
    def name(self) -> str:
        base = f"{self.model}-l{self.n_layer}-d{self.d_model}-h{self.n_head}-s{self.seq_len}-b{self.batch}"
        if self.model == "moe":
            opt = f"-{self.optimizer}" if self.mode == "train" else ""
            return f"{base}-e{self.n_experts}-k{self.top_k}{opt}-{self.mode}"
        if self.model == "decode":
            how = f"top{self.top_k}" if self.top_k else "greedy"
            return f"{base}-g{self.max_steps}-{how}-{self.mode}"
        return f"{base}-n{self.max_steps}-{self.mode}"


WIDTHS = (32, 48, 64, 96)
HEADS = 2
CAPACITY_FACTOR = 1.25


def configs() -> list[Config]:
    out = []
    for d in WIDTHS:
        for nl, (e, k), (opt, mode) in itertools.product(
            (2, 4), ((4, 1), (4, 2), (8, 2)), (("adam", "train"), (None, "infer"))
        ):
            out.append(Config("moe", d, nl, HEADS, 32, 2, mode, opt, e, k))
        for nl, k in itertools.product((1, 2), (0, 8)):
            out.append(Config("decode", d, nl, HEADS, 8, 2, "infer", top_k=k, max_steps=24))
        for n in (4, 8):
            out.append(Config("act", d, 2, HEADS, 16, 2, "infer", max_steps=n))
    return out


# ---------------------------------------------------------------------------
# Mixture of experts
# ---------------------------------------------------------------------------


def moe_init(kg, d, n_experts):
    f = 4 * d
    return {
        "router": kg.normal((d, n_experts), 0.02),
        "w1": kg.normal((n_experts, d, f), 1.0 / math.sqrt(d)),
        "b1": jnp.zeros((n_experts, f), jnp.float32),
        "w2": kg.normal((n_experts, f, d), 0.02 / math.sqrt(f)),
        "b2": jnp.zeros((n_experts, d), jnp.float32),
    }


def moe_ffn(p, x, n_experts: int, top_k: int):
    """Token-choice top-k routing with capacity. Returns ``(y, aux_loss)``."""
    b, s, d = x.shape
    t = b * s
    e = n_experts
    xt = x.reshape(t, d)
    probs = jax.nn.softmax(xt @ p["router"], axis=-1)  # [t, e]
    gate, expert = jax.lax.top_k(probs, top_k)  # [t, k]
    if top_k > 1:
        gate = gate / jnp.sum(gate, axis=-1, keepdims=True)
    capacity = int(math.ceil(t * top_k / e * CAPACITY_FACTOR))

    flat_e = expert.reshape(-1)  # assignment a = token * k + choice
    flat_tok = jnp.repeat(jnp.arange(t), top_k)
    flat_gate = gate.reshape(-1)
    n = flat_e.shape[0]
    # Position of each assignment within its expert, in token order.
    order = jnp.argsort(flat_e, stable=True)
    counts = jnp.zeros((e,), jnp.int32).at[flat_e].add(1)
    starts = jnp.cumsum(counts) - counts
    rank_sorted = jnp.arange(n) - starts[flat_e[order]]
    pos = jnp.zeros((n,), jnp.int32).at[order].set(rank_sorted)
    keep = (pos < capacity).astype(x.dtype)

    buf = jnp.zeros((e, capacity, d), x.dtype).at[flat_e, pos].set(xt[flat_tok], mode="drop")
    h = common.gelu(jnp.einsum("ecd,edf->ecf", buf, p["w1"]) + p["b1"][:, None, :])
    y = jnp.einsum("ecf,efd->ecd", h, p["w2"]) + p["b2"][:, None, :]
    out = y.at[flat_e, pos].get(mode="fill", fill_value=0)  # [n, d]
    out = out * (flat_gate * keep)[:, None]
    yt = jnp.zeros((t, d), x.dtype).at[flat_tok].add(out)

    # Switch-Transformer load-balancing loss.
    frac = jnp.mean(jax.nn.one_hot(expert[:, 0], e), axis=0)
    aux = e * jnp.sum(frac * jnp.mean(probs, axis=0))
    return yt.reshape(b, s, d), aux


def moe_init_params(cfg: Config, seed=0):
    kg = common.KeyGen(seed)
    d = cfg.d_model
    blocks = []
    for i in range(cfg.n_layer):
        blk = {"ln1": common.ln_init(d), "attn": common.attention_init(kg, d), "ln2": common.ln_init(d)}
        if i % 2 == 1:
            blk["moe"] = moe_init(kg, d, cfg.n_experts)
        else:
            blk["mlp"] = {"fc": common.dense_init(kg, d, 4 * d, 0.02), "proj": common.dense_init(kg, 4 * d, d, 0.02)}
        blocks.append(blk)
    return {
        "wte": kg.normal((cfg.vocab, d), 0.02),
        "wpe": kg.normal((cfg.seq_len, d), 0.01),
        "blocks": blocks,
        "ln_f": common.ln_init(d),
    }


def moe_forward(params, tokens, cfg: Config):
    b, s = tokens.shape
    x = params["wte"][tokens] + params["wpe"][None, :s]
    causal = jnp.tril(jnp.ones((s, s), dtype=bool))[None, None]
    aux_total = 0.0
    for blk in params["blocks"]:
        x = x + common.multi_head_attention(blk["attn"], common.layer_norm(blk["ln1"], x), cfg.n_head, causal)
        h = common.layer_norm(blk["ln2"], x)
        if "moe" in blk:
            y, aux = moe_ffn(blk["moe"], h, cfg.n_experts, cfg.top_k)
            aux_total = aux_total + aux
        else:
            y = common.dense(blk["mlp"]["proj"], common.gelu(common.dense(blk["mlp"]["fc"], h)))
        x = x + y
    x = common.layer_norm(params["ln_f"], x)
    return x @ params["wte"].T, aux_total


def build_moe(cfg: Config, seed=0):
    params = moe_init_params(cfg, seed)
    tokens = common.KeyGen(seed + 1).randint((cfg.batch, cfg.seq_len + 1), 0, cfg.vocab)
    if cfg.mode == "infer":
        return jax.jit(lambda params, tokens: moe_forward(params, tokens, cfg)[0]), (params, tokens[:, :-1])

    def loss_fn(params, inputs, targets):
        logits, aux = moe_forward(params, inputs, cfg)
        return common.cross_entropy(logits, targets) + 0.01 * aux

    opt = common.make_optimizer(cfg.optimizer)
    step = common.train_step_fn(loss_fn, opt)
    return jax.jit(step), (params, opt.init(params), tokens[:, :-1], tokens[:, 1:])


# ---------------------------------------------------------------------------
# Autoregressive decoding in a while loop
# ---------------------------------------------------------------------------


def build_decode(cfg: Config, seed=0):
    d, nh = cfg.d_model, cfg.n_head
    hd = d // nh
    prompt_len = cfg.seq_len
    total = prompt_len + cfg.max_steps
    kg = common.KeyGen(seed)
    params = {
        "wte": kg.normal((cfg.vocab, d), 0.02),
        "wpe": kg.normal((total, d), 0.01),
        "blocks": [
            {
                "ln1": common.ln_init(d),
                "attn": common.attention_init(kg, d),
                "ln2": common.ln_init(d),
                "mlp": {"fc": common.dense_init(kg, d, 4 * d, 0.02), "proj": common.dense_init(kg, 4 * d, d, 0.02)},
            }
            for _ in range(cfg.n_layer)
        ],
        "ln_f": common.ln_init(d),
    }
    data = common.KeyGen(seed + 1)
    prompt = data.randint((cfg.batch, prompt_len), 2, cfg.vocab)
    rng = jax.random.key_data(jax.random.PRNGKey(seed + 2))

    def decode(params, prompt, rng):
        b = prompt.shape[0]
        L = len(params["blocks"])
        tokens = jnp.zeros((b, total), jnp.int32)
        tokens = jax.lax.dynamic_update_slice(tokens, prompt, (0, 0))
        cache = jnp.zeros((L, 2, b, nh, total, hd), jnp.float32)
        done = jnp.zeros((b,), bool)

        def cond(state):
            step, _, _, done, _ = state
            return jnp.logical_and(step < total - 1, jnp.logical_not(jnp.all(done)))

        def body(state):
            step, tokens, cache, done, key = state
            tok = jax.lax.dynamic_slice(tokens, (0, step), (b, 1))[:, 0]
            x = params["wte"][tok] + jax.lax.dynamic_slice(params["wpe"], (step, 0), (1, d))
            visible = (jnp.arange(total) <= step)[None, None, :]
            for li, blk in enumerate(params["blocks"]):
                h = common.layer_norm(blk["ln1"], x)
                q, k, v = jnp.split(common.dense(blk["attn"]["qkv"], h), 3, axis=-1)
                q, k, v = (t.reshape(b, nh, 1, hd) for t in (q, k, v))
                kv = jnp.stack([k, v])[None]  # [1, 2, b, nh, 1, hd]
                cache = jax.lax.dynamic_update_slice(cache, kv, (li, 0, 0, 0, step, 0))
                ck, cv = cache[li, 0], cache[li, 1]
                scores = jnp.einsum("bhqd,bhkd->bhqk", q, ck)[:, :, 0] / math.sqrt(hd)
                w = jax.nn.softmax(jnp.where(visible, scores, -1e9), axis=-1)
                a = jnp.einsum("bhk,bhkd->bhd", w, cv).reshape(b, d)
                x = x + common.dense(blk["attn"]["proj"], a)
                x = x + common.dense(blk["mlp"]["proj"], common.gelu(common.dense(blk["mlp"]["fc"], common.layer_norm(blk["ln2"], x))))
            logits = common.layer_norm(params["ln_f"], x) @ params["wte"].T  # [b, vocab]
            key, sub = jax.random.split(key)
            if cfg.top_k:
                vals, idx = jax.lax.top_k(logits, cfg.top_k)
                choice = jax.random.categorical(sub, vals, axis=-1)
                sampled = jnp.take_along_axis(idx, choice[:, None], axis=-1)[:, 0]
            else:
                sampled = jnp.argmax(logits, axis=-1).astype(jnp.int32)
            nxt = step + 1
            # Teacher-force the prompt, then generate.
            new = jax.lax.cond(
                nxt < prompt_len,
                lambda: jax.lax.dynamic_slice(tokens, (0, nxt), (b, 1))[:, 0],
                lambda: jnp.where(done, 0, sampled),
            )
            done = jnp.logical_or(done, jnp.logical_and(nxt >= prompt_len, new == EOS))
            tokens = jax.lax.dynamic_update_slice(tokens, new[:, None], (0, nxt))
            return nxt, tokens, cache, done, key

        key = jax.random.wrap_key_data(rng)
        state = (jnp.int32(0), tokens, cache, done, key)
        step, tokens, _, done, _ = jax.lax.while_loop(cond, body, state)
        return tokens, step

    return jax.jit(decode), (params, prompt, rng)


# ---------------------------------------------------------------------------
# Adaptive computation time
# ---------------------------------------------------------------------------


def build_act(cfg: Config, seed=0):
    d = cfg.d_model
    kg = common.KeyGen(seed)
    params = {
        "embed": kg.normal((cfg.vocab, d), 0.02),
        "pos": kg.normal((cfg.seq_len, d), 0.02),
        "step_emb": kg.normal((cfg.max_steps, d), 0.02),
        "layers": [
            {
                "ln1": common.ln_init(d),
                "attn": common.attention_init(kg, d),
                "ln2": common.ln_init(d),
                "mlp": {"fc": common.dense_init(kg, d, 4 * d, 0.02), "proj": common.dense_init(kg, 4 * d, d, 0.02)},
            }
            for _ in range(cfg.n_layer)
        ],
        "halt": common.dense_init(kg, d, 1, 0.02),
        "out": common.dense_init(kg, d, cfg.vocab, 0.02),
    }
    params["halt"]["b"] = jnp.full((1,), -1.0, jnp.float32)
    tokens = common.KeyGen(seed + 1).randint((cfg.batch, cfg.seq_len), 0, cfg.vocab)
    threshold = 0.99

    def layer(blk, x):
        x = x + common.multi_head_attention(blk["attn"], common.layer_norm(blk["ln1"], x), cfg.n_head)
        h = common.gelu(common.dense(blk["mlp"]["fc"], common.layer_norm(blk["ln2"], x)))
        return x + common.dense(blk["mlp"]["proj"], h)

    def act(params, tokens):
        b, s = tokens.shape
        x = params["embed"][tokens] + params["pos"][None]
        zeros = jnp.zeros((b, s), jnp.float32)

        def cond(state):
            n, _, halting, _, _, _ = state
            return jnp.logical_and(n < cfg.max_steps, jnp.any(halting < threshold))

        def body(state):
            n, x, halting, remainders, n_updates, acc = state
            x = x + jax.lax.dynamic_slice_in_dim(params["step_emb"], n, 1)[None]
            p = jax.nn.sigmoid(common.dense(params["halt"], x))[..., 0]
            running = (halting < 1.0).astype(jnp.float32)
            new_halted = (halting + p * running > threshold).astype(jnp.float32) * running
            still = (halting + p * running <= threshold).astype(jnp.float32) * running
            halting = halting + p * still
            remainders = remainders + new_halted * (1 - halting)
            halting = halting + new_halted * remainders
            n_updates = n_updates + still + new_halted
            w = p * still + new_halted * remainders
            # A shared layer per step parity, chosen by a switch.
            x = jax.lax.switch(n % len(params["layers"]), [lambda x, blk=blk: layer(blk, x) for blk in params["layers"]], x)
            acc = acc * (1 - w)[..., None] + x * w[..., None]
            return n + 1, x, halting, remainders, n_updates, acc

        state = (jnp.int32(0), x, zeros, zeros, zeros, jnp.zeros_like(x))
        _, _, _, remainders, n_updates, acc = jax.lax.while_loop(cond, body, state)
        ponder_cost = jnp.mean(n_updates + remainders)
        return common.dense(params["out"], acc), ponder_cost

    return jax.jit(act), (params, tokens)


def build(cfg: Config, seed: int = 0):
    if cfg.model == "moe":
        return build_moe(cfg, seed)
    if cfg.model == "decode":
        return build_decode(cfg, seed)
    if cfg.model == "act":
        return build_act(cfg, seed)
    raise ValueError(cfg.model)
