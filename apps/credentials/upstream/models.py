"""Upstream OAuth: the hub's registration at a backend's authorization server, and each user's grant."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from apps.core.fields import EncryptedJSONField
from apps.core.models import TimeStampedModel


class UpstreamOAuthClient(TimeStampedModel):
    """The hub registered as an OAuth client (RFC 7591) of one backend, for one callback URL.

    `metadata` is the backend's public authorization set-up (resource and AS metadata, scope);
    `client_info` holds the registration response, client secret included: encrypted at rest.
    """

    server = models.ForeignKey(
        "catalog.McpServer", on_delete=models.CASCADE, related_name="upstream_oauth_clients"
    )
    redirect_uri = models.URLField(max_length=2048)
    metadata = models.JSONField(default=dict)
    client_info = EncryptedJSONField(default=dict)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["server", "redirect_uri"], name="one_upstream_client_per_callback"
            )
        ]

    def __str__(self) -> str:
        return f"{self.server.name} via {self.redirect_uri}"


class UpstreamOAuthGrant(TimeStampedModel):
    """One user's connection of one backend: tokens encrypted, refreshed before `expires_at`.

    `broken` is set when the backend or its authorization server refused the grant (revoked,
    expired refresh token): the user must connect again; calls never borrow another user's grant.
    """

    server = models.ForeignKey(
        "catalog.McpServer", on_delete=models.CASCADE, related_name="upstream_oauth_grants"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="upstream_oauth_grants"
    )
    client = models.ForeignKey(UpstreamOAuthClient, on_delete=models.CASCADE, related_name="grants")
    tokens = EncryptedJSONField(default=dict)  # {"access_token", "refresh_token"}
    scope = models.CharField(max_length=1000, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    lifetime = models.PositiveIntegerField(
        null=True, blank=True, help_text="Seconds the last access token was issued for."
    )
    refreshed_at = models.DateTimeField(null=True, blank=True)
    broken = models.BooleanField(default=False)
    problem = models.CharField(max_length=500, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["server", "user"], name="one_upstream_grant_per_user")
        ]

    def __str__(self) -> str:
        return f"{self.user} → {self.server.name}"

    def refresh_due(self, now: datetime | None = None) -> bool:
        """True once the token is within its refresh margin of expiring (or past it)."""
        return self.expires_at is not None and (now or timezone.now()) >= self.refresh_at

    @property
    def refresh_at(self) -> datetime:
        """When to refresh: MCPHUB_UPSTREAM_OAUTH_REFRESH_MARGIN before expiry, or a third of a short lifetime."""
        margin = float(settings.MCPHUB_UPSTREAM_OAUTH_REFRESH_MARGIN)
        if self.lifetime:
            margin = min(margin, self.lifetime / 3)
        assert self.expires_at is not None
        return self.expires_at - timedelta(seconds=margin)
