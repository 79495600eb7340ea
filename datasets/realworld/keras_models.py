"""Keras 3 on the JAX backend (``KERAS_BACKEND=jax``): ``keras.applications``
(MobileNetV2, DenseNet121, ResNet50, EfficientNetB0; ``weights=None``),
Sequential MLP / Conv1D / LSTM (a scan) models and a transformer block of
``keras.layers.MultiHeadAttention``; ``model.stateless_call`` with the
trainable and non-trainable variables as arguments, and a Keras optimizer's
``stateless_apply`` in training."""
from __future__ import annotations

import os

from xla_gym_datasets.realworld.spec import LibraryInfo, Spec

__all__ = ["INFO", "specs"]

INFO = LibraryInfo(
    name="keras",
    distributions=("keras",),
    license="Apache-2.0",
    homepage="https://github.com/keras-team/keras",
    description="Keras 3 (JAX backend) applications and layers: stateless inference and training steps",
    validation=("keras-lstm",),
    test=("keras-mobilenetv2", "keras-transformer"),
)


def _model(kind: str, size: int):
    os.environ.setdefault("KERAS_BACKEND", "jax")
    import keras

    keras.utils.set_random_seed(0)
    if kind == "mobilenetv2":
        return keras.applications.MobileNetV2(input_shape=(size, size, 3), alpha=0.35, weights=None, classes=10), (2, size, size, 3)
    if kind == "densenet121":
        return keras.applications.DenseNet121(input_shape=(size, size, 3), weights=None, classes=10), (1, size, size, 3)
    if kind == "resnet50":
        return keras.applications.ResNet50(input_shape=(size, size, 3), weights=None, classes=10), (1, size, size, 3)
    if kind == "efficientnetb0":
        return keras.applications.EfficientNetB0(input_shape=(size, size, 3), weights=None, classes=10), (1, size, size, 3)
    if kind == "mlp":
        return keras.Sequential([keras.Input((64,))] + [keras.layers.Dense(size, activation="relu") for _ in range(4)]
                                + [keras.layers.Dense(10)]), (16, 64)
    if kind == "lstm":
        return keras.Sequential([keras.Input((32, 16)), keras.layers.LSTM(size, return_sequences=True),
                                 keras.layers.LSTM(size), keras.layers.Dense(10)]), (4, 32, 16)
    if kind == "conv1d":
        return keras.Sequential([keras.Input((64, 8)), keras.layers.Conv1D(size, 5, activation="relu"),
                                 keras.layers.BatchNormalization(), keras.layers.Conv1D(size, 5, activation="relu"),
                                 keras.layers.GlobalAveragePooling1D(), keras.layers.Dense(10)]), (8, 64, 8)
    # transformer: `size` blocks of width 64
    inp = keras.Input((32, 64))
    x = inp
    for _ in range(size):
        h = keras.layers.LayerNormalization()(x)
        x = x + keras.layers.MultiHeadAttention(4, 16)(h, h, use_causal_mask=True)
        h = keras.layers.LayerNormalization()(x)
        x = x + keras.layers.Dense(64)(keras.layers.Dense(256, activation="gelu")(h))
    return keras.Model(inp, keras.layers.Dense(10)(x[:, -1])), (2, 32, 64)


def _build(kind: str, size: int, mode: str, opt: str | None):
    import jax
    import jax.numpy as jnp
    import keras

    model, shape = _model(kind, size)
    x = jnp.ones(shape, jnp.float32)
    y = jnp.zeros((shape[0],), jnp.int32)
    tv = [v.value for v in model.trainable_variables]
    ntv = [v.value for v in model.non_trainable_variables]
    if mode == "infer":
        return (lambda tv, ntv, x: model.stateless_call(tv, ntv, x, training=False)[0]), (tv, ntv, x)
    optimizer = {"adam": keras.optimizers.Adam(1e-3), "sgd": keras.optimizers.SGD(1e-2, momentum=0.9),
                 "adamw": keras.optimizers.AdamW(1e-3)}[opt or "adam"]
    optimizer.build(model.trainable_variables)
    ov = [v.value for v in optimizer.variables]
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def step(tv, ntv, ov, x, y):
        def loss(tv):
            logits, ntv2 = model.stateless_call(tv, ntv, x, training=True)
            return loss_fn(y, logits), ntv2

        (lv, ntv2), g = jax.value_and_grad(loss, has_aux=True)(tv)
        tv2, ov2 = optimizer.stateless_apply(ov, g, tv)
        return tv2, ntv2, ov2, lv

    return step, (tv, ntv, ov, x, y)


def specs() -> list[Spec]:
    out: list[Spec] = []
    # ResNet50 and DenseNet121 start with a max pool, whose gradient
    # (select-and-scatter) the service's HLO round trip cannot parse yet: inference only.
    grid = [("mobilenetv2", 32, ("infer", "adam", "sgd")), ("mobilenetv2", 64, ("infer", "adam")),
            ("efficientnetb0", 32, ("infer", "adam")), ("densenet121", 32, ("infer",)),
            ("resnet50", 32, ("infer",)), ("resnet50", 64, ("infer",)),
            ("mlp", 64, ("infer", "adam", "sgd")), ("mlp", 256, ("infer", "adam", "adamw")),
            ("lstm", 32, ("infer", "adam")), ("lstm", 64, ("infer", "adam")),
            ("conv1d", 16, ("infer", "adam")), ("conv1d", 64, ("infer", "sgd")),
            ("transformer", 1, ("infer", "adamw")), ("transformer", 2, ("infer", "adamw")),
            ("transformer", 4, ("infer", "adamw")), ("transformer", 8, ("infer", "adamw")),
            ("transformer", 16, ("adamw",)), ("transformer", 24, ("adamw",))]
    for kind, size, modes in grid:
        for m in modes:
            mode, opt = ("infer", None) if m == "infer" else ("train", m)
            out.append(Spec(f"keras-{kind}-s{size}-{m}", f"keras-{kind}", mode,
                            {"model": f"keras-{kind}", "mode": mode, "size": size, "optimizer": opt},
                            lambda k=kind, s=size, md=mode, o=opt: _build(k, s, md, o),
                            f"keras.{'applications' if kind[-1].isdigit() or kind.startswith('mobile') else 'layers'}.{kind}"))
    return out
