"""Normalization (the HLO -> StableHLO -> HLO fixpoint), name canonicalization, parse errors."""
from __future__ import annotations

import re

import pytest

from xla_service.errors import HloParseError
from xla_service.passes import hlo, jaxlib, xla
from xla_service.passes.names import canonicalize_computation_names

from . import _helpers

CALLS = """HloModule calls
sq.7 {
  x = f32[4] parameter(0)
  ROOT m = f32[4] multiply(x, x)
}
sq.2.1 {
  x = f32[4] parameter(0)
  ROOT n = f32[4] negate(x)
}
ENTRY main.9 {
  p0 = f32[4] parameter(0)
  c = f32[4] call(p0), to_apply=sq.7
  d = f32[4] call(c), to_apply=sq.2.1
  ROOT a = f32[4] add(d, p0)
}
"""

PLAIN = """HloModule plain
ENTRY main {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  a = f32[4] add(p0, p1)
  ROOT m = f32[4] multiply(a, p1)
}
"""

MODULES = {
    "hand-written-plain": lambda: PLAIN,
    "hand-written-calls": lambda: CALLS,
    "jax-plain": _helpers.plain_jax_module,
    "jax-nested-jit": _helpers.nested_jit_module,
    "jax-varied": _helpers.varied_module,
    "gpt2": _helpers.gpt2_text,
}
WITH_CALLS = {"hand-written-calls", "jax-nested-jit", "jax-varied", "gpt2"}


@pytest.fixture(scope="module", params=sorted(MODULES))
def raw(request):
    return request.param, MODULES[request.param]()


@pytest.fixture(scope="module")
def normalized(raw):
    return raw[0], xla.normalize(raw[1])


def test_normalize_is_a_fixpoint(normalized):
    _, text = normalized
    assert xla.normalize(text) == text


def test_modules_with_calls_keep_them(normalized):
    """The fixpoint must hold for modules that really have calls after normalization."""
    name, text = normalized
    has_calls = _helpers.raw_histogram(text).get("call", 0) > 0
    assert has_calls == (name in WITH_CALLS)


def test_load_is_analyze_of_normalize(raw, normalized):
    loaded = xla.load(raw[1])
    assert loaded.text == normalized[1]
    assert loaded.opcode_counts == xla.analyze(normalized[1]).opcode_counts


def test_called_computations_get_canonical_names(normalized):
    _, text = normalized
    headers = re.findall(r"^(ENTRY )?%?([^\s{(]+).*\{$", text, re.M)
    non_entry = [name for entry, name in headers if not entry]
    seen = {}
    for name in non_entry:
        base, k = name.rsplit(".", 1)
        assert int(k) == seen.get(base, 0), f"{name} in {non_entry}"
        seen[base] = int(k) + 1


def _export_without_canonical_names(text: str) -> str:
    mlir = hlo.to_mlir(xla.parse(text))
    computation = jaxlib.mlir.mlir_module_to_xla_computation(
        mlir, use_tuple_args=False, return_tuple=False
    )
    return str(computation.as_hlo_text())


def test_raw_round_trip_renames_called_computations():
    """Why names.py exists: each export appends '.N' to every called computation."""
    once = _export_without_canonical_names(CALLS)
    twice = _export_without_canonical_names(once)
    assert once != twice
    names_once = set(re.findall(r"to_apply=%?([^\s,)]+)", once))
    names_twice = set(re.findall(r"to_apply=%?([^\s,)]+)", twice))
    assert names_once and names_once.isdisjoint(names_twice)
    assert canonicalize_computation_names(once) == canonicalize_computation_names(twice)


# -- canonicalize_computation_names only renames ---------------------------------------


def _structure(text: str):
    """Per computation, in order: its opcodes and whether it is the entry."""
    module = xla.parse(text)
    return [
        [str(i.opcode) for i in computation.instructions()]
        for computation in module.computations()
    ]


def _entry_name(text: str) -> str:
    return re.search(r"^ENTRY %?([^\s{(]+)", text, re.M)[1]


@pytest.mark.parametrize(
    "source",
    [lambda: CALLS, _helpers.nested_jit_module, _helpers.varied_module,
     lambda: _export_without_canonical_names(_export_without_canonical_names(CALLS))],
    ids=["hand-written", "jax-nested-jit", "jax-varied", "twice-exported"],
)
def test_canonicalize_only_renames(source):
    text = source()
    renamed = canonicalize_computation_names(text)
    assert renamed != text, "the test module must need renaming"
    assert _structure(renamed) == _structure(text)
    assert xla.analyze(renamed).opcode_counts == xla.analyze(text).opcode_counts
    assert _entry_name(renamed) == _entry_name(text)
    entry_block = lambda t: t[t.index("\nENTRY"):]  # noqa: E731
    # The entry's own lines change only in the names of the computations it calls.
    strip = lambda t: re.sub(r"(to_apply|body|condition)=%?[^\s,)]+", r"\1=X", t)  # noqa: E731
    assert strip(entry_block(renamed)) == strip(entry_block(text))
    assert canonicalize_computation_names(renamed) == renamed


def test_canonicalize_hand_written_names():
    renamed = canonicalize_computation_names(CALLS)
    assert "sq.0 {" in renamed and "sq.1 {" in renamed
    assert "to_apply=sq.0" in renamed and "to_apply=sq.1" in renamed
    assert "sq.7" not in renamed and "sq.2.1" not in renamed
    assert "ENTRY main.9 {" in renamed


def test_canonicalize_leaves_canonical_text_alone():
    text = xla.normalize(CALLS)
    assert canonicalize_computation_names(text) is text


def test_canonicalize_never_takes_the_entry_name():
    text = CALLS.replace("ENTRY main.9", "ENTRY sq.0")
    renamed = canonicalize_computation_names(text)
    xla.parse(renamed)


def test_computation_named_main_keeps_the_entry():
    text = """HloModule m
main {
  x = f32[4] parameter(0)
  ROOT m = f32[4] multiply(x, x)
}
ENTRY e {
  p0 = f32[4] parameter(0)
  c0 = f32[4] call(p0), to_apply=main
  ROOT r = f32[4] add(c0, p0)
}
"""
    histogram = xla.load(text).histogram()
    assert histogram.get("add") == 1 and histogram.get("multiply") == 1


# -- parse errors -----------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   \n\t\n"])
def test_empty_text(text):
    with pytest.raises(HloParseError, match="Empty HLO module"):
        xla.parse(text)
    with pytest.raises(HloParseError):
        xla.load(text)


@pytest.mark.parametrize("line_no", [4, 8, 12, 14])
def test_misspelled_opcode_names_its_line(line_no):
    lines = CALLS.splitlines()
    assert " = " in lines[line_no - 1]
    original = re.search(r"= \S+ ([a-z-]+)\(", lines[line_no - 1])[1]
    lines[line_no - 1] = lines[line_no - 1].replace(f" {original}(", f" {original}x(")
    text = "\n".join(lines) + "\n"
    with pytest.raises(HloParseError) as info:
        xla.parse(text)
    message = str(info.value)
    assert f"line {line_no}" in message
    assert f"{original}x" in message
    with pytest.raises(HloParseError, match=f"line {line_no}"):
        xla.load(text)


def _cut_inside_line(line_no: int) -> str:
    """CALLS cut in the middle of its line ``line_no`` (1-based)."""
    lines = CALLS.splitlines(keepends=True)
    head = "".join(lines[: line_no - 1])
    return head + lines[line_no - 1][: len(lines[line_no - 1]) // 2]


@pytest.mark.parametrize("line_no", [3, 4, 7, 11, 13, 14])
def test_truncated_text_names_a_line(line_no):
    text = _cut_inside_line(line_no)
    with pytest.raises(HloParseError) as info:
        xla.parse(text)
    m = re.search(r"line (\d+)", str(info.value))
    assert m, str(info.value)
    assert line_no <= int(m[1]) <= line_no + 1


def test_text_without_final_brace_is_an_error():
    with pytest.raises(HloParseError, match=r"line \d+"):
        xla.parse(CALLS.rstrip().rstrip("}"))


def test_text_cut_between_computations_is_refused():
    """XLA takes the last computation for the entry when no ENTRY is named.

    So a benchmark truncated right after a computation's closing brace would
    parse as another (smaller) program: ``load`` refuses text without ENTRY.
    """
    cut = CALLS[: CALLS.index("ENTRY")].rstrip()
    assert "ENTRY" not in cut
    xla.parse(cut)  # XLA itself accepts it
    with pytest.raises(HloParseError, match="no ENTRY computation"):
        xla.load(cut)


def test_parse_error_is_a_value_error():
    with pytest.raises(ValueError):
        xla.parse("HloModule broken\nENTRY main {\n  ROOT p = f32[4] parameter(0\n}\n")
