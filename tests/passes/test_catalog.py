"""The action space: xla_service.catalog.passes (pure Python, no jax)."""
from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from xla_service.catalog import passes as catalog
from xla_service.catalog.passes import EXCLUDED, PASS_NAMES, PASSES, TARGET_INDEPENDENT, get_pass
from xla_service.errors import UnknownPassError

from ._helpers import REPO

SIMPLIFICATION = "simplification"
NESTED = [p for p in PASSES if p.parent]


def test_catalog_imports_without_jax():
    code = (
        "import sys; import xla_service.catalog.passes; "
        "bad = sorted(m for m in sys.modules if m == 'jax' or m.startswith(('jax.', 'jaxlib')));"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, f"catalog imported jax modules: {run.stdout} {run.stderr}"


def test_at_least_40_actions():
    assert len(PASSES) >= 40


def test_names_unique_and_ordered_like_passes():
    assert len(set(PASS_NAMES)) == len(PASS_NAMES)
    assert PASS_NAMES == tuple(p.name for p in PASSES)


@pytest.mark.parametrize("name", PASS_NAMES)
def test_every_action_is_target_independent(name):
    assert name in TARGET_INDEPENDENT


@pytest.mark.parametrize("name", PASS_NAMES)
def test_get_pass_round_trips(name):
    spec = get_pass(name)
    assert spec.name == name
    assert spec is PASSES[PASS_NAMES.index(name)]


@pytest.mark.parametrize("name", PASS_NAMES)
def test_no_action_is_excluded(name):
    assert name not in EXCLUDED


@pytest.mark.parametrize(
    "typo, expected",
    [("algsimpp", "algsimp"), ("cse_", "cse"), ("call_inliner", "call-inliner"),
     ("transpose_folding", "transpose-folding"), ("reshape-mover2", "reshape-mover")],
)
def test_unknown_name_suggests_close_match(typo, expected):
    with pytest.raises(UnknownPassError) as info:
        get_pass(typo)
    message = str(info.value)
    assert repr(typo) in message
    assert "Did you mean" in message
    assert repr(expected) in message


def test_unknown_name_without_close_match_has_no_suggestion():
    with pytest.raises(UnknownPassError) as info:
        get_pass("zzzzzzzzzzzzzzzzzz")
    assert "Did you mean" not in str(info.value)
    assert str(len(PASSES)) in str(info.value)


def test_unknown_pass_error_is_a_value_error():
    with pytest.raises(ValueError):
        get_pass("no-such-pass")


@pytest.mark.parametrize("name", sorted(EXCLUDED))
def test_excluded_name_gives_its_reason(name):
    with pytest.raises(UnknownPassError) as info:
        get_pass(name)
    message = str(info.value)
    assert repr(name) in message
    assert EXCLUDED[name] in message
    assert "Did you mean" not in message


def test_layout_assignment_is_not_an_action():
    assert "layout-assignment" not in PASS_NAMES
    assert "layout-assignment" not in TARGET_INDEPENDENT
    with pytest.raises(UnknownPassError, match="target-dependent"):
        get_pass("layout-assignment")


def test_excluded_names_are_pipeline_names_or_layout_assignment():
    for name in EXCLUDED:
        assert name in TARGET_INDEPENDENT or name == "layout-assignment", name


@pytest.mark.parametrize("spec", NESTED, ids=[p.name for p in NESTED])
def test_nested_passes_have_parent_simplification(spec):
    assert spec.parent == SIMPLIFICATION
    assert spec.members == ()
    assert spec.is_fixpoint
    assert spec.runs == (SIMPLIFICATION, spec.name)


@pytest.mark.parametrize(
    "name",
    ["algsimp", "reshape-mover", "constant_folding", "tuple-simplifier", "gather_simplifier",
     "while-loop-invariant-code-motion", "while-loop-constant-sinking", "simplify-while-loops",
     "simplify-sorts", "simplify-conditional", "tree_reduction_rewriter", "gather_expander"],
)
def test_passes_known_to_be_nested_are(name):
    """The design note lists these as living in the nested `simplification` pipeline."""
    assert get_pass(name).parent == SIMPLIFICATION


def test_simplification_has_members():
    spec = get_pass(SIMPLIFICATION)
    assert spec.parent == ""
    assert spec.members
    assert spec.is_fixpoint
    assert len(set(spec.members)) == len(spec.members)
    nested = {p.name for p in NESTED}
    assert nested <= set(spec.members), "every nested action must run when its host runs"
    assert {"algsimp", "dce"} <= set(spec.members)
    assert spec.runs[0] == SIMPLIFICATION


@pytest.mark.parametrize("name", [n for n in PASS_NAMES if n != SIMPLIFICATION and not get_pass(n).parent])
def test_top_level_passes_run_alone(name):
    spec = get_pass(name)
    assert spec.members == ()
    assert not spec.is_fixpoint
    assert spec.runs == (name,)


@pytest.mark.parametrize("name", PASS_NAMES)
def test_disable_never_contains_what_runs(name):
    spec = get_pass(name)
    disabled = set(spec.disable)
    assert name not in disabled
    if spec.parent:
        assert spec.parent not in disabled
    assert not disabled & set(spec.members)
    assert not disabled & set(spec.runs)


@pytest.mark.parametrize("name", PASS_NAMES)
def test_disable_is_everything_else(name):
    spec = get_pass(name)
    assert set(spec.disable) | set(spec.runs) == TARGET_INDEPENDENT
    assert list(spec.disable) == sorted(spec.disable)
    assert len(set(spec.disable)) == len(spec.disable)


@pytest.mark.parametrize("name", [n for n in PASS_NAMES if n != "post_scatter_expansion_simplification"])
def test_second_simplification_copy_is_always_disabled(name):
    """`post_scatter_expansion_simplification` would rerun the nested passes."""
    assert "post_scatter_expansion_simplification" in get_pass(name).disable


def test_pass_spec_is_frozen():
    spec = get_pass("cse")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.name = "dce"  # type: ignore[misc]


def test_all_exports_exist():
    for name in catalog.__all__:
        assert hasattr(catalog, name), name
