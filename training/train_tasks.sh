#!/usr/bin/env bash
# Train paper 002's task grid on CPU: copy and reverse for RMT, Transformer-XL
# and no memory at the given numbers of segments (default 6 4 2 1, hardest
# first), in two queues of one thread each. Finished runs are skipped; an
# interrupted one resumes. CARRIES picks the models (default "rmt xl none"),
# MEMORY the memory tokens / cache length (default 8; named in the run's name
# otherwise), e.g. Transformer-XL with the paper's cache of 60 at 9, 6 and 4
# segments: CARRIES=xl MEMORY=60 training/train_tasks.sh 1 6000 9 6 4
# Usage: training/train_tasks.sh SEED [STEPS [SEGMENTS...]]
set -uo pipefail
cd "$(dirname "$0")/.."
seed=$1; steps=${2:-2000}; shift $(( $# < 2 ? $# : 2 ))
segment_counts=("${@:-6 4 2 1}")
carries=${CARRIES:-rmt xl none}
memory=${MEMORY:-8}
size=$([ "$memory" = 8 ] || echo "$memory")
mkdir -p runs
queue() {
  task=$1
  for segments in ${segment_counts[*]}; do
    for carry in $carries; do
      name="${task}_${segments}seg_${carry}$([ "$carry" = none ] || echo "$size")_${steps}steps_seed${seed}"
      [ -f "checkpoints/tasks/$name/metrics.json" ] && continue
      OMP_NUM_THREADS=1 .venv/bin/python -m training segment-task --task "$task" --segments "$segments" \
        --carry "$carry" --seed "$seed" --steps "$steps" --memory "$memory" || return 1
    done
  done
}
queue copy >> "runs/tasks_copy_seed${seed}_$steps$size.log" 2>&1 &
queue reverse >> "runs/tasks_reverse_seed${seed}_$steps$size.log" 2>&1 &
wait
