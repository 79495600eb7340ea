"""Small HLO modules and JAX functions shared by the integration tests."""
from __future__ import annotations

from typing import Any

SMALL_HLO = b"""HloModule small, entry_computation_layout={(f32[8]{0})->f32[8]{0}}

ENTRY main {
  p = f32[8]{0} parameter(0)
  a = f32[8]{0} add(p, p)
  b = f32[8]{0} add(p, p)
  ROOT m = f32[8]{0} multiply(a, b)
}
"""

#: XLA has no CPU implementation of this custom call: it cannot execute.
CUSTOM_CALL_HLO = b"""HloModule unknown_call, entry_computation_layout={(f32[8]{0})->f32[8]{0}}

ENTRY main {
  p = f32[8]{0} parameter(0)
  a = f32[8]{0} add(p, p)
  b = f32[8]{0} add(p, p)
  c = f32[8]{0} custom-call(a), custom_call_target="xla_gym_no_such_target"
  ROOT m = f32[8]{0} multiply(c, b)
}
"""

#: ``rng`` draws new numbers on every execution: not deterministic.
RNG_HLO = b"""HloModule random, entry_computation_layout={(f32[8]{0})->f32[8]{0}}

ENTRY main {
  p = f32[8]{0} parameter(0)
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  r = f32[8]{0} rng(lo, hi), distribution=rng_uniform
  ROOT s = f32[8]{0} add(p, r)
}
"""


def mlp_step() -> Any:
    """(function, args) of one SGD step of a two-layer MLP (loss and new weights)."""
    import jax
    import jax.numpy as jnp

    def loss(w: list[Any], x: Any) -> Any:
        return ((jnp.tanh(x @ w[0]) @ w[1]) ** 2).mean()

    def step(w: list[Any], x: Any) -> Any:
        value, grads = jax.value_and_grad(loss)(w, x)
        return value, [a - 0.1 * g for a, g in zip(w, grads)]

    weights = [jnp.full((16, 8), 0.1, jnp.float32), jnp.full((8, 4), 0.2, jnp.float32)]
    return step, (weights, jnp.ones((8, 16), jnp.float32))


def small_jax() -> Any:
    """(function, args) of a dot, a tanh and an exp: flops and transcendentals."""
    import jax.numpy as jnp

    def f(x: Any, w: Any) -> Any:
        return jnp.tanh(x @ w).sum(axis=0) + jnp.exp(x[0, :4].sum())

    return f, (jnp.ones((8, 16), jnp.float32), jnp.ones((16, 4), jnp.float32))


def transformer_block(width: int = 128, tokens: int = 8) -> Any:
    """(function, args) of a pre-LN transformer block: causal attention and a
    tanh-GELU MLP, both residual. At ``width`` 128, inputs uniform in [0, 1)
    (what validation drew before) put the GELU's arguments around 30, where
    tanh and logistic both read 1: replacing one by the other went unnoticed."""
    import jax
    import jax.numpy as jnp

    def gelu(x: Any) -> Any:
        return 0.5 * x * (1 + jnp.tanh(0.7978845608 * (x + 0.044715 * x**3)))

    def layer_norm(x: Any, g: Any, b: Any) -> Any:
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) * jax.lax.rsqrt(var + 1e-5) * g + b

    def block(x: Any, g: Any, b: Any, wq: Any, wk: Any, wv: Any, w1: Any, w2: Any) -> Any:
        h = layer_norm(x, g, b)
        scores = (h @ wq) @ (h @ wk).T / jnp.sqrt(float(width))
        causal = jnp.tril(jnp.ones((tokens, tokens), bool))
        x = x + jax.nn.softmax(jnp.where(causal, scores, -1e9), axis=-1) @ (h @ wv)
        return x + gelu(layer_norm(x, g, b) @ w1) @ w2

    square = jnp.ones((width, width), jnp.float32)
    return block, (
        jnp.ones((tokens, width), jnp.float32), jnp.ones(width, jnp.float32), jnp.zeros(width, jnp.float32),
        square, square, square, jnp.ones((width, 4 * width), jnp.float32), jnp.ones((4 * width, width), jnp.float32),
    )
