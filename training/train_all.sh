#!/usr/bin/env bash
# Train every shipped Memory Transformer checkpoint, in two queues that run
# side by side with one thread each (on a 2-core CPU two single-threaded runs
# made 1.25x the steps of one two-threaded run on 2026-11-26: MemTransformer 5
# and MemBottleneck Skip 20 side by side at 0.87-0.95 s/step each, MemTransformer 5
# alone at 0.55 s/step; an earlier machine gave 1.7x). Rerunning resumes.
# Usage: training/train_all.sh [extra `python -m training train` options, e.g. --device cuda]
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p runs
# a <name>_4_epochs config trains the shorter run kept in checkpoints/short_schedule/<name>
out() { case $1 in *_4_epochs) echo "checkpoints/short_schedule/${1%_4_epochs}" ;; *) echo "checkpoints/$1" ;; esac; }
train() { for name in "$@"; do OMP_NUM_THREADS=1 .venv/bin/python -m training train "training/configs/$name.json" --out "$(out "$name")" "${EXTRA[@]}" || return 1; done; }
EXTRA=("$@")
train transformer memtransformer_5 memtransformer_5_to_10 memtransformer_10_to_15 memtransformer_15_to_20 memtransformer_5_finetuned memctrl_shared_20 membottleneck_10 > runs/queue_a.log 2>&1 &
train memtransformer_10 memtransformer_20 membottleneck_20 membottleneck_skip_20 memctrl_20 > runs/queue_b.log 2>&1 &
wait
