"""A real HTTP server that should never hear from the hub: it listens on every loopback address
(dual-stack `::`, so 127.0.0.1, 127.0.0.2, ::1, ::ffff:127.0.0.1 and 0.0.0.0 all reach it) and
records each request. By default it answers like an OpenAI-compatible server, so a request that
gets through succeeds visibly; `answer` changes that (a redirect, a 401 challenge)."""

from __future__ import annotations

import json
import socket
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[str, str], "tuple[int, dict[str, str], bytes]"]


@dataclass(frozen=True)
class Heard:
    method: str
    path: str
    host: str


def _openai_like(method: str, path: str) -> tuple[int, dict[str, str], bytes]:
    body = {"object": "list", "data": [{"id": "internal-service-id", "object": "model"}]}
    return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()


class _DualStack(ThreadingHTTPServer):
    address_family = socket.AF_INET6
    daemon_threads = True

    def server_bind(self) -> None:
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _handle(self) -> None:
        canary: Canary = self.server.canary  # type: ignore[attr-defined]
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        canary.heard.append(Heard(self.command, self.path, self.headers.get("Host", "")))
        status, headers, body = canary.answer(self.command, self.path)
        self.send_response(status)
        for name, value in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = _handle


class Canary:
    def __init__(self, answer: Answer = _openai_like, *, tls: ssl.SSLContext | None = None) -> None:
        self.answer = answer
        self.heard: list[Heard] = []
        self._httpd = _DualStack(("::", 0), _Handler)
        if tls is not None:  # HTTPS, with the certificate `tls` holds
            self._httpd.socket = tls.wrap_socket(self._httpd.socket, server_side=True)
        self._httpd.canary = self  # type: ignore[attr-defined]

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    def __enter__(self) -> Canary:
        threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def redirect_to(location: str) -> Answer:
    return lambda method, path: (307, {"Location": location}, b"")


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
