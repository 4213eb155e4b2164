"""The tool-call log: who called what, how long it took, and whether it worked."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ToolCall(models.Model):
    # Names are copied, not only linked: the log must outlive renamed or deleted servers/tools.
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    endpoint = models.ForeignKey("toolsets.Endpoint", null=True, on_delete=models.SET_NULL, related_name="+")
    tool = models.ForeignKey("catalog.Tool", null=True, on_delete=models.SET_NULL, related_name="+")
    server_name = models.CharField(max_length=40)
    tool_name = models.CharField(max_length=255)
    exposed_name = models.CharField(max_length=64)
    started_at = models.DateTimeField(db_index=True)
    duration_ms = models.FloatField()
    ok = models.BooleanField()
    error = models.TextField(blank=True)
    arguments = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["server_name", "tool_name", "started_at"])]

    def __str__(self) -> str:
        return f"{self.exposed_name} ({'ok' if self.ok else 'error'}, {self.duration_ms:.1f} ms)"
