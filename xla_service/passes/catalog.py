"""Moved to ``xla_service.catalog.passes`` (the jax-free package of what a jaxlib version
means). This re-export is temporary: import from there."""
from xla_service.catalog.passes import *  # noqa: F401,F403
from xla_service.catalog.passes import __all__  # noqa: F401
