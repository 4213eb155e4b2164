"""Hardening of the Daphne (Twisted) server the hub runs under, installed from mcphub/asgi.py.

- The access log never carries a raw token: `/mcp/t/<token>/` paths are redacted before writing.
"""

from __future__ import annotations

from apps.accounts.tokens import redact


def _redact_access_log() -> None:
    try:
        from daphne.access import AccessLogGenerator
    except ImportError:  # another ASGI server: its own access log is its own business
        return
    if getattr(AccessLogGenerator.write_entry, "redacts_tokens", False):
        return
    original = AccessLogGenerator.write_entry

    def write_entry(self, host, date, request, *args, **kwargs):
        return original(self, host, date, redact(request), *args, **kwargs)

    write_entry.redacts_tokens = True
    AccessLogGenerator.write_entry = write_entry


def install() -> None:
    _redact_access_log()
