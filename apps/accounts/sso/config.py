"""The providers people sign in with and how their groups map onto the hub.

Providers come from settings (MCPHUB_SSO_PROVIDERS) and from the admin (SsoProvider); a slug
set in both is the settings' one. Each becomes an unsaved allauth SocialApp, built per request,
so the client secret stays encrypted at rest and allauth's own table is never used.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from allauth.socialaccount.models import SocialApp
from allauth.socialaccount.providers.github.views import GitHubOAuth2Adapter
from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse

from apps.accounts.models import Membership, SsoProvider

OIDC = "openid_connect"  # allauth's provider type; each of ours is one of its "sub-providers"
TEAM_ROLES = (Membership.Role.MEMBER, Membership.Role.ADMIN)


@dataclass(frozen=True)
class Provider:
    slug: str
    name: str
    issuer: str
    client_id: str
    client_secret: str
    scopes: str


GITHUB = "github"  # allauth's GitHub provider: OAuth, no OpenID Connect (see github_app)


def github_app() -> SocialApp | None:
    """GitHub's OAuth app, when MCPHUB_SSO_GITHUB_CLIENT_ID is set."""
    github = settings.MCPHUB_SSO_GITHUB
    if not github["client_id"]:
        return None
    return SocialApp(
        provider=GITHUB,
        provider_id=GITHUB,
        name=github["name"],
        client_id=github["client_id"],
        secret=github["client_secret"],
    )


def buttons() -> list[tuple[str, str]]:
    """(name, sign-in URL) of every provider, for the sign-in page."""
    found = [
        (p.name, reverse("openid_connect_login", kwargs={"provider_id": p.slug}))
        for p in providers()
    ]
    if app := github_app():
        found.append((app.name, reverse("github_login")))
    return found


def providers() -> list[Provider]:
    found = {p["slug"]: Provider(**p) for p in settings.MCPHUB_SSO_PROVIDERS}
    for row in SsoProvider.objects.filter(enabled=True):
        found.setdefault(
            row.slug,
            Provider(
                slug=row.slug,
                name=row.name,
                issuer=row.issuer,
                client_id=row.client_id,
                client_secret=row.client_secret or "",
                scopes=row.scopes,
            ),
        )
    return list(found.values())


def social_app(provider: Provider) -> SocialApp:
    return SocialApp(
        provider=OIDC,
        provider_id=provider.slug,
        name=provider.name,
        client_id=provider.client_id,
        secret=provider.client_secret,
        settings={
            "server_url": provider.issuer.rstrip("/"),
            "oauth_pkce_enabled": True,
            "scope": provider.scopes.split(),
        },
    )


def provider_origins() -> list[str]:
    """Where the sign-in buttons send the browser (the issuers' origins), for the page's CSP."""
    urls = [provider.issuer for provider in providers()]
    if github_app():
        urls.append(GitHubOAuth2Adapter.authorize_url)
    origins = set()
    for url in urls:
        parts = urlsplit(url)
        origins.add(f"{parts.scheme}://{parts.netloc}")
    return sorted(origins)


def team_mapping() -> dict[str, tuple[str, str]]:
    """group → (team name, role) from MCPHUB_SSO_TEAMS ("group=Team name[:admin]", comma-separated)."""
    mapping: dict[str, tuple[str, str]] = {}
    for entry in settings.MCPHUB_SSO_TEAMS:
        group, sep, target = entry.partition("=")
        team, _, role = target.partition(":")
        group, team, role = group.strip(), team.strip(), (role.strip() or Membership.Role.MEMBER)
        if not sep or not group or not team or role not in TEAM_ROLES:
            raise ImproperlyConfigured(
                f"MCPHUB_SSO_TEAMS entry {entry!r} should read group=Team name, or "
                "group=Team name:admin (roles: member, admin)."
            )
        mapping[group] = (team, role)
    return mapping


def is_sso_only() -> bool:
    return settings.MCPHUB_SSO_ONLY


def may_use_password(username: str | None) -> bool:
    """Whether password sign-in is open to `username`: always, unless SSO-only mode is on and the
    account is not one of the named break-glass accounts."""
    return not settings.MCPHUB_SSO_ONLY or (username or "") in settings.MCPHUB_SSO_BREAK_GLASS


def check_settings(**kwargs) -> list[checks.CheckMessage]:
    """A malformed MCPHUB_SSO_TEAMS is reported when the hub starts, not at someone's sign-in."""
    try:
        team_mapping()
    except ImproperlyConfigured as e:
        return [checks.Error(str(e), id="accounts.E001")]
    return []
