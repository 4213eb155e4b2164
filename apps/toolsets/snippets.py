"""Ready-made client configurations for an endpoint: Claude Code, Cursor, VS Code, Claude Desktop."""

from __future__ import annotations

import json

from apps.core import public_url
from apps.toolsets.models import Endpoint

TOKEN_PLACEHOLDER = "YOUR_TOKEN"


def endpoint_url(endpoint: Endpoint) -> str:
    return public_url.absolute(endpoint.path)


def server_name(endpoint: Endpoint) -> str:
    return "mcphub" if endpoint.is_default else f"mcphub-{endpoint.slug}"


def client_snippets(endpoint: Endpoint, token: str = TOKEN_PLACEHOLDER) -> dict[str, str]:
    """Each client's config text, with `token` in it (the raw one just after creation, else a placeholder)."""
    url, name, auth = endpoint_url(endpoint), server_name(endpoint), f"Bearer {token}"
    remote = {"url": url, "headers": {"Authorization": auth}}
    return {
        "claude_code": f'claude mcp add --transport http {name} {url} --header "Authorization: {auth}"',
        "cursor": _json({"mcpServers": {name: remote}}),
        "vscode": _json({"servers": {name: {"type": "http", **remote}}}),
        # Claude Desktop's config speaks stdio only: mcp-remote bridges it to the HTTP endpoint.
        "claude_desktop": _json(
            {
                "mcpServers": {
                    name: {
                        "command": "npx",
                        "args": [
                            "-y",
                            "mcp-remote",
                            url,
                            "--header",
                            "Authorization:${AUTH_HEADER}",
                        ],
                        "env": {"AUTH_HEADER": auth},
                    }
                }
            }
        ),
    }


def _json(value: dict) -> str:
    return json.dumps(value, indent=2)
