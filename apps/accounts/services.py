"""Writes for accounts: tokens and teams."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from apps.accounts import tokens
from apps.accounts.models import AccessToken, Membership, Team, User

# Writing last_used_at on every call would turn each MCP request into a DB write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


@transaction.atomic
def create_access_token(
    *,
    user: User,
    name: str = "",
    endpoint=None,
    expires_at: datetime | None = None,
    rate_limit_per_minute: int | None = None,
) -> tuple[AccessToken, str]:
    """Create a token; the raw value is returned here and nowhere else, ever."""
    if endpoint is not None and endpoint.owner_id != user.pk:
        raise ValueError("A token can only be scoped to one of its user's own endpoints.")
    raw = tokens.generate()
    token = AccessToken.objects.create(
        user=user,
        name=name,
        prefix=raw.prefix,
        digest=tokens.digest(raw.value),
        endpoint=endpoint,
        expires_at=expires_at,
        rate_limit_per_minute=rate_limit_per_minute,
    )
    return token, raw.value


def authenticate_token(raw: str) -> AccessToken | None:
    """The active token for `raw`, or None; compares digests in constant time."""
    prefix = tokens.parse_prefix(raw)
    if prefix is None:
        return None
    token = AccessToken.objects.active().select_related("user").filter(prefix=prefix).first()
    if token is None or not tokens.matches(raw, token.digest) or not token.user.is_active:
        return None
    _touch(token)
    return token


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
