"""Upstream OAuth: the hub's registration at a backend's authorization server, and each user's grant."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from apps.core.fields import EncryptedJSONField
from apps.core.models import TimeStampedModel


class UpstreamOAuthApp(TimeStampedModel):
    """An OAuth app an administrator registered by hand at a backend's authorization server, for
    the many that offer no dynamic client registration (GitHub, Google, Slack, Atlassian, most
    company identity providers). Users connect with it exactly as with a registered client.

    The authorization server is named by its metadata URL (RFC 8414 or OpenID Connect discovery)
    or by its endpoints; `authorization_server` is that metadata as read when the app was saved.
    """

    class AuthMethod(models.TextChoices):
        POST = "client_secret_post", "client_secret_post (id and secret in the form body)"
        BASIC = "client_secret_basic", "client_secret_basic (HTTP Basic)"
        NONE = "none", "none (a public client: PKCE only)"

    server = models.OneToOneField(
        "catalog.McpServer", on_delete=models.CASCADE, related_name="upstream_oauth_app"
    )
    client_id = models.CharField(max_length=255)
    client_secret = EncryptedJSONField(default=str, blank=True)
    scopes = models.CharField(
        max_length=1000,
        blank=True,
        help_text="Space-separated scopes to ask for, e.g. 'repo read:org' (GitHub). Empty: the "
        "scope the backend asks for, else the authorization server's default.",
    )
    metadata_url = models.URLField(
        "metadata URL",
        max_length=2048,
        blank=True,
        help_text="The authorization server's metadata: …/.well-known/oauth-authorization-server "
        "or …/.well-known/openid-configuration. Or leave it empty and enter the endpoints.",
    )
    authorization_endpoint = models.URLField(max_length=2048, blank=True)
    token_endpoint = models.URLField(max_length=2048, blank=True)
    revocation_endpoint = models.URLField(
        max_length=2048, blank=True, help_text="Optional: Disconnect revokes the grant there."
    )
    token_auth_method = models.CharField(
        "client authentication",
        max_length=30,
        choices=AuthMethod.choices,
        default=AuthMethod.POST,
        help_text="How the hub authenticates at the token endpoint.",
    )
    authorization_server = models.JSONField(default=dict, editable=False)

    class Meta:
        verbose_name = "upstream OAuth app"

    def __str__(self) -> str:
        return f"{self.server.name}: {self.client_id}"

    def clean(self) -> None:
        errors = {}
        if self.metadata_url and (self.authorization_endpoint or self.token_endpoint):
            errors["metadata_url"] = (
                "Enter the metadata URL or the endpoints, not both: the metadata names the endpoints."
            )
        elif not self.metadata_url and not (self.authorization_endpoint and self.token_endpoint):
            errors["metadata_url"] = (
                "Enter the authorization server's metadata URL, or its authorization and token "
                "endpoints."
            )
        if self.token_auth_method != self.AuthMethod.NONE and not self.client_secret:
            errors["client_secret"] = (
                "A confidential client needs its client secret (or choose 'none' for a public client)."
            )
        if self.server_id and self.server.transport == "stdio":
            errors["server"] = "Only a remote (HTTP) server can use an OAuth app."
        if errors:
            raise ValidationError(errors)


class UpstreamOAuthClient(TimeStampedModel):
    """The hub as an OAuth client of one backend, for one callback URL: registered by the hub
    (RFC 7591), or an administrator's `app`.

    `metadata` is the backend's public authorization set-up (resource and AS metadata, scope);
    `client_info` holds the registration response, client secret included: encrypted at rest
    (empty for an app: its id and secret are the app's, read at each use).
    """

    server = models.ForeignKey(
        "catalog.McpServer", on_delete=models.CASCADE, related_name="upstream_oauth_clients"
    )
    redirect_uri = models.URLField(max_length=2048)
    metadata = models.JSONField(default=dict)
    client_info = EncryptedJSONField(default=dict)
    app = models.ForeignKey(
        UpstreamOAuthApp, null=True, blank=True, on_delete=models.CASCADE, related_name="clients"
    )

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
