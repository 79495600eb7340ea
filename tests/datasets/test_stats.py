"""xla_gym_datasets.stats: opcodes read from HLO text, one row per bundled suite."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from xla_gym_datasets import stats

_HLO = """HloModule m, entry_computation_layout={(f32[4]{0}, s32[])->(f32[4]{0}, s32[])}

%body (p: (f32[4], s32[])) -> (f32[4], s32[]) {
  %p = (f32[4]{0}, s32[]) parameter(0)
  %x = f32[4]{0} get-tuple-element((f32[4]{0}, s32[]) %p), index=0
  %y = f32[4]{0} exponential(f32[4]{0} %x)
  %i = s32[] get-tuple-element((f32[4]{0}, s32[]) %p), index=1
  ROOT %t = (f32[4]{0}, s32[]) tuple(f32[4]{0} %y, s32[] %i)
}

ENTRY %main (a: f32[4], n: s32[]) -> (f32[4], s32[]) {
  %a = f32[4]{0} parameter(0)
  %n = s32[] parameter(1)
  %init = (f32[4]{0}, s32[]) tuple(f32[4]{0} %a, s32[] %n)
  ROOT %w = (f32[4]{0}, s32[]) while((f32[4]{0}, s32[]) %init), condition=%cond, body=%body
}
"""


def test_opcodes_of_reads_every_computation_and_tuple_types() -> None:
    assert stats.opcodes_of(_HLO) == {"parameter", "get-tuple-element", "exponential", "tuple", "while"}


def test_a_row_per_bundled_suite_matching_its_manifest() -> None:
    table = stats.suite_rows()
    manifests = sorted(stats.HERE.glob("xla-*-v0/manifest.json"))
    assert [r.dataset for r in table] == [p.parent.name for p in manifests]
    for row, path in zip(table, manifests):
        entries = json.loads(path.read_text())["benchmarks"]
        assert row.modules == len(entries) and row.ops_max == max(e["initial_op_count"] for e in entries)
        assert {"parameter", "add"} <= set(row.opcodes) and all(0 <= v <= 1 for v in row.control.values())
    assert {r.collection for r in table} == {"families", "realworld"}
    assert any(r.control["while"] > 0 for r in table) and any(r.large > 0 for r in table)
    text = stats.markdown(table)
    assert text.count("\n") == len(table) + 1 and "| xla-gpt2-v0 | 180 |" in text


def test_cli_refuses_a_negative_generator_count(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        stats.main(["--generator", "-1"])
    assert "expected a count >= 0, got -1" in capsys.readouterr().err
    assert stats.main(["--json", str(tmp_path / "new" / "rows.json")]) == 0
    assert len(json.loads((tmp_path / "new" / "rows.json").read_text())) == len(stats.suite_rows())
