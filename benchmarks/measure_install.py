"""Size and time of the environment-only install, in a fresh virtual environment.

Follows docs/install.md's recipe step by step, timing each step:

1. ``python -m venv VENV``;
2. ``PIP_CONSTRAINT=build-constraints.txt pip install gym==0.21.0`` (gym 0.21's
   sdist builds only under old setuptools/wheel);
3. ``pip install -e .`` (this checkout, with pyproject.toml's dependencies, no extras);
4. ``pip install --no-deps compiler-gym==0.2.5``;

then checks that none of the extras' heavy packages came along (torch, Ray,
PyG, pyarrow, matplotlib, stable-baselines3), runs a smoke test inside the new
environment (``compiler_gym.make("xla-v0")``, reset, one step;
``gymnasium.make("xla_service.gym:xla-v0")``, reset, one step) and reports
the environment's size on disk (``du -sh``). Wheels already in pip's cache
are reused unless ``--no-cache``; the steps' times include the downloads.

    python benchmarks/measure_install.py --python python3.11 --venv /tmp/envonly
    python benchmarks/measure_install.py --python /root/.pyenv/versions/3.12.1/bin/python3.12 --venv /tmp/envonly312

Exit status 0 only if every step and the smoke test passed.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["HEAVY", "SMOKE", "main", "measure"]

ROOT = Path(__file__).resolve().parents[1]

#: Import names of the extras' packages that the environment alone must not install.
HEAVY = ("torch", "ray", "torch_geometric", "pyarrow", "matplotlib", "stable_baselines3", "pandas")

#: Run inside the new environment, from a folder outside the checkout.
SMOKE = """
import importlib.util, json, sys
heavy = [m for m in sys.argv[1].split(",") if importlib.util.find_spec(m) is not None]
import compiler_gym
import gymnasium
import xla_service.gym  # noqa: F401  (registers nothing by itself; gymnasium.make imports it)
with compiler_gym.make("xla-v0") as env:
    env.reset()
    _, reward, done, _ = env.step(env.action_space.sample())
    cg = {"benchmark": str(env.benchmark), "reward": reward, "done": done}
genv = gymnasium.make("xla_service.gym:xla-v0")
try:
    obs, info = genv.reset(seed=0)
    obs, reward, terminated, truncated, info = genv.step(genv.action_space.sample())
    gym_step = {"reward": float(reward), "terminated": bool(terminated)}
finally:
    genv.close()
print(json.dumps({"heavy_installed": heavy, "compiler_gym": cg, "gymnasium": gym_step,
                  "python": sys.version.split()[0]}))
"""


def _run(cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> float:
    """Run ``cmd`` (its output shown only on failure); seconds it took."""
    start = time.monotonic()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"failed ({proc.returncode}) after {seconds:.0f} s: {' '.join(cmd)}")
    return seconds


def _du_mb(path: Path) -> float:
    """``du -s`` of ``path`` in MB (1e6 bytes of allocated blocks, as du counts)."""
    out = subprocess.run(["du", "-s", "--block-size=1", str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0]) / 1e6


def measure(python: str, venv: Path, *, no_cache: bool = False) -> dict[str, object]:
    """Make ``venv`` with ``python``, install the environment alone, smoke-test it; the report."""
    if venv.resolve() == ROOT or ROOT in venv.resolve().parents:
        raise SystemExit(f"expected a --venv outside the checkout, got {venv}")
    shutil.rmtree(venv, ignore_errors=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    if no_cache:
        pip.append("--no-cache-dir")
    steps: dict[str, float] = {}
    total = time.monotonic()
    steps["venv"] = _run([python, "-m", "venv", str(venv)])
    build_env = dict(os.environ, PIP_CONSTRAINT=str(ROOT / "build-constraints.txt"))
    steps["gym==0.21.0 (build-constraints.txt)"] = _run([*pip, "gym==0.21.0"], env=build_env)
    steps["pip install -e ."] = _run([*pip, "-e", str(ROOT)])
    steps["compiler-gym==0.2.5 --no-deps"] = _run([*pip, "--no-deps", "compiler-gym==0.2.5"])
    seconds = time.monotonic() - total
    size_mb = _du_mb(venv)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["XLA_GYM_STORE"] = "off"  # the smoke test leaves the user's experience store alone
    smoke = subprocess.run([str(venv / "bin" / "python"), "-c", SMOKE, ",".join(HEAVY)],
                           capture_output=True, text=True, cwd=venv, env=env, timeout=600)
    if smoke.returncode != 0:
        sys.stderr.write(smoke.stdout[-4000:] + smoke.stderr[-4000:])
        raise SystemExit("the smoke test failed in the new environment")
    result = json.loads(smoke.stdout.strip().splitlines()[-1])
    if result["heavy_installed"]:
        raise SystemExit(f"expected none of {HEAVY} in the environment-only install, got {result['heavy_installed']}")
    packages = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json"],
                              capture_output=True, text=True, check=True).stdout
    return {"python": result["python"], "seconds": round(seconds, 1),
            "steps": {k: round(v, 1) for k, v in steps.items()}, "size_mb": round(size_mb),
            "packages": len(json.loads(packages)), "no_cache": no_cache, "smoke": result}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", default="python3.11", help="interpreter of the new environment (default: %(default)s)")
    parser.add_argument("--venv", type=Path, default=Path("/tmp/xla-gym-envonly"), help="the environment to (re)create (default: %(default)s)")
    parser.add_argument("--no-cache", action="store_true", help="download every wheel again (pip --no-cache-dir)")
    parser.add_argument("--keep", action="store_true", help="keep the environment afterwards")
    args = parser.parse_args(argv)
    try:
        report = measure(args.python, args.venv, no_cache=args.no_cache)
    finally:
        if not args.keep:
            shutil.rmtree(args.venv, ignore_errors=True)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
