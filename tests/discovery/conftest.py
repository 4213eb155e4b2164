"""Dynamic-mode tests reuse the gateway's real hub, echo server and personas."""

from tests.gateway.conftest import (  # noqa: F401 - fixtures
    _close_thread_connections,
    alice_endpoint,
    alice_hub_token,
    anyio_backend,
    echo_discovery,
    echo_server,
)
