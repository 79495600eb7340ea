"""Create and run the gRPC server; ``serve()`` is a service executable's main.

CompilerGym's client launches a service as ``./service --working_dir=DIR``
(plus glog-style ``--alsologtostderr -v=N --logbuflevel=-1`` when debugging,
and whatever ``COMPILER_GYM_SERVICE_ARGS`` holds, as one argument), waits for
``DIR/port.txt``, connects to ``localhost:PORT`` and stops the service with
SIGTERM, expecting exit code 0.

Security: sessions are reachable only by their unguessable ids, and
service-wide settings only with the admin token (``$XLA_GYM_ADMIN_TOKEN``,
which the launching client sets). A service that listens on anything but
loopback requires every RPC to carry ``authorization: Bearer <token>``
metadata (``--auth_token_file`` or ``$XLA_GYM_AUTH_TOKEN``); xla-gym's client
sends it (README, "Service behaviour"). The token travels in clear text: use
it inside a trusted network or an SSH tunnel.
"""

from __future__ import annotations

import argparse
import contextlib
import hmac
import logging
import os
import shlex
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent import futures
from pathlib import Path
from types import FrameType
from typing import Any

import grpc

from xla_service.proto import add_CompilerGymServiceServicer_to_server
from xla_service.runtime.replies import step_handler
from xla_service.runtime.servicer import CompilerGymServicer
from xla_service.session.base import CompilationSession

__all__ = [
    "ADMIN_TOKEN_VARIABLE",
    "AUTH_TOKEN_VARIABLE",
    "DEFAULT_MAX_WORKERS",
    "MAX_MESSAGE_SIZE_IN_BYTES",
    "atomic_write_text",
    "build_parser",
    "create_server",
    "serve",
]

logger = logging.getLogger(__name__)

MAX_MESSAGE_SIZE_IN_BYTES = 512 * 1024 * 1024
DEFAULT_MAX_WORKERS = max(os.cpu_count() or 1, 4)
SERVER_OPTIONS: list[tuple[str, int]] = [
    ("grpc.max_send_message_length", MAX_MESSAGE_SIZE_IN_BYTES),
    ("grpc.max_receive_message_length", MAX_MESSAGE_SIZE_IN_BYTES),
    # As CompilerGym: two services must never share a port.
    ("grpc.so_reuseport", 0),
]
#: The admin token (service-wide settings), set by the client that launches the service.
ADMIN_TOKEN_VARIABLE = "XLA_GYM_ADMIN_TOKEN"
#: The token every RPC must carry (required unless the service listens on loopback only).
AUTH_TOKEN_VARIABLE = "XLA_GYM_AUTH_TOKEN"
_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
#: glog flags that CompilerGym's client passes to every service: accepted, unused.
_GLOG_FLAGS = ("--logbuflevel", "--logtostderr", "--minloglevel", "--log_dir", "--vmodule", "--stderrthreshold")
_LOG_FORMAT = "%(asctime)s %(levelname)s %(process)d %(threadName)s %(name)s] %(message)s"


class _TokenInterceptor(grpc.ServerInterceptor):
    """Refuses every RPC that does not carry ``authorization: Bearer <token>``."""

    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

        def deny(request: Any, context: grpc.ServicerContext) -> None:
            del request
            context.abort(
                grpc.StatusCode.UNAUTHENTICATED,
                "This xla-gym service requires a token: pass auth_token= to "
                "compiler_gym.make(\"xla-v0\", service=...) or set XLA_GYM_AUTH_TOKEN",
            )

        self._deny = grpc.unary_unary_rpc_method_handler(deny)

    def intercept_service(self, continuation: Any, details: Any) -> Any:
        for key, value in details.invocation_metadata or ():
            if key == "authorization" and hmac.compare_digest(str(value).encode(), self._expected):
                return continuation(details)
        return self._deny


def create_server(
    address: str,
    session_type: type[CompilationSession],
    working_directory: Path,
    max_workers: int = DEFAULT_MAX_WORKERS,
    admin_token: str = "",
    auth_token: str = "",
) -> tuple[grpc.Server, int, CompilerGymServicer]:
    """A bound, not yet started server for ``session_type``, and its real port.

    :param address: ``host:port``; port 0 picks a free port.
    :param admin_token: what a client presents to change service-wide settings.
    :param auth_token: if set, every RPC must carry it (``authorization: Bearer``).
    :raises OSError: if the address cannot be bound.
    """
    if max_workers < 1:
        raise ValueError(f"max_workers must be >= 1, got {max_workers}")
    servicer = CompilerGymServicer(Path(working_directory), session_type, admin_token=admin_token)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="rpc"),
        options=SERVER_OPTIONS,
        interceptors=[_TokenInterceptor(auth_token)] if auth_token else None,
    )
    server.add_generic_rpc_handlers((step_handler(servicer.Step),))  # before the generated Step
    add_CompilerGymServiceServicer_to_server(servicer, server)
    try:
        port = server.add_insecure_port(address)
    except RuntimeError as error:  # grpcio >= 1.50 raises; older returns 0.
        raise OSError(f"Cannot bind {address}: {error}") from error
    if not port:
        raise OSError(f"Cannot bind {address}")
    return server, port, servicer


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``path`` so that a reader sees either nothing or all of ``text``."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The service's command line; unknown options are tolerated by ``serve``."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="A CompilerGym-compatible compiler service.",
        allow_abbrev=False,
    )
    add = parser.add_argument
    add(
        "--working_dir",
        default="",
        help="Service working directory: port.txt, "
        "pid.txt and logs/ go here (default: a new temporary directory).",
    )
    add(
        "--host",
        default="127.0.0.1",
        help="Address to listen on (default: %(default)s; use 0.0.0.0 to accept remote clients).",
    )
    add(
        "--port",
        type=int,
        default=0,
        help="Port to listen on; 0 picks a free one, "
        "written to WORKING_DIR/port.txt (default: %(default)s).",
    )
    add(
        "--rpc_service_threads",
        type=int,
        default=DEFAULT_MAX_WORKERS,
        help="RPC worker threads, i.e. how many RPCs run at once (default: %(default)s).",
    )
    add(
        "--log_level",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        default=None,
        help="Logging level of WORKING_DIR/logs/service.log (default: from -v, else INFO).",
    )
    add(
        "--shutdown_grace_seconds",
        type=float,
        default=10.0,
        help="On SIGTERM/SIGINT, seconds to let running RPCs finish (default: %(default)s).",
    )
    add(
        "--auth_token_file",
        default="",
        help="File holding the token every RPC must carry (authorization: Bearer <token>); "
        f"required when --host is not loopback (default: ${AUTH_TOKEN_VARIABLE}, else none).",
    )
    for flag in _GLOG_FLAGS:
        add(flag, default=None, help=argparse.SUPPRESS)
    add(
        "--alsologtostderr",
        action="store_true",
        help="Also log to stderr (glog flag passed by CompilerGym's client when debugging).",
    )
    add(
        "-v",
        "--v",
        dest="verbosity",
        type=int,
        default=None,
        help="glog-style verbosity passed by CompilerGym's client: 0 WARNING, 1 INFO, "
        "2+ DEBUG; --log_level wins.",
    )
    return parser


def _parse(
    parser: argparse.ArgumentParser, argv: Sequence[str]
) -> tuple[argparse.Namespace, list[str]]:
    """Known flags and leftovers; splits one-argument flag lists such as
    ``COMPILER_GYM_SERVICE_ARGS="--a=1 --b=2"``."""
    args, unknown = parser.parse_known_args([a for a in argv if a.strip()])
    leftovers: list[str] = []
    for item in unknown:
        if any(c.isspace() for c in item.strip()):
            _, rest = parser.parse_known_args(shlex.split(item), namespace=args)
            leftovers.extend(rest)
        else:
            leftovers.append(item)
    return args, leftovers


def _auth_token(args: argparse.Namespace) -> str:
    """The token of ``--auth_token_file``, else ``$XLA_GYM_AUTH_TOKEN``, else ""."""
    if args.auth_token_file:
        token = Path(args.auth_token_file).read_text().strip()
        if not token:
            raise ValueError(f"--auth_token_file {args.auth_token_file} is empty")
        return token
    return os.environ.get(AUTH_TOKEN_VARIABLE, "").strip()


def _log_level(args: argparse.Namespace) -> int:
    if args.log_level:
        return int(getattr(logging, args.log_level))
    if args.verbosity is None:
        return logging.INFO
    return {0: logging.WARNING, 1: logging.INFO}.get(max(args.verbosity, 0), logging.DEBUG)


def serve(
    session_type: type[CompilationSession],
    argv: Sequence[str] | None = None,
    on_shutdown: Callable[[], None] | None = None,
) -> int:
    """Run a service for ``session_type`` until SIGTERM or SIGINT; the exit code.

    Call from the service executable: ``sys.exit(serve(MySession))``.
    ``on_shutdown`` runs after the last session closed, while further signals
    are still absorbed (a second SIGTERM cannot interrupt the cleanup).
    """
    parser = build_parser()
    try:
        args, unknown = _parse(parser, sys.argv[1:] if argv is None else list(argv))
    except SystemExit as done:  # --help, or a malformed known flag.
        return done.code if isinstance(done.code, int) else 2
    working_dir = Path(args.working_dir or tempfile.mkdtemp(prefix="xla_gym-service-"))
    (working_dir / "logs").mkdir(parents=True, exist_ok=True)

    root = logging.getLogger()
    old_level = root.level
    handlers: list[logging.Handler] = [logging.FileHandler(working_dir / "logs" / "service.log")]
    if args.alsologtostderr:
        handlers.append(logging.StreamHandler(sys.stderr))
    for handler in handlers:
        handler.setFormatter(logging.Formatter(_LOG_FORMAT))
        root.addHandler(handler)
    root.setLevel(_log_level(args))
    try:
        for item in unknown:
            logger.warning("Ignoring unknown command line argument %r", item)
        return _run(args, session_type, working_dir, on_shutdown)
    finally:
        for handler in handlers:
            root.removeHandler(handler)
            handler.close()
        root.setLevel(old_level)


def _run(
    args: argparse.Namespace,
    session_type: type[CompilationSession],
    working_dir: Path,
    on_shutdown: Callable[[], None] | None = None,
) -> int:
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        del frame
        logger.info("Received %s, shutting down", signal.Signals(signum).name)
        stop.set()

    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, on_signal)
    else:
        logger.warning("serve() is not on the main thread: signals are not handled")
    try:
        host = f"[{args.host}]" if ":" in args.host else args.host
        try:
            auth_token = _auth_token(args)
            if args.host not in _LOOPBACK and not auth_token:
                raise ValueError(
                    f"Serving on {args.host} (not loopback) needs a token: --auth_token_file "
                    f"FILE or ${AUTH_TOKEN_VARIABLE} (README, \"Service behaviour\")"
                )
            server, port, servicer = create_server(
                f"{host}:{args.port}",
                session_type,
                working_dir,
                args.rpc_service_threads,
                admin_token=os.environ.get(ADMIN_TOKEN_VARIABLE, ""),
                auth_token=auth_token,
            )
        except (OSError, ValueError) as error:
            logger.error("%s", error)
            print(f"ERROR: {error}", file=sys.stderr)
            return 1
        server.start()
        atomic_write_text(working_dir / "pid.txt", str(os.getpid()))
        atomic_write_text(working_dir / "port.txt", str(port))
        logger.info(
            "Service %s listening on %s:%d with %d RPC threads, PID %d",
            working_dir,
            args.host,
            port,
            args.rpc_service_threads,
            os.getpid(),
        )
        while not stop.wait(0.5):
            pass
        server.stop(args.shutdown_grace_seconds).wait()
        closed = servicer.close_all()
        if on_shutdown is not None:
            on_shutdown()
        logger.info("Service stopped; %d sessions were still open", closed)
        return 0
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
