"""Every operation of the OpenAPI schema × every persona: the expected status, and nothing of
alice's in any answer to anyone else.

alice owns an endpoint, a private server, a private preset, a provider, a conversation, tokens and
usage; bob shares a team with her; charlie is a stranger; dave is staff without model
permissions; anonymous has no credential; alice's MCP token may not use the REST API at all; her
read-only API token may only read. Each request runs in a savepoint rolled back afterwards, so
every cell of the matrix sees the same world. In-process (DRF's APIClient): fast enough for CI.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from apps.accounts.models import TokenScope
from apps.accounts.services import create_access_token
from tests.security.conftest import PRIVATE, TEAM, World

PERSONAS = ["anonymous", "alice_mcp", "alice_read", "charlie", "dave", "bob", "alice"]
SUCCESS = range(200, 300)


def client_for(persona: str, users: dict) -> APIClient:
    client = APIClient()
    scope = {"alice_mcp": TokenScope.MCP, "alice_read": TokenScope.API_READ}.get(
        persona, TokenScope.API_WRITE
    )
    if persona != "anonymous":
        owner = users["alice" if persona.startswith("alice") else persona]
        endpoint = owner.endpoints.get(is_default=True) if scope == TokenScope.MCP else None
        raw = create_access_token(user=owner, scope=scope, endpoint=endpoint)[1]
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


Request = Callable[[World], tuple[str, dict | None]]

# Each operation: how to call it on alice's things, and what alice herself gets.
OPERATIONS: dict[tuple[str, str], tuple[Request, int]] = {
    ("GET", "/api/servers/"): (lambda w: ("/api/servers/", None), 200),
    ("POST", "/api/servers/"): (
        lambda w: (
            "/api/servers/",
            {"name": "new-remote", "transport": "streamable_http", "url": "http://127.0.0.1:9/mcp"},
        ),
        403,
    ),
    ("GET", "/api/servers/{name}/"): (lambda w: (f"/api/servers/{w.server}/", None), 200),
    ("PUT", "/api/servers/{name}/"): (
        lambda w: (
            f"/api/servers/{w.server}/",
            {
                "name": w.server,
                "transport": "streamable_http",
                "url": "http://127.0.0.1:9/v2",
                "enabled": False,
            },
        ),
        200,
    ),
    ("PATCH", "/api/servers/{name}/"): (
        lambda w: (f"/api/servers/{w.server}/", {"description": "x"}),
        200,
    ),
    ("DELETE", "/api/servers/{name}/"): (lambda w: (f"/api/servers/{w.server}/", None), 204),
    ("POST", "/api/servers/{name}/discover/"): (
        lambda w: (f"/api/servers/{w.server}/discover/", None),
        200,
    ),
    ("GET", "/api/servers/{name}/live/"): (lambda w: (f"/api/servers/{w.server}/live/", None), 200),
    ("GET", "/api/servers/{name}/my-credentials/"): (
        lambda w: (f"/api/servers/{w.server}/my-credentials/", None),
        200,
    ),
    ("PUT", "/api/servers/{name}/my-credentials/"): (
        lambda w: (f"/api/servers/{w.server}/my-credentials/", {"values": {"TOKEN": "t"}}),
        200,
    ),
    ("DELETE", "/api/servers/{name}/my-credentials/"): (
        lambda w: (f"/api/servers/{w.server}/my-credentials/", None),
        204,
    ),
    ("POST", "/api/servers/{name}/test/"): (
        lambda w: (f"/api/servers/{w.server}/test/", None),
        200,
    ),
    # alice's server here requires no OAuth: 404 for everyone (tests/upstream_oauth cover a connected one).
    ("GET", "/api/servers/{name}/my-oauth/"): (
        lambda w: (f"/api/servers/{w.server}/my-oauth/", None),
        404,
    ),
    ("DELETE", "/api/servers/{name}/my-oauth/"): (
        lambda w: (f"/api/servers/{w.server}/my-oauth/", None),
        404,
    ),
    ("GET", "/api/tools/"): (lambda w: ("/api/tools/", None), 200),
    ("GET", "/api/tools/{id}/"): (lambda w: (f"/api/tools/{w.tool_id}/", None), 200),
    ("GET", "/api/endpoints/"): (lambda w: ("/api/endpoints/", None), 200),
    ("POST", "/api/endpoints/"): (lambda w: ("/api/endpoints/", {"name": "Another"}), 201),
    ("GET", "/api/endpoints/{slug}/"): (lambda w: (f"/api/endpoints/{w.endpoint}/", None), 200),
    ("PUT", "/api/endpoints/{slug}/"): (
        lambda w: (
            f"/api/endpoints/{w.endpoint}/",
            {
                "name": "Renamed",
                "naming_strategy": "prefixed",
                "mode": "static",
                "token_budget": 5000,
                "budget_enforced": False,
            },
        ),
        200,
    ),
    ("PATCH", "/api/endpoints/{slug}/"): (
        lambda w: (f"/api/endpoints/{w.endpoint}/", {"name": "Renamed"}),
        200,
    ),
    ("DELETE", "/api/endpoints/{slug}/"): (lambda w: (f"/api/endpoints/{w.endpoint}/", None), 204),
    ("GET", "/api/endpoints/{slug}/enabled-tools/"): (
        lambda w: (f"/api/endpoints/{w.endpoint}/enabled-tools/", None),
        200,
    ),
    ("PUT", "/api/endpoints/{slug}/enabled-tools/"): (
        lambda w: (f"/api/endpoints/{w.endpoint}/enabled-tools/", {"tools": ["time.now"]}),
        200,
    ),
    ("POST", "/api/endpoints/{slug}/load-preset/"): (
        lambda w: (f"/api/endpoints/{w.endpoint}/load-preset/", {"preset": w.preset}),
        200,
    ),
    ("GET", "/api/endpoints/{slug}/presets/"): (
        lambda w: (f"/api/endpoints/{w.endpoint}/presets/", None),
        200,
    ),
    ("PATCH", "/api/endpoints/{slug}/servers/{server}/"): (
        lambda w: (f"/api/endpoints/{w.endpoint}/servers/time/", {"enabled": False}),
        200,
    ),
    ("GET", "/api/endpoints/{slug}/tools/"): (
        lambda w: (f"/api/endpoints/{w.endpoint}/tools/", None),
        200,
    ),
    ("GET", "/api/endpoints/{slug}/tools/{key}/"): (
        lambda w: (f"/api/endpoints/{w.endpoint}/tools/time.now/", None),
        200,
    ),
    ("PATCH", "/api/endpoints/{slug}/tools/{key}/"): (
        lambda w: (f"/api/endpoints/{w.endpoint}/tools/time.now/", {"enabled": False}),
        200,
    ),
    ("GET", "/api/endpoints/{slug}/patterns/"): (
        lambda w: (f"/api/endpoints/{w.endpoint}/patterns/", None),
        200,
    ),
    ("POST", "/api/endpoints/{slug}/patterns/"): (
        lambda w: (
            f"/api/endpoints/{w.endpoint}/patterns/",
            {"pattern": "clock", "targets": ["time.now"]},
        ),
        201,
    ),
    ("PATCH", "/api/endpoints/{slug}/patterns/{id}/"): (
        lambda w: (f"/api/endpoints/{w.endpoint}/patterns/{w.pattern}/", {"priority": 5}),
        200,
    ),
    ("DELETE", "/api/endpoints/{slug}/patterns/{id}/"): (
        lambda w: (f"/api/endpoints/{w.endpoint}/patterns/{w.pattern}/", None),
        204,
    ),
    ("POST", "/api/endpoints/{slug}/suggest/"): (
        lambda w: (f"/api/endpoints/{w.endpoint}/suggest/", {"task": "what time is it"}),
        200,
    ),
    ("GET", "/api/presets/"): (lambda w: ("/api/presets/", None), 200),
    ("POST", "/api/presets/"): (
        lambda w: ("/api/presets/", {"name": "fresh", "tool_keys": ["time.now"]}),
        201,
    ),
    ("GET", "/api/presets/{id}/"): (lambda w: (f"/api/presets/{w.preset}/", None), 200),
    ("PUT", "/api/presets/{id}/"): (
        lambda w: (f"/api/presets/{w.preset}/", {"name": "renamed", "tool_keys": ["time.now"]}),
        200,
    ),
    ("PATCH", "/api/presets/{id}/"): (
        lambda w: (f"/api/presets/{w.preset}/", {"description": "x"}),
        200,
    ),
    ("DELETE", "/api/presets/{id}/"): (lambda w: (f"/api/presets/{w.preset}/", None), 204),
    ("GET", "/api/presets/{id}/diff/"): (
        lambda w: (f"/api/presets/{w.preset}/diff/?from_version=1&to_version=1", None),
        200,
    ),
    ("POST", "/api/presets/{id}/load/"): (
        lambda w: (f"/api/presets/{w.preset}/load/", {"endpoint": w.endpoint}),
        200,
    ),
    ("POST", "/api/presets/{id}/rollback/"): (
        lambda w: (f"/api/presets/{w.preset}/rollback/", {"version": 1}),
        201,
    ),
    ("POST", "/api/presets/{id}/share/"): (
        lambda w: (f"/api/presets/{w.preset}/share/", {"team": w.team}),
        200,
    ),
    ("POST", "/api/presets/{id}/unshare/"): (
        lambda w: (f"/api/presets/{w.preset}/unshare/", None),
        200,
    ),
    ("GET", "/api/presets/{id}/versions/"): (
        lambda w: (f"/api/presets/{w.preset}/versions/", None),
        200,
    ),
    ("GET", "/api/tokens/"): (lambda w: ("/api/tokens/", None), 200),
    ("POST", "/api/tokens/"): (
        lambda w: ("/api/tokens/", {"name": "new", "scope": "api_read"}),
        201,
    ),
    ("GET", "/api/tokens/{id}/"): (lambda w: (f"/api/tokens/{w.token}/", None), 200),
    ("DELETE", "/api/tokens/{id}/"): (lambda w: (f"/api/tokens/{w.token}/", None), 204),
    ("GET", "/api/teams/"): (lambda w: ("/api/teams/", None), 200),
    ("POST", "/api/teams/"): (
        lambda w: ("/api/teams/", {"name": "New team", "slug": "new-team"}),
        201,
    ),
    ("GET", "/api/teams/{slug}/"): (lambda w: (f"/api/teams/{w.team}/", None), 200),
    ("GET", "/api/usage/"): (lambda w: ("/api/usage/", None), 200),
    ("GET", "/api/llm/providers/"): (lambda w: ("/api/llm/providers/", None), 200),
    ("POST", "/api/llm/providers/"): (
        lambda w: (
            "/api/llm/providers/",
            {"name": "mine", "kind": "openai", "base_url": "http://127.0.0.1:9/v1"},
        ),
        201,
    ),
    ("GET", "/api/llm/providers/{id}/"): (
        lambda w: (f"/api/llm/providers/{w.provider}/", None),
        200,
    ),
    ("PUT", "/api/llm/providers/{id}/"): (
        lambda w: (
            f"/api/llm/providers/{w.provider}/",
            {"name": "renamed", "kind": "openai", "base_url": "http://127.0.0.1:9/v1"},
        ),
        200,
    ),
    ("PATCH", "/api/llm/providers/{id}/"): (
        lambda w: (f"/api/llm/providers/{w.provider}/", {"default_model": "m"}),
        200,
    ),
    ("DELETE", "/api/llm/providers/{id}/"): (
        lambda w: (f"/api/llm/providers/{w.provider}/", None),
        204,
    ),
    ("GET", "/api/llm/providers/{id}/models/"): (
        lambda w: (f"/api/llm/providers/{w.provider}/models/", None),
        200,
    ),
    ("GET", "/api/conversations/"): (lambda w: ("/api/conversations/", None), 200),
    ("POST", "/api/conversations/"): (lambda w: ("/api/conversations/", {"title": "new"}), 201),
    ("GET", "/api/conversations/{id}/"): (
        lambda w: (f"/api/conversations/{w.conversation}/", None),
        200,
    ),
    ("PUT", "/api/conversations/{id}/"): (
        lambda w: (f"/api/conversations/{w.conversation}/", {"title": "renamed"}),
        200,
    ),
    ("PATCH", "/api/conversations/{id}/"): (
        lambda w: (f"/api/conversations/{w.conversation}/", {"title": "renamed"}),
        200,
    ),
    ("DELETE", "/api/conversations/{id}/"): (
        lambda w: (f"/api/conversations/{w.conversation}/", None),
        204,
    ),
    ("GET", "/api/conversations/{id}/messages/"): (
        lambda w: (f"/api/conversations/{w.conversation}/messages/", None),
        200,
    ),
    ("POST", "/api/conversations/{id}/messages/"): (
        lambda w: (f"/api/conversations/{w.conversation}/messages/", {"text": "hi"}),
        202,
    ),
    # No turn runs in alice's conversation (each request is rolled back): "nothing to stop".
    ("POST", "/api/conversations/{id}/stop/"): (
        lambda w: (f"/api/conversations/{w.conversation}/stop/", None),
        409,
    ),
    ("GET", "/api/runs/"): (lambda w: ("/api/runs/", None), 200),
    ("POST", "/api/runs/"): (lambda w: ("/api/runs/", {"task": "do it"}), 201),
    ("GET", "/api/runs/{id}/"): (lambda w: (f"/api/runs/{w.run}/", None), 200),
    ("POST", "/api/runs/{id}/cancel/"): (lambda w: (f"/api/runs/{w.run}/cancel/", None), 200),
    ("POST", "/api/runs/{id}/resume/"): (lambda w: (f"/api/runs/{w.run}/resume/", None), 200),
    ("POST", "/api/runs/{id}/approve/"): (
        lambda w: (f"/api/runs/{w.run}/approve/", {"call_id": "c1", "allow": True}),
        200,
    ),
    # Her run waits on no question: "nothing to answer"; its endpoint has no such resource.
    ("POST", "/api/runs/{id}/answer/"): (
        lambda w: (f"/api/runs/{w.run}/answer/", {"id": "e1", "action": "decline"}),
        409,
    ),
    ("GET", "/api/runs/{id}/resource/"): (
        lambda w: (f"/api/runs/{w.run}/resource/?uri=test://nothing", None),
        400,
    ),
}

# What others get on alice's things (a collection they may use is theirs, not hers: its own rule).
TEAM_VISIBLE = {("GET", "/api/teams/{slug}/")}  # bob is on alice's team
NOT_ADDABLE_BY_USERS = {
    ("POST", "/api/servers/")
}  # needs the model permission (no one here has it)
NEEDS_A_PROVIDER = {
    ("POST", "/api/runs/")
}  # only alice has an LLM provider here: the others are told to add one


def expected(persona: str, method: str, path: str, alice_gets: int) -> range | set[int]:
    if persona == "anonymous":
        return {401}
    if persona == "alice_mcp":
        return {403}
    if persona == "alice_read":
        return {alice_gets} if method == "GET" else {403}
    if persona == "alice":
        return {alice_gets}
    if (method, path) in NOT_ADDABLE_BY_USERS:
        return {403}
    if (method, path) in NEEDS_A_PROVIDER:
        return {400}
    if "{" not in path:  # collections: each persona works on their own
        return SUCCESS
    if persona == "bob" and (method, path) in TEAM_VISIBLE:
        return {200}
    return {404}


def schema_operations() -> set[tuple[str, str]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {
        (method.upper(), path)
        for path, item in schema["paths"].items()
        for method in item
        if method in ("get", "post", "put", "patch", "delete")
    }


def test_the_matrix_covers_every_operation_of_the_schema():
    assert schema_operations() == set(OPERATIONS)


def test_every_persona_gets_the_expected_answer_and_nothing_of_alices(
    world, alice, bob, charlie, dave
):
    users = {"alice": alice, "bob": bob, "charlie": charlie, "dave": dave}
    clients = {persona: client_for(persona, users) for persona in PERSONAS}
    wrong = []
    for (method, template), (build, alice_gets) in OPERATIONS.items():
        path, body = build(world)
        for persona in PERSONAS:
            with transaction.atomic():
                response = getattr(clients[persona], method.lower())(path, body, format="json")
                transaction.set_rollback(True)
            text = response.content.decode(errors="replace")
            want = expected(persona, method, template, alice_gets)
            if response.status_code not in want:
                wrong.append(
                    f"{persona} {method} {path}: {response.status_code}, expected {want}: {text[:160]}"
                )
            leaked = [m for m in (PRIVATE, TEAM) if m in text and not _may_see(persona, m)]
            if leaked:
                wrong.append(f"{persona} {method} {path}: leaks {leaked}: {text[:160]}")
    assert wrong == [], "\n".join(wrong)


def _may_see(persona: str, marker: str) -> bool:
    if persona in ("alice", "alice_read"):
        return True
    return persona == "bob" and marker == TEAM
