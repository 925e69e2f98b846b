#!/usr/bin/env bash
# Train paper 002's language-model comparison on CPU: the six segment-50
# models of training/configs/lm_seg50_*.json, the same number of steps each,
# in two queues of one thread each. Checkpoints go to checkpoints/segment_lm/
# (configs and metrics committed; weights stay local). Interrupted runs resume.
# Usage: training/train_segment_lm.sh [STEPS] [SET]   (default 500 steps of
# lm_seg50_*.json; SET 20m: lm_seg50_20m_*.json, two epochs' schedule, run
# with 10000 steps for 20M tokens, e.g. over several sessions: each resumes)
set -uo pipefail
cd "$(dirname "$0")/.."
steps=${1:-500}
prefix=lm_seg50_${2:+$2_}
mkdir -p runs
queue() {
  for name in "$@"; do
    [ -f "checkpoints/segment_lm/$prefix$name/metrics.json" ] && continue
    OMP_NUM_THREADS=1 .venv/bin/python -m training train "training/configs/$prefix$name.json" \
      --max-steps "$steps" --out "checkpoints/segment_lm/$prefix$name" || return 1
  done
}
queue rmt10 xl50 baseline >> "runs/${prefix}a.log" 2>&1 &
queue rmt5 xl10 rmt1 >> "runs/${prefix}b.log" 2>&1 &
wait
