# shellcheck shell=bash
# Stages of leaderboard/reproduce.sh, which sources this file: the graph agent of agents/gnn. Each
# stage is a function stage_NAME, run by `bash leaderboard/reproduce.sh NAME`.

train_episodes5() {  # train_episodes5 RUN BENCHMARKS SEED: a GNN trained in episodes of 5 passes (4,000 env steps) into
    # RUN, unless the filter leaves RUN out or RUN has its model
    local run=$1 benchmarks=$2 seed=$3
    want "$run" && [[ ! -f $run/model.pt ]] || return 0
    $PY -m leaderboard.agents.gnn.train --benchmarks "$benchmarks" --total-timesteps 4000 \
        --episode-length 5 --seed "$seed" --out "$(dirname "$run")"
}

stage_gnn() {  # the graph agent, trained as the MLP PPO (4,000 steps) on GPT-2 and on all six train splits
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
            # the full test split, and the families no run trained on
            XLA_GYM_GNN_RUN=$run score_splits $GNN/results/gnn-$suite-seed$seed "leaderboard.agents.gnn.policy:from_env()"
        done
    done
    # side by side with the MLP PPO of the same budget and seeds (the rl and generalize stages)
    $PY -m leaderboard.report.seeds --preset gnn --figure leaderboard/figures/gnn.png
}

stage_gnn_lr() {  # the graph agent on GPT-2 again with 4x the learning rate (1e-3): the gnn stage's runs moved
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
    $PY -m leaderboard.report.seeds --preset gnn --figure leaderboard/figures/gnn.png
    # how far each update moved the policy, at both learning rates (TensorBoard's scalars)
    $PY -m leaderboard.report.scalars "$AGENTS/gnn/runs/gnn-gpt2-seed*" "$LR/gnn-gpt2-seed*"
}

stage_gnn_store_off() {  # the GNN's runs (gnn stage: GPT-2 and six families, 4,000 steps; budget stage: GPT-2, 20,000) on the
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
    $PY -m leaderboard.report.seeds --preset gnn --figure leaderboard/figures/gnn.png
    $PY -m leaderboard.report.seeds --preset budget --figure leaderboard/figures/budget.png
}

stage_gnn_episodes5() {  # the graph agent on GPT-2 trained in episodes of 5 passes, not 20 (the idea of world_model_episodes5):
    # four times the episodes, so four times the first states, for the same 4,000 env steps; it still acts 20 steps a
    # benchmark. Both recipes compared on the validation split, then these runs on the full test split and the held-out
    # families; the store off in every GNN evaluation, so the policy masks only what its own evaluation saw (gnn_store_off;
    # training masks what the store knows, --mask known, as the gnn stage's runs)
    GNN=$AGENTS/gnn
    VAL=$GNN/results/validation
    for seed in 0 1 2; do
        run=$GNN/runs/episodes5/gnn-gpt2-seed$seed
        train_episodes5 "$run" xla-gpt2-v0:train $seed
        XLA_GYM_STORE=off XLA_GYM_GNN_RUN=$GNN/runs/gnn-gpt2-seed$seed evaluate \
            $VAL/gnn-gpt2-base-seed$seed-validation-sample4.csv "leaderboard.agents.gnn.policy:from_env()" \
            --split validation "${SAMPLE[@]}"
        policy="leaderboard.agents.gnn.policy:GnnPolicy(run='$run', episode_length=20)"
        XLA_GYM_STORE=off evaluate $VAL/gnn-gpt2-episodes5-seed$seed-validation-sample4.csv "$policy" \
            --split validation "${SAMPLE[@]}"
        XLA_GYM_STORE=off evaluate $VAL/gnn-gpt2-nostop-seed$seed-validation-sample4.csv \
            "${policy%)}, allow_stop=False)" --split validation "${SAMPLE[@]}"  # the stop action masked
        XLA_GYM_STORE=off score_splits $GNN/results/episodes5/gnn-gpt2-seed$seed "$policy"  # test + held-out families
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
        score_splits $AGENTS/rl/results/episodes5/ppo-OpCount-seed$seed "$policy"
    done
    $PY -m leaderboard.report.seeds --baseline $AGENTS/world_model/results/validation/default-pipeline-validation-sample4.csv \
        "GNN PPO, episodes of 20 (the gnn stage's runs)=$VAL/gnn-gpt2-base-seed*.csv" \
        "GNN PPO, episodes of 5=$VAL/gnn-gpt2-episodes5-seed*.csv" \
        "GNN PPO, episodes of 5, stop masked=$VAL/gnn-gpt2-nostop-seed*.csv" \
        "MLP PPO, episodes of 20=$RVAL/ppo-OpCount-base-seed*-validation-sample4.csv" \
        "MLP PPO, episodes of 5=$RVAL/ppo-OpCount-episodes5-seed*-validation-sample4.csv"
    $PY -m leaderboard.report.seeds --preset gnn --figure leaderboard/figures/gnn.png
}

stage_gnn_seeds() {  # more seeds for the comparison the goal asks for: gnn_episodes5's GNN (GPT-2, episodes of 5, store
    # off in evaluations) and the MLP PPO (GPT-2, the generalize stage's flags) at the seeds in SEEDS (default 3-16;
    # seeds 0-2 are gnn_episodes5's and generalize's), on the full test split and the held-out families. The new results go to
    # results/seeds/ folders, which the seeds preset's rows "..., more seeds" add to seeds 0-2. A trained run is kept; each
    # evaluation runs whole again (as gnn_episodes5's), so run it for new seeds only.
    GNN=$AGENTS/gnn
    for seed in ${SEEDS:-$(seq 3 16)}; do
        run=$GNN/runs/episodes5/gnn-gpt2-seed$seed
        train_episodes5 "$run" xla-gpt2-v0:train $seed
        mlp=$RUNS/ppo-OpCount-seed$seed
        [[ -f $mlp/model.zip ]] || train "$mlp" --algo ppo --seed $seed --datasets xla-gpt2-v0 --resume
        XLA_GYM_STORE=off score_splits $GNN/results/episodes5/seeds/gnn-gpt2-seed$seed \
            "leaderboard.agents.gnn.policy:GnnPolicy(run='$run', episode_length=20)"
        score_splits $AGENTS/rl/results/seeds/ppo-OpCount-seed$seed "leaderboard.agents.rl.policy:RlPolicy(run='$mlp')"
    done
    $PY -m leaderboard.report.seeds --preset gnn --figure leaderboard/figures/gnn.png
    # seed against seed: how often a GNN seed scores above an MLP seed, and every seed's score (the GNN README's
    # "Seed against seed")
    $PY -m leaderboard.report.improvement --preset gnn "GNN PPO, GPT-2, episodes of 5, store off, more seeds" \
        "MLP PPO, GPT-2, more seeds" --figure leaderboard/figures/gnn_seeds.png
}

stage_gnn_six_episodes5() {  # gnn_episodes5's recipe (episodes of 5 passes, acting 20 steps, store off in evaluations) on the
    # six train splits, as the gnn stage's gnn-mixed runs: compared with those on the validation split only (it scored
    # lower there, so it was not run on the test split)
    GNN=$AGENTS/gnn
    VAL=$GNN/results/validation
    MIXED=xla-bert-v0:train,xla-gpt2-v0:train,xla-moe-v0:train,xla-resnet-v0:train,xla-rnn-v0:train,xla-vit-v0:train
    for seed in 0 1 2; do
        run=$GNN/runs/episodes5/gnn-mixed-seed$seed
        train_episodes5 "$run" "$MIXED" $seed
        XLA_GYM_STORE=off evaluate $VAL/gnn-mixed-base-seed$seed-validation-sample4.csv \
            "leaderboard.agents.gnn.policy:GnnPolicy(run='$GNN/runs/gnn-mixed-seed$seed', episode_length=20)" \
            --split validation "${SAMPLE[@]}"
        XLA_GYM_STORE=off evaluate $VAL/gnn-mixed-episodes5-seed$seed-validation-sample4.csv \
            "leaderboard.agents.gnn.policy:GnnPolicy(run='$run', episode_length=20)" \
            --split validation "${SAMPLE[@]}"
    done
    $PY -m leaderboard.report.seeds --baseline $AGENTS/world_model/results/validation/default-pipeline-validation-sample4.csv \
        "GNN PPO, six families, episodes of 20 (the gnn stage's runs)=$VAL/gnn-mixed-base-seed*.csv" \
        "GNN PPO, six families, episodes of 5=$VAL/gnn-mixed-episodes5-seed*.csv" \
        "GNN PPO, GPT-2, episodes of 5=$VAL/gnn-gpt2-episodes5-seed*.csv" \
        "MLP PPO, GPT-2, episodes of 20=$AGENTS/rl/results/validation/ppo-OpCount-base-seed*-validation-sample4.csv"
}
