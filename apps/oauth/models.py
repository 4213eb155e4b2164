"""What the hub adds to django-oauth-toolkit's models: which app a user connected to which endpoint."""

from __future__ import annotations

from django.db import models
from oauth2_provider.settings import oauth2_settings


class ConnectedApp(models.Model):
    """An OAuth client a user allowed onto one of their endpoints (one row per client and endpoint).

    The tokens themselves are django-oauth-toolkit's (stored as checksums); this row is what the
    endpoint page lists and revokes: when it was granted and when it was last used.
    """

    application = models.ForeignKey(oauth2_settings.APPLICATION_MODEL, on_delete=models.CASCADE, related_name="+")
    # Referenced by name: toolsets does not know about OAuth.
    endpoint = models.ForeignKey("toolsets.Endpoint", on_delete=models.CASCADE, related_name="connected_apps")
    granted_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-granted_at"]
        constraints = [models.UniqueConstraint(fields=["application", "endpoint"], name="one_connection_per_app_and_endpoint")]

    def __str__(self) -> str:
        return f"{self.application} on {self.endpoint_id}"
