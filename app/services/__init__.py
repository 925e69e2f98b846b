"""What the routes call: the model runner, background jobs and their store, uploads, the demo set."""
