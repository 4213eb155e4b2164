"""Activation patterns: a regular expression over what a dynamic session asks for (search
queries, tool calls) that pre-loads the tools or servers it names, highest priority first."""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError
from django.db import models

from apps.catalog.models import SERVER_NAME_RE
from apps.discovery import regex

MAX_TARGETS = 50
# `server.tool` (a tool) or `server.*` (every tool of the server).
TARGET_RE = re.compile(SERVER_NAME_RE.rstrip("$") + r"\.(\*|[^\s.][^\s]*)$")


MAX_PATTERNS = 50  # per endpoint: every one is tried on every query and call of a dynamic session


def validate_pattern(value: str) -> None:
    """Refuse what RE2 cannot run, or may not (see apps/discovery/regex.py), saying why."""
    try:
        regex.compile_regex(value)
    except regex.RegexRefused as exc:
        raise ValidationError(
            f"Not a valid regular expression for RE2 (the syntax accepted): {exc}."
        ) from None


def validate_targets(value: object) -> None:
    if not isinstance(value, list) or not value or len(value) > MAX_TARGETS:
        raise ValidationError(f"List 1 to {MAX_TARGETS} targets: 'server.tool' or 'server.*'.")
    bad = [str(t) for t in value if not isinstance(t, str) or not TARGET_RE.match(t)]
    if bad:
        raise ValidationError(
            f"Not a tool ('server.tool') or server ('server.*'): {', '.join(bad[:5])}."
        )


class ActivationPattern(models.Model):
    endpoint = models.ForeignKey(
        "toolsets.Endpoint", on_delete=models.CASCADE, related_name="activation_patterns"
    )
    pattern = models.CharField(
        max_length=500,
        validators=[validate_pattern],
        help_text="Regular expression, case-insensitive",
    )
    targets = models.JSONField(
        validators=[validate_targets],
        help_text="Tools ('server.tool') or servers ('server.*') to pre-load",
    )
    priority = models.IntegerField(
        default=0, help_text="Higher loads first when the budget is short"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-priority", "pk"]

    def __str__(self) -> str:
        return f"/{self.pattern}/ → {', '.join(self.targets)}"

    @property
    def problem(self) -> str:
        """Why a stored pattern never matches (saved before RE2 refused it), else ''."""
        try:
            validate_pattern(self.pattern)
        except ValidationError as exc:
            return " ".join(exc.messages)
        return ""


MAX_LEARNED_TERMS = 32  # of one search kept: enough to recognise it again


class LearnedSearch(models.Model):
    """A search of a dynamic session that led to loading (or calling) a tool it found: the
    search's terms (stemmed, stop words dropped, sorted: never the text as typed) and the tool,
    counted. Later searches sharing most of those terms rank that tool a little higher on the
    same endpoint (apps.discovery.catalog, the usage prior)."""

    endpoint = models.ForeignKey("toolsets.Endpoint", on_delete=models.CASCADE, related_name="+")
    tool = models.ForeignKey("catalog.Tool", on_delete=models.CASCADE, related_name="+")
    terms = models.CharField(max_length=500)
    count = models.PositiveIntegerField(default=1)
    last_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["endpoint", "tool", "terms"], name="discovery_learned_once"
            )
        ]
        indexes = [models.Index(fields=["endpoint", "-last_at"], name="discovery_learned_recent")]

    def __str__(self) -> str:
        return f"{self.terms} → tool {self.tool_id} ×{self.count}"
