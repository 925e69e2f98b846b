#!/usr/bin/env bash
# Train paper 002's task grid on CPU: copy and reverse at 1, 2, 4 and 6
# segments for RMT, Transformer-XL and no memory, hardest first, in two
# queues of one thread each. Rerunning resumes; finished runs are skipped.
# Usage: training/train_tasks.sh SEED [STEPS]
set -uo pipefail
cd "$(dirname "$0")/.."
seed=$1; steps=${2:-2000}
mkdir -p runs
run() {
  for spec in "$@"; do
    read -r task segments carry <<< "$spec"
    name="${task}_${segments}seg_${carry}_${steps}steps_seed${seed}"
    [ -f "checkpoints/tasks/$name/metrics.json" ] && continue
    OMP_NUM_THREADS=1 .venv/bin/python -m training segment-task --task "$task" --segments "$segments" \
      --carry "$carry" --seed "$seed" --steps "$steps" || return 1
  done
}
run "copy 6 rmt" "copy 6 xl" "copy 6 none" "copy 4 rmt" "copy 4 xl" "copy 4 none" \
    "copy 2 rmt" "copy 2 xl" "copy 2 none" "copy 1 none" "copy 1 rmt" "copy 1 xl" > "runs/tasks_a_seed${seed}_$steps.log" 2>&1 &
run "reverse 6 rmt" "reverse 6 xl" "reverse 6 none" "reverse 4 rmt" "reverse 4 xl" "reverse 4 none" \
    "reverse 2 rmt" "reverse 2 xl" "reverse 2 none" "reverse 1 none" "reverse 1 rmt" "reverse 1 xl" > "runs/tasks_b_seed${seed}_$steps.log" 2>&1 &
wait
