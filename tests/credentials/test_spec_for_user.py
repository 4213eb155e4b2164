"""`spec_for_user`: the one place (server, user) becomes the spec of that user's calls."""

from __future__ import annotations

import pytest

from apps.catalog.models import McpServer
from apps.credentials import selectors
from apps.credentials.errors import CredentialsMissing
from apps.credentials.services import save_credentials

pytestmark = pytest.mark.django_db


@pytest.fixture
def jira(db) -> McpServer:
    return McpServer.objects.create(
        name="jira",
        transport=McpServer.Transport.STREAMABLE_HTTP,
        url="https://jira.example.com/mcp?site=${user:SITE}",
        headers={"Authorization": "Bearer ${user:TOKEN}", "X-Team": "blue"},
        user_variables=[{"name": "SITE", "required": False}],
    )


def test_a_users_values_are_substituted_into_their_own_partition(alice, bob, jira):
    save_credentials(user=alice, server=jira, values={"TOKEN": "a-token", "SITE": "a b/c"})
    save_credentials(user=bob, server=jira, values={"TOKEN": "b-token"})

    alice_spec, bob_spec = (
        selectors.spec_for_user(jira, alice.pk),
        selectors.spec_for_user(jira, bob.pk),
    )

    assert dict(alice_spec.headers) == {"Authorization": "Bearer a-token", "X-Team": "blue"}
    assert alice_spec.url == "https://jira.example.com/mcp?site=a%20b%2Fc"
    assert bob_spec.url == "https://jira.example.com/mcp?site=", "an optional variable left empty"
    assert (alice_spec.partition, bob_spec.partition) == (f"u{alice.pk}", f"u{bob.pk}")
    assert "a-token" not in repr(alice_spec)


def test_a_missing_required_value_names_the_variable_the_page_and_the_api(charlie, jira):
    with pytest.raises(CredentialsMissing) as missing:
        selectors.spec_for_user(jira, charlie.pk)

    assert missing.value.missing == ["TOKEN"]
    assert missing.value.fill_at.endswith("/servers/jira/credentials/")
    assert "PUT /api/servers/jira/my-credentials/" in missing.value.message


def test_a_server_without_variables_keeps_one_shared_spec(alice, global_server):
    assert selectors.spec_for_user(global_server, alice.pk) == global_server.to_spec()
    assert selectors.spec_for_user(global_server, alice.pk).partition == ""


def test_per_user_headers_make_a_personal_spec_and_may_refuse(alice, bob, charlie, db, monkeypatch):
    """Per-user headers (upstream OAuth grants) make the spec personal, or refuse with what to do."""
    server = McpServer.objects.create(
        name="oauthy",
        transport=McpServer.Transport.STREAMABLE_HTTP,
        url="https://o.example.com/mcp",
    )

    def grants(server: McpServer, user_id: int) -> dict[str, str]:
        if user_id == charlie.pk:
            raise CredentialsMissing(server.name, f"Connect {server.name} first.")
        return {"Authorization": "Bearer alice-grant"} if user_id == alice.pk else {}

    monkeypatch.setattr(selectors, "authorization_headers", grants)
    alice_spec, bob_spec = (
        selectors.spec_for_user(server, alice.pk),
        selectors.spec_for_user(server, bob.pk),
    )
    with pytest.raises(CredentialsMissing, match="Connect oauthy first"):
        selectors.spec_for_user(server, charlie.pk)

    assert (
        dict(alice_spec.headers) == {"Authorization": "Bearer alice-grant"}
        and alice_spec.partition == f"u{alice.pk}"
    )
    assert bob_spec == server.to_spec(), "nothing to add: the shared connection"
