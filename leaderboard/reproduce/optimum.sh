# shellcheck shell=bash
# Stages of leaderboard/reproduce.sh, which sources this file: the optimum op count (issue 63), by
# breadth-first search over each benchmark's distinct states (python -m leaderboard.optimum). Each
# stage is a function stage_NAME, run by `bash leaderboard/reproduce.sh NAME`.
#
# The searches write their state graphs (and checkpoints) under OPTIMUM_RUNS, out of git; the stage
# exports them, gzipped, to results/optimum/graphs (the dataset: every state and transition) and
# commits their summaries and every agent's gap to them. OPTIMUM_BUDGET: seconds per
# benchmark and run (default 1800); the stage resumes, so running it again extends the budget.
OPTIMUM=leaderboard/results/optimum
OPTIMUM_RUNS=${XLA_GYM_RUNS:-$HOME/.cache/xla-gym/runs}/optimum

stage_optimum() {  # the search on the test split and the held-out families, then the table and the gaps
    local split
    for split in test heldout; do
        want "$split" || continue
        $PY -m leaderboard.optimum --split $split --time-budget "${OPTIMUM_BUDGET:-1800}" --out "$OPTIMUM_RUNS" \
            --resume --workers 2
    done
    mkdir -p $OPTIMUM
    $PY -m leaderboard.optimum.export --out "$OPTIMUM_RUNS" $OPTIMUM/graphs  # the dataset: every state and transition
    $PY -m leaderboard.optimum.report --out $OPTIMUM/graphs --json $OPTIMUM/optimum.json | tee $OPTIMUM/optimum.md
    $PY -m leaderboard.optimum.gap --out $OPTIMUM/graphs $AGENTS/*/results-test.csv $AGENTS/*/results-heldout.csv \
        | tee $OPTIMUM/gap.md
}
