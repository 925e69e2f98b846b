"""Training runs: configs, run folders, the step loop, one module per kind of run."""
