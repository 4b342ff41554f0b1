"""The HTTP transport: a thin Flask app over the core, served by gunicorn over TLS."""
