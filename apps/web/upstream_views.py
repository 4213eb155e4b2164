"""Connect a backend that requires OAuth with one's own account ("Connect" → the backend's
authorization server → the callback here), and disconnect it again."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from apps.core import public_url
from apps.credentials.upstream import selectors as upstream_selectors
from apps.credentials.upstream import services as upstream_services


def _server(request: HttpRequest, name: str):
    server = upstream_selectors.connectable_server(request.user, name)
    if server is None:
        raise Http404("No such server requiring OAuth.")
    return server


def _next(request: HttpRequest) -> str:
    target = request.POST.get("next", "")
    safe = url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return target if target and safe else reverse("web:tools") + "#connections"


@login_required
@require_POST
def connect(request: HttpRequest, name: str) -> HttpResponse:
    server = _server(request, name)
    # What an administrator registered with a pre-registered app (its admin page shows it).
    callback = public_url.absolute(reverse("web:upstream_oauth_callback"))
    try:
        url = upstream_services.start_connect(
            server=server,
            user=request.user,
            session=request.session,
            redirect_uri=callback,
            next_url=_next(request),
        )
    except upstream_services.ConnectFailed as exc:
        messages.error(request, f"Could not connect {server.name}: {exc}")
        return redirect(_next(request))
    # A page that moves on by itself rather than a redirect: the pages' CSP (form-action 'self')
    # rightly stops a form's navigation from being redirected to another site.
    context = {"server": server, "authorize_url": url, "authorize_host": urlsplit(url).netloc}
    return render(request, "web/upstream_connect_redirect.html", context)


@login_required
@require_GET
def callback(request: HttpRequest) -> HttpResponse:
    try:
        connected, next_url = upstream_services.finish_connect(
            user=request.user, session=request.session, params=request.GET.dict()
        )
    except upstream_services.ConnectFailed as exc:
        messages.error(request, str(exc))
        return redirect(reverse("web:tools") + "#connections")
    messages.success(request, f"Connected {connected.server.name} with your account.")
    return redirect(next_url)


@login_required
@require_POST
def disconnect(request: HttpRequest, name: str) -> HttpResponse:
    server = _server(request, name)
    if upstream_services.disconnect(server=server, user=request.user):
        messages.success(
            request,
            f"Disconnected {server.name}: your calls to it stop until you connect it again.",
        )
    return redirect(_next(request))
