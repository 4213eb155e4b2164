"""An `openapi` server's tools called through the real pool against our REST API: parameters in
every place, bodies, validation before sending, responses of every kind, redirects, the address policy."""

from __future__ import annotations

import json

import pytest

from apps.connections.pool import Pool
from tests.openapi.conftest import api_spec, text_of
from tests.openapi.rest_api import BIG_ITEMS, document

pytestmark = pytest.mark.anyio


async def test_the_documents_operations_become_tools_with_hints_and_schemas(api):
    async with Pool() as pool:
        tools = {t.name: t for t in await pool.list_tools(api_spec(api))}

    assert {"getItem", "deleteItem", "createItem", "listItems", "whoami_bearer", "bigList"} <= set(
        tools
    )
    assert "put_items_itemId_label" in tools  # no operationId: method and path
    get_item = tools["getItem"]
    assert get_item.description == "One item\n\nEchoes what it was sent."
    assert get_item.input_schema["required"] == ["itemId"]
    props = get_item.input_schema["properties"]
    assert props["itemId"] == {"type": "integer"}
    assert props["color"] == {"type": "string", "enum": ["red", "blue"], "default": "red"}
    assert set(props) == {"itemId", "color", "tags", "X-Trace", "session"}
    # The output schema comes from the other document ($ref defs.json#/Item), nullable made JSON Schema.
    assert get_item.output_schema["properties"]["price"] == {"type": ["number", "null"]}
    assert tools["listItems"].output_schema["properties"]["result"]["type"] == "array"
    assert get_item.annotations.read_only_hint is True
    assert tools["deleteItem"].annotations.destructive_hint is True
    assert tools["put_items_itemId_label"].annotations.idempotent_hint is True
    assert tools["createItem"].annotations.read_only_hint is False
    assert tools["createItem"].annotations.destructive_hint is False


async def test_path_query_header_and_cookie_arguments_reach_the_api(api):
    async with Pool() as pool:
        result = await pool.call_tool(
            api_spec(api),
            "getItem",
            {"itemId": 7, "color": "blue", "tags": ["a", "b"], "X-Trace": "t-1", "session": "s-1"},
            raw=True,
        )

    assert result["isError"] is False
    assert result["structuredContent"] == {
        "id": 7,
        "name": "echo",
        "color": "blue",
        "tags": ["a", "b"],
        "trace": "t-1",
        "session": "s-1",
    }
    assert json.loads(text_of(result)) == result["structuredContent"]


async def test_json_and_form_bodies(api):
    async with Pool() as pool:
        spec = api_spec(api)
        created = await pool.call_tool(spec, "createItem", {"name": "lamp", "price": 9.5}, raw=True)
        labelled = await pool.call_tool(
            spec, "put_items_itemId_label", {"itemId": 3, "label": "fragile"}, raw=True
        )

    assert created["structuredContent"] == {"id": 99, "name": "lamp", "price": 9.5}
    assert json.loads(text_of(labelled)) == {"id": 3, "label": "fragile"}


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ({}, "missing required argument 'itemId'"),
        ({"itemId": "seven"}, "argument 'itemId': 'seven' is not of type 'integer'"),
        (
            {"itemId": 1, "color": "green"},
            "argument 'color': 'green' is not one of ['red', 'blue']",
        ),
    ],
)
async def test_a_wrong_call_is_a_tool_error_naming_the_argument_and_sends_nothing(
    api, arguments, said
):
    async with Pool() as pool:
        result = await pool.call_tool(api_spec(api), "getItem", arguments, raw=True)

    assert result["isError"] is True
    assert said in text_of(result)
    assert not any(path.startswith("/v1/items") for path in api.requests)


async def test_errors_come_back_with_status_and_an_excerpt(api):
    async with Pool() as pool:
        result = await pool.call_tool(api_spec(api), "fail", {}, raw=True)

    assert result["isError"] is True
    assert text_of(result).startswith("HTTP 500 Internal Server Error from GET /fail")
    assert "the disk is on fire" in text_of(result)


async def test_a_large_body_is_cut_with_a_note_and_still_structured(api):
    async with Pool() as pool:
        result = await pool.call_tool(api_spec(api), "bigList", {}, raw=True)

    text = text_of(result)
    assert result["isError"] is False
    assert "[response cut:" in text and "bytes in all, the first 100,000 characters shown]" in text
    assert len(text) < 101_000
    assert len(result["structuredContent"]["result"]) == BIG_ITEMS


async def test_text_images_and_redirects(api):
    async with Pool() as pool:
        spec = api_spec(api)
        text = await pool.call_tool(spec, "plainText", {}, raw=True)
        image = await pool.call_tool(spec, "pixel", {}, raw=True)
        moved = await pool.call_tool(spec, "moved", {}, raw=True)

    assert text_of(text) == "plain words\n" * 3 and "structuredContent" not in text
    assert image["content"][0]["type"] == "image"
    assert image["content"][0]["mimeType"] == "image/png"
    assert moved["structuredContent"]["id"] == 1  # the redirect was followed


async def test_filters_choose_the_operations(api):
    async with Pool() as pool:
        auth_only = {t.name for t in await pool.list_tools(api_spec(api, include=["tag:auth"]))}
        no_deletes = {
            t.name
            for t in await pool.list_tools(
                api_spec(api, exclude=["method:DELETE", "path:/whoami/*"], name="testapi2")
            )
        }

    assert auth_only == {
        f"whoami_{k}" for k in ("headerKey", "queryKey", "cookieKey", "bearer", "basic", "oauth")
    }
    assert "deleteItem" not in no_deletes and "getItem" in no_deletes
    assert not any(name.startswith("whoami") for name in no_deletes)


async def test_a_user_chosen_api_on_a_private_address_is_refused(api, settings):
    settings.MCPHUB_OUTBOUND_ALLOW = []  # the tests' own allowance of 127.0.0.1 withdrawn
    async with Pool() as pool:
        result = await pool.call_tool(
            api_spec(api, public_only=True), "getItem", {"itemId": 1}, raw=True
        )

    assert result["isError"] is True
    assert "not at a public address" in text_of(result)
    assert "/v1/items/1" not in api.requests


async def test_a_response_that_breaks_its_documented_schema_is_an_error_with_the_body(api):
    doc = document(api.url)
    item = doc["paths"]["/items/{itemId}"]["get"]["responses"]["200"]["content"]["application/json"]
    item["schema"] = {"type": "object", "properties": {"id": {"type": "string"}}}
    doc["paths"]["/text"]["get"]["responses"]["200"]["content"] = {
        "application/json": {"schema": {"type": "object"}}
    }
    api.document_override = json.dumps(doc)
    async with Pool() as pool:
        spec = api_spec(api)
        mismatch = await pool.call_tool(spec, "getItem", {"itemId": 3}, raw=True)
        not_json = await pool.call_tool(spec, "plainText", {}, raw=True)

    # Clients refuse structuredContent that does not fit the output schema: said here instead.
    assert mismatch["isError"] is True and "structuredContent" not in mismatch
    assert text_of(mismatch).startswith(
        "GET /items/{itemId}: the response does not match the document's schema at id: "
        "3 is not of type 'string'. The response:\n"
    )
    assert '"name": "echo"' in text_of(mismatch)
    assert not_json["isError"] is True
    assert "the API answered text/plain, not the JSON its document promises" in text_of(not_json)
