"""Rate limits keyed by access token (each token its own bucket), else by user, else by address."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from apps.accounts.models import AccessToken


class TokenRateThrottle(SimpleRateThrottle):
    scope = "token"

    def get_cache_key(self, request: Request, view) -> str:
        if isinstance(request.auth, AccessToken):
            ident = f"token:{request.auth.prefix}"
        elif request.user and request.user.is_authenticated:
            ident = f"user:{request.user.pk}"
        else:
            ident = f"anon:{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}
