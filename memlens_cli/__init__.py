"""The `memlens` command: the one place that reaches both the web app (app/) and training (training/)."""
