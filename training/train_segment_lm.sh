#!/usr/bin/env bash
# Train paper 002's language-model comparison on CPU: the six segment-50
# models, no memory, Transformer-XL with cache 10 and 50, RMT with memory 1, 5
# and 10, each for its config's max_steps, in two queues of one thread each.
# Checkpoints go to checkpoints/segment_lm/ (configs and metrics committed;
# weights stay local). Each memory model's carried state is then measured
# (python -m training carried-state), into its metrics.json. An interrupted
# run resumes where it was saved; a trained model whose carried state was not yet
# measured is measured.
# Usage: training/train_segment_lm.sh [SET]
#   no SET: training/configs/lm_seg50_*.json, 500 steps of 8 blocks of 250
#           tokens (1.0M tokens each; 11-24 minutes a model on one thread)
#   20m:    training/configs/lm_seg50_20m_*.json, 10,000 steps (20M tokens,
#           1.32 epochs of enwiki; 2.4-5.5 hours a model on one thread)
# STEPS stops each run there, in a folder named <config>_<STEPS>steps (the
# schedule does not depend on the run's length: STEPS=5000 gives the 20M
# runs' first 10M tokens). An interrupted run resumes from runs/<config>.
# MODELS (default: all six) chooses and orders the models; the queues take
# them in turn.
set -uo pipefail
cd "$(dirname "$0")/.."
prefix=lm_seg50_${1:+$1_}
read -r -a models <<< "${MODELS:-rmt10 rmt5 xl50 xl10 baseline rmt1}"
mkdir -p runs
queue() {
  for name in "$@"; do
    out="checkpoints/segment_lm/$prefix$name${STEPS:+_${STEPS}steps}"
    if [ ! -f "$out/metrics.json" ]; then
      OMP_NUM_THREADS=1 .venv/bin/python -m training train "training/configs/$prefix$name.json" \
        ${STEPS:+--max-steps "$STEPS"} --out "$out" || return 1
    fi
    if [ "$name" = baseline ] || grep -q '"carried_state"' "$out/metrics.json"; then
      continue
    elif [ -f "$out/model.safetensors" ]; then
      OMP_NUM_THREADS=1 .venv/bin/python -m training carried-state "$out" || return 1
    else
      echo "$out: its carried state is not measured, and its weights are not on this machine" >&2
    fi
  done
}
first=() second=()
for i in "${!models[@]}"; do
  if ((i % 2)); then second+=("${models[i]}"); else first+=("${models[i]}"); fi
done
queue "${first[@]}" >> "runs/${prefix}a.log" 2>&1 &
queue "${second[@]}" >> "runs/${prefix}b.log" 2>&1 &
wait
