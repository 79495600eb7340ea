"""xla_service.catalog.opcodes.OPCODES against jaxlib's HloOpcode and XLA's own HLO text."""
from __future__ import annotations

import re
from collections import Counter

import pytest

from xla_service.catalog.opcodes import OPCODE_INDEX, OPCODES, UNCOUNTED_OPCODES
from xla_service.passes import hlo, xla
from xla_service.passes.jaxlib import hlo as jaxlib_hlo

from . import _helpers

MEMBERS = list(jaxlib_hlo.HloOpcode.__members__.items())

#: Enum members whose HLO text name is not the kebab-case of their C++ name.
SPELLED_DIFFERENTLY = {
    "kClz": "count-leading-zeros",
    "kCos": "cosine",
    "kExp": "exponential",
    "kExpm1": "exponential-minus-one",
    "kLog1p": "log-plus-one",
    "kOptimizationBarrier": "opt-barrier",
    "kPopulationCount": "popcnt",
    "kSin": "sine",
    "kTopK": "topk",
}


def _kebab(member: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"-\1", member[1:]).lower()


def test_one_entry_per_enum_member():
    assert len(OPCODES) == len(MEMBERS)
    assert len(set(OPCODES)) == len(OPCODES)
    assert OPCODE_INDEX == {name: i for i, name in enumerate(OPCODES)}


def test_enum_values_are_positions():
    """OPCODES is indexed by enum position; that must also be the enum value."""
    assert [member.value for _, member in MEMBERS] == list(range(len(MEMBERS)))


@pytest.mark.parametrize("index", range(len(MEMBERS)), ids=[n for n, _ in MEMBERS])
def test_entry_names_its_enum_member(index):
    name, _ = MEMBERS[index]
    assert OPCODES[index] == SPELLED_DIFFERENTLY.get(name, _kebab(name))


def test_uncounted_opcodes_exist():
    assert set(UNCOUNTED_OPCODES) <= set(OPCODES)


_ASSIGN = re.compile(r"^\s*(?:ROOT\s+)?%?\S+\s+=\s+")


def _opcode_token(line: str) -> str:
    """The opcode of one instruction's ``to_string()``: the word before '(' after the shape."""
    m = _ASSIGN.match(line)
    assert m, line
    rest = line[m.end():]
    if rest.startswith("("):  # a tuple shape: skip to its closing parenthesis
        depth = 0
        for i, ch in enumerate(rest):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                rest = rest[i + 1:]
                break
    else:  # an array shape (with layout) or token[]: no spaces in it
        rest = rest.split(" ", 1)[1]
    token = re.match(r"\s*([a-z][a-z0-9-]*)\(", rest)
    assert token, line
    return token[1]


def _modules():
    return {
        "gpt2": lambda: xla.normalize(_helpers.gpt2_text()),
        "opcode-zoo": lambda: xla.normalize(_helpers.opcode_zoo_module()),
        "opcode-zoo-raw": _helpers.opcode_zoo_module,
        "nested-jit-raw": _helpers.nested_jit_module,
    }


@pytest.fixture(scope="module", params=sorted(_modules()))
def module_text(request):
    return _modules()[request.param]()


def test_analyze_matches_instruction_text(module_text):
    to_index = {member: i for i, (_, member) in enumerate(MEMBERS)}
    from_text = Counter()
    for computation in xla.parse(module_text).computations():
        for instruction in computation.instructions():
            token = _opcode_token(instruction.to_string())
            assert token == OPCODES[to_index[instruction.opcode]], instruction.to_string()
            from_text[token] += 1
    raw = hlo.opcode_counts(xla.parse(module_text))  # every instruction of the text, once
    assert {OPCODES[i]: c for i, c in enumerate(raw) if c} == dict(from_text)
    assert sum(raw) == sum(from_text.values())
    if "call" not in from_text:  # the op count rule changes only modules with calls
        assert xla.analyze(module_text).opcode_counts == raw


def test_zoo_covers_every_irregular_spelling():
    """The zoo module must really hold the opcodes whose spelling is irregular."""
    raw = hlo.opcode_counts(xla.parse(xla.normalize(_helpers.opcode_zoo_module())))
    histogram = {OPCODES[i] for i, c in enumerate(raw) if c}
    missing = set(SPELLED_DIFFERENTLY.values()) - set(histogram)
    assert not missing
    assert {"log", "tanh", "sort", "while", "dot"} <= set(histogram)


def test_analyze_counts_every_computation():
    """Instructions of called computations (while bodies, reducers) count too."""
    text = xla.normalize(_helpers.opcode_zoo_module())
    module = xla.parse(text)
    total = sum(len(list(c.instructions())) for c in module.computations())
    entry_only = sum(1 for line in text.split("ENTRY", 1)[1].splitlines() if " = " in line)
    assert sum(hlo.opcode_counts(module)) == total > entry_only
    # counted as XLA's call-inliner leaves it: callees at every call site, calls gone
    counted = xla.analyze(text).histogram()
    assert "call" not in counted and counted["while"] > 0


def test_op_count_leaves_out_parameters_and_constants():
    analysis = xla.analyze(xla.normalize(_helpers.opcode_zoo_module()))
    histogram = analysis.histogram()
    assert histogram["parameter"] > 0 and histogram["constant"] > 0
    assert analysis.op_count == sum(histogram.values()) - histogram["parameter"] - histogram["constant"]
