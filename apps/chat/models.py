"""Conversations with an LLM that uses an endpoint's tools: turns, messages and the event log.

A turn is one user message and everything the model and tools did in answer. Every event sent to
a browser is also a row here (`Event`, numbered per conversation), so a client that reconnects
resumes after the last number it saw, even across a web-process restart.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from apps.core.models import TimeStampedModel


class Conversation(TimeStampedModel):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations"
    )
    title = models.CharField(max_length=200, blank=True)
    provider = models.ForeignKey(
        "llm.Provider", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    model = models.CharField(
        max_length=200, blank=True, help_text="Empty: the provider's default model."
    )
    endpoint = models.ForeignKey(
        "toolsets.Endpoint",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The tools offered to the model are this endpoint's enabled tools.",
    )

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return self.title or f"Conversation {str(self.id)[:8]}"


class Turn(models.Model):
    """One user message and the model/tool rounds that answered it."""

    class Status(models.TextChoices):
        RUNNING = "running"
        COMPLETE = "complete"
        STOPPED = "stopped"
        FAILED = "failed"
        # The model's reply was cut at its output limit: the user may ask it to continue.
        INCOMPLETE = "incomplete"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="turns")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    error = models.TextField(blank=True)
    rounds = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    stop_requested = models.BooleanField(default=False)
    # Set by the worker while it runs the turn: a running turn whose heartbeat is stale was lost
    # with its worker, and must not block the conversation forever.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # The process running the turn (apps.chat.lease): it renews the heartbeat; a live one takes over
    # a turn whose heartbeat went stale.
    worker = models.CharField(max_length=200, blank=True)
    recoveries = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["started_at"]
        indexes = [models.Index(fields=["status", "heartbeat_at"], name="turn_status_heartbeat")]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation"],
                condition=models.Q(status="running"),
                name="one_running_turn_per_conversation",
            )
        ]


class Message(models.Model):
    """One message of the history: the user's, the model's (maybe calling tools), or a tool result.

    `result` keeps a tool's whole result; the model is sent `text`, cut to
    MCPHUB_CHAT_TOOL_RESULT_CHARS. An assistant message keeps the model's `reasoning` (shown,
    collapsed) and `replay`: the provider's opaque fields of the message and of each call
    ({"provider": pk, "message": {...}, "calls": {id: {...}}}), sent back to that provider unchanged
    and never shown.
    `finish_reason` says how a reply ended when that is news: "length" (cut at the model's output
    limit), "refusal" (`text` is the model's refusal), "error" (the stream broke; `text` is what came).
    """

    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"
        TOOL = "tool"

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="messages"
    )
    turn = models.ForeignKey(Turn, null=True, on_delete=models.CASCADE, related_name="messages")
    role = models.CharField(max_length=10, choices=Role.choices)
    text = models.TextField(blank=True)
    tool_calls = models.JSONField(default=list, blank=True)  # [{"id", "name", "arguments"}]
    reasoning = models.TextField(blank=True)
    replay = models.JSONField(null=True, blank=True)
    finish_reason = models.CharField(max_length=20, blank=True)
    tool_call_id = models.CharField(max_length=200, blank=True)
    tool_name = models.CharField(max_length=64, blank=True)
    is_error = models.BooleanField(default=False)
    result = models.JSONField(null=True, blank=True)
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    duration_ms = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]


class Event(models.Model):
    """One event as sent to the conversation's clients, numbered from 1 per conversation."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=30)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["seq"]
        constraints = [
            models.UniqueConstraint(fields=["conversation", "seq"], name="unique_event_seq")
        ]

    def as_wire(self) -> dict:
        return {"type": self.type, "seq": self.seq, "payload": self.payload}
