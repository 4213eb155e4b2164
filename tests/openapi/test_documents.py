"""Documents as a person registers them: JSON or YAML, 2.0 / 3.0 / 3.1, remote $refs, and bad ones
refused with a message that says where they are wrong."""

from __future__ import annotations

import json

import pytest

from apps.catalog.openapi import DocumentError, load
from apps.connections.transports.openapi_ops import operations
from tests.openapi.petstore_documents import V2_TEXT, V3_TEXT

MINIMAL = {"openapi": "3.1.0", "info": {"title": "x", "version": "1"}, "paths": {}}


def refused(text: str, **kwargs) -> str:
    with pytest.raises(DocumentError) as error:
        load(text=text, public_only=False, **kwargs)
    return str(error.value)


def test_bad_documents_are_refused_naming_where():
    assert refused("openapi: 3.0.0\ninfo: {title: x\n") == (
        "the document is not valid YAML or JSON: expected ',' or '}', but got '<stream end>' "
        "at line 3 column 1"
    )
    assert refused('{"openapi": "3.0.0",}').startswith("the document is not valid JSON")
    assert (
        refused("- just\n- a list\n")
        == "the document is not an OpenAPI document (not a mapping at the top)"
    )
    assert "no 'openapi: 3.x' or 'swagger: \"2.0\"'" in refused('{"title": "x"}')
    no_version = {**MINIMAL, "info": {"title": "x"}}
    assert refused(json.dumps(no_version)) == 'invalid at $.info: "version" is a required property'
    undeclared = {
        **MINIMAL,
        "paths": {"/a/{id}": {"get": {"responses": {"200": {"description": "x"}}}}},
    }
    assert refused(json.dumps(undeclared)).startswith(
        "invalid at $.paths./a/{id}.get: Path parameter 'id'"
    )
    dangling = {
        **MINIMAL,
        "paths": {"/a": {"get": {"responses": {"200": {"$ref": "#/components/responses/Nope"}}}}},
    }
    assert refused(json.dumps(dangling)) == (
        "invalid at $.paths./a.get.responses.200: $ref '#/components/responses/Nope' points nowhere "
        "(no 'components')"
    )


def test_a_remote_reference_needs_a_url_to_resolve_against():
    doc = {**MINIMAL, "paths": {"/a": {"get": {"responses": {"200": {"$ref": "other.yaml#/R"}}}}}}
    assert "a remote reference needs the document's URL" in refused(json.dumps(doc))


def test_swagger_2_petstore_becomes_tools():
    ops = {op.tool: op for op in operations(json.loads(V2_TEXT))}

    assert len(ops) == 19
    get = ops["getPetById"]
    assert (get.method, get.path, get.security) == ("GET", "/pet/{petId}", [{"api_key": []}])
    assert get.input_schema["properties"]["petId"] == {
        "type": "integer",
        "format": "int64",
        "description": "ID of pet to return",
    }
    assert get.output_schema["required"] == ["name", "photoUrls"]
    status = ops["findPetsByStatus"].input_schema["properties"]["status"]
    assert status["items"]["enum"] == ["available", "pending", "sold"]
    add = ops["addPet"]  # the body's properties are the arguments
    assert add.input_schema["required"] == ["name", "photoUrls"] and add.body_type == "json"
    assert "xml" not in json.dumps(add.input_schema)
    upload = ops["uploadFile"]
    assert upload.body_type == "multipart"
    assert upload.input_schema["properties"]["file"]["type"] == "string"
    assert ops["deletePet"].annotations["destructiveHint"] is True
    assert ops["createUsersWithListInput"].input_schema["properties"]["body"]["type"] == "array"
    assert ops["loginUser"].output_schema == {
        "type": "object",
        "properties": {"result": {"type": "string"}},
        "required": ["result"],
    }


def test_openapi_3_petstore_in_yaml_becomes_tools_and_keeps_enums_and_defaults():
    loaded = load(text=V3_TEXT, public_only=False, source="http://127.0.0.1:9/api/v3/openapi.yaml")
    ops = {op.tool: op for op in operations(loaded.document)}

    assert loaded.base_url == "http://127.0.0.1:9/api/v3"  # `servers: [{url: /api/v3}]` resolved
    status = ops["findPetsByStatus"].input_schema["properties"]["status"]
    assert status["default"] == "available" and status["enum"] == ["available", "pending", "sold"]
    assert ops["getPetById"].security == [
        {"api_key": []},
        {"petstore_auth": ["write:pets", "read:pets"]},
    ]
    # Only an octet-stream body: not offered as an argument, the rest of the operation is.
    assert set(ops["uploadFile"].input_schema["properties"]) == {"petId", "additionalMetadata"}
    assert ops["updatePet"].body_type == "json"


def test_yaml_and_json_of_one_document_give_the_same_tools(rest_api):
    from_json = load(source=f"{rest_api.url}/openapi.json", public_only=False)
    from_yaml = load(source=f"{rest_api.url}/openapi.yaml", public_only=False)

    assert from_json.document == from_yaml.document
    assert from_json.base_url == f"{rest_api.url}/v1"  # the server variable's default
    assert "defs.json" not in from_json.text  # the remote $ref was inlined


def test_openapi_3_1_schemas_stay_json_schema():
    doc = {
        **MINIMAL,
        "paths": {
            "/n": {
                "post": {
                    "operationId": "make",
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        "n": {"type": ["integer", "null"], "examples": [1]}
                                    },
                                }
                            }
                        }
                    },
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    [op] = operations(load(text=json.dumps(doc), public_only=False).document)

    assert op.input_schema["properties"]["n"] == {"type": ["integer", "null"], "examples": [1]}


def test_recursive_schemas_are_cut_not_endless():
    doc = {
        **MINIMAL,
        "components": {
            "schemas": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "children": {
                            "type": "array",
                            "items": {"$ref": "#/components/schemas/Node"},
                        }
                    },
                }
            }
        },
        "paths": {
            "/tree": {
                "get": {
                    "operationId": "tree",
                    "responses": {
                        "200": {
                            "description": "ok",
                            "content": {
                                "application/json": {
                                    "schema": {"$ref": "#/components/schemas/Node"}
                                }
                            },
                        }
                    },
                }
            }
        },
    }
    [op] = operations(load(text=json.dumps(doc), public_only=False).document)

    assert "(recursive: Node)" in json.dumps(op.output_schema)


def test_a_document_a_user_points_at_a_private_address_is_not_fetched(rest_api, settings):
    settings.MCPHUB_OUTBOUND_ALLOW = []
    rest_api.requests.clear()
    with pytest.raises(DocumentError) as error:
        load(source=f"{rest_api.url}/openapi.json", public_only=True)

    assert "not at a public address" in str(error.value)
    assert rest_api.requests["/openapi.json"] == 0


def test_a_huge_schema_is_inlined_shallower():
    levels = {
        f"L{n}": {
            "type": "object",
            "properties": {f"p{i}": {"$ref": f"#/components/schemas/L{n + 1}"} for i in range(8)},
        }
        for n in range(6)
    }
    levels["L6"] = {"type": "string"}
    body = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/L0"}}}}
    doc = {
        **MINIMAL,
        "components": {"schemas": levels},
        "paths": {
            "/deep": {
                "post": {
                    "operationId": "deep",
                    "requestBody": body,
                    "responses": {"200": {"description": "ok", **body}},
                }
            }
        },
    }
    [op] = operations(load(text=json.dumps(doc), public_only=False).document)

    schema = json.dumps(op.input_schema)
    assert len(schema) <= 16_000 and "(nested too deep: L" in schema
    output = json.dumps(op.output_schema)
    assert len(output) <= 8_000 and "(nested too deep: L" in output


def test_a_default_that_breaks_its_own_schema_is_let_through():
    param = {
        "name": "q",
        "in": "query",
        "schema": {"type": "string", "minLength": 1, "default": ""},
    }
    doc = {
        **MINIMAL,
        "paths": {
            "/s": {
                "get": {
                    "operationId": "search",
                    "parameters": [param],
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
    }
    [op] = operations(load(text=json.dumps(doc), public_only=False).document)

    assert op.input_schema["properties"]["q"]["default"] == ""
