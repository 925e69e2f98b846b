"""ASGI middleware: security headers, bounded request bodies, and noticing a client that has gone."""
