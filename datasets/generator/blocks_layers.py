"""Body blocks of dense computation: MLPs, attention, convolutions, mixing, normalization, activations.

Every block takes and returns a ``[batch, positions, features]`` stream; a
residual block's output is added to the stream (``grammar.Block.residual``).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from xla_gym_datasets.generator.grammar import Ctx, NotApplicable, block, divisors

#: Activation functions by name: one entry adds one (bounded where the raw function is not).
#: Each is continuous with a bounded slope, so that rounding of its input cannot move its output
#: by more than rounding (``cbrt`` and ``power`` are shaped so: the raw cube root's slope is
#: infinite at 0, a signed power jumps there).
ACTIVATIONS: dict[str, Callable[[Any], Any]] = {
    "relu": jax.nn.relu,
    "gelu_tanh": lambda x: jax.nn.gelu(x, approximate=True),
    "gelu_erf": lambda x: 0.5 * x * (1 + lax.erf(x * 0.7071067811865476)),
    "silu": jax.nn.silu,
    "tanh": jnp.tanh,
    "elu": lambda x: jnp.where(x > 0, x, jnp.expm1(jnp.minimum(x, 0))),
    "softplus": lambda x: jnp.maximum(x, 0) + jnp.log1p(jnp.exp(-jnp.abs(x))),
    "sin": jnp.sin,
    "snake": lambda x: x + jnp.square(jnp.sin(x)),
    "cos": jnp.cos,
    "cbrt": lambda x: x / jnp.cbrt(1 + x * x),
    "atan": lambda x: jnp.arctan2(x, jnp.ones_like(x)),
    "signed_sqrt": lambda x: jnp.sign(x) * (jnp.sqrt(jnp.abs(x) + 1) - 1),
    "hard_tanh": lambda x: lax.clamp(jnp.asarray(-1, x.dtype), x, jnp.asarray(1, x.dtype)),
    "tan_tanh": lambda x: jnp.tan(jnp.tanh(x)),
    "asinh": jnp.arcsinh,
    "leaky_relu": lambda x: jax.nn.leaky_relu(x, 0.1),
    "mish": lambda x: x * jnp.tanh(jnp.maximum(x, 0) + jnp.log1p(jnp.exp(-jnp.abs(x)))),
    "power": lambda x: jnp.sign(x) * (jnp.power(jnp.abs(x) + 1, 0.75) - 1),
}
#: Activations whose slope jumps (at 0, or at +-1): drawn in inference graphs only. In a training
#: step the slope is a decision taken from a computed float: where rounding moves an input across
#: the kink, the gradient of every weight before it changes far beyond tolerance (measured: 2 of
#: the first 207 seeds failed validation under XLA's default pipeline so, a relu and a leaky relu).
KINKED = frozenset({"relu", "leaky_relu", "hard_tanh"})


def activation(ctx: Ctx, name: str, x: Any) -> Any:
    """An activation drawn from the table (without the :data:`KINKED` ones in a training step)."""
    options = sorted(a for a in ACTIVATIONS if not (ctx.training and a in KINKED))
    return ACTIVATIONS[ctx.choice(name, options)](x)


@block("mlp", weight=3.0, opcodes=("dot", "add", "broadcast"))
def mlp(ctx: Ctx, x: Any) -> Any:
    """Dense up, an activation, dense down."""
    d = x.shape[-1]
    h = ctx.dense("up", x, d * ctx.choice("mult", [1, 2, 4]))
    return ctx.dense("down", activation(ctx, "act", h), d)


@block("glu", weight=1.5, opcodes=("dot", "multiply", "exponential"))
def glu(ctx: Ctx, x: Any) -> Any:
    """Gated linear unit: ``act(x W) * (x V)``, then dense down."""
    d = x.shape[-1]
    f = d * ctx.choice("mult", [1, 2])
    gate = ctx.choice("gate", ["sigmoid", "silu", "gelu_tanh", "tanh"])
    g = ctx.dense("gate", x, f)
    g = jax.nn.sigmoid(g) if gate == "sigmoid" else ACTIVATIONS[gate](g)
    return ctx.dense("down", g * ctx.dense("up", x, f), d)


def _rotary(q: Any) -> Any:
    """Rotary position embedding (sine, cosine, slices, concatenation) on ``[b, h, s, hd]``."""
    s, hd = q.shape[2], q.shape[3]
    freq = 1.0 / (1e4 ** (lax.iota(jnp.float32, hd // 2) / (hd // 2)))
    angle = lax.iota(jnp.float32, s)[:, None] * freq[None]
    sin, cos = jnp.sin(angle).astype(q.dtype), jnp.cos(angle).astype(q.dtype)
    a, b = q[..., : hd // 2], q[..., hd // 2 :]
    return jnp.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)


@block("attention", weight=3.0, opcodes=("dot", "transpose", "reshape", "select", "reduce"))
def attention(ctx: Ctx, x: Any) -> Any:
    """Multi-head self-attention: fused or separate projections, causal / length / window / no mask,
    optional rotary positions, softmax or sigmoid weights."""
    b, s, d = x.shape
    h = ctx.choice("heads", divisors(d, [1, 2, 4, 8]))
    hd = d // h
    if ctx.flag("fused"):
        # No bias (softmax ignores a key bias: its gradient would be rounding noise).
        q, k, v = jnp.split(ctx.dense("qkv", x, 3 * d, bias=False), 3, axis=-1)
    else:
        q, k, v = (ctx.dense(n, x, d, bias=False) for n in ("q", "k", "v"))
    q, k, v = (t.reshape(b, s, h, hd).transpose(0, 2, 1, 3) for t in (q, k, v))
    if hd % 2 == 0 and ctx.flag("rotary", 0.3):
        q, k = _rotary(q), _rotary(k)
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k, preferred_element_type=jnp.float32) / math.sqrt(hd)
    mask_kind = ctx.choice("mask", ["causal", "none", "lengths", "window"])
    qi, ki = lax.broadcasted_iota(jnp.int32, (s, s), 0), lax.broadcasted_iota(jnp.int32, (s, s), 1)
    if mask_kind == "causal":
        mask = (ki <= qi)[None, None]
    elif mask_kind == "window":
        mask = (jnp.abs(qi - ki) <= ctx.choice("window", [1, 2, 4]))[None, None]
    elif mask_kind == "lengths":
        lengths = ctx.input(f"{ctx.key}.lengths", (b,), jnp.int32, "lengths")
        mask = (ki[None] < jnp.maximum(lengths, 1)[:, None, None])[:, None]
    else:
        mask = None
    if ctx.flag("sigmoid", 0.2):
        weights = jax.nn.sigmoid(scores - math.log(s))
        weights = weights if mask is None else jnp.where(mask, weights, 0.0)
    else:
        scores = scores if mask is None else jnp.where(mask, scores, -1e9)
        weights = jax.nn.softmax(scores, axis=-1)
    out = jnp.einsum("bhqk,bhkd->bhqd", weights.astype(v.dtype), v)
    return ctx.dense("proj", out.transpose(0, 2, 1, 3).reshape(b, s, d), d)


@block("conv1d", weight=1.5, opcodes=("convolution", "pad"))
def conv1d(ctx: Ctx, x: Any) -> Any:
    """A 1-D convolution over positions: full or depthwise, dilated, centred or causal."""
    d = x.shape[-1]
    k, dilation = ctx.choice("kernel", [2, 3, 5]), ctx.choice("dilation", [1, 2])
    groups = d if ctx.flag("depthwise") else 1
    w = ctx.param("w", (k, d // groups, d))
    reach = (k - 1) * dilation
    padding = [(reach, 0)] if ctx.flag("causal") else [(reach // 2, reach - reach // 2)]
    y = lax.conv_general_dilated(
        x, w, (1,), padding, rhs_dilation=(dilation,),
        dimension_numbers=("NWC", "WIO", "NWC"), feature_group_count=groups,
    )
    return y + ctx.param("b", (d,))


@block("fourier", opcodes=("fft", "real", "imag", "complex"))
def fourier(ctx: Ctx, x: Any) -> Any:
    """Token mixing in the frequency domain: FNet's ``real(fft2(x))``, or a learned global filter
    (``irfft(rfft(x) * complex(W_re, W_im))``)."""
    xf = x.astype(jnp.float32)
    if ctx.flag("fnet"):
        y = jnp.fft.fftn(xf, axes=(1, 2))
        y = y.real + ctx.choice("imag", [0.0, 0.5]) * y.imag
    else:
        s, d = x.shape[1], x.shape[2]
        f = jnp.fft.rfft(xf, axis=1)
        kernel = lax.complex(ctx.param("re", (s // 2 + 1, d), cast=False), ctx.param("im", (s // 2 + 1, d), cast=False))
        y = jnp.fft.irfft(f * kernel[None], n=s, axis=1)
    return (y / math.sqrt(x.shape[1])).astype(x.dtype)


@block("squeeze_excite", opcodes=("reduce", "broadcast", "multiply"))
def squeeze_excite(ctx: Ctx, x: Any) -> Any:
    """A per-example feature gate from the mean over positions (broadcast back)."""
    d = x.shape[-1]
    pooled = jnp.mean(x.astype(jnp.float32), axis=1).astype(x.dtype)
    gate = jax.nn.sigmoid(ctx.dense("out", ctx.rectify(ctx.dense("in", pooled, max(d // 4, 4))), d))
    return x * gate[:, None, :]


@block("head_mix", opcodes=("reshape", "transpose", "dot"))
def head_mix(ctx: Ctx, x: Any) -> Any:
    """Features split into groups (reshape), mixed across groups (transpose, dot), merged back."""
    b, s, d = x.shape
    g = ctx.choice("groups", divisors(d, [2, 4, 8]))
    y = x.reshape(b, s, g, d // g).transpose(0, 2, 1, 3)
    y = jnp.einsum("bgsf,gh->bhsf", y, ctx.param("mix", (g, g)))
    return y.transpose(0, 2, 1, 3).reshape(b, s, d)


@block("token_mix", opcodes=("transpose", "dot"))
def token_mix(ctx: Ctx, x: Any) -> Any:
    """MLP-Mixer token mixing: transpose to ``[batch, features, positions]``, dense over positions."""
    s = x.shape[1]
    y = jnp.swapaxes(x, 1, 2)
    y = ctx.dense("up", y, s * ctx.choice("mult", [1, 2]))
    y = ctx.dense("down", activation(ctx, "act", y), s)
    return jnp.swapaxes(y, 1, 2)


@block("shift_concat", opcodes=("slice", "concatenate", "pad"))
def shift_concat(ctx: Ctx, x: Any) -> Any:
    """Half of the features shifted along positions (slice + pad, or roll), concatenated with the rest."""
    d = x.shape[-1]
    cut = d // 2
    a, rest = x[..., :cut], x[..., cut:]
    steps = ctx.choice("shift", [1, 2, -1])
    if ctx.flag("roll"):
        a = jnp.roll(a, steps, axis=1)
    elif steps > 0:
        a = jnp.pad(a[:, :-steps], ((0, 0), (steps, 0), (0, 0)))
    else:
        a = jnp.pad(a[:, -steps:], ((0, 0), (0, -steps), (0, 0)))
    return ctx.dense("mix", jnp.concatenate([a, activation(ctx, "act", rest)], axis=-1), d)


@block("elementwise", opcodes=("sine", "cbrt", "atan2", "tan", "erf"))
def elementwise(ctx: Ctx, x: Any) -> Any:
    """A scaled activation of the stream, drawn from the activation table."""
    return activation(ctx, "act", x) * ctx.param("scale", (x.shape[-1],))


@block("norm", residual=False, opcodes=("reduce", "rsqrt", "divide"))
def norm(ctx: Ctx, x: Any) -> Any:
    """A normalization of the stream: layer, RMS or batch statistics."""
    return ctx.norm("norm", x, ctx.choice("kind", ["layer", "rms", "batch"]))


@block("widen", residual=False, weight=0.5, opcodes=("dot",))
def widen(ctx: Ctx, x: Any) -> Any:
    """A dense change of the stream's width."""
    options = [w for w in (16, 32, 48, 64, 96, 128) if w != x.shape[-1]]
    return ctx.dense("proj", x, ctx.choice("width", options))


@block("downsample", residual=False, weight=0.5, opcodes=("reshape", "reduce", "slice"))
def downsample(ctx: Ctx, x: Any) -> Any:
    """Half the positions: mean or max of pairs (reshape, reduce), or a strided slice."""
    b, s, d = x.shape
    if s < 8 or s % 2:
        raise NotApplicable("fewer than 8 positions")
    how = ctx.choice("how", ["mean", "max", "stride"])
    if how == "stride":
        return x[:, ::2]
    pairs = x.reshape(b, s // 2, 2, d)
    return jnp.mean(pairs, axis=2) if how == "mean" else ctx.extreme(pairs, 2)
