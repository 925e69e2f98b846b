"""Code that runs models over corpora (translation of many sentences,
sweeps, mining), feeding the pure analyses in inference.analyses."""
