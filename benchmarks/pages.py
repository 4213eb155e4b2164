"""Page load and toggle round trip with 2,000 tools in the catalog.

    .venv/bin/python benchmarks/pages.py [--tools 2000] [--servers 40] [--runs 30]

Builds a throwaway test database (SQLite in memory, or `test_<db>` on Postgres when DATABASE_URL
is set), fills the catalog, signs a user in and times, in-process through the whole Django stack
(middleware, session, ORM, templates): the Tools page, search-as-you-type, one toggle (the htmx
round trip: row + budget bar + count), a server toggle, the dashboard, and the API tool list.
Prints p50 / p95 in milliseconds and the response size.
"""

from __future__ import annotations

import argparse
import functools

import standalone  # noqa: F401  - the project importable, Django set up: first
from django.db import connection
from django.test import Client

from apps.accounts.models import User
from apps.catalog.models import McpServer, Tool
from apps.toolsets.services import enable_tools
from benchmarks.django_db import test_database
from benchmarks.timing import timed as _timed

# Pages may answer with a redirect (e.g. after a toggle): both count as served.
timed = functools.partial(_timed, ok=(200, 302))

HTMX = {"HTTP_HX_REQUEST": "true"}


def fill_catalog(tools: int, servers: int) -> list[Tool]:
    rows = []
    for s in range(servers):
        server = McpServer.objects.create(
            name=f"server-{s:02d}",
            transport="streamable_http",
            url=f"https://s{s}.example.com/mcp",
            status="healthy",
        )
        for t in range(tools // servers):
            rows.append(
                Tool(
                    server=server,
                    name=f"tool_{t:03d}",
                    input_schema={"type": "object"},
                    description=f"Does thing {t} of server {s}: a reasonably long description " * 2,
                    token_estimate=40 + t % 60,
                )
            )
    return Tool.objects.bulk_create(rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=2000)
    parser.add_argument("--servers", type=int, default=40)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()

    with test_database():
        tools = fill_catalog(args.tools, args.servers)
        user = User.objects.create_user("bench", password="bench")
        endpoint = user.endpoints.get()
        endpoint.token_budget = 10_000_000
        endpoint.save()
        enable_tools(endpoint=endpoint, tools=tools[::4])  # a quarter of the catalog enabled
        client = Client()
        client.force_login(user)
        toggled = tools[1]
        toggle_url = f"/endpoints/{endpoint.slug}/tools/{toggled.pk}/toggle/"
        state = {"on": True}

        def toggle():
            response = client.post(toggle_url, {"enabled": "on"} if state["on"] else {}, **HTMX)
            state["on"] = not state["on"]
            return response

        print(
            f"{Tool.objects.count()} tools on {args.servers} servers, {endpoint.tools.count()} enabled; "
            f"{connection.vendor}; {args.runs} runs each"
        )
        timed("Tools page (full)", args.runs, lambda: client.get("/tools/"))
        timed(
            "Search as you type (?q=tool_01)",
            args.runs,
            lambda: client.get(f"/endpoints/{endpoint.slug}/tools/?q=tool_01", **HTMX),
        )
        timed(
            "Open a group (lazy rows)",
            args.runs,
            lambda: client.get(f"/endpoints/{endpoint.slug}/servers/server-07/", **HTMX),
        )
        timed("Toggle one tool (htmx round trip)", args.runs, toggle)
        timed(
            "Toggle a server's 50 tools",
            args.runs,
            lambda: client.post(
                f"/endpoints/{endpoint.slug}/servers/server-03/toggle/", {"enabled": "on"}, **HTMX
            ),
        )
        timed("Dashboard", args.runs, lambda: client.get("/"))
        timed(
            "API: endpoint tools, 500 a page",
            args.runs,
            lambda: client.get(f"/api/endpoints/{endpoint.slug}/tools/?page_size=500"),
        )
        timed(
            "API: toggle one tool",
            args.runs,
            lambda: client.patch(
                f"/api/endpoints/{endpoint.slug}/tools/{toggled.key}/",
                {"enabled": True},
                content_type="application/json",
            ),
        )


if __name__ == "__main__":
    main()
