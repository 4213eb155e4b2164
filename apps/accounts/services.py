"""Writes for accounts: tokens and teams."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from apps.accounts import token_cache, tokens
from apps.accounts.models import AccessToken, Membership, Team, TokenScope, User

# Writing last_used_at on every call would turn each MCP request into a DB write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class TokenTooBroad(ValueError):
    """A token tried to create a token that could do more, or live longer, than itself."""


@transaction.atomic
def create_access_token(
    *,
    user: User,
    name: str = "",
    endpoint=None,
    scope: str | None = None,
    expires_at: datetime | None = None,
    rate_limit_per_minute: int | None = None,
    issued_by: AccessToken | None = None,
) -> tuple[AccessToken, str]:
    """Create a token; the raw value is returned here and nowhere else, ever.

    `scope` defaults to MCP-only for a token naming an endpoint, else to the issuing token's own
    scope, else to full rights (what a signed-in user or an admin may hand out). `issued_by` is the token making this request, if a
    token is: the new one may not reach further nor live longer than it.
    """
    scope = scope or (TokenScope.MCP if endpoint is not None else issued_by.scope if issued_by else TokenScope.FULL)
    if scope not in TokenScope.values:
        raise ValueError(f"Unknown token scope {scope!r}; choose one of {', '.join(TokenScope.values)}.")
    if endpoint is not None and endpoint.owner_id != user.pk:
        raise ValueError("A token can only be scoped to one of its user's own endpoints.")
    if endpoint is not None and scope != TokenScope.MCP:
        raise ValueError("Only an MCP token can name an endpoint; API tokens reach the REST API only.")
    if issued_by is not None:
        _check_not_broader(issued_by, scope=scope, endpoint=endpoint, expires_at=expires_at)
    raw = tokens.generate()
    token = AccessToken.objects.create(
        user=user,
        name=name,
        prefix=raw.prefix,
        digest=tokens.digest(raw.value),
        endpoint=endpoint,
        scope=scope,
        expires_at=expires_at,
        rate_limit_per_minute=rate_limit_per_minute,
    )
    return token, raw.value


def _check_not_broader(issuer: AccessToken, *, scope: str, endpoint, expires_at: datetime | None) -> None:
    wanted = AccessToken(scope=scope).rights
    if not wanted <= issuer.rights:
        raise TokenTooBroad(
            f"A token with scope '{issuer.scope}' cannot create a '{scope}' token: it would reach further than itself."
        )
    if "mcp" in wanted and issuer.endpoint_id is not None and (endpoint is None or endpoint.pk != issuer.endpoint_id):
        raise TokenTooBroad("This token reaches one endpoint only, so it can only create tokens for that endpoint.")
    if issuer.expires_at is not None and (expires_at is None or expires_at > issuer.expires_at):
        raise TokenTooBroad("This token expires; a token it creates must expire no later than it does.")


def authenticate_token(raw: str) -> AccessToken | None:
    """The active token for `raw` (with its user), or None; compares digests in constant time.
    Validated tokens are remembered for a few seconds, any change seen at once (token_cache)."""
    prefix = tokens.parse_prefix(raw)
    if prefix is None:
        return None
    stamp = token_cache.epoch()
    token = token_cache.get(raw, stamp)
    if token is None:
        token = AccessToken.objects.active().select_related("user").filter(prefix=prefix).first()
        if token is None or not tokens.matches(raw, token.digest) or not token.user.is_active:
            return None
        token_cache.put(raw, stamp, token)
    elif not token.is_active:  # expired since it was remembered
        return None
    _touch(token)  # the remembered one: its last_used_at is what the next request compares
    return token_cache.copy_of(token)


def _touch(token: AccessToken) -> None:
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        AccessToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now


def revoke_access_token(*, token: AccessToken) -> None:
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])


@transaction.atomic
def create_team(*, name: str, slug: str, owner: User) -> Team:
    team = Team.objects.create(name=name, slug=slug)
    Membership.objects.create(user=owner, team=team, role=Membership.Role.OWNER)
    return team


def add_member(*, team: Team, user: User, role: str = Membership.Role.MEMBER) -> Membership:
    membership, _ = Membership.objects.update_or_create(team=team, user=user, defaults={"role": role})
    return membership
