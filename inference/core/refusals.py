"""Input a run cannot take: the one exception the core raises for the caller's input (a text over the model's
window, beam search on a model that samples, an empty text). It is a ValueError, so callers that catch those keep
working; the app answers it with a 4xx and its message, and takes any other exception from a run for a bug (a 500
with an error id, the traceback logged)."""

from __future__ import annotations


class InputRefused(ValueError):
    """The caller's input cannot run; the message says why, in the reader's words."""
