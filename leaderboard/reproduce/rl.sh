# shellcheck shell=bash
# Stages of leaderboard/reproduce.sh, which sources this file: the MLP agents of agents/rl: training,
# evaluation over seeds, budgets and training sets. Each stage is a function stage_NAME, run by `bash
# leaderboard/reproduce.sh NAME`.

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

stage_train() {
    for name in "${RL_NAMES[@]}"; do
        # shellcheck disable=SC2086  # RL_FLAGS values are words
        train "$name-seed0" ${RL_FLAGS[$name]}
    done
}

stage_rl() {
    for run in "${RL_RUNS[@]}"; do
        XLA_GYM_RL_RUN=$RUNS/$run evaluate $AGENTS/rl/results/$run-sample4.csv \
            "leaderboard.agents.rl.policy:from_env()" "${SAMPLE[@]}"
    done
}

stage_full() {  # the best RL agents on the full test split (106 benchmarks, ~35 min each)
    for run in ppo-OpCount-seed0 ppo-OpCountShaped-seed0 trpo-OpCount-seed0; do
        XLA_GYM_RL_RUN=$RUNS/$run evaluate $AGENTS/rl/results/$run-test.csv "leaderboard.agents.rl.policy:from_env()"
    done
}

stage_seeds() {  # the other RL agents at seeds 0, 1, 2 (seed 0 trained by the train stage) on the test split
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
}

stage_budget() {  # PPO, PPO + shaping and the GNN at 5x the budget (20,000 env steps, GPT-2 train split), seeds 0-2,
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
}

stage_heldout() {  # the families held out from all training (split heldout: unet, ssm; 32 benchmarks)
    evaluate $AGENTS/default_pipeline/results-heldout.csv leaderboard.agents.default_pipeline.policy:policy --split heldout
    evaluate $AGENTS/greedy/results-heldout.csv "leaderboard.agents.greedy.policy:Greedy(max_steps=30, lazy=True)" --split heldout
    for run in ppo-OpCount-seed0 ppo-OpCountShaped-seed0 trpo-OpCount-seed0; do
        XLA_GYM_RL_RUN=$RUNS/$run evaluate $AGENTS/rl/results/$run-heldout.csv "leaderboard.agents.rl.policy:from_env()" --split heldout
    done
}

stage_generalize() {  # does training on generated programs generalize better? PPO at the RL runs' budget
    # on four training sets, 3 seeds each, evaluated on the full test split and on the held-out
    # families. "gpt2" is the rl stage's PPO (same flags: its seed 0 is the leaderboard's row);
    # "mixed" is the six train splits (264 graphs) and as many generator seeds.
    # Long (about 25 min per set and seed on 2 cores), so it resumes: a finished run
    # (model.zip) is kept, an interrupted run resumes from its last checkpoint, a results
    # file is completed; delete them to redo. Run sets side by side
    # with the filter: `reproduce.sh generalize six`, `reproduce.sh generalize generator`.
    declare -A SETS=([gpt2]=xla-gpt2-v0 [six]=$SIX [generator]=generator://xla-random-v0/0-9999
        [mixed]=$SIX,generator://xla-random-v0/0-263)
    for set in six generator mixed gpt2; do  # the seeds, declared before any runs
        want "generalize/$set" || continue
        if [[ $set == gpt2 ]]; then declare_seeds $AGENTS/rl/results/ppo-OpCount 0-2
        else declare_seeds $AGENTS/rl/results/generalize/$set-ppo 0-2; fi
    done
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
}

stage_ppo_steps() {  # the MLP PPO at fewer env steps: the generalize stage's PPO runs (GPT-2, six train splits) act with
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
}
