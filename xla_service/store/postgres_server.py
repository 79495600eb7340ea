"""Start and stop a PostgreSQL server for the shared experience store (the system's binaries).

``python -m xla_service.store serve-postgres DIR [--port 5432] [--host 0.0.0.0]``
starts one in the folder ``DIR`` (made with ``initdb`` on first use) and
prints its ``XLA_GYM_STORE`` URL; ``stop-postgres DIR`` stops it. The tests
start one the same way. The binaries are Debian's ``postgresql`` package
(``apt-get install postgresql``, installed here if missing when run as
root). PostgreSQL refuses to run as root: as root, the server runs as the
``postgres`` user. Authentication is ``trust`` for the ``xla`` user: serve
beyond loopback only on a trusted network (docs/ray.md).
"""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

__all__ = ["binaries", "start", "stop", "free_port"]

_USER = "xla"


def binaries() -> Path:
    """The folder of ``initdb`` and ``pg_ctl``; installs Debian's postgresql if missing and root."""
    found = shutil.which("initdb") or next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))[-1:]), None)
    if found is None and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "postgresql"], check=True, env=env)
        found = next(iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))[-1:]), None)
    if found is None:
        raise FileNotFoundError("PostgreSQL's initdb was not found: install the postgresql package")
    return Path(os.path.realpath(found)).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_server_user(args: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args


def start(folder: Path, port: int = 5432, host: str = "127.0.0.1", timeout: float = 60.0) -> str:
    """Start a server whose data lives in ``folder``; its URL."""
    folder = Path(folder).resolve()
    bin_dir = binaries()
    data = folder / "data"
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    if not (data / "PG_VERSION").exists():
        subprocess.run(
            _as_server_user([str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", _USER]),
            check=True, stdout=subprocess.DEVNULL,
        )
    options = f"-p {port} -k {folder} -c listen_addresses={host}"
    subprocess.run(
        _as_server_user([str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w", "start"]),
        check=True, stdout=subprocess.DEVNULL, timeout=timeout,
    )
    url = f"postgresql://{_USER}@{'127.0.0.1' if host in ('0.0.0.0', '*') else host}:{port}/postgres"
    deadline = time.time() + timeout
    while True:  # accepting connections?
        try:
            with socket.create_connection(("127.0.0.1" if host in ("0.0.0.0", "*") else host, port), timeout=1):
                return url
        except OSError:
            if time.time() > deadline:
                raise TimeoutError(f"PostgreSQL did not start in {timeout:g} s; see {folder / 'log'}") from None
            time.sleep(0.2)


def stop(folder: Path) -> None:
    """Stop the server of ``folder`` (fast shutdown)."""
    data = Path(folder).resolve() / "data"
    subprocess.run(
        _as_server_user([str(binaries() / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
        check=False, stdout=subprocess.DEVNULL,
    )
