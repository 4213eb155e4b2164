"""Scripts create tokens and enable tools with management commands."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from apps.accounts.models import User
from apps.accounts.services import authenticate_token


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_mcp_token_json_prints_a_working_token_and_the_endpoint(db):
    line = run("mcp_token", "create", "--user", "erin", "--create-user", "--json")

    payload = json.loads(line)
    erin = User.objects.get(username="erin")
    assert authenticate_token(payload["token"]).user == erin
    assert payload["endpoint"] == erin.endpoints.get().path


def test_a_user_created_for_a_token_is_told_how_to_get_a_password(db):
    err = StringIO()
    call_command(
        "mcp_token", "create", "--user", "erin", "--create-user", stdout=StringIO(), stderr=err
    )

    assert (
        "without a password" in err.getvalue()
        and "./hub manage changepassword erin" in err.getvalue()
    )
    assert not User.objects.get(username="erin").has_usable_password()


def test_a_user_created_with_a_password_from_the_environment_can_sign_in(db, monkeypatch, client):
    monkeypatch.setenv("ERIN_PASSWORD", "a-long-enough-secret")
    err = StringIO()
    call_command(
        "mcp_token",
        "create",
        "--user",
        "erin",
        "--create-user",
        "--password-env",
        "ERIN_PASSWORD",
        stdout=StringIO(),
        stderr=err,
    )

    assert err.getvalue() == ""
    assert User.objects.get(username="erin").check_password("a-long-enough-secret")


def test_a_password_variable_that_is_not_set_changes_nothing(db, monkeypatch):
    monkeypatch.delenv("NOPE", raising=False)
    with pytest.raises(CommandError, match="NOPE: that environment variable is not set"):
        call_command(
            "mcp_token",
            "create",
            "--user",
            "erin",
            "--create-user",
            "--password-env",
            "NOPE",
            stdout=StringIO(),
        )

    assert not User.objects.filter(username="erin").exists()


def test_mcp_token_scoped_to_an_endpoint(alice):
    slug = alice.endpoints.get().slug

    payload = json.loads(
        run("mcp_token", "create", "--user", "alice", "--endpoint", slug, "--json")
    )

    assert authenticate_token(payload["token"]).endpoint.slug == slug


@pytest.mark.parametrize(
    "args,message",
    [
        (["--user", "nobody"], "No user 'nobody'"),
        (["--user", "alice", "--endpoint", "not-hers"], "has no endpoint"),
    ],
)
def test_mcp_token_bad_input_is_a_clear_error(alice, args, message):
    with pytest.raises(CommandError, match=message):
        run("mcp_token", "create", *args)
    assert not alice.access_tokens.exists()


def test_mcp_token_revoke(alice):
    token = json.loads(run("mcp_token", "create", "--user", "alice", "--json"))["token"]
    prefix = token.split("_")[1]

    run("mcp_token", "revoke", prefix)

    assert authenticate_token(token) is None
    assert "revoked" in run("mcp_token", "list", "--user", "alice")


def test_mcp_enable_by_pattern_and_disable(alice, global_server, alice_private_server, make_tool):
    for name in ("now", "convert"):
        make_tool(global_server, name)
    make_tool(alice_private_server, "read_note")
    endpoint = alice.endpoints.get()

    run("mcp_enable", "--user", "alice", "time.*", "alice-notes.read_note")
    assert {t.key for t in endpoint.tools.all()} == {
        "time.now",
        "time.convert",
        "alice-notes.read_note",
    }

    run("mcp_enable", "--user", "alice", "--disable", "*.convert")
    assert {t.key for t in endpoint.tools.all()} == {"time.now", "alice-notes.read_note"}


def test_mcp_enable_never_reaches_tools_the_user_cannot_see(
    charlie, alice_private_server, make_tool
):
    make_tool(alice_private_server, "read_note")

    with pytest.raises(CommandError, match="No tool matches"):
        run("mcp_enable", "--user", "charlie", "alice-notes.*")
    run("mcp_enable", "--user", "charlie", "--all")
    assert not charlie.endpoints.get().tools.exists()


def test_mcp_enable_over_budget_changes_nothing(alice, global_server, make_tool):
    make_tool(global_server, "huge", tokens=10**6)

    with pytest.raises(CommandError, match="over the budget of 20000 of the endpoint “Default”"):
        run("mcp_enable", "--user", "alice", "--all")
    assert not alice.endpoints.get().tools.exists()

    run("mcp_enable", "--user", "alice", "--all", "--ignore-budget")
    assert alice.endpoints.get().tools.count() == 1


def test_mcp_enable_skips_unavailable_tools(alice, global_server, make_tool):
    gone = make_tool(global_server, "gone")
    gone.available = False
    gone.save()
    make_tool(global_server, "here")

    run("mcp_enable", "--user", "alice", "--all")

    assert [t.name for t in alice.endpoints.get().tools.all()] == ["here"]
