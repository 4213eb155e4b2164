"""Users, teams and the access tokens MCP clients and scripts authenticate with."""

from __future__ import annotations

from django.contrib.auth.models import AbstractUser
from django.db import models
from django.utils import timezone

from apps.core.fields import EncryptedJSONField
from apps.core.models import TimeStampedModel


class User(AbstractUser):
    """The hub's user; custom from the first migration so it can grow without pain."""


class Team(TimeStampedModel):
    name = models.CharField(max_length=100)
    slug = models.SlugField(max_length=50, unique=True)
    members = models.ManyToManyField(User, through="Membership", related_name="teams")

    def __str__(self) -> str:
        return self.name


class Membership(TimeStampedModel):
    class Role(models.TextChoices):
        OWNER = "owner"
        ADMIN = "admin"
        MEMBER = "member"

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "team"], name="unique_membership")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


class AccessTokenQuerySet(models.QuerySet):
    def active(self) -> AccessTokenQuerySet:
        now = timezone.now()
        return self.filter(revoked_at__isnull=True).filter(
            models.Q(expires_at__isnull=True) | models.Q(expires_at__gt=now)
        )


class TokenScope(models.TextChoices):
    """What a token may do. Endpoint-scoped tokens sit in client URLs, so they must never be
    account credentials: MCP tokens reach MCP endpoints only, API tokens the REST API only."""

    MCP = "mcp", "MCP only"
    API_READ = "api_read", "API read-only"
    API_WRITE = "api_write", "API read-write"
    # What every token without an endpoint could do before scopes existed; kept for those tokens.
    FULL = "full", "Full (API read-write and MCP)"


# The rights each scope carries; a token may only create tokens whose rights are a subset of its own.
SCOPE_RIGHTS: dict[str, frozenset[str]] = {
    TokenScope.MCP: frozenset({"mcp"}),
    TokenScope.API_READ: frozenset({"api_read"}),
    TokenScope.API_WRITE: frozenset({"api_read", "api_write"}),
    TokenScope.FULL: frozenset({"api_read", "api_write", "mcp"}),
}


class AccessToken(models.Model):
    """A bearer token: only its prefix (for lookup) and an HMAC digest are stored.

    The raw value is shown once at creation. Its `scope` says where it works (see TokenScope);
    an MCP token may name one endpoint, which also lets it sit in the URL for clients that
    cannot set headers.
    """

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="access_tokens")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=16, unique=True, editable=False)
    digest = models.CharField(max_length=64, editable=False)
    # Referenced by name: toolsets depends on accounts, never the other way round in code.
    endpoint = models.ForeignKey(
        "toolsets.Endpoint", null=True, blank=True, on_delete=models.CASCADE, related_name="tokens"
    )
    scope = models.CharField(max_length=10, choices=TokenScope.choices, default=TokenScope.FULL)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    rate_limit_per_minute = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="MCP requests per minute for this token (empty: the hub default).",
    )
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = AccessTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(endpoint__isnull=True) | models.Q(scope=TokenScope.MCP),
                name="only_mcp_tokens_name_an_endpoint",
            )
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @property
    def rights(self) -> frozenset[str]:
        return SCOPE_RIGHTS[self.scope]

    def allows_api(self, *, write: bool) -> bool:
        return ("api_write" if write else "api_read") in self.rights

    def api_refusal(self, *, write: bool) -> str | None:
        """Why this token may not read (or, `write`, change) through the REST API or the chat and
        run sockets, or None when it may: one rule and one text for every such entry point."""
        if self.allows_api(write=write):
            return None
        if not self.allows_api(write=False):
            return (
                "This token is for MCP endpoints only. Create a token with an API scope (api_read or api_write) for "
                "the REST API and the chat and run sockets."
            )
        return "This token is read-only (api_read): it cannot change anything."

    @property
    def allows_mcp(self) -> bool:
        return "mcp" in self.rights

    @property
    def scope_label(self) -> str:
        """How pages and listings name what this token reaches."""
        if self.scope == TokenScope.MCP:
            return f"MCP: {self.endpoint.slug}" if self.endpoint_id else "MCP: all your endpoints"
        return self.get_scope_display()

    @property
    def is_active(self) -> bool:
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or self.expires_at > timezone.now()


class SsoProvider(TimeStampedModel):
    """An OpenID Connect provider people sign in with, added in the admin (providers may also
    come from settings: apps/accounts/sso/config.py). Its client secret is encrypted at rest."""

    slug = models.SlugField(
        max_length=40,
        unique=True,
        help_text="Names the provider in its URLs: the redirect URI to register at the provider "
        "is /sso/oidc/<slug>/login/callback/.",
    )
    name = models.CharField(max_length=100, help_text="The sign-in button reads 'Sign in with …'.")
    issuer = models.URLField(
        help_text="The issuer URL; the hub reads <issuer>/.well-known/openid-configuration."
    )
    client_id = models.CharField(max_length=255)
    client_secret = EncryptedJSONField(default=str, blank=True)
    scopes = models.CharField(
        max_length=255,
        default="openid profile email",
        help_text="Space-separated; add the scope that puts the groups claim in the tokens if "
        "your provider needs one.",
    )
    enabled = models.BooleanField(default=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "SSO provider"

    def __str__(self) -> str:
        return self.name


class SsoSession(models.Model):
    """A hub session opened by an SSO sign-in whose ID token carried the provider's session id:
    a back-channel logout naming only that `sid` ends exactly this session. Rows of sessions that
    ended otherwise are dropped once older than a session can live (sso/session.py)."""

    provider = models.CharField(max_length=40)
    sid = models.CharField(max_length=255)
    session_key = models.CharField(max_length=40)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        indexes = [models.Index(fields=["provider", "sid"], name="sso_session_by_sid")]
        verbose_name = "SSO session"

    def __str__(self) -> str:
        return f"{self.user} via {self.provider}"
