"""Writes for single sign-on: who a signed-in person is, and what the provider says they belong to.

Changes made here during a sign-in are audited with source "sso" (their requests run under
/sso/: apps/audit/context.py).
"""

from __future__ import annotations

from importlib import import_module

from django.conf import settings
from django.db import transaction

from apps.accounts.models import Membership, SsoSession, Team, User
from apps.accounts.services import unique_team_slug
from apps.accounts.sso import config


class SsoRefused(Exception):
    """A sign-in the hub turns down, with the reason shown to the person."""


def claim(claims: dict, name: str) -> str:
    value = claims.get(name)
    return value.strip() if isinstance(value, str) else ""


def email_verified(claims: dict) -> bool:
    # Some providers send the string "true".
    return claims.get("email_verified") in (True, "true")


def check_allowed(claims: dict) -> None:
    """With MCPHUB_SSO_EMAIL_DOMAINS set, only people whose verified email is in one of those
    domains get in (a provider like Google signs in anyone with an account there)."""
    domains = {d.lower().lstrip("@") for d in settings.MCPHUB_SSO_EMAIL_DOMAINS}
    if not domains:
        return
    email = claim(claims, settings.MCPHUB_SSO_EMAIL_CLAIM)
    if not (email_verified(claims) and email.rpartition("@")[2].lower() in domains):
        raise SsoRefused(
            "This hub admits verified emails of "
            + ", ".join(sorted(domains))
            + f" only{f', not {email}' if email else ''}."
        )


@transaction.atomic
def account_for(claims: dict) -> User:
    """The account a first sign-in lands in: the one whose email the provider vouches for (never
    an unverified claim), else a new one named by the configured claims."""
    email = claim(claims, settings.MCPHUB_SSO_EMAIL_CLAIM)
    if email:
        same_email = list(User.objects.filter(email__iexact=email)[:2])
        if same_email and not email_verified(claims):
            raise SsoRefused(
                f"An account with the email {email} exists, but the provider does not vouch for "
                "that email, so this sign-in is not linked to it. Ask an administrator."
            )
        if len(same_email) > 1:
            raise SsoRefused(
                f"Several accounts have the email {email}; an administrator must resolve that first."
            )
        if same_email:
            return same_email[0]
    wanted = claim(claims, settings.MCPHUB_SSO_USERNAME_CLAIM) or email.partition("@")[0] or "user"
    user = User(username=_free_username(wanted), email=email)
    user.set_unusable_password()
    user.save()
    return user


def _free_username(wanted: str) -> str:
    base = "".join(c for c in wanted if c.isalnum() or c in "@.+-_")[:140] or "user"
    name, n = base, 1
    while User.objects.filter(username__iexact=name).exists():
        n += 1
        name = f"{base}-{n}"
    return name


def groups_of(claims: dict) -> set[str]:
    value = claims.get(settings.MCPHUB_SSO_GROUPS_CLAIM)
    if isinstance(value, str):
        value = [value]
    return {g for g in value or () if isinstance(g, str)}


@transaction.atomic
def follow_groups(*, user: User, groups: set[str]) -> None:
    """Make the user's memberships in the mapped teams, and staff / superuser (when their groups
    are configured), what the provider's groups say; teams named by the mapping are made as
    needed. Teams the mapping does not name are left alone."""
    mapping = config.team_mapping()
    wanted: dict[str, str] = {}
    for group, (team, role) in mapping.items():
        if group in groups and wanted.get(team) != Membership.Role.ADMIN:
            wanted[team] = role
    for name in sorted({team for team, _ in mapping.values()}):
        team = Team.objects.filter(name=name).order_by("pk").first()
        membership = team and Membership.objects.filter(team=team, user=user).first()
        role = wanted.get(name)
        if role is None:
            if membership:
                membership.delete()
            continue
        if team is None:
            team = Team.objects.create(name=name, slug=unique_team_slug(name))
        if membership is None:
            Membership.objects.create(team=team, user=user, role=role)
        elif membership.role != role and membership.role != Membership.Role.OWNER:
            membership.role = role
            membership.save(update_fields=["role", "updated_at"])
    changed = []
    if settings.MCPHUB_SSO_STAFF_GROUPS:
        staff = bool(groups & set(settings.MCPHUB_SSO_STAFF_GROUPS))
        if user.is_staff != staff:
            user.is_staff = staff
            changed.append("is_staff")
    if settings.MCPHUB_SSO_SUPERUSER_GROUPS:
        superuser = bool(groups & set(settings.MCPHUB_SSO_SUPERUSER_GROUPS))
        if user.is_superuser != superuser:
            user.is_superuser = superuser
            changed.append("is_superuser")
    if changed:
        user.save(update_fields=changed)


def end_provider_session(*, provider: str, sid: str, sub: str | None) -> int:
    """End the hub sessions a sign-in opened in the provider's session `sid` (back-channel logout
    naming it); with `sub`, only that person's. Returns how many ended."""
    rows = SsoSession.objects.filter(provider=provider, sid=sid)
    if sub:
        rows = rows.filter(user__socialaccount__provider=provider, user__socialaccount__uid=sub)
    store = import_module(settings.SESSION_ENGINE).SessionStore
    keys = list(rows.values_list("session_key", flat=True))
    for key in keys:
        store(session_key=key).delete()
    SsoSession.objects.filter(provider=provider, sid=sid, session_key__in=keys).delete()
    return len(keys)


def end_sessions(*, user: User) -> None:
    """End every hub session of an SSO account (back-channel logout): sessions are bound to the
    password hash, and an SSO account's password is an unusable random one, so a new one ends
    them at their next request. An account that also has a password keeps its sessions."""
    if not user.has_usable_password():
        user.set_unusable_password()
        user.save(update_fields=["password"])
