"""The line under each heading of docs/results.md that says which decoding produced its figures."""

# How each section's figures were produced: the decoding of every translation scored (inference.runs.translate:
# greedy for the Memory Transformer families; a working-memory model samples its memory and picks its
# translation tokens greedily), or none where the figures come from teacher-forced passes. No figure uses
# beam search (inference.core.decoding.Decoding), which the command line and traced runs offer.
DECODING = {
    "translation": "Decoding: greedy (the most likely token at every step), no beam search.",
    "lesions": "Decoding: greedy at every memory size, no beam search.",
    "working_memory": "Decoding: each working-memory model samples its memory "
    "(nucleus, p = its config's top_p, seed i for batch i) and "
    "picks its translation tokens greedily; the Transformer rows are greedy. No beam search.",
    "memory_content": "Decoding: the memory of the 'working memory' rows above "
    "(sampled, seed i for batch i; translation greedy).",
    "language_model": "Decoding: none; perplexity is teacher-forced over the test text.",
    "ff": "Decoding: none; every figure is from teacher-forced passes "
    "(corpus sentences; for translation models, the references).",
}
