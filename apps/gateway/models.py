"""What the gateway keeps beyond a request: MCP tasks (2025-11-25) and the runs they map to."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class McpTask(models.Model):
    """A task-augmented `tools/call`: its task id, whose it is (owner and endpoint: `tasks/*`
    answer only there), what does the work (a hub run, or a backend's task passed through), and
    how long it is kept.

    While the run goes on, the task's status is read from the run; the first read that finds it
    ended (or a `tasks/cancel`) freezes the status and the tool result here, so a terminal task
    never changes again, as the protocol requires (a resumed run does not revive its task)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    endpoint = models.ForeignKey("toolsets.Endpoint", on_delete=models.CASCADE, related_name="+")
    tool = models.CharField(max_length=255, help_text="The tool's name as the client called it.")
    # The work: a hub run, or a backend's own task (a pass-through: its server and task id there).
    run = models.OneToOneField(
        "chat.Run", null=True, blank=True, on_delete=models.CASCADE, related_name="mcp_task"
    )
    server = models.CharField(max_length=100, blank=True)
    backend_task_id = models.CharField(max_length=500, blank=True)
    backend_task = models.JSONField(
        null=True, blank=True, help_text="The backend's task as last seen (pass-through)."
    )
    ttl_ms = models.PositiveBigIntegerField(null=True, blank=True, help_text="None: unlimited.")
    expires_at = models.DateTimeField(null=True, blank=True)
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
        constraints = [
            models.CheckConstraint(
                condition=(models.Q(run__isnull=False) & models.Q(backend_task_id=""))
                | (models.Q(run__isnull=True) & ~models.Q(backend_task_id="")),
                name="mcptask_run_or_backend_task",
            )
        ]

    def __str__(self) -> str:
        return f"task {self.pk} ({self.tool})"
