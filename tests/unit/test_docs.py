"""The docs say what the code does: generated tables are current, every name and number is there."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from xla_service import errors
from xla_service.catalog.schema import DEFAULT_RUNTIME_REPETITIONS, MAX_RUNTIME_REPETITIONS
from xla_service.env.rewards import SHAPING_GAMMA, default_rewards
from xla_service.passes.engine import MAX_INSTRUCTIONS, MAX_MODULE_BYTES
from xla_service.session import observations
from xla_service.session.parameters import MAX_WORKERS, PARAMETERS, STEP_TIMEOUT_RANGE

ROOT = Path(__file__).resolve().parents[2]
DOCS = {p.name: p.read_text() for p in (ROOT / "docs").glob("*.md")}
README = (ROOT / "README.md").read_text()


def test_the_spaces_reference_is_the_observation_tables_output():
    assert observations.reference() in DOCS["spaces.md"], "run: python -m xla_service.session.observations"


@pytest.mark.parametrize("name", [r.name for r in default_rewards()])
def test_every_reward_is_documented(name):
    assert f"| reward `{name}` |" in DOCS["spaces.md"]


@pytest.mark.parametrize("key", sorted(k for k in PARAMETERS if not k.startswith("xla.debug.")))
def test_every_session_parameter_is_documented(key):
    assert re.search(rf"^\| `{re.escape(key)}` \|", DOCS["spaces.md"], re.M)


def test_numbers_match_the_code():
    spaces, service = DOCS["spaces.md"], DOCS["service.md"]
    assert f"`gamma = {SHAPING_GAMMA}`" in spaces
    assert f"({MAX_MODULE_BYTES} bytes)" in spaces
    assert f"1..{MAX_RUNTIME_REPETITIONS}, default {DEFAULT_RUNTIME_REPETITIONS}" in spaces
    assert f"| 1..{MAX_WORKERS} |" in spaces
    low, high = STEP_TIMEOUT_RANGE
    assert f"seconds in [{low:g}, {high:g}]" in spaces
    assert f"{MAX_INSTRUCTIONS:,}" in service and f"{MAX_INSTRUCTIONS:,}" in spaces


@pytest.mark.parametrize("name", errors.__all__[:-1])
def test_every_error_is_raised_somewhere(name):
    """Dead error types go (the docs list what can happen)."""
    used = [p for p in (ROOT / "xla_service").rglob("*.py") if p.name != "errors.py" and name in p.read_text()]
    assert used, f"{name} is never raised"


def test_every_doc_page_is_linked_from_the_readme_and_every_link_resolves():
    for page in DOCS:
        assert f"(docs/{page})" in README, page
    for source, text in [("README.md", README), *((f"docs/{k}", v) for k, v in DOCS.items())]:
        base = (ROOT / source).parent
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", text):
            assert (base / target).exists(), f"{source} links to {target}, which does not exist"


def test_the_readme_starts_with_the_two_commands():
    block = README.split("```bash", 1)[1].split("```", 1)[0]
    assert [line.split()[:2] for line in block.strip().splitlines()] == [["make", "demo"], ["make", "test"]]
