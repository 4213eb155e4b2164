"""Writes for accounts: tokens and teams."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.text import slugify

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
    scope = scope or (
        TokenScope.MCP
        if endpoint is not None
        else issued_by.scope
        if issued_by
        else TokenScope.FULL
    )
    if scope not in TokenScope.values:
        raise ValueError(
            f"Unknown token scope {scope!r}; choose one of {', '.join(TokenScope.values)}."
        )
    if endpoint is not None and endpoint.owner_id != user.pk:
        raise ValueError("A token can only be scoped to one of its user's own endpoints.")
    if endpoint is not None and scope != TokenScope.MCP:
        raise ValueError(
            "Only an MCP token can name an endpoint; API tokens reach the REST API only."
        )
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


def _check_not_broader(
    issuer: AccessToken, *, scope: str, endpoint, expires_at: datetime | None
) -> None:
    wanted = AccessToken(scope=scope).rights
    if not wanted <= issuer.rights:
        raise TokenTooBroad(
            f"A token with scope '{issuer.scope}' cannot create a '{scope}' token: it would reach further than itself."
        )
    if (
        "mcp" in wanted
        and issuer.endpoint_id is not None
        and (endpoint is None or endpoint.pk != issuer.endpoint_id)
    ):
        raise TokenTooBroad(
            "This token reaches one endpoint only, so it can only create tokens for that endpoint."
        )
    if issuer.expires_at is not None and (expires_at is None or expires_at > issuer.expires_at):
        raise TokenTooBroad(
            "This token expires; a token it creates must expire no later than it does."
        )


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
    membership, _ = Membership.objects.update_or_create(
        team=team, user=user, defaults={"role": role}
    )
    return membership


# --- Teams managed by their members (the Teams pages) --------------------------------------------
# Owners and admins manage membership; only owners change roles or touch another owner or admin;
# a team always keeps an owner.

MANAGERS = (Membership.Role.OWNER, Membership.Role.ADMIN)


class TeamError(ValueError):
    """A team change the hub refuses, with a message the person can act on."""


def role_in(team: Team, user: User) -> str | None:
    return Membership.objects.filter(team=team, user=user).values_list("role", flat=True).first()


def create_team_named(*, name: str, owner: User) -> Team:
    """A new team with a slug made from its name (unique), `owner` its owner."""
    name = name.strip()
    if not name:
        raise TeamError("Give the team a name.")
    return create_team(name=name[:100], slug=unique_team_slug(name), owner=owner)


def unique_team_slug(name: str) -> str:
    """A slug made from `name` that no team has yet."""
    base = slugify(name)[:40] or "team"
    slug, n = base, 1
    while Team.objects.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


@transaction.atomic
def invite_member(*, team: Team, actor: User, who: str) -> Membership:
    """Add the user named by username or email (exactly one match) as a member."""
    _require(role_in(team, actor) in MANAGERS, "Only the team's owners and admins add members.")
    who = who.strip()
    matches = (
        list(
            User.objects.filter(Q(username__iexact=who) | Q(email__iexact=who), is_active=True)[:2]
        )
        if who
        else []
    )
    if len(matches) != 1:
        raise TeamError(
            f"No single active user has the username or email {who!r}."
            if who
            else "Give a username or email."
        )
    if Membership.objects.filter(team=team, user=matches[0]).exists():
        raise TeamError(f"{matches[0].get_username()} is already in {team.name}.")
    return Membership.objects.create(team=team, user=matches[0], role=Membership.Role.MEMBER)


@transaction.atomic
def remove_member(*, team: Team, actor: User, user: User) -> None:
    """`actor` takes `user` out of the team (or leaves it, when they are the same person)."""
    actor_role, role = role_in(team, actor), role_in(team, user)
    if role is None:
        raise TeamError(f"{user.get_username()} is not in {team.name}.")
    if actor.pk != user.pk:
        _require(actor_role in MANAGERS, "Only the team's owners and admins remove members.")
        _require(
            role == Membership.Role.MEMBER or actor_role == Membership.Role.OWNER,
            "Only an owner removes another owner or an admin.",
        )
    _keep_an_owner(team, leaving=user, role=role)
    Membership.objects.filter(team=team, user=user).delete()


@transaction.atomic
def set_role(*, team: Team, actor: User, user: User, role: str) -> Membership:
    _require(role in Membership.Role.values, f"{role!r} is not a role: owner, admin or member.")
    _require(role_in(team, actor) == Membership.Role.OWNER, "Only the team's owners change roles.")
    membership = Membership.objects.select_for_update().filter(team=team, user=user).first()
    if membership is None:
        raise TeamError(f"{user.get_username()} is not in {team.name}.")
    if role != Membership.Role.OWNER:
        _keep_an_owner(team, leaving=user, role=membership.role)
    membership.role = role
    membership.save(update_fields=["role", "updated_at"])
    return membership


def _keep_an_owner(team: Team, *, leaving: User, role: str) -> None:
    others = (
        Membership.objects.select_for_update()
        .filter(team=team, role=Membership.Role.OWNER)
        .exclude(user=leaving)
    )
    if role == Membership.Role.OWNER and not others.exists():
        raise TeamError(f"{team.name} needs an owner: make someone else owner first.")


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise TeamError(message)
