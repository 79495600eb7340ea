"""Flax (Linen and NNX) models from the library's own layers: MLP, CNN with
batch norm, transformer LM (unrolled and ``nn.scan``-ned layers), LSTM/GRU
through ``nn.RNN`` (a scan), and NNX MLP / transformer; inference and optax
training steps."""
from __future__ import annotations

from typing import Any

from xla_gym_datasets.realworld.spec import LibraryInfo, Spec, optax_train_step, optimizer

__all__ = ["INFO", "specs"]

INFO = LibraryInfo(
    name="flax",
    distributions=("flax", "optax"),
    license="Apache-2.0",
    homepage="https://github.com/google/flax",
    description="Flax Linen and NNX models (MLP, CNN, transformer, RNN): inference and optax training steps",
    validation=("linen-cnn",),
    test=("linen-rnn", "nnx-transformer"),
)


def _xent(logits, labels):
    import optax

    return optax.softmax_cross_entropy_with_integer_labels(logits.astype("float32"), labels).mean()


def _linen_transformer(n_layer: int, d: int, heads: int, vocab: int, scan: bool):
    import flax.linen as nn
    import jax.numpy as jnp

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x, _=None):
            h = nn.LayerNorm()(x)
            mask = nn.make_causal_mask(jnp.ones(x.shape[:2], "int32"))
            x = x + nn.MultiHeadDotProductAttention(num_heads=heads)(h, h, mask=mask)
            h = nn.LayerNorm()(x)
            h = nn.Dense(4 * d)(h)
            x = x + nn.Dense(d)(nn.gelu(h))
            return (x, None) if scan else x

    class LM(nn.Module):
        @nn.compact
        def __call__(self, tokens):
            emb = nn.Embed(vocab, d)
            x = emb(tokens) + self.param("pos", nn.initializers.normal(0.02), (tokens.shape[1], d))
            if scan:
                Stack = nn.scan(Block, variable_axes={"params": 0}, split_rngs={"params": True}, length=n_layer)
                x, _ = Stack()(x, None)
            else:
                for _ in range(n_layer):
                    x = Block()(x)
            return emb.attend(nn.LayerNorm()(x))

    return LM()


def _linen_mlp(depth: int, width: int):
    import flax.linen as nn

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            for _ in range(depth):
                x = nn.relu(nn.Dense(width)(x))
            return nn.Dense(10)(x)

    return MLP()


def _linen_cnn(width: int, blocks: int):
    import flax.linen as nn

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x, train: bool):
            for i in range(blocks):
                x = nn.Conv(width * 2**i, (3, 3))(x)
                x = nn.BatchNorm(use_running_average=not train)(x)
                x = nn.avg_pool(nn.relu(x), (2, 2), (2, 2))
            return nn.Dense(10)(x.mean(axis=(1, 2)))

    return CNN()


def _linen_rnn(cell: str, hidden: int, layers: int, vocab: int):
    import flax.linen as nn

    class RNNLM(nn.Module):
        @nn.compact
        def __call__(self, tokens):
            x = nn.Embed(vocab, hidden)(tokens)
            for _ in range(layers):
                c = nn.OptimizedLSTMCell(hidden) if cell == "lstm" else nn.GRUCell(hidden)
                x = nn.RNN(c)(x)
            return nn.Dense(vocab)(x)

    return RNNLM()


def _supervised(model, x, y, mode: str, opt: str | None, extra=None):
    """(fn, args) for a Linen model taking one input ``x`` and labels ``y``."""
    import jax

    params = model.init(jax.random.PRNGKey(0), x)["params"]
    if mode == "infer":
        return (lambda p, x: model.apply({"params": p}, x)), (params, x)

    def loss(p, x, y):
        return _xent(model.apply({"params": p}, x), y)

    o = optimizer(opt or "adam")
    return optax_train_step(loss, o), (params, o.init(params), x, y)


def _cnn(width: int, blocks: int, image: int, batch: int, mode: str, opt: str | None):
    import jax
    import jax.numpy as jnp

    model = _linen_cnn(width, blocks)
    x = jnp.ones((batch, image, image, 3), jnp.float32)
    y = jnp.zeros((batch,), jnp.int32)
    variables = model.init(jax.random.PRNGKey(0), x, train=False)
    params, stats = variables["params"], variables["batch_stats"]
    if mode == "infer":
        return (lambda p, s, x: model.apply({"params": p, "batch_stats": s}, x, train=False)), (params, stats, x)
    o = optimizer(opt or "sgd")

    def step(p, s, opt_state, x, y):
        def loss(p):
            logits, new = model.apply({"params": p, "batch_stats": s}, x, train=True, mutable=["batch_stats"])
            return _xent(logits, y), new["batch_stats"]

        (lv, s2), g = jax.value_and_grad(loss, has_aux=True)(p)
        import optax

        u, opt_state = o.update(g, opt_state, p)
        return optax.apply_updates(p, u), s2, opt_state, lv

    return step, (params, stats, o.init(params), x, y)


def _nnx(kind: str, size: int, depth: int, mode: str, opt: str | None):
    import jax
    import jax.numpy as jnp
    import optax
    from flax import nnx

    rngs = nnx.Rngs(0)
    if kind == "mlp":
        class Net(nnx.Module):
            def __init__(self):
                self.layers = nnx.List([nnx.Linear(size if i else 32, size, rngs=rngs) for i in range(depth)])
                self.out = nnx.Linear(size, 10, rngs=rngs)

            def __call__(self, x):
                for layer in self.layers:
                    x = nnx.relu(layer(x))
                return self.out(x)

        x = jnp.ones((8, 32), jnp.float32)
        y = jnp.zeros((8,), jnp.int32)
    else:
        class Block(nnx.Module):
            def __init__(self):
                self.ln1 = nnx.LayerNorm(size, rngs=rngs)
                self.attn = nnx.MultiHeadAttention(4, size, decode=False, rngs=rngs)
                self.ln2 = nnx.LayerNorm(size, rngs=rngs)
                self.fc1 = nnx.Linear(size, 4 * size, rngs=rngs)
                self.fc2 = nnx.Linear(4 * size, size, rngs=rngs)

            def __call__(self, x):
                h = self.ln1(x)
                x = x + self.attn(h, mask=nnx.make_causal_mask(jnp.ones(x.shape[:2], "int32")))
                return x + self.fc2(nnx.gelu(self.fc1(self.ln2(x))))

        class Net(nnx.Module):  # type: ignore[no-redef]
            def __init__(self):
                self.emb = nnx.Embed(256, size, rngs=rngs)
                self.blocks = nnx.List([Block() for _ in range(depth)])
                self.ln = nnx.LayerNorm(size, rngs=rngs)

            def __call__(self, t):
                x = self.emb(t)
                for b in self.blocks:
                    x = b(x)
                return self.emb.attend(self.ln(x))

        x = jnp.zeros((2, 32), jnp.int32)
        y = jnp.zeros((2, 32), jnp.int32)
    graphdef, state = nnx.split(Net())
    if mode == "infer":
        return (lambda s, x: nnx.merge(graphdef, s)(x)), (state, x)
    o = optimizer(opt or "adam")
    params = jax.tree_util.tree_map(lambda a: a, state)

    def loss(s, x, y):
        return _xent(nnx.merge(graphdef, s)(x), y)

    del optax
    return optax_train_step(loss, o), (params, o.init(params), x, y)


def specs() -> list[Spec]:
    import jax.numpy as jnp

    out: list[Spec] = []

    def add(name, model, mode, config, build, function):
        out.append(Spec(name, model, mode, {"model": model, "mode": mode, **config}, build, function))

    for depth in (2, 4, 8):
        for width in (64, 256):
            for mode, opt in (("infer", None), ("train", "adam"), ("train", "sgd")):
                cfg = {"depth": depth, "width": width, "batch": 16, "optimizer": opt}
                add(f"linen-mlp-l{depth}-w{width}-{opt or 'infer'}", "linen-mlp", mode, cfg,
                    lambda d=depth, w=width, m=mode, o=opt: _supervised(
                        _linen_mlp(d, w), jnp.ones((16, 64)), jnp.zeros((16,), jnp.int32), m, o),
                    "flax.linen.Dense")
    for width in (8, 16):
        for blocks in (2, 3):
            for mode, opt in (("infer", None), ("train", "sgd"), ("train", "adamw")):
                cfg = {"width": width, "blocks": blocks, "image": 32, "batch": 4, "optimizer": opt}
                add(f"linen-cnn-w{width}-b{blocks}-{opt or 'infer'}", "linen-cnn", mode, cfg,
                    lambda w=width, b=blocks, m=mode, o=opt: _cnn(w, b, 32, 4, m, o),
                    "flax.linen.Conv/BatchNorm")
    for n_layer in (1, 2, 4, 8, 12, 24, 36):
        for d in (64, 128):
            for scan in (False, True):
                for mode, opt in (("infer", None), ("train", "adamw")):
                    if n_layer >= 12 and (d == 128 and not scan and mode == "infer"):
                        continue
                    cfg = {"n_layer": n_layer, "d_model": d, "heads": 4, "vocab": 256, "seq": 32,
                           "batch": 2, "scan_layers": scan, "optimizer": opt}
                    tag = "scan" if scan else "unrolled"
                    add(f"linen-transformer-{tag}-l{n_layer}-d{d}-{opt or 'infer'}", "linen-transformer", mode, cfg,
                        lambda n=n_layer, dd=d, s=scan, m=mode, o=opt: _supervised(
                            _linen_transformer(n, dd, 4, 256, s), jnp.zeros((2, 32), jnp.int32),
                            jnp.zeros((2, 32), jnp.int32), m, o),
                        "flax.linen.MultiHeadDotProductAttention" + ("+nn.scan" if scan else ""))
    # Large training steps (issue 61: modules of more than 20,000 instructions): deep
    # unrolled LMs, the depth of GPT-2 XL (48 layers) and beyond, with an optax update.
    for n_layer, d, opt in ((36, 256, "adamw"), (40, 256, "adamw"), (48, 64, "adamw"), (48, 128, "adamw"),
                           (48, 256, "adam"), (56, 128, "lion"), (64, 64, "adam"), (64, 128, "adamw")):
        cfg = {"n_layer": n_layer, "d_model": d, "heads": 4, "vocab": 256, "seq": 32,
               "batch": 2, "scan_layers": False, "optimizer": opt}
        add(f"linen-transformer-unrolled-l{n_layer}-d{d}-{opt}", "linen-transformer", "train", cfg,
            lambda n=n_layer, dd=d, o=opt: _supervised(
                _linen_transformer(n, dd, 4, 256, False), jnp.zeros((2, 32), jnp.int32),
                jnp.zeros((2, 32), jnp.int32), "train", o),
            "flax.linen.MultiHeadDotProductAttention")
    for cell in ("lstm", "gru"):
        for layers in (1, 2, 3):
            for mode, opt in (("infer", None), ("train", "adam")):
                cfg = {"cell": cell, "hidden": 64, "layers": layers, "vocab": 128, "seq": 32, "batch": 4, "optimizer": opt}
                add(f"linen-rnn-{cell}-l{layers}-h64-{opt or 'infer'}", "linen-rnn", mode, cfg,
                    lambda c=cell, n=layers, m=mode, o=opt: _supervised(
                        _linen_rnn(c, 64, n, 128), jnp.zeros((4, 32), jnp.int32), jnp.zeros((4, 32), jnp.int32), m, o),
                    "flax.linen.RNN")
    for depth in (2, 4, 8):
        for mode, opt in (("infer", None), ("train", "adam")):
            add(f"nnx-mlp-l{depth}-w128-{opt or 'infer'}", "nnx-mlp", mode,
                {"depth": depth, "width": 128, "batch": 8, "optimizer": opt},
                lambda d=depth, m=mode, o=opt: _nnx("mlp", 128, d, m, o), "flax.nnx.Linear")
    nnx_grid = [(depth, 64, mode, opt) for depth in (1, 2, 4, 6, 12, 24)
                for mode, opt in (("infer", None), ("train", "adamw"))]
    nnx_grid += [(depth, size, "train", "adamw")  # large (issue 61)
                 for depth, size in ((36, 64), (36, 128), (48, 128), (64, 64))]
    for depth, size, mode, opt in nnx_grid:
        add(f"nnx-transformer-l{depth}-d{size}-{opt or 'infer'}", "nnx-transformer", mode,
            {"depth": depth, "d_model": size, "heads": 4, "seq": 32, "batch": 2, "optimizer": opt},
            lambda d=depth, w=size, m=mode, o=opt: _nnx("transformer", w, d, m, o), "flax.nnx.MultiHeadAttention")
    _ = Any
    return out
