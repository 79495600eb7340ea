"""The runtime agent's committed results (leaderboard/agents/runtime/results): plots, README tables and claims,
the leaderboard's runtime table.
"""
from __future__ import annotations

from pathlib import Path

import pytest

#: The runtime agent's folder: its README and its committed results.
AGENT = Path(__file__).parents[2] / "leaderboard/agents/runtime"
#: Where the runtime agent's runs are written up, every table of them: docs/experiments/runtime-agent.md.
EXPERIMENTS = Path(__file__).parents[2] / "docs/experiments/runtime-agent.md"


def documented() -> str:
    """The runtime agent's README and its experiments page, where its tables and claims are."""
    return (AGENT / "README.md").read_text() + EXPERIMENTS.read_text()


def committed(name: str) -> Path:
    """``results/name`` of the runtime agent, or the test skipped if it is not committed."""
    path = AGENT / "results" / name
    if not path.is_file():
        pytest.skip(f"{name} is not committed")
    return path


def test_plot_draws_a_report_and_refuses_an_empty_one(tmp_path):
    import json

    from leaderboard.agents.runtime.plot import main, plot

    smoke = AGENT / "results/tiny-smoke-rnn2.json"
    out = tmp_path / "figure.png"
    assert main([str(smoke), "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = json.loads(smoke.read_text())
    with pytest.raises(ValueError, match="with rows, got none"):
        plot({**report, "rows": []}, tmp_path / "empty.png")

    from leaderboard.agents.runtime.plot import table

    faster = dict(report["rows"][0], speedup=1.2, low=1.1, high=1.3, within_noise=False)
    lines = table({**report, "rows": [faster, *report["rows"][1:]]})
    assert "1.200 [1.100, 1.300] | **no: faster**" in lines[2]
    assert lines[-2].startswith(f"- {faster['mode']}: ") and lines[-2].endswith("; 1 final speedups above 1.0 beyond noise")
    with pytest.raises(ValueError, match="with rows, got none"):
        table({**report, "rows": []})


@pytest.mark.parametrize(
    "report", ["runtime-sample1.json", "runtime-sample1-mutate.json", "runtime-resnet3-mutate.json", "runtime-sample1-agent.json",
               "runtime-sample1-agent-known.json", "runtime-sample1-agent-known-finalists4.json",
               "runtime-vit1-agent-known-finalists4-sessions3.json", "runtime-vit8-known-finalists4-sessions3.json",
               "runtime-vit4-infer-known-finalists4-sessions3.json", "runtime-vit4-train-candidates96.json",
               "runtime-vit4-train-candidates64-module.json"]
)
def test_readme_tables_are_the_reports_tables(report):
    import json

    from leaderboard.agents.runtime.plot import table

    lines = table(json.loads(committed(report).read_text()))
    assert "\n".join(lines) in documented()
    assert lines[-1].startswith("- adaptive: ") and "beyond noise" in lines[-1]


def test_no_winner_of_the_known_orders_run_is_a_known_order():
    """The README's claim about runtime-sample1-agent-known: the op-count agents' orders were candidates, none won."""
    import csv
    import json

    from leaderboard.agents.runtime.search import read_result_orders, result_paths

    root = Path(__file__).parents[2]
    report = committed("runtime-sample1-agent-known.json")
    known = read_result_orders([str(root / p) for p in result_paths(json.loads(report.read_text())["args"]["from_results"])])
    with open(report.with_suffix(".csv")) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 12 and all(known.get(row["benchmark"]) for row in rows)
    assert not [row["benchmark"] for row in rows if row["commandline"] in known[row["benchmark"]]]


def test_vit_family_run_claims():
    """The README's claims about runtime-vit8-known-finalists4-sessions3: under XLA's full pipeline no proposal
    for an inference ViT compiles to another executable than the default's, and of the training ViTs' eight
    winners only those of the first benchmark are op-count agents' orders (greedy's and beam's, PPO's)."""
    import csv
    import json

    from leaderboard.agents.runtime.search import DEFAULT_ORDER, read_result_orders, result_paths

    root = Path(__file__).parents[2]
    report = committed("runtime-vit8-known-finalists4-sessions3.json")
    paths = result_paths(json.loads(report.read_text())["args"]["from_results"])
    orders = {Path(p).parent.name if "rl" not in p else "ppo": read_result_orders([str(root / p)]) for p in paths}
    with open(report.with_suffix(".csv")) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 16
    infer = [row for row in rows if row["benchmark"].endswith("-infer")]
    assert len(infer) == 8 and all(row["candidates"] == "0" and row["commandline"] == "" for row in infer)
    sources = {(row["benchmark"].rsplit("/", 1)[1], row["mode"]): sorted(
        name for name, known in orders.items() if row["commandline"] in known.get(row["benchmark"], []))
        for row in rows if row not in infer}
    first = "vit-l6-d128-h4-p4-i32-b2-adamw-train"
    assert sources.pop((first, "exhaustive")) == ["beam", "greedy"]
    assert sources.pop((first, "adaptive")) == ["ppo"]
    assert len(sources) == 6 and not any(sources.values())
    with open(report.with_name("runtime-vit4-infer-known-finalists4-sessions3.csv")) as f:
        again = list(csv.DictReader(f))  # after the fallback fix: no candidate, so XLA's default order wins
    assert sorted(row["benchmark"] for row in again) == sorted(row["benchmark"] for row in infer)
    assert all(row["candidates"] == "0" and row["commandline"] == " ".join(DEFAULT_ORDER) for row in again)


@pytest.mark.parametrize("report, exhaustive, adaptive, ratio", [
    ("runtime-vit4-train-candidates96.json", (85, 115), (32, 48), "2.4"),
    ("runtime-vit4-train-candidates64-module.json", (250, 322), (32, 48), "6.7"),
])
def test_goal1_runs_claims(report, exhaustive, adaptive, ratio):
    """The README's "Goal 1 with more proposals": candidates and observations per mode, their ratio, and on
    every benchmark the two modes' final intervals overlapping (an equal speedup within noise)."""
    import json

    rows = json.loads(committed(report).read_text())["rows"]
    spent = {mode: (sum(r["measurements"] for r in rows if r["mode"] == mode),
                    sum(r["measurements"] + r["baseline_observations"] for r in rows if r["mode"] == mode))
             for mode in ("exhaustive", "adaptive")}
    assert spent == {"exhaustive": exhaustive, "adaptive": adaptive}
    assert f"{exhaustive[1] / adaptive[1]:.1f}" == ratio
    by_benchmark: dict[str, list[dict]] = {}
    for r in rows:
        by_benchmark.setdefault(r["benchmark"], []).append(r)
    assert len(by_benchmark) == 4
    assert all(max(a["low"], b["low"]) <= min(a["high"], b["high"]) for a, b in by_benchmark.values())


def test_runtime_table_measures_results_against_xlas_default(tmp_path, capsys):
    import json

    import compiler_gym
    from compiler_gym.compiler_env_state import CompilerEnvStateWriter

    from leaderboard.report.runtime_table import AS_LOADED, CONTROL, main, table

    uri = "benchmark://xla-rnn-v0/lstm-lm-l4-h32-s32-b4-infer"
    files = {}
    with compiler_gym.make("xla-v0") as env:
        for name, passes in (("start", []), ("cse", ["cse", "dce"])):
            env.reset(benchmark=uri)
            for p in passes:
                env.step(env.action_space.names.index(p))
            files[name] = tmp_path / f"{name}.csv"
            with open(files[name], "w") as f:
                CompilerEnvStateWriter(f).write_state(env.state, flush=True)
    out = tmp_path / "report.json"
    assert main(["measure", *(f"{k}={v}" for k, v in files.items()), f"--benchmarks={uri}", "--sessions=2",
                 "--rounds=1", "--repetitions=1", f"--out={out}"]) == 0
    report = json.loads(out.read_text())
    assert [r["label"] for r in report["rows"]] == [CONTROL, AS_LOADED, "start", "cse"]
    for row in report["rows"]:
        (b,) = row["benchmarks"]
        assert b["benchmark"] == uri and b["speedup"] == pytest.approx(b["baseline_median"] / b["candidate_median"])
        assert b["low"] <= b["speedup"] <= b["high"] and b["samples"] == 2
        assert row["faster"] + row["slower"] == int(not b["within_noise"])
        assert row["geomean"]["value"] == pytest.approx(b["speedup"]) and row["geomean"]["n"] == 1
    assert "cse" in report["rows"][3]["benchmarks"][0]["commandline"]
    for row in report["rows"][:2]:  # the built-in rows measure the module as loaded
        assert row["results"] == "" and "cse" not in row["benchmarks"][0]["commandline"]
    printed = capsys.readouterr().out
    assert main(["show", str(out)]) == 0
    assert capsys.readouterr().out == printed == "\n".join(table(report)) + "\n"
    assert "(one benchmark: no interval over benchmarks)" in printed and "nan" not in printed
    assert f"| start | 1 | {report['rows'][2]['geomean']['value']:.3f}x (one" in printed

    assert main(["measure", f"start={files['start']}", f"--benchmarks={uri}", "--sessions=1", "--rounds=2",
                 "--repetitions=1", "--no-control", f"--out={out}"]) == 0
    assert [r["label"] for r in json.loads(out.read_text())["rows"]] == ["start"]
    run_csv = tmp_path / "run.csv"  # a runtime search's CSV (run.py's): a winner per mode
    run_csv.write_text(f"benchmark,mode,speedup,commandline\n{uri},exhaustive,1.1,cse dce\n{uri},adaptive,1.0,\n")
    assert main(["measure", f"won={run_csv}:exhaustive", f"--benchmarks={uri}", "--sessions=1", "--rounds=2",
                 "--repetitions=1", "--no-control", "--pipeline=agent", f"--out={out}"]) == 0
    report = json.loads(out.read_text())
    assert report["pipeline"] == "agent" and report["rows"][0]["benchmarks"][0]["commandline"] == "cse dce"
    assert table(report)[-1].endswith("without XLA's optimizing passes (pipeline agent)")
    capsys.readouterr()
    run_csv.write_text(f"benchmark,mode,speedup,commandline\n{uri},exhaustive,1.1,cse dce\n")
    with pytest.raises(SystemExit):
        main(["measure", f"won={run_csv}:adaptive", f"--benchmarks={uri}", f"--out={out}"])
    assert "run.csv:adaptive: expected a runtime search's CSV with adaptive rows, got none" in capsys.readouterr().err
    run_csv.write_text(f"benchmark,mode\n{uri},exhaustive\n")
    with pytest.raises(SystemExit):
        main(["measure", f"won={run_csv}:exhaustive", f"--benchmarks={uri}", f"--out={out}"])
    assert "got one without columns ['commandline']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["measure", f"x={files['start']}", f"--benchmarks={uri}", "--pipeline=fast", f"--out={out}"])
    assert "invalid choice: 'fast'" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # a suite that is none
        main(["measure", f"x={files['start']}", "--datasets=xla-nope-v0", f"--out={out}"])
    assert "xla-nope-v0" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # a results file without the benchmark
        main(["measure", f"x={files['start']}", "--benchmarks=benchmark://xla-rnn-v0/gru-lm-l4-h32-s32-b4-infer",
              f"--out={out}"])
    err = capsys.readouterr().err
    assert "x: " in err and "gru-lm-l4-h32-s32-b4-infer\n" in err and "more" not in err  # one missing, no "0 more"
    for bad, message in ((["nolabel"], "expected LABEL=RESULTS.csv, got 'nolabel'"),
                         ([f"x={files['start']}", f"x={files['cse']}"], "expected a label per row, got 'x' twice"),
                         ([f"{CONTROL}={files['cse']}"], "twice"),
                         ([f"y={tmp_path / 'none.csv'}"], "y: expected a results CSV"),
                         ([f"x={files['start']}", "--rounds=1", "--sessions=1"], "2 rounds in all, got 1 and 1")):
        with pytest.raises(SystemExit):
            main(["measure", *bad, f"--benchmarks={uri}", f"--out={out}"])
        assert message in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["show", str(tmp_path / "none.json")])
    assert "expected a runtime_table report" in capsys.readouterr().err


def test_runtime_table_row_of_several_files_takes_each_benchmark_from_the_last(tmp_path, capsys):
    """``a.csv:exhaustive,b.csv:exhaustive``: one row, b's module where b has the benchmark, a's elsewhere."""
    from leaderboard.report.runtime_table import main, read_commandlines

    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("benchmark,mode,commandline\nu1,exhaustive,p1\nu2,exhaustive,p2\nu2,adaptive,q2\n")
    b.write_text("benchmark,mode,commandline\nu2,exhaustive,r2\nu3,exhaustive,r3\n")
    assert read_commandlines(f"{a}:exhaustive,{b}:exhaustive") == {"u1": "p1", "u2": "r2", "u3": "r3"}
    assert read_commandlines(f"{b}:exhaustive,{a}:exhaustive") == {"u1": "p1", "u2": "p2", "u3": "r3"}
    assert read_commandlines(f"{a}:adaptive,{b}:exhaustive") == {"u2": "r2", "u3": "r3"}
    with pytest.raises(SystemExit):  # every file of the row must exist, checked before any env starts
        main(["measure", f"x={a}:exhaustive,{tmp_path / 'none.csv'}:exhaustive", "--benchmarks=u1",
              f"--out={tmp_path / 'r.json'}"])
    assert "x: expected a results CSV, got " in capsys.readouterr().err


def test_runtime_table_names_cells_by_family_or_by_benchmark():
    """One benchmark per family: cells say the family; several of one family (a family's run): the benchmark."""
    from leaderboard.report.runtime_table import table

    def report(uris):
        def benchmark(uri):
            return {"benchmark": uri, "speedup": 1.0, "low": 0.9, "high": 1.1}
        geomean = {"value": 1.0, "low": 0.95, "high": 1.05, "n": len(uris)}
        row = {"label": "x", "geomean": geomean, "faster": 0, "slower": 0, "benchmarks": [benchmark(u) for u in uris]}
        return {"rows": [row], "sessions": 2, "rounds": 2, "repetitions": 1, "seconds": 60, "versions": {"jaxlib": "0"}}

    mixed = table(report(["benchmark://xla-vit-v0/vit-a", "benchmark://xla-rnn-v0/lstm-b"]))[2]
    assert mixed.endswith("| vit 1.000 [0.900, 1.100]; rnn 1.000 [0.900, 1.100] |")
    family = table(report(["benchmark://xla-vit-v0/vit-a", "benchmark://xla-vit-v0/vit-b"]))[2]
    assert family.endswith("| vit-a 1.000 [0.900, 1.100]; vit-b 1.000 [0.900, 1.100] |")


def test_leaderboard_readme_runtime_table_is_the_reports():
    import json

    from leaderboard.report.runtime_table import table

    root = Path(__file__).parents[2]
    for report, readme in (("leaderboard/results/runtime-sample1.json", "leaderboard/README.md"),
                           ("leaderboard/agents/runtime/results/vit-winners-agent-sessions6.json",
                            "docs/experiments/runtime-agent.md"),
                           ("leaderboard/agents/runtime/results/vit8-winners-sessions6.json",
                            "docs/experiments/runtime-agent.md"),
                           ("leaderboard/agents/runtime/results/vit8-winners-sessions3-rounds10.json",
                            "docs/experiments/runtime-agent.md"),
                           ("leaderboard/agents/runtime/results/vit8-winners-control-sessions3-rounds10.json",
                            "leaderboard/agents/runtime/README.md")):
        if not (root / report).is_file():
            pytest.skip(f"{report} is not committed")
        assert "\n".join(table(json.loads((root / report).read_text()))) in (root / readme).read_text()


@pytest.mark.parametrize("runs, excluding", [("a-a-run", 1), ("a-a-rounds10-run", 1)])
def test_noise_tables_are_the_committed_outputs(runs, excluding):
    """docs/experiments/runtime-agent.md's "Where the noise comes from": every sd is the committed outputs' of
    benchmarks/measure_runtime_noise.py (2 rounds a side, then 10), and as many A/A intervals exclude 1.0 as it says."""
    import re

    outputs = [(AGENT / f"results/noise/{runs}{i}.txt").read_text() for i in (1, 2)]
    sds: dict[tuple[str, str, int], str] = {}
    excluded = 0
    for run, text in enumerate(outputs, 1):
        for block in text.split("\n== ")[1:]:
            statistic = "median" if block.startswith("A/A, the median") else "minimum"
            for line in block.splitlines()[2:]:
                match = re.match(r"  (.+?)\s{2,}([\d.]+)\s+[\d.]+ \[([\d.]+), ([\d.]+)\]", line)
                if match:
                    sds[match[1], statistic, run] = match[2]
                    excluded += not float(match[3]) <= 1.0 <= float(match[4])
    assert len(sds) == 16 and excluded == excluding
    readme = EXPERIMENTS.read_text()
    for pairing in ("two services", "one service, its workers", "one service, one worker", "one worker, one executable"):
        row = " | ".join([pairing] + [sds[pairing, s, r] for s in ("median", "minimum") for r in (1, 2)])
        assert f"| {row} |" in readme
