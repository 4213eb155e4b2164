"""Who may open the staff pages: one decorator, so every staff page asks the same question."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

View = Callable[..., HttpResponse]


def staff_with_perms(*perms: str, what: str) -> Callable[[View], View]:
    """Signed-in staff holding every Django permission in `perms` (superusers hold all); else 403 saying `what`."""

    def decorate(view: View) -> View:
        @login_required
        @wraps(view)
        def guarded(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if not (request.user.is_staff and request.user.has_perms(perms)):
                raise PermissionDenied(f"{what} is for staff allowed to manage servers.")
            return view(request, *args, **kwargs)

        return guarded

    return decorate
