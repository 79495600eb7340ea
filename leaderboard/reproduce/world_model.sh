# shellcheck shell=bash
# Stages of leaderboard/reproduce.sh, which sources this file: the world model of agents/world_model.
# Each stage is a function stage_NAME, run by `bash leaderboard/reproduce.sh NAME`.

stage_world_model() {  # Dyna: 4000 real env steps per seed (the RL runs' budget; checkpoints at 750, 1000, 2000), the full test split
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
    $PY -m leaderboard.report.seeds --preset world_model --figure leaderboard/figures/world_model.png
}

stage_world_model_six() {  # the world model trained on all six train splits, 750 real steps, 3 seeds: does the model
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
        score_splits $WM/results/wm-six-score-steps750-seed$seed \
            "leaderboard.agents.world_model.policy:WorldModelPolicy(run='$run', plan='score')"
        results=$WM/results/wm-six-tiered-steps750-seed$seed-test.csv  # the plan world_model_plans chose later
        evaluate "$results" "leaderboard.agents.world_model.policy:WorldModelPolicy(run='$run', plan='tiered')"
        summarize "$results"
    done
    $PY -m leaderboard.report.seeds --preset world_model --figure leaderboard/figures/world_model.png
}

stage_world_model_six_rerun() {  # world_model_six's recipe again, 3 new runs saving a checkpoint at 500 real steps too: does the
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
}

stage_world_model_episodes5() {  # world_model_six_rerun's recipe collecting in real episodes of 5 passes, not 20: four times
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
    $PY -m leaderboard.report.seeds --baseline $VAL/default-pipeline-validation-sample4.csv \
        "episodes of 20 (world_model_six_rerun), 500 real steps=$VAL/wm-six-rerun-tiered-steps500-seed*.csv" \
        "episodes of 20 (world_model_six_rerun), 750 real steps=$VAL/wm-six-rerun-tiered-steps750-seed*.csv" \
        "episodes of 5, 500 real steps=$VAL/wm-six-episodes5-tiered-steps500-seed*.csv" \
        "episodes of 5, 750 real steps=$VAL/wm-six-episodes5-tiered-steps750-seed*.csv" \
        "greedy search (all 64 passes a step)=$VAL/greedy-validation-sample4.csv"
    steps_tables
}

stage_world_model_plans() {  # the planners compared on the validation split (4 benchmarks a suite), 750-step checkpoints
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
    $PY -m leaderboard.report.seeds --baseline $VAL/default-pipeline-validation-sample4.csv \
        "world model + lookahead, 750 real steps=$VAL/wm-xla-gpt2-v0-lookahead-steps750-seed*.csv" \
        "world model + score plan, 750 real steps=$VAL/wm-xla-gpt2-v0-score-steps750-seed*.csv" \
        "world model + tiered plan, 750 real steps=$VAL/wm-xla-gpt2-v0-tiered-steps750-seed*.csv" \
        "world model + guided search, 2 passes a step, 750 real steps=$VAL/wm-xla-gpt2-v0-search2-steps750-seed*.csv" \
        "world model + guided search, 4 passes a step, 750 real steps=$VAL/wm-xla-gpt2-v0-search4-steps750-seed*.csv" \
        "world model + guided search, 8 passes a step, 750 real steps=$VAL/wm-xla-gpt2-v0-search8-steps750-seed*.csv" \
        "greedy search (all 64 passes a step)=$VAL/greedy-validation-sample4.csv"
    $PY -m leaderboard.report.seeds --baseline $VAL/default-pipeline-validation-sample4.csv \
        "six train splits: world model + lookahead=$VAL/wm-six-lookahead-steps750-seed*.csv" \
        "six train splits: world model + score plan=$VAL/wm-six-score-steps750-seed*.csv" \
        "six train splits: world model + tiered plan=$VAL/wm-six-tiered-steps750-seed*.csv" \
        "six train splits: world model + guided search, 8 passes a step=$VAL/wm-six-search8-steps750-seed*.csv"
}

stage_world_model_accuracy() {  # the committed world models on the test split's transitions, per family: 20 random-pass episodes
    # of 20 steps a family (the env's episode mask: the same steps on any store), kept in results/accuracy/
    ACC=$AGENTS/world_model/results/accuracy
    $PY -m leaderboard.agents.world_model.accuracy collect --out $ACC
    $PY -m leaderboard.agents.world_model.accuracy table --data $ACC > $ACC/table.md.new  # kept if the table fails
    mv $ACC/table.md.new $ACC/table.md
    cat $ACC/table.md
}
