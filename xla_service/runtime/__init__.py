"""The gRPC service runtime: serves any :class:`CompilationSession` subclass.

It knows gRPC and the session contract only (no JAX, no passes, no
compiler_gym). A service executable is::

    #!/usr/bin/env python3
    import sys
    from xla_service.runtime import serve
    from my_package import MySession

    sys.exit(serve(MySession))
"""

from xla_service.runtime.benchmark_cache import (
    DEFAULT_MAX_SIZE_IN_BYTES,
    BenchmarkCache,
    BenchmarkNotFoundError,
)
from xla_service.runtime.server import (
    MAX_MESSAGE_SIZE_IN_BYTES,
    atomic_write_text,
    build_parser,
    create_server,
    serve,
)
from xla_service.runtime.servicer import (
    SERVICE_VERSION,
    CompilerGymServicer,
    ServiceClosedError,
    status_code_for,
)

__all__ = [
    "DEFAULT_MAX_SIZE_IN_BYTES",
    "MAX_MESSAGE_SIZE_IN_BYTES",
    "SERVICE_VERSION",
    "BenchmarkCache",
    "BenchmarkNotFoundError",
    "CompilerGymServicer",
    "ServiceClosedError",
    "atomic_write_text",
    "build_parser",
    "create_server",
    "serve",
    "status_code_for",
]
