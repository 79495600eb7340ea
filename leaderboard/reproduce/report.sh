# shellcheck shell=bash
# Stages of leaderboard/reproduce.sh, which sources this file: the reports over every committed
# result: rescoring, validation and summaries, figures and tables. Each stage is a function
# stage_NAME, run by `bash leaderboard/reproduce.sh NAME`.

stage_rescore() {  # results made under an older op count rule: the same commandlines, current rewards
    for results in $AGENTS/*/results-*.csv $AGENTS/rl/results/*.csv; do
        want "$results" || continue
        $PY -m leaderboard.report.rescore "$results"
    done
}

stage_summary() {
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
        $PY -m leaderboard.report.summary "$results" --validate --jobs 2 --baseline "$baseline" \
            --json "${results%.csv}.summary.json" | tee "${results%.csv}.summary.txt"
    done
}

stage_figures() {
    $PY -m leaderboard.report.figures --out leaderboard/figures
    $PY -m leaderboard.report.table  # the results tables: test sample (docs/experiments/op-count-track.md)
    $PY -m leaderboard.report.table --full  # full test split (leaderboard/README.md)
    $PY -m leaderboard.report.table --heldout  # and the held-out families
    # PPO by training set, across seeds (the generalize stage): the README's table
    $PY -m leaderboard.report.seeds --preset generalize --figure leaderboard/figures/generalize.png
    $PY -m leaderboard.report.seeds --preset rl --figure leaderboard/figures/seeds.png  # every RL agent (seeds stage)
    $PY -m leaderboard.report.seeds --preset budget --figure leaderboard/figures/budget.png  # 4,000 vs 20,000 steps
    $PY -m leaderboard.report.against_paper  # the paper's two sets in its metric, across seeds: beaten or not
    $PY -m leaderboard.report.headroom  # the best validated result of any agent per benchmark: how far above the baseline
    $PY -m leaderboard.report.headroom --split heldout
    $PY -m leaderboard.report.curves --out leaderboard/figures/budget_training.png \
        "PPO=$RUNS/budget/ppo-OpCount-seed*" "PPO + shaping=$RUNS/budget/ppo-OpCountShaped-seed*" \
        "GNN PPO=$AGENTS/gnn/runs/budget/gnn-gpt2-seed*" \
        --title "PPO, PPO + shaping and the GNN at 20,000 env steps (mean across seeds, 95% CI)"
    $PY -m leaderboard.report.curves --out leaderboard/figures/generalize_training.png \
        "GPT-2=$RUNS/ppo-OpCount-seed[0-2]" "six families=$RUNS/generalize/six/*" \
        "generator=$RUNS/generalize/generator/*" "six families + generator=$RUNS/generalize/mixed/*" \
        --title "PPO training by training set (mean across seeds, 95% CI)"
}
