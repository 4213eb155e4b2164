"""WSGI entry point, for management tooling only: the hub itself runs under uvicorn (ASGI, mcphub/server.py)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcphub.settings")
application = get_wsgi_application()
