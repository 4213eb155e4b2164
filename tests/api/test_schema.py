"""The OpenAPI schema generates cleanly and its docs page is served (from local static files)."""

from __future__ import annotations

from django.core.management import call_command


def test_the_schema_generates_without_warnings_and_validates(tmp_path):
    out = tmp_path / "schema.yml"

    call_command("spectacular", "--fail-on-warn", "--validate", "--file", str(out))

    assert "/api/endpoints/{slug}/enabled-tools/" in out.read_text()


def test_schema_and_docs_are_served(client, db):
    assert client.get("/api/schema/").status_code == 200
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    assert b"/static/drf_spectacular_sidecar/" in docs.content
