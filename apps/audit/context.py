"""Where a change came from: the request (admin, pages, API) or a management command."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from auditlog.context import set_extra_data
from auditlog.middleware import AuditlogMiddleware
from django.contrib.auth import get_user_model
from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from apps.core.client_address import request_client_address


def source_of(path: str) -> str:
    if path.startswith("/admin/"):
        return "admin"
    if path.startswith("/api/"):
        return "api"
    if path.startswith("/sso/"):
        return "sso"  # what a sign-in with an identity provider changed (apps/accounts/sso)
    return "pages"


class AuditMiddleware(AuditlogMiddleware):
    """django-auditlog's middleware, plus the source; the actor is read when a change is saved,
    not when the request starts, so a REST API token's user (known only once DRF has
    authenticated the request) is the actor too, not only a signed-in session's."""

    @staticmethod
    def _get_remote_addr(request: HttpRequest) -> str:
        # django-auditlog believes the first X-Forwarded-For entry, which any client writes.
        return request_client_address(request)

    def get_extra_data(self, request: HttpRequest) -> dict:
        data = super().get_extra_data(request)
        data["actor"] = SimpleLazyObject(lambda: _actor(request))
        data["additional_data"] = {"source": source_of(request.path)}
        return data


def _actor(request: HttpRequest):
    user = getattr(request, "user", None)
    return user if isinstance(user, get_user_model()) and user.is_authenticated else None


@contextlib.contextmanager
def command_source(name: str) -> Iterator[None]:
    """Changes made by `manage.py <name>` are recorded as coming from that command."""
    with set_extra_data(context_data={"additional_data": {"source": "command", "command": name}}):
        yield
