"""Celery tasks for OAuth: thin wrappers over services (the name is stable: the beat schedule uses it)."""

from __future__ import annotations

import logging

from celery import shared_task

from apps.oauth import services

logger = logging.getLogger(__name__)


@shared_task(name="oauth.clear_expired", ignore_result=True)
def clear_expired() -> None:
    gone = services.clear_expired()
    if gone:
        logger.info("OAuth: %d connected app(s) without live tokens removed", gone)
