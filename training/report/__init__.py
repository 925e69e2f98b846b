"""docs/results.md: one module per section, each rendering its tables from committed metrics."""
