"""ASGI entry point for Daphne: HTTP (Django + the MCP gateway) and WebSockets (chat)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcphub.settings")
# Django must be set up before anything imports models (consumers, gateway routes).
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter  # noqa: E402

from apps.gateway.transport import Gateway  # noqa: E402
from mcphub import beat  # noqa: E402

mcp_gateway = Gateway()


async def http_app(scope, receive, send):
    """`/mcp/...` goes straight to the gateway (raw ASGI, no Django middleware on the hot path)."""
    beat.start_once()
    if scope["path"].startswith("/mcp/"):
        await mcp_gateway(scope, receive, send)
    else:
        await django_asgi_app(scope, receive, send)


application = ProtocolTypeRouter({"http": http_app})
