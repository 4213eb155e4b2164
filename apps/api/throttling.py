"""Rate limits keyed by access token (each token its own bucket), else by user, else by address."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from apps.accounts.models import AccessToken
from apps.core import hotstate

KEY_PREFIX = "mcphub:api:r:"


class TokenRateThrottle(SimpleRateThrottle):
    """`MCPHUB_API_RATE` requests per period (e.g. 1200/min) in fixed windows, as the gateway counts.

    DRF's SimpleRateThrottle keeps the time of every request of the last period in one cache entry,
    read and written back whole on each request: two Redis round trips moving up to `rate`
    timestamps (1,200 floats, ~11 kB pickled, both ways), and not atomic — requests arriving
    together each read the same history, so most of them went uncounted. Here one atomic INCR
    (hotstate.count_in_window) counts the request; a refused one is told when the window ends.
    """

    scope = "token"
    _retry_after: int | None = None

    def get_cache_key(self, request: Request, view) -> str:
        if isinstance(request.auth, AccessToken):
            ident = f"token:{request.auth.prefix}"
        elif request.user and request.user.is_authenticated:
            ident = f"user:{request.user.pk}"
        else:
            ident = f"anon:{self.get_ident(request)}"
        return f"{KEY_PREFIX}{ident}"

    def allow_request(self, request: Request, view) -> bool:
        if self.rate is None:
            return True
        count, left = hotstate.count_in_window(self.get_cache_key(request, view), self.duration)
        if count <= self.num_requests:
            return True
        self._retry_after = left
        return False

    def wait(self) -> float | None:
        return self._retry_after
