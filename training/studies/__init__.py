"""Studies of trained models: what their memories hold and whether they use them."""
