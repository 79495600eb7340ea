"""The ``service`` fixture of the runtime's tests: a counter service over real gRPC."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from counter_service import Service, running_service


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    with running_service(tmp_path) as running:
        yield running
