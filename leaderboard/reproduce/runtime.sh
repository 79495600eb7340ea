# shellcheck shell=bash
# Stages of leaderboard/reproduce.sh, which sources this file: the runtime search (exhaustive vs
# adaptive) and the leaderboard's runtime table. Each stage is a function stage_NAME, run by `bash
# leaderboard/reproduce.sh NAME`.

stage_runtime() {  # Chameleon-style runtime search, (a) exhaustive vs (b) adaptive on the same candidates;
    # runtimes need a quiet machine (nothing else running), so this stage runs alone. The committed reports
    # measured their finals in the search's envs (--final-sessions 0, before fresh sessions were the default)
    want runtime || exit 0
    $PY -m leaderboard.agents.runtime.run --sample 1 --sample-seed 0 --candidates 32 --budget 8 \
        --repetitions 5 --final-rounds 5 --baseline default --final-sessions 0 --seed 0 \
        --out $AGENTS/runtime/results/runtime-sample1.json
    $PY -m leaderboard.agents.runtime.plot $AGENTS/runtime/results/runtime-sample1.json
    # the same around XLA's default: half the candidates are its order with 1-3 edits;
    # 10 runs an observation, 10 interleaved final rounds (narrower intervals)
    $PY -m leaderboard.agents.runtime.run --sample 1 --sample-seed 0 --candidates 32 --budget 8 --mutate 0.5 \
        --repetitions 10 --final-rounds 10 --baseline default --final-sessions 0 --seed 0 \
        --out $AGENTS/runtime/results/runtime-sample1-mutate.json
    $PY -m leaderboard.agents.runtime.plot $AGENTS/runtime/results/runtime-sample1-mutate.json
    # one family (3 ResNets, the only family where edited defaults looked faster): mostly edits of the
    # default, and the search's fastest 3 re-measured before the final measurement
    $PY -m leaderboard.agents.runtime.run --datasets xla-resnet-v0 --sample 3 --sample-seed 0 --candidates 32 \
        --budget 8 --mutate 0.8 --finalists 3 --repetitions 10 --final-rounds 10 --baseline default --final-sessions 0 --seed 0 \
        --out $AGENTS/runtime/results/runtime-resnet3-mutate.json
    $PY -m leaderboard.agents.runtime.plot $AGENTS/runtime/results/runtime-resnet3-mutate.json
    # where a runtime search can find anything: how many executables the proposals of the run around the
    # default compile to, under XLA's full pipeline and without its optimizing passes (compiles only, no runs)
    for pipeline in full agent; do
        $PY -m leaderboard.agents.runtime.executables --sample 1 --candidates 32 --mutate 0.5 --pipeline $pipeline \
            --out $AGENTS/runtime/results/executables-sample1-$pipeline.json
    done
    # the run around the default again, without XLA's optimizing passes (the order decides the program),
    # one candidate per executable
    $PY -m leaderboard.agents.runtime.run --sample 1 --sample-seed 0 --candidates 32 --budget 8 --mutate 0.5 \
        --repetitions 10 --final-rounds 10 --baseline default --final-sessions 0 --seed 0 --pipeline agent --distinct executable \
        --out $AGENTS/runtime/results/runtime-sample1-agent.json
    $PY -m leaderboard.agents.runtime.plot $AGENTS/runtime/results/runtime-sample1-agent.json
    # the same, with the op-count agents' full-split orders as candidates (and bases of the mutants)
    known=$AGENTS/greedy/results-test.csv,$AGENTS/beam/results-test.csv,$AGENTS/rl/results/ppo-OpCount-seed0-test.csv
    $PY -m leaderboard.agents.runtime.run --sample 1 --sample-seed 0 --candidates 32 --budget 8 --mutate 0.5 \
        --repetitions 10 --final-rounds 10 --baseline default --final-sessions 0 --seed 0 --pipeline agent --distinct executable \
        --from-results $known,$AGENTS/random_search/results-test.csv \
        --out $AGENTS/runtime/results/runtime-sample1-agent-known.json
    $PY -m leaderboard.agents.runtime.plot $AGENTS/runtime/results/runtime-sample1-agent-known.json
    # and with the search's four fastest re-measured before one is chosen
    $PY -m leaderboard.agents.runtime.run --sample 1 --sample-seed 0 --candidates 32 --budget 8 --mutate 0.5 \
        --repetitions 10 --final-rounds 10 --baseline default --final-sessions 0 --seed 0 --pipeline agent --distinct executable \
        --from-results $known,$AGENTS/random_search/results-test.csv --finalists 4 \
        --out $AGENTS/runtime/results/runtime-sample1-agent-known-finalists4.json
    $PY -m leaderboard.agents.runtime.plot $AGENTS/runtime/results/runtime-sample1-agent-known-finalists4.json
    # the ViT again (the one speedup beyond noise there), its final measurement in 3 fresh pairs of envs
    $PY -m leaderboard.agents.runtime.run --benchmarks benchmark://xla-vit-v0/vit-l6-d64-h2-p8-i32-b2-adamw-train \
        --candidates 32 --budget 8 --mutate 0.5 --repetitions 10 --final-rounds 4 --baseline default --final-sessions 3 --seed 0 \
        --pipeline agent --distinct executable --finalists 4 --from-results $known,$AGENTS/random_search/results-test.csv \
        --out $AGENTS/runtime/results/runtime-vit1-agent-known-finalists4-sessions3.json
    $PY -m leaderboard.agents.runtime.plot $AGENTS/runtime/results/runtime-vit1-agent-known-finalists4-sessions3.json
    # the four-finalist run's ViT winners in 6 fresh sessions, both sides without XLA's optimizing passes
    R=$AGENTS/runtime/results
    $PY -m leaderboard.report.runtime_table measure \
        "exhaustive winner, 4 finalists (1.111 in one pair of envs)=$R/runtime-sample1-agent-known-finalists4.csv:exhaustive" \
        "adaptive winner, 4 finalists (1.010)=$R/runtime-sample1-agent-known-finalists4.csv:adaptive" \
        --benchmarks benchmark://xla-vit-v0/vit-l6-d64-h2-p8-i32-b2-adamw-train --pipeline agent --sessions 6 --rounds 2 \
        --repetitions 10 --out $R/vit-winners-agent-sessions6.json
    # one whole family, the ViT's 8 test benchmarks, XLA's full pipeline (where PPO's ViT module measured faster
    # than XLA's default beyond noise): the op-count agents' orders as candidates, four finalists, the final
    # measurement in 3 fresh sessions; then the winners and PPO's modules in 6 fresh sessions each
    $PY -m leaderboard.agents.runtime.run --datasets xla-vit-v0 --sample 0 \
        --candidates 32 --budget 8 --mutate 0.5 --repetitions 10 --final-rounds 4 --baseline default --final-sessions 3 --seed 0 \
        --pipeline full --distinct executable --finalists 4 --from-results $known,$AGENTS/random_search/results-test.csv \
        --out $R/runtime-vit8-known-finalists4-sessions3.json
    $PY -m leaderboard.agents.runtime.plot $R/runtime-vit8-known-finalists4-sessions3.json
    $PY -m leaderboard.report.runtime_table measure --datasets xla-vit-v0 --sample 0 --sessions 6 --rounds 2 --repetitions 10 \
        "exhaustive winners=$R/runtime-vit8-known-finalists4-sessions3.csv:exhaustive" \
        "adaptive winners=$R/runtime-vit8-known-finalists4-sessions3.csv:adaptive" \
        "MLP PPO (op count), seed 0=$AGENTS/rl/results/ppo-OpCount-seed0-test.csv" \
        --out $R/vit8-winners-sessions6.json
    # the same winners and PPO's modules again, 3 sessions of 10 rounds (benchmarks/measure_runtime_noise.py: rounds,
    # not sessions, average the machine's noise out)
    $PY -m leaderboard.report.runtime_table measure --datasets xla-vit-v0 --sample 0 --sessions 3 --rounds 10 --repetitions 10 \
        --no-control "exhaustive winners=$R/runtime-vit8-known-finalists4-sessions3.csv:exhaustive" \
        "MLP PPO (op count), seed 0=$AGENTS/rl/results/ppo-OpCount-seed0-test.csv" \
        --out $R/vit8-winners-sessions3-rounds10.json
    # the same with the control rows (A/A, as loaded) and the adaptive winners
    $PY -m leaderboard.report.runtime_table measure --datasets xla-vit-v0 --sample 0 --sessions 3 --rounds 10 --repetitions 10 \
        "exhaustive winners=$R/runtime-vit8-known-finalists4-sessions3.csv:exhaustive" \
        "adaptive winners=$R/runtime-vit8-known-finalists4-sessions3.csv:adaptive" \
        "MLP PPO (op count), seed 0=$AGENTS/rl/results/ppo-OpCount-seed0-test.csv" \
        --out $R/vit8-winners-control-sessions3-rounds10.json
    # goal 1 with a larger pool: up to 96 candidates a training ViT (by executable), the adaptive mode's budget still 8,
    # one finalist; then up to 64 told apart by module (the exhaustive mode measures every proposed module)
    train=$($PY -c "from leaderboard.harness import select_benchmarks as s
print(','.join(u for u in s('test', ['xla-vit-v0']) if u.endswith('-train')))")
    $PY -m leaderboard.agents.runtime.run --benchmarks $train \
        --candidates 96 --budget 8 --mutate 0.5 --repetitions 10 --final-rounds 10 --baseline default --final-sessions 3 --seed 0 \
        --pipeline full --distinct executable --finalists 1 --from-results $known,$AGENTS/random_search/results-test.csv \
        --out $R/runtime-vit4-train-candidates96.json
    $PY -m leaderboard.agents.runtime.plot $R/runtime-vit4-train-candidates96.json
    $PY -m leaderboard.agents.runtime.run --benchmarks $train \
        --candidates 64 --budget 8 --mutate 0.5 --repetitions 10 --final-rounds 10 --baseline default --final-sessions 3 --seed 0 \
        --pipeline full --distinct module --finalists 1 --from-results $known,$AGENTS/random_search/results-test.csv \
        --out $R/runtime-vit4-train-candidates64-module.json
    $PY -m leaderboard.agents.runtime.plot $R/runtime-vit4-train-candidates64-module.json
    # the inference ViTs again, after the fallback fix (no faster candidate: the default order, not the module as loaded)
    infer=$($PY -c "from leaderboard.harness import select_benchmarks as s
print(','.join(u for u in s('test', ['xla-vit-v0']) if u.endswith('-infer')))")
    $PY -m leaderboard.agents.runtime.run --benchmarks $infer \
        --candidates 32 --budget 8 --mutate 0.5 --repetitions 10 --final-rounds 4 --baseline default --final-sessions 3 --seed 0 \
        --pipeline full --distinct executable --finalists 4 --from-results $known,$AGENTS/random_search/results-test.csv \
        --out $R/runtime-vit4-infer-known-finalists4-sessions3.json
    $PY -m leaderboard.agents.runtime.plot $R/runtime-vit4-infer-known-finalists4-sessions3.json
}

stage_runtime_table() {  # the leaderboard's runtime table on the runtime runs' sample (1 test benchmark per suite): the
    # runtime search through the harness (validated), beside PPO and the default pipeline replayed through
    # the env, each measured against XLA's default in 6 fresh sessions of 2 interleaved rounds, after
    # an A/A control and the module as loaded; a quiet machine, ~20 min
    want runtime_table || exit 0
    search=$AGENTS/runtime/results-sample1.csv
    evaluate $search "leaderboard.agents.runtime.policy:RuntimeSearch(candidates=32, budget=8, mutate=0.5, \
repetitions=10, final_rounds=10, final_sessions=0, baseline='default', seed=0)" --sample 1 --sample_seed 0
    $PY -m leaderboard.report.summary $search --validate --baseline $AGENTS/default_pipeline/results-test.csv \
        --json ${search%.csv}.summary.json | tee ${search%.csv}.summary.txt
    $PY -m leaderboard.report.runtime_table measure --sample 1 --sample-seed 0 --sessions 6 --rounds 2 --repetitions 10 \
        --out leaderboard/results/runtime-sample1.json \
        "XLA's default order replayed through the env=$AGENTS/default_pipeline/results-test.csv" \
        "MLP PPO (op count), seed 0=$AGENTS/rl/results/ppo-OpCount-seed0-test.csv" \
        "runtime search (adaptive)=$search"
}
