"""Training for the Memory Transformer family on Multi30k (de-en).

Modules, in the order a run uses them:

    config.py         TrainConfig: one JSON file per model (training/configs/)
    data.py           Multi30k readers, length-bucketed padded batches
    vocabulary.py     the shared German+English BPE vocabulary
    memory_growth.py  extend a trained memory to more slots (memory-extension runs)
    rundir.py         the run directory: config record, resumable state, log
    loop.py           optimiser, Noam schedule, label-smoothed loss, epochs
    evaluate.py       greedy translation, BLEU/chrF, memory-size lesion sweep
    run.py            one training run from config to finished checkpoint
    cli.py            `python -m training train|lesion ...`
"""

from pathlib import Path

# Defaults for data, runs and checkpoints are relative to the repository root,
# not the working directory, so commands behave the same from anywhere.
REPO_ROOT = Path(__file__).resolve().parents[1]
