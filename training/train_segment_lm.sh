#!/usr/bin/env bash
# Train paper 002's language-model comparison on CPU: the six segment-50
# models of training/configs/lm_seg50_*.json, the same number of steps each,
# in two queues of one thread each. Checkpoints go to checkpoints/segment_lm/
# (configs and metrics committed; weights stay local). Interrupted runs resume.
# Usage: training/train_segment_lm.sh [STEPS]   (default 500)
set -uo pipefail
cd "$(dirname "$0")/.."
steps=${1:-500}
mkdir -p runs
queue() {
  for name in "$@"; do
    [ -f "checkpoints/segment_lm/lm_seg50_$name/metrics.json" ] && continue
    OMP_NUM_THREADS=1 .venv/bin/python -m training train "training/configs/lm_seg50_$name.json" \
      --max-steps "$steps" --out "checkpoints/segment_lm/lm_seg50_$name" || return 1
  done
}
queue rmt10 xl50 baseline >> "runs/segment_lm_a.log" 2>&1 &
queue rmt5 xl10 rmt1 >> "runs/segment_lm_b.log" 2>&1 &
wait
