"""Generators of the papers' algorithmic tasks, seeded."""
