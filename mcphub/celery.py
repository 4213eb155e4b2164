"""The Celery app: workers hold MCP backend connections, run discovery, health checks and LLM loops."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcphub.settings")
# Django's system checks run where the hub starts (`manage.py migrate`, `check`), not again in each
# worker: they load every URLconf and view (~0.35 s CPU of a worker's ~2.9 s start), and a lost
# worker's runs and turns wait for its replacement's start (issue 27).
os.environ.setdefault("CELERY_SKIP_CHECKS", "1")

app = Celery("mcphub")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Each worker process also serves the MCP connection pool on its own thread and event loop:
# tool calls reach it over a direct Redis path, not through Celery's messaging.
from apps.connections.celery_hooks import connect_pool_worker  # noqa: E402

connect_pool_worker(app)

# Runs and chat turns: each worker keeps their leases, takes over those of lost workers, and on
# SIGTERM lets its runs finish their round, then hands the rest over.
from apps.chat.worker_hooks import connect as connect_chat_healing  # noqa: E402

connect_chat_healing(app)
