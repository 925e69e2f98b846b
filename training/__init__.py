"""Training and measuring the models MemLens ships: every family of the five papers, from corpora to
finished checkpoints and the tables of docs/results.md.

    data/        corpora and data: Multi30k and the other translation corpora, enwiki and WikiText
                 token streams, the shared BPE vocabulary, `memlens data fetch`
    tasks/       generators of the papers' algorithmic tasks (RMT's copy, reverse, retrieval and
                 quadratic equations; the Neural GPU's addition, reverse and duplicate), seeded
    loop/        training runs: the config files, the run folder, the step loop, one module per kind
                 of run (translation, language model, segment task, Neural GPU task), seed runs
    evaluation/  scoring trained models: translation quality, perplexity, paired bootstrap intervals,
                 the stored test outputs every comparison is recomputed from
    studies/     measurements of a trained model's memory: FF keys, working-memory content and
                 examples, RMT memory probes, carried-state ablations
    report/      docs/results.md, one module per section
    cli.py       `python -m training ...` (also `memlens train ...`)

Nothing here imports the app; what both need (where things are, which device) is
inference.core.places.
"""
