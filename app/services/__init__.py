"""What the routes call: the model gateway and page gating, one service per page, background jobs and their
store, uploads, the demo set."""
