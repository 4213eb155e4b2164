"""Writes: recording a connection when tokens are issued, revoking one from the endpoint page, and
revoking what a replayed authorization code was exchanged for."""

from __future__ import annotations

import hashlib
from datetime import timedelta

from django.db import transaction
from django.utils import timezone
from oauth2_provider.models import clear_expired as clear_expired_tokens
from oauth2_provider.models import (
    get_access_token_model,
    get_grant_model,
    get_refresh_token_model,
)
from oauth2_provider.settings import oauth2_settings

from apps.oauth import resources, revocation
from apps.oauth.models import ConnectedApp, RedeemedCode
from apps.toolsets.models import Endpoint


def record_connection(*, application, user, resource: list[str]) -> ConnectedApp | None:
    """Note that `application` now holds tokens for the endpoint named by `resource` (idempotent)."""
    slug = resources.audience_slug(resource)
    endpoint = (
        Endpoint.objects.filter(slug=slug, owner=user).first()
        if slug and user is not None
        else None
    )
    if endpoint is None:
        return None
    connection, _ = ConnectedApp.objects.get_or_create(application=application, endpoint=endpoint)
    return connection


def _live_slugs(application_id: int, user_id: int) -> set[str | None]:
    """The endpoints the app still holds a usable access or refresh token for."""
    mine = {"application_id": application_id, "user_id": user_id}
    rows = [
        *get_access_token_model().objects.filter(**mine),
        *get_refresh_token_model().objects.filter(revoked__isnull=True, **mine),
    ]
    return {resources.audience_slug(row.resource or []) for row in rows}


def clear_expired() -> int:
    """Delete expired codes and tokens (the toolkit's sweep), then the connections left without any; how many."""
    clear_expired_tokens()
    RedeemedCode.objects.filter(expires__lt=timezone.now()).delete()
    gone = 0
    for connection in ConnectedApp.objects.select_related("endpoint"):
        if connection.endpoint.slug not in _live_slugs(
            connection.application_id, connection.endpoint.owner_id
        ):
            connection.delete()
            gone += 1
    return gone


@transaction.atomic
def revoke_connection(*, connection: ConnectedApp) -> None:
    """Revoke every code, access and refresh token the app holds for this endpoint; effective at once."""
    endpoint = connection.endpoint
    mine = {"application_id": connection.application_id, "user_id": endpoint.owner_id}
    for model in (get_refresh_token_model(), get_access_token_model(), get_grant_model()):
        rows = [
            row
            for row in model.objects.filter(**mine)
            if resources.audience_slug(row.resource or []) == endpoint.slug
        ]
        for row in rows:
            if model is get_refresh_token_model():
                row.revoke()
            else:
                row.delete()
    connection.delete()
    revocation.bump_after_commit()


def _checksum(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def record_redeemed_code(*, code: str, refresh_token: str | None) -> None:
    """Remember that `code` was exchanged for the token family of `refresh_token` (raw, just issued)."""
    family = None
    if refresh_token:
        family = (
            get_refresh_token_model()
            .objects.filter(token_checksum=_checksum(refresh_token))
            .values_list("token_family", flat=True)
            .first()
        )
    expires = timezone.now() + timedelta(seconds=oauth2_settings.AUTHORIZATION_CODE_EXPIRE_SECONDS)
    RedeemedCode.objects.create(code_checksum=_checksum(code), token_family=family, expires=expires)


def revoke_redeemed_code(*, code: str) -> bool:
    """A code came back after it was exchanged: revoke every token issued from it, rotations included
    (effective at once). False when the code was never exchanged."""
    families = set(
        RedeemedCode.objects.filter(code_checksum=_checksum(code)).values_list(
            "token_family", flat=True
        )
    )
    if not families:
        return False
    for family in families - {None}:
        get_refresh_token_model().revoke_family(family)
    revocation.bump_after_commit()
    return True
