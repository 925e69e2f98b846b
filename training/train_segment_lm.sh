#!/usr/bin/env bash
# Train paper 002's language-model comparison on CPU: the six segment-50
# models, no memory, Transformer-XL with cache 10 and 50, RMT with memory 1, 5
# and 10, each for its config's max_steps, in two queues of one thread each.
# Checkpoints go to checkpoints/segment_lm/ (configs and metrics committed;
# weights stay local). Each memory model's carried state is then measured
# (python -m training carried-state), into its metrics.json. An interrupted
# run resumes where it was saved.
# Usage: training/train_segment_lm.sh [SET]
#   no SET: training/configs/lm_seg50_*.json, 500 steps of 8 blocks of 250
#           tokens (1.0M tokens each; 11-24 minutes a model on one thread)
#   20m:    training/configs/lm_seg50_20m_*.json, 10,000 steps (20M tokens,
#           1.32 epochs of enwiki; about 5.5 hours a model on one thread)
set -uo pipefail
cd "$(dirname "$0")/.."
prefix=lm_seg50_${1:+$1_}
mkdir -p runs
queue() {
  for name in "$@"; do
    [ -f "checkpoints/segment_lm/$prefix$name/metrics.json" ] && continue
    OMP_NUM_THREADS=1 .venv/bin/python -m training train "training/configs/$prefix$name.json" \
      --out "checkpoints/segment_lm/$prefix$name" || return 1
    [ "$name" = baseline ] ||
      OMP_NUM_THREADS=1 .venv/bin/python -m training carried-state "checkpoints/segment_lm/$prefix$name" || return 1
  done
}
queue rmt10 xl50 baseline >> "runs/${prefix}a.log" 2>&1 &
queue rmt5 xl10 rmt1 >> "runs/${prefix}b.log" 2>&1 &
wait
