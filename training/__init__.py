"""Training for the Memory Transformer family on Multi30k (de-en), the
working-memory decoder, and the language model on English Wikipedia.

Modules, in the order a run uses them:

    config.py         TrainConfig: one JSON file per model (training/configs/)
    data_dir.py       where the data folder is
    data_fetch.py     `memlens data fetch`: download the corpora, checked by sha256
    data.py           Multi30k readers, length-bucketed padded batches
    lm_corpora.py     enwiki articles as sentences, WikiText valid/test (language model)
    lm_data.py        token streams and contiguous training blocks (language model)
    vocabulary.py     the shared German+English BPE vocabulary
    memory_growth.py  extend a trained memory to more slots (memory-extension runs)
    rundir.py         the run directory: config record, resumable state, log
    loop.py           optimiser, Noam schedule, label-smoothed loss, epochs
    evaluate.py       greedy translation, BLEU/chrF, memory-size lesion sweep
    perplexity.py     strided perplexity, token- and word-level (language model)
    lm_run.py         a language-model run from config to checkpoint
    run.py            one training run from config to finished checkpoint
    cli.py            `python -m training train|lesion ...`
"""

from pathlib import Path

# Defaults for data, runs and checkpoints are relative to the repository root,
# not the working directory, so commands behave the same from anywhere.
REPO_ROOT = Path(__file__).resolve().parents[1]
