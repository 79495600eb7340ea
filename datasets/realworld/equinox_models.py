"""Equinox models from ``eqx.nn``: MLP, CNN, transformer of
``eqx.nn.MultiheadAttention`` (vmapped), LSTM/GRU cells under ``lax.scan``;
parameters split with ``eqx.partition`` and passed as arguments."""
from __future__ import annotations

from xla_gym_datasets.realworld.spec import LibraryInfo, Spec, optax_train_step, optimizer

__all__ = ["INFO", "specs"]

INFO = LibraryInfo(
    name="equinox",
    distributions=("equinox", "optax"),
    license="Apache-2.0",
    homepage="https://github.com/patrick-kidger/equinox",
    description="Equinox eqx.nn models (MLP, CNN, attention, recurrent cells): inference and training",
    validation=("eqx-cnn",),
    test=("eqx-rnn",),
)


def _split_model(model, apply, x, y, mode, opt):
    """(fn, args) with the model's arrays as an argument (``eqx.partition``)."""
    import equinox as eqx
    import jax
    import optax

    params, static = eqx.partition(model, eqx.is_array)

    def forward(p, x):
        return jax.vmap(lambda xi: apply(eqx.combine(p, static), xi))(x)

    if mode == "infer":
        return forward, (params, x)

    def loss(p, x, y):
        logits = forward(p, x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

    o = optimizer(opt)
    return optax_train_step(loss, o), (params, o.init(params), x, y)


def _split_pair(pair, x, y, mode, opt):
    """:func:`_split_model` of a ``(model, apply)`` pair."""
    return _split_model(pair[0], pair[1], x, y, mode, opt)


def _transformer(layers: int, d: int, key):
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    keys = jax.random.split(key, 4 * layers + 2)
    emb = eqx.nn.Embedding(256, d, key=keys[0])
    blocks = [
        (eqx.nn.LayerNorm(d), eqx.nn.MultiheadAttention(4, d, key=keys[4 * i + 1]), eqx.nn.LayerNorm(d),
         eqx.nn.MLP(d, d, 4 * d, 1, activation=jax.nn.gelu, key=keys[4 * i + 2]))
        for i in range(layers)
    ]
    head = eqx.nn.Linear(d, 256, key=keys[-1])
    model = (emb, blocks, head)

    def apply(m, t):
        emb, blocks, head = m
        x = jax.vmap(emb)(t)
        mask = jnp.tril(jnp.ones((t.shape[0], t.shape[0]), bool))
        for ln1, attn, ln2, mlp in blocks:
            h = jax.vmap(ln1)(x)
            x = x + attn(h, h, h, mask=mask)
            x = x + jax.vmap(mlp)(jax.vmap(ln2)(x))
        return jax.vmap(head)(x)

    return model, apply


def _rnn(cell: str, hidden: int, key):
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    k1, k2 = jax.random.split(key)
    c = eqx.nn.LSTMCell(16, hidden, key=k1) if cell == "lstm" else eqx.nn.GRUCell(16, hidden, key=k1)
    head = eqx.nn.Linear(hidden, 10, key=k2)

    def apply(m, xs):
        c, head = m
        h0 = jnp.zeros(hidden)
        state = (h0, h0) if cell == "lstm" else h0

        def body(s, x):
            s = c(x, s)
            return s, None

        s, _ = jax.lax.scan(body, state, xs)
        return head(s[0] if cell == "lstm" else s)

    return (c, head), apply


def _cnn(width: int, key):
    import equinox as eqx
    import jax

    ks = jax.random.split(key, 4)
    convs = [eqx.nn.Conv2d(3, width, 3, padding=1, key=ks[0]), eqx.nn.Conv2d(width, 2 * width, 3, padding=1, key=ks[1])]
    pool = eqx.nn.AvgPool2d(2, 2)
    head = eqx.nn.Linear(2 * width, 10, key=ks[2])

    def apply(m, x):
        convs, head = m
        for cv in convs:
            x = pool(jax.nn.relu(cv(x)))
        return head(x.mean(axis=(1, 2)))

    return (convs, head), apply


def specs() -> list[Spec]:
    import equinox as eqx
    import jax
    import jax.numpy as jnp

    key = jax.random.PRNGKey(0)
    out: list[Spec] = []

    def add(name, model, mode, config, build, function):
        out.append(Spec(name, model, mode, {"model": model, "mode": mode, **config}, build, function))

    for depth in (2, 4, 8):
        for width in (64, 256):
            for mode, opt in (("infer", None), ("train", "adam"), ("train", "adabelief")):
                add(f"eqx-mlp-l{depth}-w{width}-{opt or 'infer'}", "eqx-mlp", mode,
                    {"depth": depth, "width": width, "batch": 16, "optimizer": opt},
                    lambda d=depth, w=width, m=mode, o=opt: _split_model(
                        eqx.nn.MLP(64, 10, w, d, key=key), lambda mm, x: mm(x), jnp.ones((16, 64)),
                        jnp.zeros((16,), jnp.int32), m, o),
                    "equinox.nn.MLP")
    for width in (8, 16, 32):
        for mode, opt in (("infer", None), ("train", "sgd"), ("train", "adam")):
            add(f"eqx-cnn-w{width}-{opt or 'infer'}", "eqx-cnn", mode,
                {"width": width, "image": 32, "batch": 4, "optimizer": opt},
                lambda w=width, m=mode, o=opt: _split_pair(
                    _cnn(w, key), jnp.ones((4, 3, 32, 32)), jnp.zeros((4,), jnp.int32), m, o),
                "equinox.nn.Conv2d/AvgPool2d")
    for layers in (1, 2, 4, 8, 16, 28):
        for mode, opt in (("infer", None), ("train", "adamw")):
            add(f"eqx-transformer-l{layers}-d64-{opt or 'infer'}", "eqx-transformer", mode,
                {"layers": layers, "d_model": 64, "heads": 4, "seq": 32, "batch": 2, "optimizer": opt},
                lambda n=layers, m=mode, o=opt: _split_pair(
                    _transformer(n, 64, key), jnp.zeros((2, 32), jnp.int32), jnp.zeros((2, 32), jnp.int32), m, o),
                "equinox.nn.MultiheadAttention")
    for cell in ("lstm", "gru"):
        for hidden in (32, 64, 128):
            for mode, opt in (("infer", None), ("train", "adam")):
                add(f"eqx-rnn-{cell}-h{hidden}-{opt or 'infer'}", "eqx-rnn", mode,
                    {"cell": cell, "hidden": hidden, "seq": 32, "batch": 4, "features": 16, "optimizer": opt},
                    lambda c=cell, h=hidden, m=mode, o=opt: _split_pair(
                        _rnn(c, h, key), jnp.ones((4, 32, 16)), jnp.zeros((4,), jnp.int32), m, o),
                    "equinox.nn." + ("LSTMCell" if cell == "lstm" else "GRUCell") + "+lax.scan")
    return out
