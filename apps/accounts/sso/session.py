"""SSO sessions checked with the provider: a person the provider no longer lets in stops working.

At sign-in the hub keeps the provider's refresh token (encrypted) in the session. Every
MCPHUB_SSO_CHECK_SECONDS a request of that session first asks the provider for fresh tokens with
it; when the provider refuses (`invalid_grant`: the person was disabled, or signed out there, or
their session at the provider ended), the hub session ends — and a new sign-in is refused too if
the person is disabled. A provider that cannot be reached ends nothing. A provider that sends no
refresh token is not checked (ask for one: scope `offline_access` on Okta and Entra ID).

The session also keeps the sign-in's ID token (encrypted), so signing out of the hub signs out at
the provider too (RP-Initiated Logout 1.0: `end_session_url`), and the provider's session id
(`sid`, indexed in SsoSession) for a back-channel logout naming only it.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from urllib.parse import urlencode

import requests
from allauth.account.signals import user_logged_in
from allauth.socialaccount.models import SocialApp
from allauth.socialaccount.providers.oauth2.client import OAuth2Error
from django.conf import settings
from django.contrib.auth import logout
from django.shortcuts import resolve_url
from django.utils import timezone

from apps.accounts.models import SsoSession
from apps.accounts.sso import config
from apps.accounts.sso.oidc import HubOidcAdapter
from apps.core import crypto

log = logging.getLogger(__name__)
SESSION_KEY = "mcphub:sso"


def connect() -> None:
    user_logged_in.connect(_remember, dispatch_uid="mcphub-sso-session")


def _remember(sender, request, user, sociallogin=None, **kwargs) -> None:
    if sociallogin is None or sociallogin.account.provider == config.GITHUB:
        return  # GitHub's OAuth tokens do not say whether the person may still sign in
    refresh = sociallogin.token.token_secret if sociallogin.token else ""
    id_token = getattr(sociallogin, "raw_id_token", "")
    provider = sociallogin.account.provider
    request.session[SESSION_KEY] = {
        "provider": provider,
        "refresh": crypto.encrypt(refresh) if refresh else "",
        "id_token": crypto.encrypt(id_token) if id_token else "",
        "checked": time.time(),
    }
    sid = (sociallogin.account.extra_data.get("id_token") or {}).get("sid")
    if isinstance(sid, str) and sid and request.session.session_key:
        forgotten = timezone.now() - timedelta(seconds=settings.SESSION_COOKIE_AGE)
        SsoSession.objects.filter(created_at__lt=forgotten).delete()
        SsoSession.objects.create(
            provider=provider, sid=sid[:255], session_key=request.session.session_key, user=user
        )


def end_session_url(request) -> str | None:
    """Where to send the browser so the person signs out at the provider too (RP-Initiated
    Logout 1.0: `id_token_hint`, `client_id`, `post_logout_redirect_uri` = the sign-in page, which
    must be registered at the provider); None for a session that did not come from an OpenID
    Connect sign-in, a provider without `end_session_endpoint`, or MCPHUB_SSO_SIGN_OUT_AT_PROVIDER
    off. Call before the session ends."""
    state = request.session.get(SESSION_KEY) if hasattr(request, "session") else None
    if not settings.MCPHUB_SSO_SIGN_OUT_AT_PROVIDER or not state or not state.get("id_token"):
        return None
    adapter = HubOidcAdapter(request, state["provider"])
    try:
        endpoint = adapter.openid_config.get("end_session_endpoint")
        client_id = adapter.get_provider().app.client_id
    except (SocialApp.DoesNotExist, OAuth2Error, requests.RequestException, ValueError) as e:
        log.warning("Signing out at %s skipped: %s", state["provider"], e)
        return None
    if not endpoint:
        return None
    params = {
        "id_token_hint": crypto.decrypt(state["id_token"]),
        "client_id": client_id,
        "post_logout_redirect_uri": request.build_absolute_uri(resolve_url(settings.LOGIN_URL)),
    }
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(params)}"


class SsoSessionCheck:
    """Middleware (after authentication): runs the check when a session's turn has come."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        # Only requests that carry a session look at it (no Vary: Cookie for the others).
        if settings.SESSION_COOKIE_NAME in request.COOKIES:
            state = request.session.get(SESSION_KEY)
            if state and time.time() - state["checked"] >= settings.MCPHUB_SSO_CHECK_SECONDS:
                _check(request, state)
        return self.get_response(request)


def _check(request, state: dict) -> None:
    if not state["refresh"]:
        return
    adapter = HubOidcAdapter(request, state["provider"])
    try:
        app = adapter.get_provider().app
        token_url = adapter.openid_config["token_endpoint"]
        data = {"grant_type": "refresh_token", "refresh_token": crypto.decrypt(state["refresh"])}
        auth = None
        if adapter.basic_auth:
            auth = (app.client_id, app.secret)
        else:
            data |= {"client_id": app.client_id, "client_secret": app.secret}
        response = requests.post(token_url, data=data, auth=auth, timeout=10)
        answer = response.json() if response.content else {}
    except SocialApp.DoesNotExist:
        log.warning("SSO session of %s: its provider %r is gone", request.user, state["provider"])
        logout(request)
        return
    except (requests.RequestException, ValueError, KeyError) as e:
        log.warning("SSO session check with %s failed, tried again later: %s", state["provider"], e)
        answer, response = {}, None
    if (
        response is not None
        and response.status_code == 400
        and answer.get("error") == "invalid_grant"
    ):
        log.info(
            "SSO session of %s ended: %s refused to refresh it", request.user, state["provider"]
        )
        logout(request)
        return
    if response is not None and response.ok and answer.get("refresh_token"):
        state["refresh"] = crypto.encrypt(answer["refresh_token"])  # providers may rotate it
    state["checked"] = time.time()
    request.session[SESSION_KEY] = state
