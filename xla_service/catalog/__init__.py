"""What a pinned jaxlib version means, without importing jax.

Everything here is a fact about jaxlib 0.10.2's XLA that the rest of xla-gym
relies on, kept in one place so that moving to another jaxlib is a change
here plus regenerated data (``tests/passes/`` checks each fact against the
installed jaxlib):

- ``opcodes``   the 133 HLO opcodes, in ``HloOpcode`` enum order;
- ``passes``    the action space: the CPU pipeline's target-independent passes;
- ``pipelines`` pipeline names in XLA's dumps, the passes a step's compile
                skips, and the default pipeline's pass order;
- ``schema``    the fixed layouts of observations, tolerances, the op count rule.

The client (``xla_service.env``) and the engine (``xla_service.passes``) both
import it; it imports nothing of either.
"""
from __future__ import annotations

__all__ = ["JAXLIB_VERSION", "ENGINE_SEMANTICS_VERSION", "semantics_key"]

#: The jaxlib whose XLA this catalog describes (pinned in requirements.txt).
JAXLIB_VERSION = "0.10.2"
#: Bumped whenever the engine's results change for the same jaxlib (how a
#: step runs a pass, normalization): stored experience keys on it.
#: 2: constants of more than 10 elements are written out in full (they were
#: ``{...}``, which the parser reads back as garbage: ``passes/jaxlib.py``).
ENGINE_SEMANTICS_VERSION = 2


def semantics_key() -> str:
    """What a stored result depends on besides its inputs: jaxlib, engine, catalog, count rule."""
    import hashlib

    from xla_service.catalog.passes import PASS_NAMES
    from xla_service.catalog.schema import OP_COUNT_RULE

    catalog = hashlib.sha256(" ".join(PASS_NAMES).encode()).hexdigest()[:12]
    return f"jaxlib-{JAXLIB_VERSION}/engine-{ENGINE_SEMANTICS_VERSION}/passes-{catalog}/count-{OP_COUNT_RULE}"
