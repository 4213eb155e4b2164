"""What the gateway keeps beyond a request: MCP tasks (2025-11-25) and the runs they map to."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class McpTask(models.Model):
    """A task-augmented `tools/call` of a hub autonomous tool: its task id, whose it is (owner and
    endpoint: `tasks/*` answer only there), the run doing the work, and how long it is kept.

    While the run goes on, the task's status is read from the run; the first read that finds it
    ended (or a `tasks/cancel`) freezes the status and the tool result here, so a terminal task
    never changes again, as the protocol requires (a resumed run does not revive its task)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    endpoint = models.ForeignKey("toolsets.Endpoint", on_delete=models.CASCADE, related_name="+")
    tool = models.CharField(max_length=255, help_text="The tool's name as the client called it.")
    run = models.OneToOneField("chat.Run", on_delete=models.CASCADE, related_name="mcp_task")
    ttl_ms = models.PositiveBigIntegerField()
    expires_at = models.DateTimeField()
    status = models.CharField(max_length=20, blank=True, help_text="Set once terminal.")
    status_message = models.TextField(blank=True)
    result = models.JSONField(null=True, blank=True, help_text="The tool result, once terminal.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(
                fields=["owner", "endpoint", "-created_at"], name="mcptask_owner_endpoint"
            ),
        ]

    def __str__(self) -> str:
        return f"task {self.pk} ({self.tool})"
