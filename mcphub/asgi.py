"""ASGI entry point: HTTP (Django + the MCP gateway) and WebSockets (chat), served by uvicorn
(mcphub/server.py).

Daphne or a leaner server? `benchmarks/gateway.py --quick --modes prod --baseline . --base-server
uvicorn` served this same application from Daphne and from uvicorn 0.54 with uvloop 0.23 and
httptools 0.9 (then installed beside the venv for the run, not in requirements), interleaved,
production shape (tools/call of an echo tool, 320 calls per path and concurrency 1/8/32), load 12 on
2 cores:

    web CPU per call        → stdio backend   → HTTP backend
    Daphne (Twisted)             1.61 ms           1.71 ms
    uvicorn + uvloop/httptools   1.05 ms           1.07 ms   (-35 %; worker and Redis alike)

(that run: `--lifespan off`, no guards, no access log.) The hub now serves with uvicorn, its guards
(a whole request within MCPHUB_REQUEST_READ_TIMEOUT, a cap on slow requests per client address, no
raw token in the access log) ported to uvicorn's protocol in mcphub/server_guards.py. uvicorn sends
the ASGI lifespan: the embedded schedule and the chat turns and runs of this process start on the
server's loop as it starts serving (a hub nobody visited still checks health; a restarted one takes
its predecessor's work over at once), and on SIGTERM the turns and runs drain before it exits.
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcphub.settings")

from mcphub.django_handler import get_application  # noqa: E402

# Django must be set up before anything imports models (consumers, gateway routes).
django_asgi_app = get_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402
from django.urls import get_resolver  # noqa: E402

from apps.chat import healing as chat_healing  # noqa: E402
from apps.chat import runtime as chat_runtime  # noqa: E402
from apps.chat.routing import websocket_urlpatterns  # noqa: E402
from apps.core import heap  # noqa: E402
from apps.gateway.transport import Gateway  # noqa: E402
from mcphub import beat  # noqa: E402

mcp_gateway = Gateway()
_HAND_OFF_SECONDS = 5.0  # a link's 2 s, then Celery's publish


_started = False


def start_serving() -> None:
    """What starts with the server, once: the embedded schedule, chat turns bound to this loop and
    this process keeping (and healing) their leases, and the heap it keeps settled
    (apps.core.heap). The ASGI lifespan's startup runs it; a server that sends no lifespan
    (Daphne) gets it with its first request instead, so a hub served that way also checks its
    servers, takes lost work over and does not walk its start-up heap in every full collection
    (that request waits out the one collection, ~0.2 s)."""
    global _started
    if _started:
        return
    _started = True
    beat.start_once()
    chat_runtime.bind_web_loop()
    chat_healing.start_on_web_loop()
    get_resolver().url_patterns  # noqa: B018 - every view imported before the heap settles
    heap.settle()


async def http_app(scope, receive, send):
    """`/mcp/...` goes straight to the gateway (raw ASGI, no Django middleware on the hot path)."""
    if not _started:
        start_serving()
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
    if not _started:
        start_serving()
    if any(name == b"authorization" for name, _ in scope.get("headers", ())):
        await sockets(scope, receive, send)
    else:
        await browser_sockets(scope, receive, send)


async def lifespan(scope, receive, send):
    """The server starts serving (`start_serving`). SIGTERM: embedded, the runs and turns this
    process holds drain (apps.chat.healing.drain) before it exits; production, the turns and runs
    it started reach a worker first (apps.chat.runtime.hand_off). Only with a server that sends
    the lifespan (uvicorn, mcphub/server.py)."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            start_serving()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            if settings.REDIS_URL:
                await chat_runtime.handed_off(_HAND_OFF_SECONDS)
            else:
                await chat_healing.drain(settings.MCPHUB_RUN_DRAIN_SECONDS)
            await send({"type": "lifespan.shutdown.complete"})
            return


application = ProtocolTypeRouter(
    {"http": http_app, "websocket": websocket_app, "lifespan": lifespan}
)
