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


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors of a markdown page (lower case, punctuation dropped, spaces to dashes)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    in_code = False
    for line in page.read_text().splitlines():
        in_code ^= line.startswith("```")
        heading = re.match(r"#+ (.*)", line)
        if heading and not in_code:
            slug = re.sub(r"[^\w\- ]", "", heading[1].strip().lower().replace("`", "")).replace(" ", "-")
            found.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
            seen[slug] = seen.get(slug, 0) + 1
    return found


def test_every_relative_link_and_anchor_of_every_markdown_file_resolves():
    import subprocess

    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "*.md"], capture_output=True, text=True)
    if listed.returncode:
        pytest.skip("not a git checkout")
    broken = []
    for name in listed.stdout.split():
        page, in_code = ROOT / name, False
        for number, line in enumerate(page.read_text().splitlines(), 1):
            in_code ^= line.startswith("```")
            for target in [] if in_code else re.findall(r"\]\(([^)\s]+)\)", line):
                path, _, anchor = target.partition("#")
                if re.match(r"[a-z]+:", target):
                    continue
                dest = page.parent / path if path else page
                if not dest.exists() or (anchor and dest.suffix == ".md" and anchor not in _anchors(dest)):
                    broken.append(f"{name}:{number}: {target}")
    assert not broken, broken


def test_the_readme_starts_with_the_two_commands():
    block = README.split("```bash", 1)[1].split("```", 1)[0]
    assert [line.split()[:2] for line in block.strip().splitlines()] == [["make", "demo"], ["make", "test"]]
