"""What the hub adds to django-oauth-toolkit's models: which app a user connected to which endpoint."""

from __future__ import annotations

from django.db import models
from oauth2_provider.settings import oauth2_settings


class ConnectedApp(models.Model):
    """An OAuth client a user allowed onto one of their endpoints (one row per client and endpoint).

    The tokens themselves are django-oauth-toolkit's (stored as checksums); this row is what the
    endpoint page lists and revokes: when it was granted and when it was last used.
    """

    application = models.ForeignKey(
        oauth2_settings.APPLICATION_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    # Referenced by name: toolsets does not know about OAuth.
    endpoint = models.ForeignKey(
        "toolsets.Endpoint", on_delete=models.CASCADE, related_name="connected_apps"
    )
    granted_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-granted_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["application", "endpoint"], name="one_connection_per_app_and_endpoint"
            )
        ]

    def __str__(self) -> str:
        return f"{self.application} on {self.endpoint_id}"


class RedeemedCode(models.Model):
    """An authorization code already exchanged for tokens (the toolkit deletes its grant on use).

    Kept, as a SHA-256 checksum, for at least the code's lifetime with the token family it was
    exchanged for, so that a replay revokes those tokens and every rotation of them
    (RFC 6749 §4.1.2): a replayed code means someone else holds it. Not unique: two exchanges
    racing with one code both leave a row, and both families are revoked.
    """

    code_checksum = models.CharField(max_length=64, db_index=True)
    token_family = models.UUIDField(null=True)
    expires = models.DateTimeField()

    def __str__(self) -> str:
        return f"Redeemed code #{self.pk}"
