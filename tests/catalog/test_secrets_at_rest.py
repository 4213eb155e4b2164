"""Server secrets (env values, headers) are encrypted in the database and readable only in Python."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.db import connection
from django.test import override_settings

from apps.catalog.models import McpServer
from apps.core import crypto


def _raw_row(server: McpServer) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT env, headers FROM catalog_mcpserver WHERE id = %s", [server.pk])
        return " ".join(cursor.fetchone())


def test_env_and_header_values_are_not_stored_in_plaintext(db):
    server = McpServer.objects.create(
        name="github",
        command="npx",
        env={"GITHUB_TOKEN": "ghp_supersecretvalue"},
        headers={"X-Api-Key": "header-secret-value"},
    )

    raw = _raw_row(server)
    assert "ghp_supersecretvalue" not in raw
    assert "header-secret-value" not in raw
    assert "GITHUB_TOKEN" not in raw  # even the names are inside the ciphertext
    reloaded = McpServer.objects.get(pk=server.pk)
    assert reloaded.env == {"GITHUB_TOKEN": "ghp_supersecretvalue"}
    assert reloaded.headers == {"X-Api-Key": "header-secret-value"}


def test_a_new_key_decrypts_old_rows_and_rotation_re_encrypts_them(db, settings):
    server = McpServer.objects.create(name="github", command="npx", env={"TOKEN": "old-secret"})
    old_keys = list(settings.MCPHUB_ENCRYPTION_KEYS)
    new_key = Fernet.generate_key().decode()

    with override_settings(MCPHUB_ENCRYPTION_KEYS=[new_key, *old_keys]):
        assert McpServer.objects.get(pk=server.pk).env == {"TOKEN": "old-secret"}
        from django.core.management import call_command

        call_command("rotate_secrets", verbosity=0)
    with override_settings(MCPHUB_ENCRYPTION_KEYS=[new_key]):
        assert McpServer.objects.get(pk=server.pk).env == {"TOKEN": "old-secret"}


def test_a_lost_key_is_a_clear_error_not_garbage(db, settings):
    server = McpServer.objects.create(name="github", command="npx", env={"TOKEN": "s"})

    with override_settings(MCPHUB_ENCRYPTION_KEYS=[Fernet.generate_key().decode()]):
        with pytest.raises(Exception, match="cannot be decrypted"):
            McpServer.objects.get(pk=server.pk)


def test_encrypting_the_same_value_twice_gives_different_ciphertexts():
    assert crypto.encrypt("same") != crypto.encrypt("same")
