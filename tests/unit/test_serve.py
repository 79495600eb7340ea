"""The service executable and CompilerGym's own client: serve() in a subprocess, its flags, the stock
connection and env against the fake counter session, and the runtime's imports.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from counter_service import Service, T
from fake_counter_session import A, import_compiler_gym

from xla_service.proto import (
    Benchmark,
    CompilerGymServiceStub,
    File,
    GetVersionRequest,
    StartSessionRequest,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def _wait_for(path: Path, proc: subprocess.Popen[bytes], seconds: float = 20) -> str:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if path.is_file():
            return path.read_text()
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError(f"{path} not written")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_serve_subprocess(tmp_path: Path, signum: int) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(HERE)]))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fake_counter_session",
            f"--working_dir={tmp_path}",
            "--logbuflevel=-1",
            "-v=2",
            "--alsologtostderr",
            "--foo=1 --rpc_service_threads=3",
        ],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        port = int(_wait_for(tmp_path / "port.txt", proc))
        assert int((tmp_path / "pid.txt").read_text()) == proc.pid
        with grpc.insecure_channel(f"localhost:{port}") as channel:
            stub = CompilerGymServiceStub(channel)
            assert stub.GetVersion(GetVersionRequest(), timeout=T).compiler_version == "counter-1.0"
            stub.StartSession(
                StartSessionRequest(
                    benchmark=Benchmark(uri="benchmark://c/1", program=File(contents=b"1"))
                ),
                timeout=T,
            )
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr.decode()
    log = (tmp_path / "logs" / "service.log").read_text()
    assert "--logbuflevel" not in log  # CompilerGym's glog flags are accepted quietly
    assert "Ignoring unknown command line argument '--foo=1'" in log
    assert "StartSession(benchmark=benchmark://c/1)" in log  # -v=2 is DEBUG
    assert "1 sessions were still open" in log
    assert f"listening on 127.0.0.1:{port} with 3 RPC threads" in log  # not 0.0.0.0
    assert b"Service stopped" in stderr  # --alsologtostderr
    assert not list(tmp_path.glob(".*.tmp"))


def test_serve_help_and_bad_flag() -> None:
    code = (
        "import sys, fake_counter_session as f; from xla_service.runtime import serve; "
        "sys.exit(serve(f.CounterSession))"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(HERE)]))
    done = subprocess.run(
        [sys.executable, "-c", code, "--help"], env=env, capture_output=True, timeout=60
    )
    assert done.returncode == 0
    for flag in [
        b"--working_dir",
        b"--host",
        b"--port",
        b"--rpc_service_threads",
        b"--log_level",
    ]:
        assert flag in done.stdout
    done = subprocess.run(
        [sys.executable, "-c", code, "--port=notanint"],
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 2


def test_compiler_gym_connection_talks_to_us(service: Service) -> None:
    import_compiler_gym()
    from compiler_gym.errors import SessionNotFound
    from compiler_gym.service import proto as cg
    from compiler_gym.service.connection import (
        CompilerGymServiceConnection,
        ConnectionOpts,
    )

    conn = CompilerGymServiceConnection(endpoint=f"127.0.0.1:{service.port}", opts=ConnectionOpts())
    try:
        assert [s.name for s in conn.action_spaces] == ["counter"]
        request = cg.StartSessionRequest(benchmark=cg.Benchmark(uri="benchmark://c/six"))
        with pytest.raises(FileNotFoundError, match="Benchmark not found: benchmark://c/six"):
            conn(conn.stub.StartSession, request)
        conn(
            conn.stub.AddBenchmark,
            cg.AddBenchmarkRequest(
                benchmark=[cg.Benchmark(uri="benchmark://c/six", program=cg.File(contents=b"6"))]
            ),
        )
        sid = conn(conn.stub.StartSession, request).session_id
        with pytest.raises(ValueError, match="^bad action: raise_value$"):
            conn(
                conn.stub.Step,
                cg.StepRequest(session_id=sid, action=[cg.Event(int64_value=A["raise_value"])]),
            )
        with pytest.raises(FileNotFoundError, match="^Session not found: 99$"):
            conn(conn.stub.Step, cg.StepRequest(session_id=99))
        assert SessionNotFound  # the env turns the above into SessionNotFound
    finally:
        conn.close()


def test_compiler_gym_env_reset_step_fork(service: Service) -> None:
    import_compiler_gym()
    from compiler_gym.datasets import Benchmark as CgBenchmark
    from compiler_gym.service.client_service_compiler_env import (
        ClientServiceCompilerEnv,
    )

    bench = CgBenchmark.from_file_contents("benchmark://counter-v0/three", b"3")
    env = ClientServiceCompilerEnv(
        service=f"127.0.0.1:{service.port}", benchmark=bench, observation_space="count"
    )
    try:
        assert env.reset() == 3  # StartSession -> NOT_FOUND -> AddBenchmark -> retry
        observation, _, done, info = env.step(2)
        assert (observation, done, info["action_had_no_effect"]) == (5, False, False)
        fork = env.fork()
        try:
            assert fork.step(1)[0] == 6 and env.observation["count"] == 5
            assert env.observation["text"] == "count=5"
        finally:
            fork.close()
        assert env.reset() == 3  # the URI alone now: the benchmark is cached
    finally:
        env.close()
    assert service.servicer.session_count == 0


def test_compiler_gym_managed_connection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The client launches the executable, reads port.txt, and closes it: exit 0."""
    import_compiler_gym()
    from compiler_gym.service import proto as cg
    from compiler_gym.service.connection import (
        CompilerGymServiceConnection,
        ConnectionOpts,
    )

    script = tmp_path / "bin" / "counter-service"
    script.parent.mkdir()
    script.write_text(
        f"#!{sys.executable}\nimport runpy\n"
        "runpy.run_module('fake_counter_session', run_name='__main__')\n"
    )
    script.chmod(0o755)
    for var in ("COMPILER_GYM_CACHE", "COMPILER_GYM_TRANSIENT_CACHE"):
        monkeypatch.setenv(var, str(tmp_path / var))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), str(HERE)]))
    monkeypatch.setenv("COMPILER_GYM_DEBUG", "3")  # adds -v=2 --logbuflevel=-1 ...
    monkeypatch.setenv("COMPILER_GYM_SERVICE_ARGS", "--foo=1 --bar=2")
    conn = CompilerGymServiceConnection(script, ConnectionOpts(script_args=["--baz=3"]))
    process = conn.connection.process
    working_dir = conn.connection.cache.path
    conn(
        conn.stub.StartSession,
        cg.StartSessionRequest(
            benchmark=cg.Benchmark(uri="benchmark://c/1", program=cg.File(contents=b"1"))
        ),
    )
    log = (working_dir / "logs" / "service.log").read_text()
    conn.close()  # SIGTERM with a session open; raises ServiceError on a non-zero exit
    assert process.returncode == 0
    assert "--logbuflevel" not in log  # passed by CompilerGym's client: accepted quietly
    for flag in ["--foo=1", "--bar=2", "--baz=3"]:
        assert f"Ignoring unknown command line argument '{flag}'" in log


def test_runtime_imports_no_compiler() -> None:
    code = (
        "import sys, xla_service.runtime; "
        "bad = [m for m in ('jax', 'compiler_gym', 'xla_service.passes', 'numpy') "
        "if m in sys.modules]; "
        "sys.exit(f'imported {bad}' if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
