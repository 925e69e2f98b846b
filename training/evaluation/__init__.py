"""Scoring trained models: translation quality, perplexity, paired bootstrap intervals, stored outputs."""
