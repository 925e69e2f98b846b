"""MemLens application layer: the command line now, the web server later."""
