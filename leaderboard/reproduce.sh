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
#   bash leaderboard/reproduce.sh gnn_seeds  # gnn_episodes5's GNN and the MLP PPO at more seeds (SEEDS, default 3-16), test + held-out
#   bash leaderboard/reproduce.sh gnn_six_episodes5  # gnn_episodes5's recipe on the six train splits: validation split only (store off)
#   bash leaderboard/reproduce.sh world_model  # world model + controller: 3 seeds (GPT-2 train split), full test split
#   bash leaderboard/reproduce.sh world_model_plans  # its planners compared on the validation split (750-step models: GPT-2, six splits)
#   bash leaderboard/reproduce.sh world_model_six  # the world model trained on the six train splits, 750 real steps, 3 seeds
#   bash leaderboard/reproduce.sh ppo_steps  # PPO's own checkpoints (1,000, 2,000 steps; GPT-2, six splits; six: 2,500, 3,000) on the test split: score vs steps
#   bash leaderboard/reproduce.sh world_model_six_rerun  # world_model_six again, 3 new runs, scored at 500 and 750 real steps
#   bash leaderboard/reproduce.sh world_model_episodes5  # world_model_six_rerun collecting in episodes of 5 passes: validation, then test
#   bash leaderboard/reproduce.sh world_model_accuracy  # the world models' accuracy on the test split's transitions, per family
#   bash leaderboard/reproduce.sh backend_reference  # XLA's own backend costs of the backend sample of the test split and the held-out families (both pipelines)
#   bash leaderboard/reproduce.sh backend_headroom  # greedy (after the default order, and plain) on every backend task, the backend sample; the headroom table
#   bash leaderboard/reproduce.sh backend_rl  # PPO on the backend track (BACKEND_TASK), seeds 0-4, evaluated on the backend sample
#   bash leaderboard/reproduce.sh optimum    # the optimum op count by exhaustive search (budgeted), test split + held-out; the gap of every agent
#
# Each stage is a function stage_NAME in one of leaderboard/reproduce/*.sh (search, rl, runtime,
# report, gnn, world_model, backend, optimum), which this script sources; the helpers below are shared by all.
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

shared_store() {  # --shared-store unless XLA_GYM_STORE is off: these stages evaluate with the machine's store,
    # which other agents' runs fill; the flag lets the harness run and records the choice in RESULTS.store.json
    [[ ${XLA_GYM_STORE:-default} =~ ^(off|none|0|false)$ ]] || echo --shared-store
}

evaluate() {  # evaluate RESULTS_CSV POLICY [flags]
    local results=$1 policy=$2
    shift 2
    want "$results" || return 0
    rm -f "$results"
    mkdir -p "$(dirname "$results")"
    $PY -m leaderboard.eval --policy "$policy" --leaderboard_results "$results" \
        --leaderboard_logfile "${results%.csv}.log" $(shared_store) "$@"
    rm -f "${results%.csv}.log"
}

summarize() {  # summarize RESULTS_CSV [SPLIT]: validate every result by execution and summarize it against the
    # default pipeline replayed on SPLIT (test), into RESULTS.summary.{json,txt}
    local results=$1 split=${2:-test}
    want "$results" || return 0
    $PY -m leaderboard.report.summary "$results" --validate --baseline $AGENTS/default_pipeline/results-$split.csv \
        --json "${results%.csv}.summary.json" | tee "${results%.csv}.summary.txt"
}

steps_tables() {  # the world model beside PPO by real env steps (table, figure), then the steps each agent needs
    # to reach PPO's 4,000-step score (GPT-2, six train splits): docs/experiments/world-model.md's tables, from committed results
    $PY -m leaderboard.report.seeds --preset world_model --figure leaderboard/figures/world_model.png
    $PY -m leaderboard.report.efficiency --preset world_model --target "MLP PPO, 4,000 steps" \
        --target "six families: MLP PPO, 4,000 steps" --figure leaderboard/figures/world_model_steps.png
}

score_splits() {  # score_splits PREFIX POLICY: POLICY on the test split and the held-out families, into
    # PREFIX-{test,heldout}.csv, each run whole, then validated and summarized (an environment prefix such as
    # XLA_GYM_STORE=off applies to every evaluation and validation)
    local split
    for split in test heldout; do
        evaluate "$1-$split.csv" "$2" --split $split
        summarize "$1-$split.csv" $split
    done
}

declare_seeds() {  # declare_seeds RESULTS_PREFIX SEEDS (e.g. 0-2): before a batch runs, the seeds of its files
    # RESULTS_PREFIX-seed<k>-{test,heldout}.csv (evaluate_splits'), in their folder's seeds.json (leaderboard.declared);
    # leaderboard.report.summary and .seeds refuse other seeds, and a declared batch is never changed (leaderboard/PROTOCOL.md)
    local split
    for split in test heldout; do
        $PY -m leaderboard.declared "$(dirname "$1")" "$(basename "$1")-seed*-$split.csv" "$2"
    done
}

evaluate_splits() {  # evaluate_splits RUN RESULTS_PREFIX [rl|gnn]: a run of agents/rl (or agents/gnn) on
    # the test split and the held-out families, into PREFIX-{test,heldout}.csv; --resume runs only
    # the benchmarks a file lacks
    local split agent=${3:-rl}
    mkdir -p "$(dirname "$2")"
    for split in test heldout; do
        env "XLA_GYM_${agent^^}_RUN=$1" $PY -m leaderboard.eval --policy "leaderboard.agents.$agent.policy:from_env()" \
            --leaderboard_results "$2-$split.csv" --split $split --resume $(shared_store)
    done
}

for part in leaderboard/reproduce/*.sh; do  # the stages, a function stage_NAME each
    # shellcheck source=/dev/null
    source "$part"
done

stage=${1:-}
if [[ $stage =~ ^[a-z_0-9]+$ ]] && declare -F "stage_$stage" > /dev/null; then
    "stage_$stage"
else
    sed -n '2,/^set -euo/p' "$0" | sed '$d'  # the header comment, however long
    exit 2
fi
