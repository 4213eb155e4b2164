"""Signals only flush caches: any OAuth access token deleted or refresh token revoked moves the epoch."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete, post_save
from oauth2_provider.models import get_access_token_model, get_refresh_token_model

from apps.oauth import revocation


def _access_token_gone(sender: Any, **kwargs: Any) -> None:
    revocation.bump_after_commit()


def _refresh_token_saved(sender: Any, instance: Any, **kwargs: Any) -> None:
    if instance.revoked is not None:
        revocation.bump_after_commit()


def connect() -> None:
    post_delete.connect(
        _access_token_gone, sender=get_access_token_model(), dispatch_uid="oauth-access-token-gone"
    )
    post_save.connect(
        _refresh_token_saved, sender=get_refresh_token_model(), dispatch_uid="oauth-refresh-revoked"
    )
