"""A Celery worker's hooks for its runs and chat turns (connected by mcphub/celery.py, before Django
is set up: everything else is imported when a signal fires)."""

from __future__ import annotations

import asyncio
from typing import Any


def _worker_ready(**_: Any) -> None:
    import threading

    from apps.chat import healing, runtime

    healing.start()
    threading.Thread(target=_preload_sdks, name="llm-preload", daemon=True).start()
    asyncio.run_coroutine_threadsafe(healing.sweep_forever(), runtime.current_loop())


def _preload_sdks() -> None:
    import logging

    from django.db import connection

    from apps.llm.adapters import preload
    from apps.llm.models import Provider

    try:
        preload(Provider.objects.order_by().values_list("kind", flat=True).distinct())
    except Exception:  # noqa: BLE001 - a speed-up only: the first turn imports what it needs
        logging.getLogger(__name__).warning("could not preload the LLM SDKs", exc_info=True)
    finally:
        connection.close()  # this thread's own: it ends here


def _worker_shutting_down(**_: Any) -> None:
    from django.conf import settings

    from apps.chat import healing

    healing.drain_from_thread(settings.MCPHUB_RUN_DRAIN_SECONDS)


def connect(app: Any) -> None:
    """Keep leases and take over lost work once ready; drain and hand over on SIGTERM."""
    from celery import signals

    signals.worker_ready.connect(_worker_ready, weak=False)
    signals.worker_shutting_down.connect(_worker_shutting_down, weak=False)
