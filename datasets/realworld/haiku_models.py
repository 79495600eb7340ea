"""Haiku models from the library's ``hk.nets`` and layers: MLP, ResNet18/34/50
(``hk.nets.ResNet*``, batch norm state), LSTM/GRU through ``hk.dynamic_unroll``
(a scan), transformer of ``hk.MultiHeadAttention``; inference and optax
training steps (``hk.transform_with_state`` where the model has state)."""
from __future__ import annotations

from xla_gym_datasets.realworld.spec import LibraryInfo, Spec, optax_train_step, optimizer

__all__ = ["INFO", "specs"]

INFO = LibraryInfo(
    name="haiku",
    distributions=("dm-haiku", "optax"),
    license="Apache-2.0",
    homepage="https://github.com/google-deepmind/dm-haiku",
    description="Haiku models (hk.nets MLP and ResNet, LSTM/GRU unrolls, attention): inference and training",
    validation=("hk-rnn",),
    test=("hk-transformer",),
)


def _xent(logits, labels):
    import optax

    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()


def _stateless(forward, x, y, mode, opt):
    import haiku as hk
    import jax

    f = hk.without_apply_rng(hk.transform(forward))
    params = f.init(jax.random.PRNGKey(0), x)
    if mode == "infer":
        return f.apply, (params, x)
    o = optimizer(opt)
    return optax_train_step(lambda p, x, y: _xent(f.apply(p, x), y), o), (params, o.init(params), x, y)


def _resnet(depth: int, image: int, batch: int, mode: str, opt: str | None):
    import haiku as hk
    import jax
    import jax.numpy as jnp
    import optax

    cls = {18: hk.nets.ResNet18, 34: hk.nets.ResNet34, 50: hk.nets.ResNet50}[depth]
    f = hk.without_apply_rng(hk.transform_with_state(lambda x, t: cls(10)(x, is_training=t)))
    x = jnp.ones((batch, image, image, 3), jnp.float32)
    y = jnp.zeros((batch,), jnp.int32)
    params, state = f.init(jax.random.PRNGKey(0), x, True)  # type: ignore[attr-defined]
    if mode == "infer":
        return (lambda p, s, x: f.apply(p, s, x, False)[0]), (params, state, x)  # type: ignore[attr-defined]
    o = optimizer(opt or "sgd")

    def step(p, s, opt_state, x, y):
        def loss(p):
            logits, s2 = f.apply(p, s, x, True)
            return _xent(logits, y), s2

        (lv, s2), g = jax.value_and_grad(loss, has_aux=True)(p)
        u, opt_state = o.update(g, opt_state, p)
        return optax.apply_updates(p, u), s2, opt_state, lv

    return step, (params, state, o.init(params), x, y)


def specs() -> list[Spec]:
    import haiku as hk
    import jax
    import jax.numpy as jnp

    out: list[Spec] = []

    def add(name, model, mode, config, build, function):
        out.append(Spec(name, model, mode, {"model": model, "mode": mode, **config}, build, function))

    for sizes in ((64, 64), (128, 128, 128), (256, 256, 256, 256), (512,) * 6):
        for mode, opt in (("infer", None), ("train", "adam"), ("train", "rmsprop")):
            tag = f"l{len(sizes)}-w{sizes[0]}"
            add(f"hk-mlp-{tag}-{opt or 'infer'}", "hk-mlp", mode, {"sizes": list(sizes), "batch": 32, "optimizer": opt},
                lambda s=sizes, m=mode, o=opt: _stateless(
                    lambda x: hk.nets.MLP(list(s) + [10])(x), jnp.ones((32, 64)), jnp.zeros((32,), jnp.int32), m, o),
                "haiku.nets.MLP")
    for depth in (18, 34, 50):
        for image, batch in ((32, 2), (64, 1)):
            # Training steps need the gradient of the stem's max pool (select-and-scatter),
            # which the HLO round trip of the service cannot parse yet: inference only.
            for mode, opt in (("infer", None),):
                add(f"hk-resnet{depth}-i{image}-b{batch}-{opt or 'infer'}", "hk-resnet", mode,
                    {"depth": depth, "image": image, "batch": batch, "optimizer": opt},
                    lambda d=depth, i=image, b=batch, m=mode, o=opt: _resnet(d, i, b, m, o),
                    f"haiku.nets.ResNet{depth}")
    for cell in ("lstm", "gru"):
        for hidden in (32, 128):
            for layers in (1, 2):
                for mode, opt in (("infer", None), ("train", "adam")):
                    def fwd(x, c=cell, h=hidden, n=layers):
                        core = hk.DeepRNN([hk.LSTM(h) if c == "lstm" else hk.GRU(h) for _ in range(n)])
                        xs = jnp.swapaxes(x, 0, 1)
                        ys, _ = hk.dynamic_unroll(core, xs, core.initial_state(x.shape[0]))
                        return hk.Linear(10)(ys[-1])

                    add(f"hk-rnn-{cell}-l{layers}-h{hidden}-{opt or 'infer'}", "hk-rnn", mode,
                        {"cell": cell, "hidden": hidden, "layers": layers, "seq": 32, "batch": 4, "features": 16,
                         "optimizer": opt},
                        lambda f=fwd, m=mode, o=opt: _stateless(
                            f, jnp.ones((4, 32, 16)), jnp.zeros((4,), jnp.int32), m, o),
                        "haiku.dynamic_unroll+" + ("haiku.LSTM" if cell == "lstm" else "haiku.GRU"))
    hk_grid = [(layers, 64, mode, opt) for layers in (1, 2, 4, 8, 16, 24)
               for mode, opt in (("infer", None), ("train", "lamb"))]
    # large training steps (issue 61: more than 20,000 instructions)
    hk_grid += [(24, 256, "train", "lamb"), (32, 64, "train", "lamb"), (32, 128, "train", "lamb"),
                (48, 64, "train", "lamb"), (32, 128, "train", "adamw"), (40, 64, "train", "adamw")]
    for layers, width, mode, opt in hk_grid:
        def tfwd(t, n=layers, d=width):
            x = hk.Embed(256, d)(t)
            mask = jnp.tril(jnp.ones((t.shape[1], t.shape[1])))[None, None]
            for _ in range(n):
                h = hk.LayerNorm(-1, True, True)(x)
                x = x + hk.MultiHeadAttention(4, d // 4, w_init=hk.initializers.VarianceScaling(1.0))(h, h, h, mask)
                h = hk.LayerNorm(-1, True, True)(x)
                x = x + hk.nets.MLP([4 * d, d], activation=jax.nn.gelu)(h)
            return hk.Linear(256)(hk.LayerNorm(-1, True, True)(x))

        add(f"hk-transformer-l{layers}-d{width}-{opt or 'infer'}", "hk-transformer", mode,
            {"layers": layers, "d_model": width, "heads": 4, "seq": 32, "batch": 2, "optimizer": opt},
            lambda f=tfwd, m=mode, o=opt: _stateless(
                f, jnp.zeros((2, 32), jnp.int32), jnp.zeros((2, 32), jnp.int32), m, o),
            "haiku.MultiHeadAttention")
    return out
