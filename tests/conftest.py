"""Shared fixtures. Integration tests drive the stock compiler_gym client."""
from __future__ import annotations

import os

# Workers of the services that tests start: two fit this 2-core machine.
os.environ.setdefault("XLA_GYM_WORKERS", "2")
# Services that tests start serve the test-only requests (xla.debug.set_module, the
# worker's "crash"): they are off in every other service.
os.environ.setdefault("XLA_GYM_TEST_HOOKS", "1")
# Commands that tests run write their runs, figures and reports under a folder of this
# run when no --out is given, never the user's (~/.cache/xla-gym/runs).
if "XLA_GYM_RUNS" not in os.environ:
    import tempfile

    os.environ["XLA_GYM_RUNS"] = tempfile.mkdtemp(prefix="xla-gym-test-runs-")
# Services that tests start use an experience store of their own, new for each
# run, never the user's (~/.cache/xla-gym): no result of an earlier run is reused.
if "XLA_GYM_STORE" not in os.environ:
    import tempfile

    os.environ["XLA_GYM_STORE"] = os.path.join(tempfile.mkdtemp(prefix="xla-gym-test-store-"), "store.sqlite")
