"""Which hub sessions SSO sign-ins opened, by the provider's session id (`sid`)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class SsoSession(models.Model):
    """A hub session opened by an SSO sign-in whose ID token carried the provider's session id:
    a back-channel logout naming only that `sid` ends exactly this session. Rows of sessions that
    ended otherwise are dropped once older than a session can live (session.py)."""

    provider = models.CharField(max_length=40)
    sid = models.CharField(max_length=255)
    session_key = models.CharField(max_length=40)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["provider", "sid"], name="sso_session_by_sid")]
        verbose_name = "SSO session"

    def __str__(self) -> str:
        return f"{self.user} via {self.provider}"
