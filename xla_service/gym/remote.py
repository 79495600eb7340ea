"""An ``XlaGymEnv`` in a fresh interpreter, for a process forked after gRPC ran.

gRPC does not survive ``fork()``: a process forked from one that had made an
xla-v0 env may hang for ever when it makes its own channel. That is what
Gymnasium's ``AsyncVectorEnv`` does with the default ``fork`` context (it
even makes a first env in the parent to read the spaces), and what
``multiprocessing`` does on Linux by default. There, ``XlaGymEnv`` runs the
env in a child interpreter started afresh (``python -m xla_service.gym.remote``)
and forwards ``reset``, ``step``, ``render`` and ``close`` to it over a pipe:
nothing of the parent's gRPC is used. The child stops when the pipe closes.
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
from typing import IO, Any

__all__ = ["RemoteEnv", "serve"]


class RemoteEnv:
    """The calls of an ``XlaGymEnv(**kwargs)`` that runs in a child interpreter."""

    def __init__(self, kwargs: dict[str, Any]) -> None:
        self._process: subprocess.Popen[bytes] | None = subprocess.Popen(
            [sys.executable, "-m", "xla_service.gym.remote"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        try:
            self.call("__init__", kwargs)
        except BaseException:
            self.close()
            raise

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """``env.name(*args, **kwargs)`` in the child; its exception is raised here."""
        process = self._process
        if process is None or process.stdin is None or process.stdout is None:
            raise RuntimeError(f"Expected an open env for {name}(), got a closed one")
        try:
            pickle.dump((name, args, kwargs), process.stdin)
            process.stdin.flush()
            ok, value = pickle.load(process.stdout)
        except (EOFError, BrokenPipeError, OSError) as e:
            code = process.poll()
            raise RuntimeError(f"The env's interpreter (pid {process.pid}) is gone (exit code {code})") from e
        if not ok:
            raise value
        return value

    def close(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                stream.close()  # the child reads EOF: it closes its env and exits
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _picklable(error: BaseException) -> BaseException:
    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:
        return RuntimeError(f"{type(error).__name__}: {error}")


def serve(requests: IO[bytes], replies: IO[bytes]) -> None:
    """Answer :class:`RemoteEnv`'s calls until ``close`` or the end of ``requests``."""
    from xla_service.gym.env import XlaGymEnv

    env: XlaGymEnv | None = None
    try:
        while True:
            try:
                name, args, kwargs = pickle.load(requests)
            except EOFError:
                return
            try:
                if name == "__init__":
                    env, value = XlaGymEnv(**args[0]), None
                elif env is None:
                    raise RuntimeError(f"Expected __init__ first, got {name}")
                else:
                    value = getattr(env, name)(*args, **kwargs)
                reply: tuple[bool, Any] = (True, value)
            except Exception as e:
                reply = (False, _picklable(e))
            pickle.dump(reply, replies)
            replies.flush()
    finally:
        if env is not None:
            env.close()


def main() -> None:
    """The protocol keeps the original stdout; anything printed goes to stderr."""
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    serve(sys.stdin.buffer, replies)


if __name__ == "__main__":
    main()
