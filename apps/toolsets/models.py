"""Per-user MCP endpoints with their enabled tools, and presets of tools shared within teams."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models

from apps.core.models import TimeStampedModel

endpoint_slug_validator = RegexValidator(
    r"^[a-z0-9][a-z0-9-]{2,63}$",
    "Use 3-64 lowercase letters, digits or '-', starting with a letter or digit.",
)


def default_token_budget() -> int:
    return settings.MCPHUB_DEFAULT_TOKEN_BUDGET


# Why an LLM's tool call waits for the user: shown with the approval prompt in chat and on run pages.
MARKED_DESTRUCTIVE = "marked destructive by its server"
NOT_READ_ONLY = "may change data: the server does not mark it read-only"
EVERY_CALL = "this endpoint asks before every tool call"


def read_only(annotations: object) -> bool:
    """Whether a tool's server marks it read-only (MCP `readOnlyHint: true`): sending it again
    changes nothing."""
    return isinstance(annotations, dict) and annotations.get("readOnlyHint") is True


def destructive_reason(annotations: object) -> str | None:
    """Why MCP's annotation defaults count a tool as destructive, or None when they do not.

    ToolAnnotations: `readOnlyHint` defaults to false and `destructiveHint` (meaningful only when
    the tool is not read-only) to true, so a tool may destroy data unless its server marks it
    `readOnlyHint: true` or `destructiveHint: false`; most servers mark nothing. Only a JSON true
    or false is a mark: the annotations are whatever a server sent."""
    hints = annotations if isinstance(annotations, dict) else {}
    if hints.get("readOnlyHint") is True or hints.get("destructiveHint") is False:
        return None
    return MARKED_DESTRUCTIVE if hints.get("destructiveHint") is True else NOT_READ_ONLY


def validate_roots(value: object) -> None:
    """Roots as MCP's roots/list gives them: a list of {"uri": "file://…", "name"?: "…"}."""
    if not isinstance(value, list) or len(value) > 100:
        raise ValidationError("Roots are a list of at most 100 {uri, name} entries.")
    for root in value:
        uri = root.get("uri") if isinstance(root, dict) else None
        if not isinstance(uri, str) or not uri.startswith("file://") or len(uri) > 2048:
            raise ValidationError(f"A root's uri must be a file:// URI, not {uri!r}.")
        if set(root) - {"uri", "name"} or not isinstance(root.get("name", ""), str):
            raise ValidationError("A root has a uri and, optionally, a name (text).")


class Endpoint(TimeStampedModel):
    """One MCP URL (`/mcp/<slug>/`) serving exactly the tools its owner enabled."""

    class Naming(models.TextChoices):
        PREFIXED = "prefixed", "Prefixed (server__tool)"
        HYBRID = "hybrid", "Hybrid (natural name unless two servers clash)"

    class Mode(models.TextChoices):
        STATIC = "static", "Static (all enabled tools listed)"
        DYNAMIC = "dynamic", "Dynamic (search and load tools on demand)"

    class Approval(models.TextChoices):
        OFF = "off", "Off (tools run without asking)"
        DESTRUCTIVE = (
            "destructive",
            "Tools that may change data (all but those marked read-only or non-destructive)",
        )
        ALL = "all", "Every call"

    class Sampling(models.TextChoices):
        OFF = "off", "Off (refuse backends' sampling requests)"
        ASK = "ask", "Ask (the chat or run page shows the request; you allow or deny it)"
        AUTO = "auto", "Auto (your model answers at once)"

    def approval_reason(self, annotations: object) -> str | None:
        """Why an LLM's call to a tool with these annotations waits for the user's approval, or
        None when it runs at once."""
        if self.approval == self.Approval.OFF:
            return None
        reason = destructive_reason(annotations)
        return reason or (EVERY_CALL if self.approval == self.Approval.ALL else None)

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="endpoints"
    )
    slug = models.CharField(max_length=64, unique=True, validators=[endpoint_slug_validator])
    name = models.CharField(max_length=100)
    is_default = models.BooleanField(default=False, editable=False)
    tools = models.ManyToManyField(
        "catalog.Tool", through="EndpointTool", related_name="endpoints", blank=True
    )
    naming_strategy = models.CharField(max_length=10, choices=Naming.choices, default=Naming.HYBRID)
    token_budget = models.PositiveIntegerField(default=default_token_budget)
    budget_enforced = models.BooleanField(
        default=True, help_text="Refuse enabling tools beyond the budget (off: warn only)."
    )
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.STATIC)
    approval = models.CharField(
        max_length=12,
        choices=Approval.choices,
        default=Approval.DESTRUCTIVE,
        help_text=(
            "Which tool calls by an LLM (chat, autonomous runs) wait for the user's approval. As MCP's defaults "
            "say, a tool may change data unless its server marks it readOnlyHint: true or destructiveHint: false."
        ),
    )
    sampling = models.CharField(
        max_length=4,
        choices=Sampling.choices,
        default=Sampling.ASK,
        help_text=(
            "Who answers a backend's sampling/createMessage when the caller cannot (chat, runs, "
            "gateway clients that do not declare sampling): nobody, your model after you allow it, "
            "or your model at once."
        ),
    )
    sampling_max_tokens = models.PositiveIntegerField(
        default=1024, help_text="The most output tokens one sampling request may spend."
    )
    # The roots backends get from roots/list during calls made by chat and runs (and by gateway
    # clients that do not declare roots): [{"uri": "file:///…", "name": "…"}].
    roots = models.JSONField(default=list, blank=True, validators=[validate_roots])

    class Meta:
        ordering = ["owner__username", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["owner"],
                condition=models.Q(is_default=True),
                name="one_default_endpoint_per_user",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.slug})"

    @property
    def path(self) -> str:
        return f"/mcp/{self.slug}/"


class EndpointTool(models.Model):
    """A tool enabled on an endpoint, with optional per-endpoint name and description overrides."""

    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="endpoint_tools")
    tool = models.ForeignKey(
        "catalog.Tool", on_delete=models.CASCADE, related_name="endpoint_tools"
    )
    name_override = models.CharField(
        max_length=64,
        blank=True,
        validators=[
            RegexValidator(r"^[A-Za-z0-9_-]{1,64}$", "Use 1-64 letters, digits, '_' or '-'.")
        ],
    )
    description_override = models.TextField(blank=True)
    # The name clients first saw it under (apps/toolsets/naming.py): kept whatever is added later,
    # until the owner renames it or changes the endpoint's naming strategy.
    exposed_name = models.CharField(max_length=64, blank=True, editable=False)
    enabled_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["endpoint", "tool"], name="unique_endpoint_tool")
        ]

    def __str__(self) -> str:
        return f"{self.endpoint.slug}: {self.tool_id}"


class Preset(TimeStampedModel):
    """A named selection of tools; every save adds a PresetVersion, so nothing saved is lost."""

    class Visibility(models.TextChoices):
        PRIVATE = "private", "Only me"
        TEAM = "team", "My team"

    name = models.CharField(max_length=100)
    description = models.TextField(blank=True)
    # SET_NULL: a member leaving (or being deleted) must never delete what they shared with the team.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="presets",
    )
    team = models.ForeignKey(
        "accounts.Team", null=True, blank=True, on_delete=models.SET_NULL, related_name="presets"
    )
    visibility = models.CharField(
        max_length=10, choices=Visibility.choices, default=Visibility.PRIVATE
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(visibility="team") | models.Q(team__isnull=False),
                name="team_preset_has_team",
            )
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def latest_version(self) -> PresetVersion | None:
        return self.versions.order_by("-number").first()


class PresetVersion(models.Model):
    """An immutable snapshot of a preset's tools, as `server.tool` keys (they outlive catalog rows)."""

    preset = models.ForeignKey(Preset, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    tool_keys = models.JSONField(default=list)
    note = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["preset", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["preset", "number"], name="unique_preset_version")
        ]

    def __str__(self) -> str:
        return f"{self.preset.name} v{self.number}"


class ToolCall(models.Model):
    """The tool-call log: who called what, how long it took, and whether it worked (gateway and chat)."""

    # Names are copied, not only linked: the log must outlive renamed or deleted servers/tools.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    endpoint = models.ForeignKey(
        "toolsets.Endpoint", null=True, on_delete=models.SET_NULL, related_name="+"
    )
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
        # Moved here from `gateway` (the chat records its calls too): table and index keep their names.
        db_table = "gateway_toolcall"
        ordering = ["-started_at"]
        indexes = [
            models.Index(
                fields=["server_name", "tool_name", "started_at"],
                name="gateway_too_server__336e58_idx",
            )
        ]

    def __str__(self) -> str:
        return f"{self.exposed_name} ({'ok' if self.ok else 'error'}, {self.duration_ms:.1f} ms)"


class SamplingUsage(models.Model):
    """Tokens the hub spent answering a backend's sampling with the user's own model during a
    gateway call (chat turns and runs count theirs with the turn or run). Names are copied, as in
    the call log, so the record outlives renamed or deleted servers and endpoints."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    endpoint = models.ForeignKey(
        "toolsets.Endpoint", null=True, on_delete=models.SET_NULL, related_name="+"
    )
    server_name = models.CharField(max_length=40, blank=True)
    model = models.CharField(max_length=200)
    input_tokens = models.PositiveIntegerField()
    output_tokens = models.PositiveIntegerField()
    created_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-created_at"]
