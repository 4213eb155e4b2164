"""Add (or refresh) the built-in server `hub` with the hub's own tools; `./hub run` and the web
container run it after migrating. Enable them like any tool: `mcp_enable --user alice 'hub.*'`."""

from __future__ import annotations

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Add or refresh the built-in `hub` server (list_available_mcps, autonomous_with_mcp, …) in the catalog."

    def handle(self, *args, **options) -> None:
        from apps.gateway.hub_tools import TOOLS, ensure_hub_server

        server = ensure_hub_server()
        self.stdout.write(f"Built-in server {server.name}: {', '.join(TOOLS)}")
