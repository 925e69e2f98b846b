#!/usr/bin/env bash
# Train paper 001's algorithmic tasks with the reference code's training aids
# on CPU: the Neural GPU on addition, duplicate and reverse, a curriculum up to
# length 20, gradient noise, dropout on the state and parameter-sharing
# relaxation over 6 weight sets, for each given seed, in one queue of one
# thread. Checkpoints go to checkpoints/algorithmic/<run name> (configs and
# metrics committed). Finished runs are skipped; an interrupted one resumes.
# STEPS (default 10000) and TASKS (default "addition duplicate reverse") choose.
# Usage: training/train_neural_gpu_tasks.sh SEED...
set -uo pipefail
cd "$(dirname "$0")/.."
steps=${STEPS:-10000}
mkdir -p runs
for seed in "$@"; do
  for task in ${TASKS:-addition duplicate reverse}; do
    name="${task}_neural_gpu_len20_relaxed6_${steps}steps_seed${seed}"
    [ -f "checkpoints/algorithmic/$name/metrics.json" ] && continue
    OMP_NUM_THREADS=1 .venv/bin/python -m training algorithmic-task --task "$task" --model neural_gpu \
      --seed "$seed" --steps "$steps" --max-length 20 --relaxed-sets 6 \
      --out "checkpoints/algorithmic/$name" || exit 1
  done
done
