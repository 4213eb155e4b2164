"""The sign-in, callback and back-channel logout URLs of each provider (under /sso/oidc/<slug>/)."""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from allauth.account.internal.decorators import login_not_required
from allauth.socialaccount.models import SocialAccount, SocialApp
from allauth.socialaccount.providers.oauth2.client import OAuth2Error
from allauth.socialaccount.providers.oauth2.views import OAuth2CallbackView, OAuth2LoginView
from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from requests import RequestException

from apps.accounts.sso import accounts
from apps.accounts.sso.adapter import refused
from apps.accounts.sso.oidc import HubOidcAdapter, verify_jwt

log = logging.getLogger(__name__)
BACKCHANNEL_EVENT = "http://schemas.openid.net/event/backchannel-logout"


@login_not_required
def login(request: HttpRequest, provider_id: str) -> HttpResponse:
    if request.method != "POST":
        # A sign-in starts from the sign-in page's button (a POST, so no other site starts one).
        return redirect(settings.LOGIN_URL)
    try:
        return OAuth2LoginView.adapter_view(HubOidcAdapter(request, provider_id))(request)
    except SocialApp.DoesNotExist:
        raise Http404("No such sign-in provider.") from None
    except (OAuth2Error, RequestException) as e:
        log.warning("SSO sign-in with %s could not start: %s", provider_id, e)
        return refused(
            request,
            "The identity provider cannot be reached or is not set up right. Try again later; "
            "if it keeps failing, ask an administrator.",
            status=502,
        )


@login_not_required
def callback(request: HttpRequest, provider_id: str) -> HttpResponse:
    try:
        return OAuth2CallbackView.adapter_view(HubOidcAdapter(request, provider_id))(request)
    except SocialApp.DoesNotExist:
        raise Http404("No such sign-in provider.") from None


@csrf_exempt
@require_POST
@login_not_required
def backchannel_logout(request: HttpRequest, provider_id: str) -> HttpResponse:
    """OpenID Connect Back-Channel Logout 1.0: the provider says a person signed out (or was
    disabled) there; their hub sessions end (accounts.end_sessions)."""
    adapter = HubOidcAdapter(request, provider_id)
    try:
        app = adapter.get_provider().app
        claims = verify_jwt(
            request.POST.get("logout_token", ""),
            config=adapter.openid_config,
            audience=app.client_id,
            required=("iss", "aud", "iat", "events"),
        )
    except SocialApp.DoesNotExist:
        raise Http404("No such sign-in provider.") from None
    except (OAuth2Error, RequestException) as e:
        log.warning("SSO back-channel logout refused: %s", e)
        return HttpResponse("Invalid logout token.", status=400, content_type="text/plain")
    if BACKCHANNEL_EVENT not in (claims.get("events") or {}) or "nonce" in claims:
        return HttpResponse("Not a logout token.", status=400, content_type="text/plain")
    sub, sid = claims.get("sub"), claims.get("sid")
    if not (isinstance(sub, str) and sub) and not (isinstance(sid, str) and sid):
        return HttpResponse(
            "The token names no one (sub, sid).", status=400, content_type="text/plain"
        )
    if isinstance(sid, str) and sid:
        # One session at the provider: the hub sessions its sign-ins opened (§2.6 of the spec).
        accounts.end_provider_session(provider=provider_id, sid=sid, sub=sub or None)
    else:
        for account in SocialAccount.objects.filter(provider=provider_id, uid=sub):
            accounts.end_sessions(user=account.user)
    return HttpResponse(status=200, headers={"Cache-Control": "no-store"})


def signed_out_at_provider(request: HttpRequest, url: str) -> HttpResponse:
    """After the hub's sign-out, the provider's: a page that moves on by itself (a redirect would
    be stopped by the pages' CSP, form-action 'self', as the sign-out form posted here)."""
    context = {"url": url, "host": urlsplit(url).netloc}
    return render(request, "registration/sso_signed_out.html", context)
