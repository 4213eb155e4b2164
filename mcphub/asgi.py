"""ASGI entry point for Daphne: HTTP (Django + the MCP gateway) and WebSockets (chat)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcphub.settings")
# Django must be set up before anything imports models (consumers, gateway routes).
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter  # noqa: E402

application = ProtocolTypeRouter({"http": django_asgi_app})
