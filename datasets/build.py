"""One benchmark of a ``benchmark://xla-<family>-v0`` suite: build the JAX
model's configuration, lower it to HLO, normalize, count, compile with XLA's
default pipeline, verify by execution, and write ``<name>.hlo.gz``.

``process`` runs in a worker process of ``generate.py`` and never raises: a
failure comes back as a record naming its stage. The naming helpers (suite,
URI, reproducible gzip) are shared with the manifests and the tests.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import os
import time
from pathlib import Path
from typing import Any

from xla_gym_datasets.models import get_family
from xla_gym_datasets.splits import split

from xla_service.catalog.schema import OP_COUNT_RULE

__all__ = ["VERSION", "suite_name", "benchmark_uri", "gzip_bytes", "read_benchmark", "process"]

VERSION = "v0"


def suite_name(family: str) -> str:
    return f"xla-{family}-{VERSION}"


def benchmark_uri(family: str, name: str) -> str:
    return f"benchmark://{suite_name(family)}/{name}"


def gzip_bytes(text: str) -> bytes:
    """Reproducible gzip: mtime 0, no embedded file name."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as f:
        f.write(text.encode("utf-8"))
    return buf.getvalue()


def read_benchmark(path: Path) -> str:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return f.read()


def _inputs_for(text: str, example_args) -> tuple:
    """Seeded inputs for the module: the model's own example arguments when they
    match the entry parameters one for one (they always should: the jitted
    function keeps its arguments), else seeded random arrays of the right shapes.
    """
    import jax
    import numpy as np
    from xla_gym_datasets import engine

    shapes = engine.parameter_shapes(text)
    leaves = [np.asarray(x) for x in jax.tree_util.tree_leaves(example_args)]
    if len(leaves) == len(shapes) and all(
        tuple(x.shape) == s and x.dtype == d for x, (s, d) in zip(leaves, shapes)
    ):
        return leaves, "example-args"
    rng = np.random.default_rng(0)
    arrays = []
    for s, d in shapes:
        if np.issubdtype(d, np.integer):
            arrays.append(rng.integers(0, 8, size=s).astype(d))
        elif d == np.bool_:
            arrays.append(rng.integers(0, 2, size=s).astype(d))
        else:
            arrays.append(rng.standard_normal(s).astype(d))
    return arrays, "seeded-random"


def _verify(text: str, example_args, exe) -> dict[str, Any]:
    import numpy as np
    from xla_gym_datasets import engine

    inputs, kind = _inputs_for(text, example_args)
    first = engine.execute(exe, inputs)
    second = engine.execute(exe, inputs)
    same = len(first) == len(second) and all(
        a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
        for a, b in zip(first, second)
    )
    if not same:
        raise RuntimeError("outputs differ between two executions on the same inputs")
    finite = all(
        bool(np.all(np.isfinite(a.astype(np.float32))))
        for a in first
        if np.issubdtype(a.dtype, np.floating) or a.dtype.name == "bfloat16"
    )
    return {
        "parses": True,
        "executes": True,
        "deterministic": True,
        "outputs_finite": finite,
        "inputs": kind,
        "n_outputs": len(first),
    }


def process(family: str, index: int, out_dir: str, verify: bool) -> dict[str, Any]:
    """Build, lower, normalize, verify and write one benchmark. Never raises."""
    t0 = time.time()
    cpu0 = time.process_time()
    times: dict[str, float] = {}
    module = get_family(family)
    config = module.configs()[index]
    name = config.name
    stage = "build"
    try:
        import jax
        import jaxlib
        from xla_gym_datasets import engine

        fn, args = module.build(config)
        times[stage] = time.time() - t0
        stage = "lower"
        raw = fn.lower(*args).compiler_ir("hlo").as_hlo_text()
        times[stage] = time.time() - t0
        stage = "normalize"
        text = engine.normalize(raw)  # raises unless a fixpoint was reached
        times[stage] = time.time() - t0
        stage = "count"
        initial = engine.op_count(text)
        times[stage] = time.time() - t0
        stage = "compile"
        exe, default_text = engine.compile_with_default(text)
        default_count = engine.op_count(default_text)
        times[stage] = time.time() - t0
        stage = "verify"
        verification = _verify(text, args, exe) if verify else None
        times[stage] = time.time() - t0
        stage = "cost_analysis"
        cost = engine.cost_analysis(text)
        times[stage] = time.time() - t0
        stage = "write"
        data = gzip_bytes(text)
        suite = Path(out_dir) / suite_name(family)
        suite.mkdir(parents=True, exist_ok=True)
        tmp = suite / f".{name}.hlo.gz.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, suite / f"{name}.hlo.gz")
        entry = {
            "name": name,
            "uri": benchmark_uri(family, name),
            "file": f"{name}.hlo.gz",
            "family": family,
            "model": config.model,
            "config": _jsonable(config),
            "split": split(family, config),
            "jax_version": jax.__version__,
            "jaxlib_version": jaxlib.__version__,
            "op_count_rule": OP_COUNT_RULE,
            "raw_op_count": engine.op_count(raw),
            "initial_op_count": initial,
            "default_op_count": default_count,
            "cost_analysis": cost,
            "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "text_bytes": len(text.encode("utf-8")),
            "gz_bytes": len(data),
            "verification": verification,
        }
        times[stage] = time.time() - t0
        return {"ok": True, "entry": entry, "seconds": time.time() - t0,
                "cpu_seconds": time.process_time() - cpu0, "times": _stage_times(times)}
    except BaseException as e:  # noqa: BLE001 - everything is recorded
        msg = f"{type(e).__name__}: {e}".strip().splitlines()
        return {
            "ok": False,
            "failure": {
                "name": name,
                "uri": benchmark_uri(family, name),
                "stage": stage,
                "error": "\n".join(msg[:5])[:2000],
            },
            "seconds": time.time() - t0,
            "cpu_seconds": time.process_time() - cpu0,
        }


def _stage_times(cumulative: dict[str, float]) -> dict[str, float]:
    out, last = {}, 0.0
    for stage, t in cumulative.items():
        out[stage] = t - last
        last = t
    return out


def _jsonable(config) -> dict[str, Any]:
    import dataclasses

    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(config).items()}

