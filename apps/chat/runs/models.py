"""Runs and their steps (imported by apps.chat.models, so they belong to the `chat` app)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class Run(models.Model):
    """A task given to a model with a set of tools, worked on until the model answers or a limit hits."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        WAITING_APPROVAL = "waiting_approval"
        # A backend asked the owner something (elicitation): `pending_input` holds the question.
        WAITING_INPUT = "waiting_input", "Waiting for input"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"
        INTERRUPTED = "interrupted"
        # The model's answer stayed cut at its output limit after the allowed continuations.
        INCOMPLETE = "incomplete"

    ACTIVE = (Status.QUEUED, Status.RUNNING, Status.WAITING_APPROVAL, Status.WAITING_INPUT)
    # Being worked on by a worker (which beats), whether or not it waits for its owner.
    WORKING = (Status.RUNNING, Status.WAITING_APPROVAL, Status.WAITING_INPUT)
    RESUMABLE = (Status.INTERRUPTED, Status.FAILED, Status.INCOMPLETE)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="runs"
    )
    task = models.TextField()
    provider = models.ForeignKey(
        "llm.Provider", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    model = models.CharField(
        max_length=200, blank=True, help_text="Empty: the provider's default model."
    )
    endpoint = models.ForeignKey(
        "toolsets.Endpoint", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Empty: every tool enabled on the endpoint; else only those of these servers.
    servers = models.JSONField(default=list, blank=True)
    max_rounds = models.PositiveIntegerField(default=10000)
    token_budget = models.PositiveBigIntegerField(null=True, blank=True)
    time_limit_s = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    answer = models.TextField(blank=True)
    error = models.TextField(blank=True)
    rounds = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    # Wall time spent running, summed over resumes (the time limit counts this, not idle time).
    elapsed_s = models.FloatField(default=0.0)
    cancel_requested = models.BooleanField(default=False)
    # Tool calls waiting for the owner's allow/deny: [{"id", "name", "arguments"}].
    pending_approvals = models.JSONField(default=list, blank=True)
    # Backends' questions waiting for the owner's answer: [{"id", "message", "mode",
    # "requestedSchema" | "url", ...}] as elicitation/create asked them.
    pending_input = models.JSONField(default=list, blank=True)
    # Queued: when it was handed to the workers (a stale one: the hand-off was lost, see sweep).
    # Running: set by the worker as it runs the run; a stale one means the worker died.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    # Times a live worker took the run over from a lost one since its last completed round: past
    # MCPHUB_RUN_MAX_RECOVERIES the run is `interrupted` (it may be what kills its workers).
    recoveries = models.PositiveIntegerField(default=0)
    # The round whose tool calls are being sent, stored before a call that may change data goes
    # out (its reply: text, calls, reasoning, replay, finish_reason, usage, context_chars): a run
    # taken over then settles those calls (apps.chat.unfinished) instead of asking the model again.
    in_flight = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "heartbeat_at"], name="run_status_heartbeat")]

    def __str__(self) -> str:
        return f"Run {str(self.id)[:8]}: {self.task[:40]}"

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class RunStep(models.Model):
    """One completed round: the model's message and each tool call it made, with results.

    `reasoning`, `replay` and `finish_reason` as on a chat message (apps.chat.models.Message).
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="steps")
    round = models.PositiveIntegerField()
    text = models.TextField(blank=True)
    # [{"id", "name", "arguments", "result", "isError", "duration_ms"}]
    tool_calls = models.JSONField(default=list, blank=True)
    reasoning = models.TextField(blank=True)
    replay = models.JSONField(null=True, blank=True)
    finish_reason = models.CharField(max_length=20, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    # Characters of the context sent to the model this round (bounded by MCPHUB_RUN_CONTEXT_CHARS).
    context_chars = models.PositiveIntegerField(default=0)
    model_ms = models.FloatField(default=0.0)
    duration_ms = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["round"]
        constraints = [models.UniqueConstraint(fields=["run", "round"], name="unique_run_round")]
