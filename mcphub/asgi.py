"""ASGI entry point for Daphne: HTTP (Django + the MCP gateway) and WebSockets (chat).

Daphne or a leaner server? `benchmarks/gateway.py --quick --modes prod --baseline . --base-server
uvicorn` serves this same application from Daphne and from uvicorn 0.54 with uvloop 0.23 and
httptools 0.9 (installed beside the venv for the run, not in requirements), interleaved, production
shape (tools/call of an echo tool, 320 calls per path and concurrency 1/8/32), load 12 on 2 cores:

    web CPU per call        → stdio backend   → HTTP backend
    Daphne (Twisted)             1.61 ms           1.71 ms
    uvicorn + uvloop/httptools   1.05 ms           1.07 ms   (-35 %; worker and Redis alike)

The gain is not small, but Daphne stays for now: `mcphub/server_guards.py` (a whole request must
arrive within MCPHUB_REQUEST_READ_TIMEOUT, a cap on slow requests per client address, no raw
token in the access log) is built on Twisted's HTTP channel; uvicorn's options (a keep-alive idle
timeout, a concurrency cap) are not the first two. Moving means those guards for uvicorn first, then
`./hub run`, docker-compose, the README and the tests' live hub. The application itself runs
under uvicorn as it is (`--lifespan off`: the first request starts what Daphne's lack of a
lifespan already made it start).
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcphub.settings")

from mcphub.django_handler import get_application  # noqa: E402

# Django must be set up before anything imports models (consumers, gateway routes).
django_asgi_app = get_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from apps.chat import healing as chat_healing  # noqa: E402
from apps.chat import runtime as chat_runtime  # noqa: E402
from apps.chat.routing import websocket_urlpatterns  # noqa: E402
from apps.gateway.transport import Gateway  # noqa: E402
from mcphub import beat  # noqa: E402

mcp_gateway = Gateway()
beat.start_with_server()
chat_healing.start_with_server()  # embedded: this process takes over runs and turns a lost one left


class _NoFormParsing:
    """Twisted parses every POST's Content-Type with the `email` package (~0.2 ms of CPU a request)
    to fill `request.args` for HTML forms. Daphne hands the raw body to the ASGI app and never reads
    those args, so under Daphne the parsing is pure waste: this attribute stays False."""

    def __get__(self, instance: object, owner: type | None = None) -> bool:
        return False

    def __set__(self, instance: object, value: object) -> None:
        pass


def _skip_twisted_form_parsing() -> None:
    try:
        from daphne.http_protocol import WebRequest
    except ImportError:  # another ASGI server
        return
    WebRequest._parsePOSTFormSubmission = _NoFormParsing()


_skip_twisted_form_parsing()

from mcphub import server_guards  # noqa: E402

server_guards.install()


async def http_app(scope, receive, send):
    """`/mcp/...` goes straight to the gateway (raw ASGI, no Django middleware on the hot path)."""
    if scope["path"].startswith("/mcp/"):
        await mcp_gateway(scope, receive, send)
    else:
        await django_asgi_app(scope, receive, send)


sockets = URLRouter(websocket_urlpatterns)
browser_sockets = AuthMiddlewareStack(sockets)


async def websocket_app(scope, receive, send):
    """Chat and run sockets check their own origin (session) or token (scripts): apps/chat/auth.py.
    A socket that brings a token skips the session stack, which would look up a browser session it
    does not have (a hop to Channels' one database thread: ~6% of the web process's CPU while a
    hundred runs were started and followed)."""
    if any(name == b"authorization" for name, _ in scope.get("headers", ())):
        await sockets(scope, receive, send)
    else:
        await browser_sockets(scope, receive, send)


async def first_http_request(scope, receive, send):
    """The process's first HTTP request, on the server's event loop (Daphne sends no ASGI lifespan):
    start the embedded schedule and bind chat turns to this loop, then hand every later request
    straight to `http_app`, so the per-request path carries no once-only check."""
    application.application_mapping["http"] = http_app  # before any await: later requests skip this
    beat.start_once()
    chat_runtime.bind_web_loop()
    chat_healing.start_on_web_loop()
    await http_app(scope, receive, send)


application = ProtocolTypeRouter({"http": first_http_request, "websocket": websocket_app})
