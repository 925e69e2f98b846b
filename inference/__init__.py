"""MemLens inference core: models, hook points, traces, interventions, decoding, checkpoints. Torch only."""
