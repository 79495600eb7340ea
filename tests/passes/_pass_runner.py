"""Run XLA passes in-process, one after another, in a process XLA may abort.

Used by ``test_every_pass.py`` (not a test module itself)::

    python _pass_runner.py JOBS.json RESULTS.jsonl

``JOBS.json`` holds ``{"text": <normalized HLO>, "jobs": [[kind, pass, dump_dir], ...]}``
with ``kind`` either ``"run"`` (``xla.run_pass``) or ``"finish"`` (``xla.finish_pass``
on the dumps that an aborted ``run`` left in ``dump_dir``). Every job appends a
``{"event": "start", ...}`` line before it starts and a result line when it ends,
flushed at once, so that the parent can tell which pass was running when XLA
aborted the process, and resume after it.
"""
from __future__ import annotations

import json
import sys


def main(jobs_path: str, results_path: str) -> None:
    from xla_service.catalog.passes import get_pass
    from xla_service.passes import xla

    with open(jobs_path) as f:
        spec = json.load(f)
    text = spec["text"]
    with open(results_path, "a") as out:

        def emit(**record: object) -> None:
            out.write(json.dumps(record) + "\n")
            out.flush()

        for kind, name, dump_dir in spec["jobs"]:
            emit(event="start", kind=kind, name=name, dump_dir=dump_dir)
            try:
                if kind == "run":
                    result = xla.run_pass(text, get_pass(name), dump_dir)
                else:
                    result = xla.finish_pass(dump_dir, get_pass(name), "the worker aborted")
            except Exception as e:  # XlaGymError, or an engine bug: reported either way
                emit(event="end", kind=kind, name=name, status="error",
                     error_type=type(e).__name__, error=str(e))
                continue
            emit(event="end", kind=kind, name=name,
                 status="unchanged" if result is None else "changed",
                 text=None if result is None else result.text)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
