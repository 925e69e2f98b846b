"""Analyses: pure functions of Traces that return small dataclasses of plain numbers and strings."""
