"""Corpora and data: readers, token streams, the shared vocabulary, downloading the corpora."""
