"""Serve one of the benchmark apps under the exact gunicorn settings of the real server.

Usage: python -m bench.serve {real,flask,wsgi} --bind HOST:PORT --cert-dir DIR [--config FILE]
       [--metrics-bind HOST:PORT] [--no-log-reviews] [--log-format text|json]
       [--otlp-endpoint URL]

The last three are ``serve``'s options of the same name, so a benchmark can compare the
server's log and trace modes under otherwise identical settings.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from webhooks.configfile import read_config
from webhooks.server.logformat import LOG_FORMATS
from webhooks.server.runner import Built, Factory, ServeOptions, WebhookServer


def factory(kind: str) -> Factory:
    """The app factory for ``kind``."""
    if kind == "real":
        from webhooks.server.assemble import build_app

        return build_app
    from bench import apps

    if kind == "flask":
        return lambda _o: Built(apps.bare_flask())
    return lambda _o: Built(apps.bare_wsgi)


def main() -> None:
    """Parse arguments and run gunicorn in the foreground."""
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["real", "flask", "wsgi"])
    parser.add_argument("--bind", required=True)
    parser.add_argument("--cert-dir", required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--config", help="the real server's config file (default: built-in)")
    parser.add_argument("--metrics-bind", default="", help="the plain metrics port (default: none)")
    parser.add_argument("--no-log-reviews", dest="log_reviews", action="store_false")
    parser.add_argument("--log-format", choices=LOG_FORMATS, default="text")
    parser.add_argument("--otlp-endpoint", default="", help="spans over OTLP/HTTP to this URL")
    args = parser.parse_args()
    options = ServeOptions(
        cert_dir=Path(args.cert_dir),
        config_path=args.config,
        config=read_config(args.config),
        bind=args.bind,
        metrics_bind=args.metrics_bind,
        workers=args.workers,
        threads=args.threads,
        log_level="warning",
        log_reviews=args.log_reviews,
        log_format=args.log_format,
        otlp_endpoint=args.otlp_endpoint,
    )
    WebhookServer(options, factory(args.kind)).run()


if __name__ == "__main__":
    main()
