"""Fixtures of the openapi tests: our REST API (rest_api.py) running for the whole session."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from apps.catalog import openapi
from apps.connections.specs import ServerSpec
from tests.openapi.rest_api import RestApi


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def rest_api() -> Iterator[RestApi]:
    api = RestApi().start()
    yield api
    api.stop()


@pytest.fixture
def api(rest_api: RestApi) -> Iterator[RestApi]:
    """The session's API with its counters and tokens as new."""
    rest_api.requests.clear()
    rest_api.tokens_issued = 0
    rest_api.token_lifetime = 3600
    rest_api.document_override = None
    rest_api.revoke_tokens()
    yield rest_api
    rest_api.document_override = None


def api_spec(
    api: RestApi,
    *,
    secrets: dict[str, str] | None = None,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    public_only: bool = False,
    name: str = "testapi",
) -> ServerSpec:
    """The spec the catalog would build for our API, its document loaded as the catalog loads it."""
    loaded = openapi.load(source=f"{api.url}/openapi.json", public_only=False)
    filters = {"include": include or [], "exclude": exclude or []}
    return ServerSpec(
        name=name,
        transport="openapi",
        url=loaded.base_url,
        headers={f"scheme:{k}": v for k, v in (secrets or {}).items()},
        openapi=openapi.spec_blob(loaded.text, filters),
        timeout=20,
        public_only=public_only,
    )


def text_of(result: dict) -> str:
    return "\n".join(c.get("text", "") for c in result["content"])


__all__ = ["api_spec", "json", "text_of"]
