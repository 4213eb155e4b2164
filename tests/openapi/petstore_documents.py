"""The public Petstore documents (Swagger 2.0 and OpenAPI 3.0), served locally with a stub behind.

`documents/petstore-v2.json` is the Swagger Petstore 1.0.7 document (its `host` is rewritten to this
server when served); `documents/petstore-v3.yaml` is the Swagger Petstore - OpenAPI 3.0 document,
whose server URL is relative (`/api/v3`), resolved against where the document was fetched from.
The stub keeps pets in memory and checks the `api_key` header where the documents ask for it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aiohttp import web

DOCUMENTS = Path(__file__).resolve().parent / "documents"
API_KEY = "special-key"
V2_TEXT = (DOCUMENTS / "petstore-v2.json").read_text()
V3_TEXT = (DOCUMENTS / "petstore-v3.yaml").read_text()

PETS: dict[int, dict[str, Any]] = {}


def reset() -> None:
    PETS.clear()
    PETS[1] = {"id": 1, "name": "Rex", "photoUrls": [], "status": "available"}
    PETS[2] = {"id": 2, "name": "Tom", "photoUrls": [], "status": "sold"}


def add_routes(router: web.UrlDispatcher) -> None:
    reset()
    router.add_get("/v2/swagger.json", _v2_document)
    router.add_get("/api/v3/openapi.yaml", _v3_document)
    for base in ("/v2", "/api/v3"):
        router.add_get(base + "/pet/findByStatus", _find_by_status)
        router.add_get(base + "/pet/{petId}", _get_pet)
        router.add_post(base + "/pet", _add_pet)
        router.add_get(base + "/store/inventory", _inventory)


async def _v2_document(request: web.Request) -> web.Response:
    document = json.loads(V2_TEXT)
    document["host"] = request.host
    document["schemes"] = ["http"]
    return web.json_response(document)


async def _v3_document(request: web.Request) -> web.Response:
    return web.Response(text=V3_TEXT, content_type="application/yaml")


async def _find_by_status(request: web.Request) -> web.Response:
    wanted = set(request.query.getall("status", ["available"]))
    return web.json_response([p for p in PETS.values() if p["status"] in wanted])


async def _get_pet(request: web.Request) -> web.Response:
    if request.path.startswith("/v2") and request.headers.get("api_key") != API_KEY:
        return web.json_response({"code": 401, "message": "api_key needed"}, status=401)
    pet = PETS.get(int(request.match_info["petId"]))
    if pet is None:
        return web.json_response(
            {"code": 1, "type": "error", "message": "Pet not found"}, status=404
        )
    return web.json_response(pet)


async def _add_pet(request: web.Request) -> web.Response:
    pet = await request.json()
    pet.setdefault("id", max(PETS, default=0) + 1)
    PETS[pet["id"]] = pet
    return web.json_response(pet)


async def _inventory(request: web.Request) -> web.Response:
    if request.headers.get("api_key") != API_KEY:
        return web.json_response({"code": 401, "message": "api_key needed"}, status=401)
    counts: dict[str, int] = {}
    for pet in PETS.values():
        counts[pet["status"]] = counts.get(pet["status"], 0) + 1
    return web.json_response(counts)
