"""Each user's own values for the `${user:NAME}` variables of a shared server (see apps/catalog/uservars.py)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from apps.core.fields import EncryptedJSONField
from apps.core.models import TimeStampedModel


class UserCredential(TimeStampedModel):
    """One user's values for one server: encrypted at rest, never shown again once saved.

    `names` lists the filled variables in clear, so pages, the API and the admin can say what is
    set without decrypting anything.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="server_credentials"
    )
    server = models.ForeignKey(
        "catalog.McpServer", on_delete=models.CASCADE, related_name="user_credentials"
    )
    values = EncryptedJSONField(default=dict)
    names = models.JSONField(default=list)

    class Meta:
        ordering = ["server__name", "user__username"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "server"], name="one_credential_per_user_and_server"
            )
        ]

    def __str__(self) -> str:
        return f"{self.user} · {self.server.name}"


# Upstream OAuth (the hub as OAuth client of backends): its own package, its models registered here.
from apps.credentials.upstream.models import (  # noqa: E402, F401
    UpstreamOAuthApp,
    UpstreamOAuthClient,
    UpstreamOAuthGrant,
)
