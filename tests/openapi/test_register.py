"""An admin registers REST APIs by their OpenAPI documents — through the API, the admin, the Servers
page and a `.mcp.json` — and sees their operations as tools; a bad document is refused and changes
nothing; a changed document shows as changed tools after Discover."""

from __future__ import annotations

import json

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from apps.catalog import operations
from apps.catalog.importing import export_servers, import_mcp_json
from apps.catalog.models import McpServer
from tests.openapi.rest_api import document
from tests.waiting import eventually

pytestmark = pytest.mark.django_db(transaction=True)


def _tools(name: str) -> set[str]:
    server = McpServer.objects.filter(name=name).first()
    if server is None:
        return set()
    return set(server.tools.filter(available=True).values_list("name", flat=True))


@pytest.fixture
def admin_api(admin_user) -> APIClient:
    client = APIClient()
    client.force_authenticate(admin_user)
    return client


def test_registered_by_url_through_the_api(pool_host, admin_api, api):
    created = admin_api.post(
        "/api/servers/",
        {
            "name": "petstore",
            "transport": "openapi",
            "openapi_source": f"{api.url}/v2/swagger.json",
            "headers": {"scheme:api_key": "special-key"},
            "openapi_filters": {"include": ["tag:pet"], "exclude": ["operation:findPetsByTags"]},
        },
        format="json",
    )

    assert created.status_code == 201, created.json()
    assert created.json()["url"] == f"{api.url}/v2"  # the document's host and basePath
    assert "openapi_document" not in created.json()  # large, and shown by the document's URL
    tools = eventually(lambda: _tools("petstore"), timeout=30)
    assert "getPetById" in tools and "findPetsByStatus" in tools
    assert "getInventory" not in tools and "findPetsByTags" not in tools  # the filters
    assert McpServer.objects.get(name="petstore").status == "healthy"


def test_an_upload_of_yaml_text_through_the_api(pool_host, admin_api, api):
    created = admin_api.post(
        "/api/servers/",
        {
            "name": "items",
            "transport": "openapi",
            "openapi_document": yaml.safe_dump(document(api.url)),
        },
        format="json",
    )

    assert created.status_code == 201, created.json()
    assert {"getItem", "createItem"} <= eventually(lambda: _tools("items"), timeout=30)


def test_a_bad_document_is_refused_naming_where_and_nothing_is_saved(admin_api, api):
    broken = document(api.url)
    del broken["paths"]["/items/{itemId}"]["get"]["parameters"][0]  # {itemId} now undeclared
    answer = admin_api.post(
        "/api/servers/",
        {"name": "broken", "transport": "openapi", "openapi_document": json.dumps(broken)},
        format="json",
    )
    unreachable = admin_api.post(
        "/api/servers/",
        {"name": "gone", "transport": "openapi", "openapi_source": f"{api.url}/nothing-here.json"},
        format="json",
    )

    assert answer.status_code == 400
    [message] = answer.json()["openapi_document"]
    assert message.startswith("invalid at $.paths./items/{itemId}.get: Path parameter 'itemId'")
    assert unreachable.status_code == 400
    assert unreachable.json()["openapi_source"] == [
        f"cannot fetch {api.url}/nothing-here.json: HTTP 404"
    ]
    assert not McpServer.objects.filter(name__in=["broken", "gone"]).exists()


def test_the_servers_page_takes_an_upload(pool_host, admin_client, api):
    upload = SimpleUploadedFile(
        "petstore.yaml",
        (api.petstore_v3_text()).encode(),
        content_type="application/yaml",
    )
    response = admin_client.post(
        "/servers/new/",
        {
            "name": "petstore3",
            "transport": "openapi",
            "url": f"{api.url}/api/v3",
            "timeout": "30",
            "enabled": "on",
            "visibility": "global",
            "headers": "scheme:api_key=special-key",
            "openapi_filters": "{}",
            "openapi_file": upload,
            "user_variables": "[]",
            "save": "1",
        },
    )

    assert response.status_code == 302, response.content.decode()[-3000:]
    assert "getPetById" in eventually(lambda: _tools("petstore3"), timeout=30)


def test_a_mcp_json_entry_of_type_openapi_imports_and_exports(pool_host, api):
    text = json.dumps(
        {
            "mcpServers": {
                "items": {
                    "type": "openapi",
                    "openapi": f"{api.url}/openapi.json",
                    "headers": {"scheme:bearer": "${user:ITEMS_TOKEN}"},
                    "exclude": ["tag:auth"],
                }
            }
        }
    )

    import_mcp_json(text=text, environ={})

    server = McpServer.objects.get(name="items")
    assert (server.transport, server.url) == ("openapi", f"{api.url}/v1")
    assert [v.name for v in server.user_variable_list()] == ["ITEMS_TOKEN"]
    entry = json.loads(export_servers(servers=[server]).text)["mcpServers"]["items"]
    assert entry == {
        "type": "openapi",
        "openapi": f"{api.url}/openapi.json",
        "url": f"{api.url}/v1",
        "headers": {"scheme:bearer": "${user:ITEMS_TOKEN}"},
        "exclude": ["tag:auth"],
    }


def test_an_uploaded_document_is_exported_whole_and_imported_back(pool_host, admin_api, api):
    created = admin_api.post(
        "/api/servers/",
        {
            "name": "items",
            "transport": "openapi",
            "openapi_document": json.dumps(document(api.url)),
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    server = McpServer.objects.get(name="items")
    exported = export_servers(servers=[server]).text
    entry = json.loads(exported)["mcpServers"]["items"]
    assert entry["openapi"]["paths"]  # no URL to fetch it from again: the document itself
    server.delete()

    import_mcp_json(text=exported, environ={})

    back = McpServer.objects.get(name="items")
    assert json.loads(back.openapi_document) == json.loads(server.openapi_document)
    assert (back.url, back.openapi_source) == (server.url, "")
    operations.discover_now(server=back)
    assert {"getItem", "createItem"} <= _tools("items")
    # Imported again unchanged: nothing to do; a changed document: its operations change.
    assert import_mcp_json(text=exported, environ={}).changes[0].action == "unchanged"
    del entry["openapi"]["paths"]["/items/{itemId}"]
    changed = import_mcp_json(text=json.dumps({"mcpServers": {"items": entry}}), environ={})
    assert changed.changes[0].fields == ("openapi_document",)
    operations.discover_now(server=McpServer.objects.get(name="items"))
    assert "getItem" not in _tools("items")


def test_a_changed_document_shows_as_changed_tools_on_discover(pool_host, admin_api, api):
    created = admin_api.post(
        "/api/servers/",
        {"name": "items", "transport": "openapi", "openapi_source": f"{api.url}/openapi.json"},
        format="json",
    )
    assert created.status_code == 201, created.json()
    eventually(lambda: "getItem" in _tools("items"), timeout=30)

    changed = document(api.url)
    changed["paths"]["/items/{itemId}"]["get"]["operationId"] = "fetchItem"
    api.document_override = json.dumps(changed)
    outcome = operations.discover_now(server=McpServer.objects.get(name="items"))

    assert outcome.ok, outcome
    assert outcome.report.added == ["tool fetchItem"]
    assert outcome.report.vanished == ["tool getItem"]
    assert "fetchItem" in _tools("items") and "getItem" not in _tools("items")


def test_the_admin_takes_a_document_url_and_says_what_is_wrong_with_a_bad_one(
    pool_host, admin_client, api
):
    form = {
        "name": "petstore2",
        "transport": "openapi",
        "command": "",
        "args": "",
        "url": "",
        "timeout": "30",
        "enabled": "on",
        "visibility": "global",
        "env": "",
        "headers": "scheme:api_key=special-key",
        "user_variables": "[]",
        "openapi_filters": "{}",
        "openapi_source": f"{api.url}/v2/swagger.json",
    }
    bad = admin_client.post(
        "/admin/catalog/mcpserver/add/",
        {**form, "openapi_source": "", "openapi_file": SimpleUploadedFile("x.yaml", b"swagger: [")},
    )
    good = admin_client.post("/admin/catalog/mcpserver/add/", form)

    assert bad.status_code == 200
    assert "the document is not valid YAML or JSON" in bad.content.decode()
    assert good.status_code == 302, good.content.decode()[-3000:]
    assert "getPetById" in eventually(lambda: _tools("petstore2"), timeout=30)
    assert McpServer.objects.get(name="petstore2").url == f"{api.url}/v2"


def test_scheme_credentials_belong_to_openapi_servers_only(admin_api):
    answer = admin_api.post(
        "/api/servers/",
        {
            "name": "notes",
            "transport": "streamable_http",
            "url": "https://notes.example.com/mcp",
            "headers": {"scheme:bearer": "x"},
        },
        format="json",
    )

    assert answer.status_code == 400
    assert "scheme:NAME holds a credential of an OpenAPI server" in answer.json()["headers"][0]


def test_editing_an_uploaded_server_on_the_servers_page_keeps_its_document(
    pool_host, admin_client, admin_api, api
):
    created = admin_api.post(
        "/api/servers/",
        {
            "name": "items",
            "transport": "openapi",
            "openapi_document": json.dumps(document(api.url)),
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    stored = McpServer.objects.get(name="items").openapi_document

    response = admin_client.post(
        "/servers/items/edit/",
        {
            "name": "items",
            "display_name": "Our items",
            "transport": "openapi",
            "url": f"{api.url}/v1",
            "timeout": "30",
            "enabled": "on",
            "visibility": "global",
            "headers": "",
            "openapi_filters": "{}",
            "user_variables": "[]",
            "save": "1",
        },
    )

    assert response.status_code == 302, response.content.decode()[-3000:]
    server = McpServer.objects.get(name="items")
    assert (server.display_name, server.openapi_document) == ("Our items", stored)
