"""The MemLens web app (main.create_app): routers, services, figures, schemas and middleware."""
