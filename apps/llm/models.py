"""LLM provider accounts: shared ones (created by staff) and users' private ones."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from apps.core.fields import EncryptedJSONField
from apps.core.models import TimeStampedModel
from apps.core.outbound import literal_problem
from apps.llm.model_traits import validate as validate_model_traits

OLLAMA_PORT = 11434


def validate_base_url(value: str) -> None:
    # Not URLValidator: it refuses single-label hosts such as a compose service `http://ollama:11434/v1`.
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError(
            "Enter an http(s) URL such as http://127.0.0.1:1234/v1 or https://api.openai.com/v1."
        )
    if parts.query or parts.fragment or parts.username or parts.password:
        raise ValidationError(
            "The base URL takes no query, fragment or credentials; put the key in API key."
        )


# `reasoning_effort` values OpenAI-compatible servers know ("none": GPT-5.1 without reasoning).
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high")


class Provider(TimeStampedModel):
    """One account at an LLM service. `owner` empty: shared with everyone (staff create those).

    `is_default` marks the owner's default (for a shared provider: the site default); setting it
    through services.py clears the previous one, so a form may set it freely. The API key
    is encrypted at rest and never returned by any API or page.
    """

    class Kind(models.TextChoices):
        OPENAI = "openai", "OpenAI-compatible (OpenAI, LM Studio, Ollama, vLLM, llama.cpp)"
        ANTHROPIC = "anthropic", "Anthropic (Messages API)"

    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.OPENAI)
    base_url = models.CharField(max_length=2048, validators=[validate_base_url])
    default_model = models.CharField(max_length=200, blank=True)
    api_key = EncryptedJSONField(default="", blank=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="llm_providers",
        help_text="Empty: shared with every user.",
    )
    is_default = models.BooleanField(default=False)
    # Model settings (apps.llm.adapters.base.Tuning): empty means the provider's and model's defaults.
    reasoning_effort = models.CharField(
        max_length=10,
        blank=True,
        choices=[(e, e) for e in REASONING_EFFORTS],
        help_text="OpenAI-compatible reasoning models: how hard they think (sent as reasoning_effort). Empty: the model's default.",
    )
    thinking_budget = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1024), MaxValueValidator(1_000_000)],
        help_text="Anthropic: turns on extended thinking with this many tokens of budget (at least 1024). Empty: off.",
    )
    max_output_tokens = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(10_000_000)],
        help_text="The longest reply, in tokens. Empty: the model's own limit.",
    )
    # A sampling request's cost/speed/intelligence priorities rank these before the family table.
    model_traits = models.JSONField(
        default=dict,
        blank=True,
        validators=[validate_model_traits],
        help_text="Your ranking of this provider's models for sampling requests' priorities, "
        'each 0-1 (cost: high for a cheap model): {"my-model": {"cost": 0.9, "speed": 0.8, '
        '"intelligence": 0.4}}. Models left out use the hub\'s table of known families.',
    )

    class Meta:
        ordering = ["name", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "name"],
                name="llm_provider_unique_name_per_owner",
                violation_error_message="You already have a provider with this name.",
            ),
            # NULLs never clash in a unique index, so shared names need their own rule.
            models.UniqueConstraint(
                fields=["name"],
                condition=Q(owner__isnull=True),
                name="llm_provider_unique_shared_name",
                violation_error_message="A shared provider with this name already exists.",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        super().clean()
        errors = {}
        # What shows without DNS is refused at once; the connect-time check catches the rest.
        problem = self.public_only and literal_problem(self.base_url)
        if problem:
            errors["base_url"] = problem
        elif ollama_root := self._ollama_without_v1():
            errors["base_url"] = (
                f"Ollama serves its OpenAI-compatible API under /v1: enter {ollama_root}/v1."
            )
        if self.reasoning_effort and self.kind != self.Kind.OPENAI:
            errors["reasoning_effort"] = (
                "Only OpenAI-compatible providers take a reasoning effort; for Anthropic set a thinking budget."
            )
        if self.thinking_budget and self.kind != self.Kind.ANTHROPIC:
            errors["thinking_budget"] = (
                "Only Anthropic providers take a thinking budget; OpenAI-compatible ones a reasoning effort."
            )
        elif (
            self.thinking_budget
            and self.max_output_tokens
            and self.thinking_budget >= self.max_output_tokens
        ):
            errors["thinking_budget"] = (
                "The thinking budget must be smaller than the output limit (Anthropic counts thinking in it)."
            )
        if errors:
            raise ValidationError(errors)

    def _ollama_without_v1(self) -> str:
        """The base URL when it is Ollama's root (its own API), where this kind needs its /v1."""
        parts = urlsplit(self.base_url or "")
        try:
            port = parts.port
        except ValueError:  # validate_base_url reports it
            return ""
        if self.kind == self.Kind.OPENAI and port == OLLAMA_PORT and parts.path.strip("/") == "":
            return self.base_url.rstrip("/")
        return ""

    @property
    def is_shared(self) -> bool:
        return self.owner_id is None

    @property
    def public_only(self) -> bool:
        """A non-staff user chose base_url: requests to it go through the outbound address policy
        (apps/core/outbound.py). Reads the owner (one query unless it was loaded with the row)."""
        return self.owner_id is not None and not self.owner.is_staff

    @property
    def has_api_key(self) -> bool:
        return bool(self.api_key)
