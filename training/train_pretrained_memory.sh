#!/usr/bin/env bash
# Issue 36's pretrained runs, in order (docs/hugging_face.md; their results: docs/results.md):
#   1. GPT-2 on enwiki with the shipped language model's tokenizer (checkpoints/gpt2_enwiki, a Hugging Face folder),
#      the shipped model's number of steps and batch;
#   2. memory added to it: enwiki segments of 50 tokens, 10 memory tokens, carried vs reset at every segment, the same
#      steps each (checkpoints/pretrained_memory/gpt2_enwiki_memory10{,_reset});
#   3. memory added to it: the copy task in 3 segments, carried vs reset, seeds 1 and 2
#      (checkpoints/pretrained_memory/copy_3seg_{rmt,reset}_seed{1,2});
#   4. the carried model's weights rounded to float16 (metrics re-measured on them) and its perplexity with the memory
#      reset at every segment (the "carried_state" record of its metrics.json).
# Steps 2 and 3 run side by side (one process each). Interrupted runs resume.
# Usage: training/train_pretrained_memory.sh [LM_STEPS] [COPY_STEPS]   (defaults 1000 and 3000; a GPU takes minutes,
#        two CPU cores about a day: pass fewer steps there)
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
lm_steps=${1:-1000}
copy_steps=${2:-3000}
out=checkpoints/pretrained_memory
mkdir -p runs "$out"
[ -f checkpoints/gpt2_enwiki/metrics.json ] ||
  "$python" -m training train training/configs/gpt2_enwiki.json --max-steps 1100 > runs/gpt2_enwiki.log 2>&1
pids=()
for variant in memory10 memory10_reset; do
  [ -f "$out/gpt2_enwiki_$variant/metrics.json" ] && continue
  "$python" -m training train "training/configs/gpt2_enwiki_$variant.json" --max-steps "$lm_steps" \
    --out "$out/gpt2_enwiki_$variant" > "runs/gpt2_enwiki_$variant.log" 2>&1 &
  pids+=($!)
done
for carry in rmt reset; do
  for seed in 1 2; do
    name="copy_3seg_${carry}_seed$seed"
    [ -f "$out/$name/metrics.json" ] && continue
    "$python" -m training segment-task --task copy --segments 3 --carry "$carry" --base checkpoints/gpt2_enwiki \
      --memory 10 --seed "$seed" --steps "$copy_steps" --learning-rate 3e-4 --out "$out/$name" \
      --run-dir "runs/$name" > "runs/$name.log" 2>&1 &
    pids+=($!)
  done
done
for pid in "${pids[@]}"; do wait "$pid"; done
carried="$out/gpt2_enwiki_memory10"
if ! grep -q '"carried_state"' "$carried/metrics.json" 2>/dev/null; then
  "$python" -m training store-half "$carried"
  "$python" -m training carried-state "$carried" --articles 120
fi
