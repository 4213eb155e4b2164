"""Which backend a `resources/read` URI belongs to is decided by matching the backends' URI
templates, on RE2: a template of consecutive `{+x}` from a backend and a long URI from a client
cannot freeze the web process (Python's backtracking `re` took 23 s at six and 120 characters)."""

from __future__ import annotations

import time

import pytest

from apps.gateway.jsonrpc import RESOURCE_NOT_FOUND, RpcError
from apps.gateway.protocol import _resource_server
from apps.toolsets.exposure import EndpointView

TEMPLATES = [
    ("slow", {"uriTemplate": "{+a}{+b}{+c}{+d}{+e}{+f}x"}),
    ("files", {"uriTemplate": "file:///{dir}/{+path}"}),
]


def _view(templates) -> EndpointView:
    return EndpointView(endpoint_id=1, owner_id=1, slug="e", version=0, templates=templates)


VIEW = _view(TEMPLATES)


def test_a_hostile_template_answers_not_found_at_once():
    started = time.thread_time()
    with pytest.raises(RpcError) as refused:
        _resource_server(VIEW, "a" * 120)

    assert refused.value.code == RESOURCE_NOT_FOUND
    assert time.thread_time() - started < 2  # milliseconds; 23 s of CPU on the backtracking engine


@pytest.mark.parametrize(
    ("uri", "server"),
    [("file:///docs/a/b.txt", "files"), ("abcdefx", "slow"), ("weird [chars]x", "slow")],
)
def test_templates_still_match_what_they_name(uri, server):
    assert _resource_server(VIEW, uri) == server


def test_a_template_too_large_for_re2_matches_nothing():
    view = _view([("huge", {"uriTemplate": "{+a}" * 200_000})])

    with pytest.raises(RpcError):
        _resource_server(view, "anything")
