"""Re-reading OpenAPI documents: on Discover and on the scheduled re-discovery (tasks.discover_all).

A document fetched from a URL is read again before its server is discovered; when it changed, the
server is saved with it (its config hash changes, so the pool opens a new connection serving the
new operations) and the discovery that follows turns the difference into tool changes, which reach
connected clients as `notifications/tools/list_changed` like any server's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.core.exceptions import ValidationError

from apps.catalog import openapi
from apps.catalog.models import McpServer

logger = logging.getLogger(__name__)


def refresh_documents(servers: Iterable[McpServer]) -> dict[str, str]:
    """Re-fetch the documents of the openapi servers among `servers`; server name → why it could
    not be (the stored document stays in use)."""
    problems: dict[str, str] = {}
    for server in servers:
        if server.transport != McpServer.Transport.OPENAPI or not server.openapi_source:
            continue
        try:
            refresh_document(server)
        except ValidationError as exc:
            problems[server.name] = "; ".join(exc.messages)
            logger.warning(
                "server %r: document not refreshed: %s", server.name, problems[server.name]
            )
    return problems


def refresh_document(server: McpServer) -> bool:
    """Fetch `server`'s document again; save it when it changed. True when it did."""
    values = {
        "openapi_source": server.openapi_source,
        "openapi_document": "",
        "url": server.url,
    }
    fresh = openapi.complete(values, public_only=server.public_only)["openapi_document"]
    if fresh == server.openapi_document:
        return False
    server.openapi_document = fresh
    server.save(update_fields=["openapi_document", "updated_at"])
    return True
