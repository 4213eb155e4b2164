"""The Celery app: workers hold MCP backend connections, run discovery, health checks and LLM loops."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcphub.settings")

app = Celery("mcphub")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
