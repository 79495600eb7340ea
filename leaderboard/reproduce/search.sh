# shellcheck shell=bash
# Stages of leaderboard/reproduce.sh, which sources this file: the search baselines (default pipeline,
# random, greedy, beam) on the test sample and the full test split. Each stage is a function
# stage_NAME, run by `bash leaderboard/reproduce.sh NAME`.

stage_search() {
    evaluate $AGENTS/default_pipeline/results-test.csv leaderboard.agents.default_pipeline.policy:policy
    evaluate $AGENTS/default_pipeline/results-sample4.csv leaderboard.agents.default_pipeline.policy:policy "${SAMPLE[@]}"
    evaluate $AGENTS/random_search/results-sample4.csv \
        "leaderboard.agents.random_search.policy:RandomSearch(trials=3, length=20, seed=0)" "${SAMPLE[@]}"
    evaluate $AGENTS/greedy/results-sample4.csv "leaderboard.agents.greedy.policy:Greedy(max_steps=30, lazy=True)" "${SAMPLE[@]}"
    evaluate $AGENTS/greedy/results-after-default-sample4.csv \
        "leaderboard.agents.greedy.policy:Greedy(max_steps=30, lazy=True, after_default=True)" "${SAMPLE[@]}"
}

stage_beam() {  # two shards side by side (~1 h on 2 cores), then their rows merged
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
}

stage_search_full() {  # the search baselines on the full test split (106 benchmarks), each in two shards side
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
                --leaderboard_results "$results.shard$i.csv" --shard $i/2 --resume $(shared_store) &
            pids+=($!)
        done
        for pid in "${pids[@]}"; do wait "$pid"; done  # a failed shard stops the script
        { head -n 1 "$results.shard0.csv"; tail -q -n +2 "$results.shard0.csv" "$results.shard1.csv" | sort; } \
            > "$results.csv"
        rm "$results.shard0.csv" "$results.shard1.csv"
    done
}
