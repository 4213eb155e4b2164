"""Sign-in lockout limits (django-axes' `AXES_HANDLER`): per account and address, and per address.

Failures count per (username, address) against `AXES_FAILURE_LIMIT`, so a stranger's guesses from
elsewhere never lock a person out, nor do a colleague's behind the same proxy; and per address
against `MCPHUB_SIGNIN_ADDRESS_FAILURE_LIMIT` (ten times higher by default), so one address cannot
guess its way across many accounts. The address is apps/core/client_address.py's.
"""

from __future__ import annotations

from axes.attempts import get_cool_off_threshold
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_failure_limit
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Sum
from django.http import HttpRequest


class SignInLockoutHandler(AxesDatabaseHandler):
    """Axes' database handler with a second, per-address limit.

    Axes compares one failure count with one limit, and would lock an address at the account's
    limit if the address were a lockout parameter of its own. So the address's failures are
    reported in units of the account limit: `failures × limit // address limit` reaches the limit
    exactly when the failures reach the address limit. Axes' lock check, lockout page and cool-off
    then serve both limits unchanged. A successful sign-in resets only its own (username, address)
    count, never the address's other failures.
    """

    def get_failures(self, request: HttpRequest, credentials: dict | None = None) -> int:
        own = super().get_failures(request, credentials)
        scaled = (
            _address_failures(request)
            * get_failure_limit(request, credentials)
            // settings.MCPHUB_SIGNIN_ADDRESS_FAILURE_LIMIT
        )
        return max(own, scaled)


def _address_failures(request: HttpRequest) -> int:
    recent = AccessAttempt.objects.filter(
        ip_address=request.axes_ip_address, attempt_time__gte=get_cool_off_threshold(request)
    )
    return recent.aggregate(total=Sum("failures_since_start"))["total"] or 0
