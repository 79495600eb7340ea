# shellcheck shell=bash
# Stages of leaderboard/reproduce.sh, which sources this file: the backend tracks (objectives from
# XLA's CPU backend, docs/spaces.md "Backend cost"). Each stage is a function stage_NAME, run by
# `bash leaderboard/reproduce.sh NAME`.
#
# The backend sample: 2 benchmarks of each test suite and of each held-out family, drawn with
# seed 0 (16 benchmarks): a backend cost is one CPU compile per new state, so searches cost
# 1-5 min a benchmark on this 2-core machine, and the full splits (138 benchmarks x 6 tasks) are
# out of reach here. BACKEND_SAMPLE=N changes N (the reference covers the full splits).
BACKEND=leaderboard/results/backend
BACKEND_TASKS=(TempBytesAgentNorm BytesAccessedAgentNorm EstimatedTimeAgentNorm TempBytesNorm BytesAccessedNorm EstimatedTimeNorm)
BACKEND_SAMPLE_ARGS=(--sample "${BACKEND_SAMPLE:-2}" --sample_seed 0)

stage_backend_reference() {  # XLA's own backend costs (as loaded, after its default pipeline) of the
    # backend sample of the test split and the held-out families, both pipelines: the tracks'
    # reference (~5 min; BACKEND_SAMPLE=0: the full splits, ~1 h)
    $PY -m leaderboard.report.backend_reference --split test --split heldout --sample "${BACKEND_SAMPLE:-2}" --resume \
        --out leaderboard/results/backend_reference.json
}

backend_search() {  # backend_search TASK NAME POLICY: one search on the backend sample of both splits
    local task=$1 name=$2 policy=$3 split
    for split in test heldout; do
        evaluate $BACKEND/$task/$name-$split.csv "$policy" --reward "$task" --split $split "${BACKEND_SAMPLE_ARGS[@]}"
        want "$BACKEND/$task/$name-$split.csv" || continue
        $PY -m leaderboard.report.backend_summary $BACKEND/$task/$name-$split.csv --reward "$task" --validate \
            --json $BACKEND/$task/$name-$split.summary.json | tee $BACKEND/$task/$name-$split.summary.txt
    done
}

stage_backend_headroom() {  # every task: greedy after XLA's default order replayed (a polish of
    # it), and greedy from the benchmark as loaded; then the headroom table (~8 h)
    local task
    for task in "${BACKEND_TASKS[@]}"; do
        backend_search "$task" greedy-after-default "leaderboard.agents.greedy.policy:Greedy(max_steps=30, lazy=True, after_default=True)"
        backend_search "$task" greedy "leaderboard.agents.greedy.policy:Greedy(max_steps=30, lazy=True)"
    done
    $PY -m leaderboard.report.backend_headroom --json $BACKEND/headroom.json | tee $BACKEND/headroom.txt
}

# The learned baseline of the backend track (declared before it ran: PPO, the MLP policy of
# agents/rl on OpcodeCounts, seeds 0-4, 2,000 env steps in episodes of 10 passes on the six train
# splits, two envs), on the task with the most headroom in backend_headroom.
BACKEND_TASK=${BACKEND_TASK:-TempBytesAgentNorm}
BACKEND_RUNS=${XLA_GYM_RUNS:-$HOME/.cache/xla-gym/runs}/backend

stage_backend_rl() {  # train the 5 seeds (~30 min each), then evaluate each on the backend sample
    local seed run split
    for seed in 0 1 2 3 4; do
        run=ppo-$BACKEND_TASK-seed$seed
        want "$run" || continue
        [[ -f $BACKEND_RUNS/$run/model.zip ]] || $PY -m leaderboard.agents.rl.train --algo ppo \
            --reward-space "$BACKEND_TASK" --datasets "$SIX" --total-timesteps 2000 --n-steps 64 --n-envs 2 \
            --episode-length 10 --checkpoint-every 500 --seed $seed --out "$BACKEND_RUNS" --resume
        for split in test heldout; do
            XLA_GYM_RL_RUN=$BACKEND_RUNS/$run evaluate $BACKEND/$BACKEND_TASK/rl/$run-$split.csv \
                "leaderboard.agents.rl.policy:from_env()" --reward "$BACKEND_TASK" --split $split "${BACKEND_SAMPLE_ARGS[@]}"
            $PY -m leaderboard.report.backend_summary $BACKEND/$BACKEND_TASK/rl/$run-$split.csv --reward "$BACKEND_TASK" \
                --validate --json $BACKEND/$BACKEND_TASK/rl/$run-$split.summary.json | tee $BACKEND/$BACKEND_TASK/rl/$run-$split.summary.txt
        done
    done
    $PY -m leaderboard.report.backend_summary $BACKEND/$BACKEND_TASK/rl/ppo-*.csv --reward "$BACKEND_TASK" --by-seed \
        | tee $BACKEND/$BACKEND_TASK/rl/seeds.txt
}
