"""allauth's hook into the hub: the providers it knows, and the hub's decision at every sign-in."""

from __future__ import annotations

import hmac
import logging

from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import render

from apps.accounts.sso import accounts, config
from apps.accounts.sso.oidc import HubOidcProvider

log = logging.getLogger(__name__)


def refused(request, message: str, *, status: int = 403) -> HttpResponse:
    return render(request, "registration/sso_refused.html", {"message": message}, status=status)


def refuse(request, message: str, *, status: int = 403) -> ImmediateHttpResponse:
    return ImmediateHttpResponse(refused(request, message, status=status))


class SsoAdapter(DefaultSocialAccountAdapter):
    def list_apps(self, request, provider=None, client_id=None):
        apps = [config.social_app(p) for p in config.providers()]
        if github := config.github_app():
            apps.append(github)
        if provider:
            apps = [a for a in apps if provider in (a.provider, a.provider_id)]
        if client_id:
            apps = [a for a in apps if a.client_id == client_id]
        return apps

    def get_provider(self, request, provider, client_id=None):
        if provider == config.GITHUB:
            return super().get_provider(request, provider, client_id)
        return HubOidcProvider(request, app=self.get_app(request, provider, client_id))

    def is_open_for_signup(self, request, sociallogin) -> bool:
        return True  # the hub made or linked the account in pre_social_login already

    def on_authentication_error(
        self, request, provider, error=None, exception=None, extra_context=None
    ) -> None:
        log.warning("SSO sign-in with %s failed: %s %s", provider, error, exception or "")
        raise refuse(
            request,
            "The sign-in with the identity provider did not complete or could not be verified. "
            "Try again; if it keeps failing, ask an administrator.",
        )

    def pre_social_login(self, request, sociallogin) -> None:
        if sociallogin.account.provider == config.GITHUB:
            self._admit(request, sociallogin, github_claims(sociallogin), groups=None)
            return
        data = sociallogin.account.extra_data
        id_token, userinfo = data.get("id_token") or {}, data.get("userinfo") or {}
        expected = (sociallogin.state.get("nonce") or "").encode()
        got = str(id_token.get("nonce", "")).encode()
        if not expected or not hmac.compare_digest(got, expected):
            log.warning("SSO sign-in refused: ID token nonce does not match the request")
            raise refuse(request, "The identity provider's answer did not match this sign-in.")
        if userinfo and userinfo.get("sub") != id_token.get("sub"):
            raise refuse(request, "The identity provider's answer did not match this sign-in.")
        claims = {**id_token, **userinfo}
        self._admit(request, sociallogin, claims, groups=accounts.groups_of(claims))

    def _admit(self, request, sociallogin, claims: dict, *, groups: set[str] | None) -> None:
        """Find, link or make the account; refuse it if deactivated; follow its groups (GitHub
        sends none: its sign-ins leave memberships alone)."""
        try:
            accounts.check_allowed(claims)
            if not sociallogin.is_existing:
                sociallogin.user = accounts.account_for(claims)
                sociallogin.save(request, connect=True)
        except accounts.SsoRefused as e:
            raise refuse(request, str(e)) from None
        user = sociallogin.user
        if not user.is_active:
            raise refuse(request, "This account is deactivated in the hub. Ask an administrator.")
        if groups is not None:
            accounts.follow_groups(user=user, groups=groups)


def github_claims(sociallogin) -> dict:
    """GitHub's answer as the claims the account rules read: its login, and its primary email
    with whether GitHub verified it (from /user/emails)."""
    primary = next((a for a in sociallogin.email_addresses if a.primary), None)
    return {
        settings.MCPHUB_SSO_USERNAME_CLAIM: sociallogin.account.extra_data.get("login") or "",
        settings.MCPHUB_SSO_EMAIL_CLAIM: primary.email if primary else "",
        "email_verified": bool(primary and primary.verified),
    }
