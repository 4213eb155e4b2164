"""The LLM SDKs a fresh process imports before it runs turns and runs (a Celery worker from its
start, apps.chat.worker_hooks; any process before it continues work taken over, apps.chat.healing):
importing one takes ~1.7 s of CPU on a loaded 2-core machine, which the chat loop must not spend."""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)


def preload_sdks() -> None:
    """Import the SDKs of the provider kinds in use (sync ORM: from a thread); never raises: the
    work imports what it needs."""
    from apps.llm.adapters import preload
    from apps.llm.models import Provider

    try:
        preload(Provider.objects.order_by().values_list("kind", flat=True).distinct())
    except Exception:  # noqa: BLE001 - a speed-up only
        logger.warning("could not preload the LLM SDKs", exc_info=True)
