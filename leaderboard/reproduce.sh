#!/usr/bin/env bash
# The commands behind every committed result, summary and figure of the
# leaderboard (leaderboard/README.md). Run from anywhere; stages:
#
#   bash leaderboard/reproduce.sh train      # the six RL runs (GPT-2 train split)
#   bash leaderboard/reproduce.sh search     # default pipeline, random, greedy (two) on the test sample
#   bash leaderboard/reproduce.sh beam       # lazy beam search on the test sample
#   bash leaderboard/reproduce.sh search_full  # greedy, beam, random search (beam's walltime) on the full test split
#   bash leaderboard/reproduce.sh rl         # the six RL runs on the test sample
#   bash leaderboard/reproduce.sh full       # PPO, PPO+shaping, TRPO on the full test split
#   bash leaderboard/reproduce.sh heldout    # default pipeline, greedy, PPO, PPO+shaping, TRPO on the held-out families
#   bash leaderboard/reproduce.sh seeds      # the other RL agents, 3 seeds, full test split + held-out
#   bash leaderboard/reproduce.sh budget     # PPO, PPO + shaping and the GNN at 20,000 env steps, 3 seeds, test + held-out
#   bash leaderboard/reproduce.sh generalize # PPO on GPT-2 / six families / generator / mixed, 3 seeds, test + held-out
#   bash leaderboard/reproduce.sh runtime    # runtime search: exhaustive vs adaptive (cost model), 1 test benchmark per suite, then 3 ResNets
#   bash leaderboard/reproduce.sh runtime_table  # the leaderboard's runtime table: the runtime search, PPO, the default, vs XLA's default
#   bash leaderboard/reproduce.sh rescore    # replay every results CSV under the current op count rule
#   bash leaderboard/reproduce.sh summary    # validate + summarize every results CSV
#   bash leaderboard/reproduce.sh figures    # leaderboard/figures/*.png and the README's table
#   bash leaderboard/reproduce.sh gnn        # graph agent: GPT-2 and mixed train splits, 3 seeds each, full test split
#   bash leaderboard/reproduce.sh gnn_lr     # graph agent on GPT-2 with learning rate 1e-3 (4x), 3 seeds, full test split
#   bash leaderboard/reproduce.sh gnn_store_off  # the GNN's GPT-2 (4,000, 20,000 steps) and six-family runs on the test split, store off
#   bash leaderboard/reproduce.sh gnn_episodes5  # the GNN on GPT-2 trained in episodes of 5 passes: validation (also with stop masked), then test (store off); the MLP PPO so (seeds 0-2, test too)
#   bash leaderboard/reproduce.sh gnn_six_episodes5  # gnn_episodes5's recipe on the six train splits: validation split only (store off)
#   bash leaderboard/reproduce.sh world_model  # world model + controller: 3 seeds (GPT-2 train split), full test split
#   bash leaderboard/reproduce.sh world_model_plans  # its planners compared on the validation split (750-step models: GPT-2, six splits)
#   bash leaderboard/reproduce.sh world_model_six  # the world model trained on the six train splits, 750 real steps, 3 seeds
#   bash leaderboard/reproduce.sh ppo_steps  # PPO's own checkpoints (1,000, 2,000 steps; GPT-2, six splits; six: 2,500, 3,000) on the test split: score vs steps
#   bash leaderboard/reproduce.sh world_model_six_rerun  # world_model_six again, 3 new runs, scored at 500 and 750 real steps
#   bash leaderboard/reproduce.sh world_model_episodes5  # world_model_six_rerun collecting in episodes of 5 passes: validation, then test
#   bash leaderboard/reproduce.sh world_model_accuracy  # the world models' accuracy on the test split's transitions, per family
#
# A second argument keeps only the jobs whose name contains it, e.g.
# `reproduce.sh train a2c` or `reproduce.sh search greedy` (to run jobs side by side).
#
# The test sample is 4 benchmarks of each suite's test split, drawn with seed
# 0 (`--sample 4 --sample_seed 0`, 24 benchmarks): the full test split (106
# benchmarks) is only affordable for the default pipeline on a 2-core machine.
set -euo pipefail
shopt -s nullglob  # a stage's glob that matches nothing (results not made yet) loops zero times
cd "$(dirname "$0")/.."
PY=.venv/bin/python
SAMPLE=(--sample 4 --sample_seed 0)
AGENTS=leaderboard/agents
RUNS=$AGENTS/rl/runs
SIX=xla-bert-v0,xla-gpt2-v0,xla-moe-v0,xla-resnet-v0,xla-rnn-v0,xla-vit-v0  # the six suites (their train splits)
SIX_RUN=wm-bert+gpt2+moe+resnet+rnn+vit  # + -seedN: a world-model run on the six train splits (train.py's run_name)
WM_SIX=$AGENTS/world_model/runs/$SIX_RUN  # + -seedN: world_model_six's runs
export XLA_GYM_WORKERS=1  # one XLA worker per service: two jobs share the two cores

ONLY=${2:-}
want() { [[ -z $ONLY || $1 == *"$ONLY"* ]]; }

evaluate() {  # evaluate RESULTS_CSV POLICY [flags]
    local results=$1 policy=$2
    shift 2
    want "$results" || return 0
    rm -f "$results"
    mkdir -p "$(dirname "$results")"
    $PY -m leaderboard.eval --policy "$policy" --leaderboard_results "$results" \
        --leaderboard_logfile "${results%.csv}.log" "$@"
    rm -f "${results%.csv}.log"
}

summarize() {  # summarize RESULTS_CSV [SPLIT]: validate every result by execution and summarize it against the
    # default pipeline replayed on SPLIT (test), into RESULTS.summary.{json,txt}
    local results=$1 split=${2:-test}
    want "$results" || return 0
    $PY -m leaderboard.summary "$results" --validate --baseline $AGENTS/default_pipeline/results-$split.csv \
        --json "${results%.csv}.summary.json" | tee "${results%.csv}.summary.txt"
}

steps_tables() {  # the world model beside PPO by real env steps (table, figure), then the steps each agent needs
    # to reach PPO's 4,000-step score (GPT-2, six train splits): agents/world_model/README.md's tables, from committed results
    $PY -m leaderboard.seeds --preset world_model --figure leaderboard/figures/world_model.png
    $PY -m leaderboard.efficiency --preset world_model --target "MLP PPO, 4,000 steps" \
        --target "six families: MLP PPO, 4,000 steps" --figure leaderboard/figures/world_model_steps.png
}

evaluate_splits() {  # evaluate_splits RUN RESULTS_PREFIX [rl|gnn]: a run of agents/rl (or agents/gnn) on
    # the test split and the held-out families, into PREFIX-{test,heldout}.csv; --resume runs only
    # the benchmarks a file lacks
    local split agent=${3:-rl}
    mkdir -p "$(dirname "$2")"
    for split in test heldout; do
        env "XLA_GYM_${agent^^}_RUN=$1" $PY -m leaderboard.eval --policy "leaderboard.agents.$agent.policy:from_env()" \
            --leaderboard_results "$2-$split.csv" --split $split --resume
    done
}

train() {  # train NAME FLAGS...: the shared budget of every RL run
    want "$1" || return 0
    shift
    $PY -m leaderboard.agents.rl.train --total-timesteps 4000 --n-steps 64 --n-envs 2 \
        --episode-length 20 --checkpoint-every 1000 --seed 0 --out "$RUNS" "$@"
}

# The six RL agents of agents/rl (run name without its seed) and their flags; every stage that
# trains or evaluates them reads these
RL_NAMES=(ppo-OpCount a2c-OpCount dqn-OpCount trpo-OpCount ppo-OpCountShaped ppo-OpCount-costvf)
declare -A RL_FLAGS=([ppo-OpCount]="--algo ppo" [a2c-OpCount]="--algo a2c" [dqn-OpCount]="--algo dqn"
    [trpo-OpCount]="--algo trpo" [ppo-OpCountShaped]="--algo ppo --reward-space OpCountShaped"
    [ppo-OpCount-costvf]="--algo ppo --cost-features --cost-in-value-only")
RL_RUNS=("${RL_NAMES[@]/%/-seed0}")

case "${1:-}" in
train)
    for name in "${RL_NAMES[@]}"; do
        # shellcheck disable=SC2086  # RL_FLAGS values are words
        train "$name-seed0" ${RL_FLAGS[$name]}
    done
    ;;
search)
    evaluate $AGENTS/default_pipeline/results-test.csv leaderboard.agents.default_pipeline.policy:policy
    evaluate $AGENTS/default_pipeline/results-sample4.csv leaderboard.agents.default_pipeline.policy:policy "${SAMPLE[@]}"
    evaluate $AGENTS/random_search/results-sample4.csv \
        "leaderboard.agents.random_search.policy:RandomSearch(trials=3, length=20, seed=0)" "${SAMPLE[@]}"
    evaluate $AGENTS/greedy/results-sample4.csv "leaderboard.agents.greedy.policy:Greedy(max_steps=30, lazy=True)" "${SAMPLE[@]}"
    evaluate $AGENTS/greedy/results-after-default-sample4.csv \
        "leaderboard.agents.greedy.policy:Greedy(max_steps=30, lazy=True, after_default=True)" "${SAMPLE[@]}"
    ;;
beam)  # two shards side by side (~1 h on 2 cores), then their rows merged
    beam=$AGENTS/beam/results-sample4
    pids=()
    for i in 0 1; do
        evaluate $beam.shard$i.csv "leaderboard.agents.beam.policy:Beam(width=5, depth=40, lazy=True, patience=2, diverse=True)" \
            "${SAMPLE[@]}" --shard $i/2 &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done  # a failed shard stops the script
    { head -n 1 $beam.shard0.csv; tail -q -n +2 $beam.shard0.csv $beam.shard1.csv | sort; } > $beam.csv
    rm $beam.shard0.csv $beam.shard1.csv
    ;;
search_full)  # the search baselines on the full test split (106 benchmarks), each in two shards side
    # by side (one a core), then their rows merged: greedy ~0.6 h, beam ~2.3 h, random search with
    # beam's walltime on the sample (243 s a benchmark) ~3.5 h. --resume keeps an interrupted shard's
    # rows, so a search can run in pieces; a search whose merged file exists is skipped (delete it to
    # run again); the summary stage validates.
    declare -A SEARCH=([greedy]="Greedy(max_steps=30, lazy=True)"
        [beam]="Beam(width=5, depth=40, lazy=True, patience=2, diverse=True)"
        [random_search]="RandomSearch(length=20, seed=0, seconds=240)")
    for name in greedy beam random_search; do
        results=$AGENTS/$name/results-test
        want "$results.csv" || continue
        [[ -f $results.csv ]] && continue
        pids=()
        for i in 0 1; do
            $PY -m leaderboard.eval --policy "leaderboard.agents.$name.policy:${SEARCH[$name]}" \
                --leaderboard_results "$results.shard$i.csv" --shard $i/2 --resume &
            pids+=($!)
        done
        for pid in "${pids[@]}"; do wait "$pid"; done  # a failed shard stops the script
        { head -n 1 "$results.shard0.csv"; tail -q -n +2 "$results.shard0.csv" "$results.shard1.csv" | sort; } \
            > "$results.csv"
        rm "$results.shard0.csv" "$results.shard1.csv"
    done
    ;;
rl)
    for run in "${RL_RUNS[@]}"; do
        XLA_GYM_RL_RUN=$RUNS/$run evaluate $AGENTS/rl/results/$run-sample4.csv \
            "leaderboard.agents.rl.policy:from_env()" "${SAMPLE[@]}"
    done
    ;;
full)  # the best RL agents on the full test split (106 benchmarks, ~35 min each)
    for run in ppo-OpCount-seed0 ppo-OpCountShaped-seed0 trpo-OpCount-seed0; do
        XLA_GYM_RL_RUN=$RUNS/$run evaluate $AGENTS/rl/results/$run-test.csv "leaderboard.agents.rl.policy:from_env()"
    done
    ;;
seeds)  # the other RL agents at seeds 0, 1, 2 (seed 0 trained by the train stage) on the test split
    # and the held-out families; resumable as the generalize stage; PPO's seeds are the generalize stage's
    # (then the summary stage validates and summarizes the new results)
    for name in ppo-OpCountShaped trpo-OpCount a2c-OpCount dqn-OpCount ppo-OpCount-costvf; do
        for seed in 0 1 2; do
            run=$name-seed$seed
            want "$run" || continue
            # shellcheck disable=SC2086  # RL_FLAGS values are words
            [[ -f $RUNS/$run/model.zip ]] || train "$run" ${RL_FLAGS[$name]} --seed $seed --resume
            evaluate_splits "$RUNS/$run" "$AGENTS/rl/results/$run"
        done
    done
    ;;
budget)  # PPO, PPO + shaping and the GNN at 5x the budget (20,000 env steps, GPT-2 train split), seeds 0-2,
    # the full test split and the held-out families (~1-2 h of training a run on 2 cores). Checkpoints
    # every 2,000 steps: an interrupted run continues (--resume), and so do its evaluations.
    for name in ppo-OpCount ppo-OpCountShaped; do
        for seed in 0 1 2; do
            run=$name-seed$seed
            want "$run" || continue
            # shellcheck disable=SC2086  # RL_FLAGS values are words
            [[ -f $RUNS/budget/$run/model.zip ]] || train "$run" ${RL_FLAGS[$name]} --seed $seed \
                --total-timesteps 20000 --checkpoint-every 2000 --out $RUNS/budget --resume
            evaluate_splits "$RUNS/budget/$run" "$AGENTS/rl/results/budget/$run"
        done
    done
    for seed in 0 1 2; do  # the graph agent (agents/gnn) at the same budget, GPT-2 train split (~2 h a run)
        run=$AGENTS/gnn/runs/budget/gnn-gpt2-seed$seed
        want "$run" || continue
        [[ -f $run/model.pt ]] || $PY -m leaderboard.agents.gnn.train --benchmarks xla-gpt2-v0:train \
            --total-timesteps 20000 --checkpoint-every 2000 --seed $seed --out "$(dirname "$run")" --resume
        evaluate_splits "$run" "$AGENTS/gnn/results/budget/gnn-gpt2-seed$seed" gnn
    done
    ;;
heldout)  # the families held out from all training (split heldout: unet, ssm; 32 benchmarks)
    evaluate $AGENTS/default_pipeline/results-heldout.csv leaderboard.agents.default_pipeline.policy:policy --split heldout
    evaluate $AGENTS/greedy/results-heldout.csv "leaderboard.agents.greedy.policy:Greedy(max_steps=30, lazy=True)" --split heldout
    for run in ppo-OpCount-seed0 ppo-OpCountShaped-seed0 trpo-OpCount-seed0; do
        XLA_GYM_RL_RUN=$RUNS/$run evaluate $AGENTS/rl/results/$run-heldout.csv "leaderboard.agents.rl.policy:from_env()" --split heldout
    done
    ;;
generalize)  # does training on generated programs generalize better? PPO at the RL runs' budget
    # on four training sets, 3 seeds each, evaluated on the full test split and on the held-out
    # families. "gpt2" is the rl stage's PPO (same flags: its seed 0 is the leaderboard's row);
    # "mixed" is the six train splits (264 graphs) and as many generator seeds.
    # Long (about 25 min per set and seed on 2 cores), so it resumes: a finished run
    # (model.zip) is kept, an interrupted run resumes from its last checkpoint, a results
    # file is completed; delete them to redo. Run sets side by side
    # with the filter: `reproduce.sh generalize six`, `reproduce.sh generalize generator`.
    declare -A SETS=([gpt2]=xla-gpt2-v0 [six]=$SIX [generator]=generator://xla-random-v0/0-9999
        [mixed]=$SIX,generator://xla-random-v0/0-263)
    for seed in 0 1 2; do
        for set in six generator mixed gpt2; do
            want "generalize/$set" || continue
            out=$RUNS/generalize/$set results=$AGENTS/rl/results/generalize/$set-ppo-seed$seed
            [[ $set == gpt2 ]] && out=$RUNS results=$AGENTS/rl/results/ppo-OpCount-seed$seed
            [[ -f $out/ppo-OpCount-seed$seed/model.zip ]] || train "generalize/$set" --algo ppo \
                --seed $seed --datasets "${SETS[$set]}" --out "$out" --resume
            evaluate_splits "$out/ppo-OpCount-seed$seed" "$results"
        done
    done
    ;;
runtime)  # Chameleon-style runtime search, (a) exhaustive vs (b) adaptive on the same candidates;
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
    $PY -m leaderboard.runtime_table measure \
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
    $PY -m leaderboard.runtime_table measure --datasets xla-vit-v0 --sample 0 --sessions 6 --rounds 2 --repetitions 10 \
        "exhaustive winners=$R/runtime-vit8-known-finalists4-sessions3.csv:exhaustive" \
        "adaptive winners=$R/runtime-vit8-known-finalists4-sessions3.csv:adaptive" \
        "MLP PPO (op count), seed 0=$AGENTS/rl/results/ppo-OpCount-seed0-test.csv" \
        --out $R/vit8-winners-sessions6.json
    # the same winners and PPO's modules again, 3 sessions of 10 rounds (benchmarks/measure_runtime_noise.py: rounds,
    # not sessions, average the machine's noise out)
    $PY -m leaderboard.runtime_table measure --datasets xla-vit-v0 --sample 0 --sessions 3 --rounds 10 --repetitions 10 \
        --no-control "exhaustive winners=$R/runtime-vit8-known-finalists4-sessions3.csv:exhaustive" \
        "MLP PPO (op count), seed 0=$AGENTS/rl/results/ppo-OpCount-seed0-test.csv" \
        --out $R/vit8-winners-sessions3-rounds10.json
    # the same with the control rows (A/A, as loaded) and the adaptive winners
    $PY -m leaderboard.runtime_table measure --datasets xla-vit-v0 --sample 0 --sessions 3 --rounds 10 --repetitions 10 \
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
    ;;
runtime_table)  # the leaderboard's runtime table on the runtime runs' sample (1 test benchmark per suite): the
    # runtime search through the harness (validated), beside PPO and the default pipeline replayed through
    # the env, each measured against XLA's default in 6 fresh sessions of 2 interleaved rounds, after
    # an A/A control and the module as loaded; a quiet machine, ~20 min
    want runtime_table || exit 0
    search=$AGENTS/runtime/results-sample1.csv
    evaluate $search "leaderboard.agents.runtime.policy:RuntimeSearch(candidates=32, budget=8, mutate=0.5, \
repetitions=10, final_rounds=10, final_sessions=0, baseline='default', seed=0)" --sample 1 --sample_seed 0
    $PY -m leaderboard.summary $search --validate --baseline $AGENTS/default_pipeline/results-test.csv \
        --json ${search%.csv}.summary.json | tee ${search%.csv}.summary.txt
    $PY -m leaderboard.runtime_table measure --sample 1 --sample-seed 0 --sessions 6 --rounds 2 --repetitions 10 \
        --out leaderboard/results/runtime-sample1.json \
        "XLA's default order replayed through the env=$AGENTS/default_pipeline/results-test.csv" \
        "MLP PPO (op count), seed 0=$AGENTS/rl/results/ppo-OpCount-seed0-test.csv" \
        "runtime search (adaptive)=$search"
    ;;
rescore)  # results made under an older op count rule: the same commandlines, current rewards
    for results in $AGENTS/*/results-*.csv $AGENTS/rl/results/*.csv; do
        want "$results" || continue
        $PY -m leaderboard.rescore "$results"
    done
    ;;
summary)
    # "vs baseline": against the default pipeline replayed through the env on
    # the same benchmarks (the full test split covers the sample); two envs
    # validate side by side. Runtimes need a quiet machine to mean anything:
    # add --runtime there (with --jobs 1).
    for results in $AGENTS/*/results-*.csv $AGENTS/rl/results/*.csv $AGENTS/rl/results/{generalize,budget}/*.csv \
        $AGENTS/gnn/results/budget/*.csv; do
        want "$results" || continue
        [[ $results == *.shard[0-9].csv ]] && continue  # an unfinished search_full shard
        baseline=$AGENTS/default_pipeline/results-test.csv
        [[ $results == *-heldout.csv ]] && baseline=$AGENTS/default_pipeline/results-heldout.csv
        $PY -m leaderboard.summary "$results" --validate --jobs 2 --baseline "$baseline" \
            --json "${results%.csv}.summary.json" | tee "${results%.csv}.summary.txt"
    done
    ;;
figures)
    $PY -m leaderboard.figures
    $PY -m leaderboard.table  # the results tables of leaderboard/README.md: test sample
    $PY -m leaderboard.table --full  # and full test split
    $PY -m leaderboard.table --heldout  # and the held-out families
    # PPO by training set, across seeds (the generalize stage): the README's table
    $PY -m leaderboard.seeds --preset generalize --figure leaderboard/figures/generalize.png
    $PY -m leaderboard.seeds --preset rl --figure leaderboard/figures/seeds.png  # every RL agent (seeds stage)
    $PY -m leaderboard.seeds --preset budget --figure leaderboard/figures/budget.png  # 4,000 vs 20,000 steps
    $PY -m leaderboard.against_paper  # the paper's two sets in its metric, across seeds: beaten or not
    $PY -m leaderboard.headroom  # the best validated result of any agent per benchmark: how far above the baseline
    $PY -m leaderboard.headroom --split heldout
    $PY -m leaderboard.curves --out leaderboard/figures/budget_training.png \
        "PPO=$RUNS/budget/ppo-OpCount-seed*" "PPO + shaping=$RUNS/budget/ppo-OpCountShaped-seed*" \
        "GNN PPO=$AGENTS/gnn/runs/budget/gnn-gpt2-seed*" \
        --title "PPO, PPO + shaping and the GNN at 20,000 env steps (mean across seeds, 95% CI)"
    $PY -m leaderboard.curves --out leaderboard/figures/generalize_training.png \
        "GPT-2=$RUNS/ppo-OpCount-seed*" "six families=$RUNS/generalize/six/*" \
        "generator=$RUNS/generalize/generator/*" "six families + generator=$RUNS/generalize/mixed/*" \
        --title "PPO training by training set (mean across seeds, 95% CI)"
    ;;
gnn)  # the graph agent, trained as the MLP PPO (4,000 steps) on GPT-2 and on all six train splits
    GNN=$AGENTS/gnn
    MIXED=xla-bert-v0:train,xla-gpt2-v0:train,xla-moe-v0:train,xla-resnet-v0:train,xla-rnn-v0:train,xla-vit-v0:train
    for seed in 0 1 2; do
        for suite in gpt2 mixed; do
            run=$GNN/runs/gnn-$suite-seed$seed
            benchmarks=xla-gpt2-v0:train
            [[ $suite == mixed ]] && benchmarks=$MIXED
            if want "$run"; then
                $PY -m leaderboard.agents.gnn.train --benchmarks "$benchmarks" --total-timesteps 4000 \
                    --seed $seed --out $GNN/runs
            fi
            for split in test heldout; do  # the full test split, and the families no run trained on
                results=$GNN/results/gnn-$suite-seed$seed-$split.csv
                XLA_GYM_GNN_RUN=$run evaluate "$results" "leaderboard.agents.gnn.policy:from_env()" --split $split
                summarize "$results" $split
            done
        done
    done
    # side by side with the MLP PPO of the same budget and seeds (the rl and generalize stages)
    $PY -m leaderboard.seeds --preset gnn --figure leaderboard/figures/gnn.png
    ;;
gnn_lr)  # the graph agent on GPT-2 again with 4x the learning rate (1e-3): the gnn stage's runs moved
    # their policy little (median approx_kl ~0.001 an update, a ratio clipped in 2 of 96 updates); same budget and seeds
    LR=$AGENTS/gnn/runs/lr
    for seed in 0 1 2; do
        run=$LR/gnn-gpt2-seed$seed
        want "$run" || continue
        [[ -f $run/model.pt ]] || $PY -m leaderboard.agents.gnn.train --benchmarks xla-gpt2-v0:train \
            --total-timesteps 4000 --learning-rate 1e-3 --seed $seed --out $LR
        results=$AGENTS/gnn/results/lr/gnn-gpt2-seed$seed
        evaluate_splits "$run" "$results" gnn
        for split in test heldout; do summarize "$results-$split.csv" $split; done
    done
    $PY -m leaderboard.seeds --preset gnn --figure leaderboard/figures/gnn.png
    # how far each update moved the policy, at both learning rates (TensorBoard's scalars)
    $PY -m leaderboard.scalars "$AGENTS/gnn/runs/gnn-gpt2-seed*" "$LR/gnn-gpt2-seed*"
    ;;
gnn_store_off)  # the GNN's runs (gnn stage: GPT-2 and six families, 4,000 steps; budget stage: GPT-2, 20,000) on the
    # test split with the experience store off: the committed GNN results masked the passes the store already knew to
    # change nothing at each state (PassOutcomes, as the runs were trained), knowledge that earlier runs on the same test
    # modules (e.g. the searches) had put there; PPO never reads it. With XLA_GYM_STORE=off the policy knows only what
    # its own evaluation saw, on any machine
    for run in gnn-gpt2 gnn-mixed budget/gnn-gpt2; do  # runs/RUN-seedN -> results/[budget/]store-off/NAME-seedN-test.csv
        name=${run##*/}
        prefix=${run%"$name"}  # "" or "budget/"
        for seed in 0 1 2; do
            results=$AGENTS/gnn/results/${prefix}store-off/$name-seed$seed-test.csv
            XLA_GYM_STORE=off XLA_GYM_GNN_RUN=$AGENTS/gnn/runs/$run-seed$seed \
                evaluate "$results" "leaderboard.agents.gnn.policy:from_env()" --split test
            summarize "$results"
        done
    done
    $PY -m leaderboard.seeds --preset gnn --figure leaderboard/figures/gnn.png
    $PY -m leaderboard.seeds --preset budget --figure leaderboard/figures/budget.png
    ;;
gnn_episodes5)  # the graph agent on GPT-2 trained in episodes of 5 passes, not 20 (the idea of world_model_episodes5):
    # four times the episodes, so four times the first states, for the same 4,000 env steps; it still acts 20 steps a
    # benchmark. Both recipes compared on the validation split, then these runs on the full test split and the held-out
    # families; the store off in every GNN evaluation, so the policy masks only what its own evaluation saw (gnn_store_off;
    # training masks what the store knows, --mask known, as the gnn stage's runs)
    GNN=$AGENTS/gnn
    VAL=$GNN/results/validation
    for seed in 0 1 2; do
        run=$GNN/runs/episodes5/gnn-gpt2-seed$seed
        if want "$run" && [[ ! -f $run/model.pt ]]; then
            $PY -m leaderboard.agents.gnn.train --benchmarks xla-gpt2-v0:train --total-timesteps 4000 \
                --episode-length 5 --seed $seed --out "$(dirname "$run")"
        fi
        XLA_GYM_STORE=off XLA_GYM_GNN_RUN=$GNN/runs/gnn-gpt2-seed$seed evaluate \
            $VAL/gnn-gpt2-base-seed$seed-validation-sample4.csv "leaderboard.agents.gnn.policy:from_env()" \
            --split validation "${SAMPLE[@]}"
        policy="leaderboard.agents.gnn.policy:GnnPolicy(run='$run', episode_length=20)"
        XLA_GYM_STORE=off evaluate $VAL/gnn-gpt2-episodes5-seed$seed-validation-sample4.csv "$policy" \
            --split validation "${SAMPLE[@]}"
        XLA_GYM_STORE=off evaluate $VAL/gnn-gpt2-nostop-seed$seed-validation-sample4.csv \
            "${policy%)}, allow_stop=False)" --split validation "${SAMPLE[@]}"  # the stop action masked
        for split in test heldout; do  # the full test split, and the families no run trained on
            results=$GNN/results/episodes5/gnn-gpt2-seed$seed-$split.csv
            XLA_GYM_STORE=off evaluate "$results" "$policy" --split $split
            summarize "$results" $split
        done
    done
    # the same change for the MLP PPO (seeds 0-2; validation, test, held out): is it the episodes, or the graph?
    RVAL=$AGENTS/rl/results/validation
    for seed in 0 1 2; do
        mlp=$RUNS/episodes5/ppo-OpCount-seed$seed
        if want "$mlp" && [[ ! -f $mlp/model.zip ]]; then
            $PY -m leaderboard.agents.rl.train --algo ppo --total-timesteps 4000 --n-steps 64 --n-envs 2 \
                --episode-length 5 --checkpoint-every 1000 --seed $seed --out "$(dirname "$mlp")"
        fi
        evaluate $RVAL/ppo-OpCount-base-seed$seed-validation-sample4.csv \
            "leaderboard.agents.rl.policy:RlPolicy(run='$RUNS/ppo-OpCount-seed$seed')" --split validation "${SAMPLE[@]}"
        policy="leaderboard.agents.rl.policy:RlPolicy(run='$mlp', episode_length=20)"
        evaluate $RVAL/ppo-OpCount-episodes5-seed$seed-validation-sample4.csv "$policy" --split validation "${SAMPLE[@]}"
        for split in test heldout; do
            results=$AGENTS/rl/results/episodes5/ppo-OpCount-seed$seed-$split.csv
            evaluate "$results" "$policy" --split $split
            summarize "$results" $split
        done
    done
    $PY -m leaderboard.seeds --baseline $AGENTS/world_model/results/validation/default-pipeline-validation-sample4.csv \
        "GNN PPO, episodes of 20 (the gnn stage's runs)=$VAL/gnn-gpt2-base-seed*.csv" \
        "GNN PPO, episodes of 5=$VAL/gnn-gpt2-episodes5-seed*.csv" \
        "GNN PPO, episodes of 5, stop masked=$VAL/gnn-gpt2-nostop-seed*.csv" \
        "MLP PPO, episodes of 20=$RVAL/ppo-OpCount-base-seed*-validation-sample4.csv" \
        "MLP PPO, episodes of 5=$RVAL/ppo-OpCount-episodes5-seed*-validation-sample4.csv"
    $PY -m leaderboard.seeds --preset gnn --figure leaderboard/figures/gnn.png
    ;;
gnn_six_episodes5)  # gnn_episodes5's recipe (episodes of 5 passes, acting 20 steps, store off in evaluations) on the
    # six train splits, as the gnn stage's gnn-mixed runs: compared with those on the validation split only (it scored
    # lower there, so it was not run on the test split)
    GNN=$AGENTS/gnn
    VAL=$GNN/results/validation
    MIXED=xla-bert-v0:train,xla-gpt2-v0:train,xla-moe-v0:train,xla-resnet-v0:train,xla-rnn-v0:train,xla-vit-v0:train
    for seed in 0 1 2; do
        run=$GNN/runs/episodes5/gnn-mixed-seed$seed
        if want "$run" && [[ ! -f $run/model.pt ]]; then
            $PY -m leaderboard.agents.gnn.train --benchmarks "$MIXED" --total-timesteps 4000 \
                --episode-length 5 --seed $seed --out "$(dirname "$run")"
        fi
        XLA_GYM_STORE=off evaluate $VAL/gnn-mixed-base-seed$seed-validation-sample4.csv \
            "leaderboard.agents.gnn.policy:GnnPolicy(run='$GNN/runs/gnn-mixed-seed$seed', episode_length=20)" \
            --split validation "${SAMPLE[@]}"
        XLA_GYM_STORE=off evaluate $VAL/gnn-mixed-episodes5-seed$seed-validation-sample4.csv \
            "leaderboard.agents.gnn.policy:GnnPolicy(run='$run', episode_length=20)" \
            --split validation "${SAMPLE[@]}"
    done
    $PY -m leaderboard.seeds --baseline $AGENTS/world_model/results/validation/default-pipeline-validation-sample4.csv \
        "GNN PPO, six families, episodes of 20 (the gnn stage's runs)=$VAL/gnn-mixed-base-seed*.csv" \
        "GNN PPO, six families, episodes of 5=$VAL/gnn-mixed-episodes5-seed*.csv" \
        "GNN PPO, GPT-2, episodes of 5=$VAL/gnn-gpt2-episodes5-seed*.csv" \
        "MLP PPO, GPT-2, episodes of 20=$AGENTS/rl/results/validation/ppo-OpCount-base-seed*-validation-sample4.csv"
    ;;
world_model)  # Dyna: 4000 real env steps per seed (the RL runs' budget; checkpoints at 750, 1000, 2000), the full test split
    WM=$AGENTS/world_model
    for seed in 0 1 2; do
        run=$WM/runs/wm-xla-gpt2-v0-seed$seed
        if want "$run"; then  # --resume: a stopped run goes on from its last iteration (state.pt)
            $PY -m leaderboard.agents.world_model.train --benchmarks xla-gpt2-v0:train \
                --total-env-steps 4000 --seed $seed --out $WM/runs --resume
            $PY -m leaderboard.agents.world_model.evaluate "$run" > "$run/heldout-metrics.json"
        fi
        # the final controller, then the run's checkpoints (train.py --checkpoints): its score at fewer real
        # steps; each also planning with the model (plan='lookahead': one-step model-predictive control)
        for plan in actor lookahead; do
            tag=wm-xla-gpt2-v0$([[ $plan == actor ]] || echo "-$plan")
            [[ -f $run/model.pt ]] && evaluate $WM/results/$tag-seed$seed-test.csv \
                "leaderboard.agents.world_model.policy:WorldModelPolicy(run='$run', plan='$plan')"
            for checkpoint in "$run"/checkpoints/model-*.pt; do
                steps=${checkpoint##*/model-}
                steps=${steps%.pt}
                evaluate $WM/results/$tag-steps$steps-seed$seed-test.csv \
                    "leaderboard.agents.world_model.policy:WorldModelPolicy(run='$run', checkpoint=$steps, plan='$plan')"
            done
        done
        # plan='score' (the lookahead's score alone) and plan='tiered' (passes predicted to gain first, then the others
        # predicted to change the module, then the rest), each chosen on the validation split (world_model_plans, 750
        # real steps), at each checkpoint
        for plan in score tiered; do
            for steps in 750 1000 2000; do
                [[ -f $run/checkpoints/model-$steps.pt ]] && evaluate $WM/results/wm-xla-gpt2-v0-$plan-steps$steps-seed$seed-test.csv \
                    "leaderboard.agents.world_model.policy:WorldModelPolicy(run='$run', checkpoint=$steps, plan='$plan')"
            done
        done
        for results in $WM/results/wm-xla-gpt2-v0-*seed$seed-test.csv; do
            summarize "$results"
        done
    done
    # score against real env steps, beside the MLP PPO at 4,000 steps (seeds and rl stages)
    $PY -m leaderboard.seeds --preset world_model --figure leaderboard/figures/world_model.png
    ;;
world_model_six)  # the world model trained on all six train splits, 750 real steps, 3 seeds: does the model
    # rank passes better on the families that GPT-2 alone does not show it? plan='score' on the full test split
    # and the held-out families; plan='tiered' (chosen later, world_model_plans) on the test split
    WM=$AGENTS/world_model
    for seed in 0 1 2; do
        run=$WM_SIX-seed$seed
        if want "$run"; then
            $PY -m leaderboard.agents.world_model.train --total-env-steps 750 --seed $seed --out $WM/runs --resume \
                --benchmarks $SIX
            $PY -m leaderboard.agents.world_model.evaluate "$run" > "$run/heldout-metrics.json"
        fi
        ranks=$WM/results/validation/greedy-ranks-six-seed$seed.json  # as world_model_plans' greedy-ranks-seed*.json
        want "$ranks" && $PY -m leaderboard.agents.world_model.ranks $WM/results/validation/greedy-validation-sample4.csv \
            --run "$run" --plan score > "$ranks"
        for split in test heldout; do
            results=$WM/results/wm-six-score-steps750-seed$seed-$split.csv
            evaluate "$results" "leaderboard.agents.world_model.policy:WorldModelPolicy(run='$run', plan='score')" --split $split
            summarize "$results" $split
        done
        results=$WM/results/wm-six-tiered-steps750-seed$seed-test.csv  # the plan world_model_plans chose later
        evaluate "$results" "leaderboard.agents.world_model.policy:WorldModelPolicy(run='$run', plan='tiered')"
        summarize "$results"
    done
    $PY -m leaderboard.seeds --preset world_model --figure leaderboard/figures/world_model.png
    ;;
ppo_steps)  # the MLP PPO at fewer env steps: the generalize stage's PPO runs (GPT-2, six train splits) act with
    # their 1,000- and 2,000-step checkpoints (six splits: and 2,500, 3,000) on the full test split, each validated; then
    # every agent's score against the real env steps it trained with, and the steps each needs to reach PPO's
    # 4,000-step score. The runs saved a checkpoint every 1,000 steps: the six-split runs' 2,500-step one comes from
    # training them again to 2,500 steps with one every 500, in a scratch folder. PPO with these flags is
    # deterministic; the stage checks it (the retrained 2,000-step policy must be the committed one, byte for byte)
    for seed in 0 1 2; do
        run=$RUNS/generalize/six/ppo-OpCount-seed$seed
        [[ -f $run/checkpoints/rl_model_2500_steps.zip ]] && continue
        want "$run" || continue
        scratch=$(mktemp -d)
        train "$run" --algo ppo --seed $seed --datasets "$SIX" --total-timesteps 2500 --checkpoint-every 500 --out "$scratch"
        $PY - "$scratch/ppo-OpCount-seed$seed/checkpoints/rl_model_2000_steps.zip" "$run/checkpoints/rl_model_2000_steps.zip" <<'EOF'
import sys, zipfile
retrained, committed = (zipfile.ZipFile(path).read("policy.pth") for path in sys.argv[1:])
if retrained != committed:
    sys.exit(f"{sys.argv[1]}: expected the policy of {sys.argv[2]}, got another: the retrained run is not the committed one")
EOF
        cp "$scratch/ppo-OpCount-seed$seed/checkpoints/rl_model_2500_steps.zip" "$run/checkpoints/"
        rm -r "$scratch"
    done
    for steps in 1000 2000 2500 3000; do
        for seed in 0 1 2; do
            for set in gpt2 six; do
                [[ $set == gpt2 && $steps -gt 2000 ]] && continue  # beyond 2,000 only where 2,000 came close (six splits)
                run=$RUNS/ppo-OpCount-seed$seed results=$AGENTS/rl/results/steps/ppo-OpCount-steps$steps-seed$seed-test.csv
                [[ $set == six ]] && run=$RUNS/generalize/six/ppo-OpCount-seed$seed \
                    results=$AGENTS/rl/results/steps/six-ppo-steps$steps-seed$seed-test.csv
                evaluate "$results" \
                    "leaderboard.agents.rl.policy:RlPolicy(run='$run', checkpoint='checkpoints/rl_model_${steps}_steps.zip')"
                summarize "$results"
            done
        done
    done
    steps_tables
    ;;
world_model_six_rerun)  # world_model_six's recipe again, 3 new runs saving a checkpoint at 500 real steps too: does the
    # world model reach PPO's score with fewer than 750? New runs, not the first ones: the random steps draw among the
    # passes the env's action_mask allows, and the mask follows what the experience store knows, which has grown; so
    # their 750-step checkpoints are scored too (full test split, validated), with the score plan and the tiered plan
    # (chosen on the validation split by world_model_plans)
    for seed in 0 1 2; do
        run=$AGENTS/world_model/runs/rerun/$SIX_RUN-seed$seed
        want "$run" && $PY -m leaderboard.agents.world_model.train --total-env-steps 750 --checkpoints 500,750 \
            --seed $seed --out "$(dirname "$run")" --resume --benchmarks $SIX
        for steps in 500 750; do
            for plan in score tiered; do
                results=$AGENTS/world_model/results/rerun/wm-six-$plan-steps$steps-seed$seed-test.csv
                evaluate "$results" \
                    "leaderboard.agents.world_model.policy:WorldModelPolicy(run='$run', checkpoint=$steps, plan='$plan')"
                summarize "$results"
            done
        done
    done
    steps_tables
    ;;
world_model_episodes5)  # world_model_six_rerun's recipe collecting in real episodes of 5 passes, not 20: four times
    # the modules seen (and starting states imagined from) for the same real steps; the policy still acts 20 steps a
    # benchmark. The tiered plan of both recipes compared on the validation split, then these runs on the full test split
    # (a second argument such as `episodes5` skips the episodes-of-20 validation runs, named wm-six-rerun-*)
    VAL=$AGENTS/world_model/results/validation
    for seed in 0 1 2; do
        rerun=$AGENTS/world_model/runs/rerun/$SIX_RUN-seed$seed
        run=$AGENTS/world_model/runs/episodes5/$SIX_RUN-seed$seed
        want "$run" && $PY -m leaderboard.agents.world_model.train --total-env-steps 750 --checkpoints 500,750 \
            --episode-length 5 --seed $seed --out "$(dirname "$run")" --resume --benchmarks $SIX
        for steps in 500 750; do
            evaluate $VAL/wm-six-rerun-tiered-steps$steps-seed$seed-validation-sample4.csv \
                "leaderboard.agents.world_model.policy:WorldModelPolicy(run='$rerun', checkpoint=$steps, plan='tiered')" \
                --split validation "${SAMPLE[@]}"
            evaluate $VAL/wm-six-episodes5-tiered-steps$steps-seed$seed-validation-sample4.csv \
                "leaderboard.agents.world_model.policy:WorldModelPolicy(run='$run', checkpoint=$steps, plan='tiered', episode_length=20)" \
                --split validation "${SAMPLE[@]}"
            results=$AGENTS/world_model/results/episodes5/wm-six-tiered-steps$steps-seed$seed-test.csv
            evaluate "$results" \
                "leaderboard.agents.world_model.policy:WorldModelPolicy(run='$run', checkpoint=$steps, plan='tiered', episode_length=20)"
            summarize "$results"
        done
    done
    $PY -m leaderboard.seeds --baseline $VAL/default-pipeline-validation-sample4.csv \
        "episodes of 20 (world_model_six_rerun), 500 real steps=$VAL/wm-six-rerun-tiered-steps500-seed*.csv" \
        "episodes of 20 (world_model_six_rerun), 750 real steps=$VAL/wm-six-rerun-tiered-steps750-seed*.csv" \
        "episodes of 5, 500 real steps=$VAL/wm-six-episodes5-tiered-steps500-seed*.csv" \
        "episodes of 5, 750 real steps=$VAL/wm-six-episodes5-tiered-steps750-seed*.csv" \
        "greedy search (all 64 passes a step)=$VAL/greedy-validation-sample4.csv"
    steps_tables
    ;;
world_model_plans)  # the planners compared on the validation split (4 benchmarks a suite), 750-step checkpoints
    VAL=$AGENTS/world_model/results/validation
    evaluate $VAL/default-pipeline-validation-sample4.csv leaderboard.agents.default_pipeline.policy:policy \
        --split validation "${SAMPLE[@]}"
    for seed in 0 1 2; do
        for plan in lookahead score tiered; do
            evaluate $VAL/wm-xla-gpt2-v0-$plan-steps750-seed$seed-validation-sample4.csv \
                "leaderboard.agents.world_model.policy:WorldModelPolicy(run='$AGENTS/world_model/runs/wm-xla-gpt2-v0-seed$seed', checkpoint=750, plan='$plan')" \
                --split validation "${SAMPLE[@]}"
        done
        for k in 2 4 8; do  # guided search: the score plan's first K passes tried in the real env a step
            evaluate $VAL/wm-xla-gpt2-v0-search$k-steps750-seed$seed-validation-sample4.csv \
                "leaderboard.agents.world_model.policy:WorldModelPolicy(run='$AGENTS/world_model/runs/wm-xla-gpt2-v0-seed$seed', checkpoint=750, plan='score', search=$k)" \
                --split validation "${SAMPLE[@]}"
        done
    done
    for seed in 0 1 2; do  # the same planners for the model of the six train splits (world_model_six's final model.pt)
        six="leaderboard.agents.world_model.policy:WorldModelPolicy(run='$WM_SIX-seed$seed'"
        for plan in lookahead score tiered; do
            evaluate $VAL/wm-six-$plan-steps750-seed$seed-validation-sample4.csv "$six, plan='$plan')" \
                --split validation "${SAMPLE[@]}"
        done
        evaluate $VAL/wm-six-search8-steps750-seed$seed-validation-sample4.csv "$six, plan='score', search=8)" \
            --split validation "${SAMPLE[@]}"
    done
    evaluate $VAL/greedy-validation-sample4.csv leaderboard.agents.greedy.policy:policy --split validation "${SAMPLE[@]}"
    for seed in 0 1 2; do  # where greedy search's choices rank in each model's order (a search of K finds rank < K)
        want $VAL/greedy-ranks-seed$seed.json || continue
        $PY -m leaderboard.agents.world_model.ranks $VAL/greedy-validation-sample4.csv --checkpoint 750 --plan score \
            --run $AGENTS/world_model/runs/wm-xla-gpt2-v0-seed$seed > $VAL/greedy-ranks-seed$seed.json
    done
    $PY -m leaderboard.seeds --baseline $VAL/default-pipeline-validation-sample4.csv \
        "world model + lookahead, 750 real steps=$VAL/wm-xla-gpt2-v0-lookahead-steps750-seed*.csv" \
        "world model + score plan, 750 real steps=$VAL/wm-xla-gpt2-v0-score-steps750-seed*.csv" \
        "world model + tiered plan, 750 real steps=$VAL/wm-xla-gpt2-v0-tiered-steps750-seed*.csv" \
        "world model + guided search, 2 passes a step, 750 real steps=$VAL/wm-xla-gpt2-v0-search2-steps750-seed*.csv" \
        "world model + guided search, 4 passes a step, 750 real steps=$VAL/wm-xla-gpt2-v0-search4-steps750-seed*.csv" \
        "world model + guided search, 8 passes a step, 750 real steps=$VAL/wm-xla-gpt2-v0-search8-steps750-seed*.csv" \
        "greedy search (all 64 passes a step)=$VAL/greedy-validation-sample4.csv"
    $PY -m leaderboard.seeds --baseline $VAL/default-pipeline-validation-sample4.csv \
        "six train splits: world model + lookahead=$VAL/wm-six-lookahead-steps750-seed*.csv" \
        "six train splits: world model + score plan=$VAL/wm-six-score-steps750-seed*.csv" \
        "six train splits: world model + tiered plan=$VAL/wm-six-tiered-steps750-seed*.csv" \
        "six train splits: world model + guided search, 8 passes a step=$VAL/wm-six-search8-steps750-seed*.csv"
    ;;
world_model_accuracy)  # the committed world models on the test split's transitions, per family: 20 random-pass episodes
    # of 20 steps a family (the env's episode mask: the same steps on any store), kept in results/accuracy/
    ACC=$AGENTS/world_model/results/accuracy
    $PY -m leaderboard.agents.world_model.accuracy collect --out $ACC
    $PY -m leaderboard.agents.world_model.accuracy table --data $ACC > $ACC/table.md.new  # kept if the table fails
    mv $ACC/table.md.new $ACC/table.md
    cat $ACC/table.md
    ;;
*)
    sed -n '2,/^set -euo/p' "$0" | sed '$d'  # the header comment, however long
    exit 2
    ;;
esac
