"""How the hub serves HTTP and WebSockets: uvicorn on uvloop, its httptools protocol with the
guards of mcphub/server_guards.py, WebSockets by the `websockets` package (its Sans-I/O core).
Why uvicorn and not Daphne: the A/B in mcphub/asgi.py.

    python -m mcphub.server [--host 127.0.0.1] [--port 8000] [--app mcphub.asgi:application]

serves in its own process (Docker, the tests' hubs, the benchmarks); `./hub run` serves in the
`mcp_prepare` process with `serve()`.

- `proxy_headers` off: uvicorn would otherwise take the client from `X-Forwarded-For` of any
  request from 127.0.0.1; the hub decides what to believe by MCPHUB_TRUSTED_PROXIES
  (apps/core/client_address.py), for every per-client limit alike.
- `log_config` none: the hub's LOGGING (mcphub/settings.py, token redaction on every handler)
  writes uvicorn's lines too.
- SIGTERM: uvicorn stops accepting, lets requests in progress end for up to
  `SHUTDOWN_GRACE_SECONDS` (streams and sockets stay open until then), then sends the ASGI
  lifespan's shutdown, on which the embedded hub drains its chat turns and runs (mcphub/asgi.py).
"""

from __future__ import annotations

import argparse
import os

SHUTDOWN_GRACE_SECONDS = 3


def config(host: str, port: int, app="mcphub.asgi:application"):
    """`app`: an ASGI application or its `module:attribute`."""
    import uvicorn

    from mcphub.server_guards import GuardedHttpToolsProtocol

    return uvicorn.Config(
        app,
        host=host,
        port=port,
        loop="uvloop",
        http=GuardedHttpToolsProtocol,
        ws="websockets-sansio",
        lifespan="on",
        log_config=None,
        proxy_headers=False,
        server_header=False,
        timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
    )


def serve(host: str, port: int, app: str = "mcphub.asgi:application") -> None:
    """Serve until SIGTERM/SIGINT, in this process (from its main thread: signals)."""
    import uvicorn

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcphub.settings")
    server = uvicorn.Server(config(host, port, app))
    server.run()
    if not server.started:  # the port was taken, or the application failed to start
        raise SystemExit(1)


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve the hub (uvicorn).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--app", default="mcphub.asgi:application")
    args = parser.parse_args()
    serve(args.host, args.port, args.app)


if __name__ == "__main__":
    main()
