"""Endpoints in the admin: enabled tools through an autocomplete inline, within the token budget."""

from __future__ import annotations

import pytest
from django.urls import reverse

from apps.catalog.models import McpServer, Tool
from apps.toolsets.models import Endpoint, EndpointTool
from apps.toolsets.services import set_enabled_tools
from tests.admin.browser import form_data, submit


@pytest.fixture
def logged_in(client, admin_user):
    client.force_login(admin_user)
    return client


@pytest.fixture
def many_tools(db) -> list[Tool]:
    servers = [
        McpServer.objects.create(name=f"srv{i}", transport="stdio", command="run") for i in range(3)
    ]
    return Tool.objects.bulk_create(
        Tool(
            server=servers[i % 3],
            name=f"tool_{i:03d}",
            input_schema={"type": "object"},
            token_estimate=10,
        )
        for i in range(300)
    )


@pytest.fixture
def alices_endpoint(alice) -> Endpoint:
    return Endpoint.objects.get(owner=alice, is_default=True)


def change_url(endpoint: Endpoint) -> str:
    return reverse("admin:toolsets_endpoint_change", args=[endpoint.pk])


def test_an_endpoint_with_300_tools_renders_with_a_bounded_number_of_queries(
    logged_in, alices_endpoint, many_tools, django_assert_max_num_queries
):
    set_enabled_tools(endpoint=alices_endpoint, tools=many_tools)

    with django_assert_max_num_queries(30):
        response = logged_in.get(change_url(alices_endpoint))

    assert response.status_code == 200
    html = response.content.decode()
    assert "srv2.tool_299" in html
    assert "3,000 / 20,000" in html


def test_tools_are_enabled_and_disabled_through_the_inline(logged_in, alices_endpoint, many_tools):
    kept, dropped, added = many_tools[0], many_tools[1], many_tools[2]
    set_enabled_tools(endpoint=alices_endpoint, tools=[kept, dropped])
    rows = {
        row.tool_id: index
        for index, row in enumerate(
            EndpointTool.objects.filter(endpoint=alices_endpoint).order_by(
                "tool__server__name", "tool__name"
            )
        )
    }

    response = submit(
        logged_in,
        change_url(alices_endpoint),
        {
            f"endpoint_tools-{rows[dropped.pk]}-DELETE": "on",
            "endpoint_tools-TOTAL_FORMS": "3",
            "endpoint_tools-2-tool": str(added.pk),
            "endpoint_tools-2-name_override": "",
            "endpoint_tools-2-description_override": "",
            "endpoint_tools-2-endpoint": str(alices_endpoint.pk),
        },
    )

    assert response.status_code == 302
    assert set(alices_endpoint.tools.all()) == {kept, added}


def test_enabling_past_an_enforced_budget_is_refused(logged_in, alices_endpoint, many_tools):
    response = submit(
        logged_in,
        change_url(alices_endpoint),
        {
            "token_budget": "5",
            "endpoint_tools-TOTAL_FORMS": "1",
            "endpoint_tools-0-tool": str(many_tools[0].pk),
            "endpoint_tools-0-endpoint": str(alices_endpoint.pk),
        },
    )

    assert response.status_code == 200
    assert "over the budget of 5 of the endpoint" in response.content.decode()
    alices_endpoint.refresh_from_db()
    assert alices_endpoint.token_budget == 20000
    assert not alices_endpoint.tools.exists()


def test_the_same_tool_twice_is_refused(logged_in, alices_endpoint, many_tools):
    tool = str(many_tools[0].pk)

    response = submit(
        logged_in,
        change_url(alices_endpoint),
        {
            "endpoint_tools-TOTAL_FORMS": "2",
            "endpoint_tools-0-tool": tool,
            "endpoint_tools-0-endpoint": str(alices_endpoint.pk),
            "endpoint_tools-1-tool": tool,
            "endpoint_tools-1-endpoint": str(alices_endpoint.pk),
        },
    )

    assert response.status_code == 200
    assert not alices_endpoint.tools.exists()


def test_changelist_shows_enabled_count_and_tokens_against_budget(
    logged_in, alice, bob, alices_endpoint, many_tools, django_assert_max_num_queries
):
    set_enabled_tools(endpoint=alices_endpoint, tools=many_tools[:12])

    with django_assert_max_num_queries(12):
        response = logged_in.get(reverse("admin:toolsets_endpoint_changelist"))

    rows = {endpoint.pk: endpoint for endpoint in response.context["cl"].result_list}
    assert (rows[alices_endpoint.pk].enabled_count, rows[alices_endpoint.pk].token_total) == (
        12,
        120,
    )
    bobs = Endpoint.objects.get(owner=bob)
    assert (rows[bobs.pk].enabled_count, rows[bobs.pk].token_total) == (0, 0)
    assert "120 / 20,000" in response.content.decode()


def test_the_tool_autocomplete_searches_the_catalog(logged_in, many_tools):
    response = logged_in.get(
        reverse("admin:autocomplete"),
        {
            "app_label": "toolsets",
            "model_name": "endpointtool",
            "field_name": "tool",
            "term": "tool_29",
        },
    )

    texts = {result["text"] for result in response.json()["results"]}
    assert "srv2.tool_299" in texts and "srv0.tool_000" not in texts


def post_300_tools(client, endpoint: Endpoint, tools: list[Tool]):
    """Alice has 299 tools enabled; the admin renames the endpoint and adds the 300th tool."""
    set_enabled_tools(endpoint=endpoint, tools=tools[:299])
    url = change_url(endpoint)
    data = form_data(client.get(url).content.decode())
    data.update(
        {
            "name": "Everything",
            "endpoint_tools-TOTAL_FORMS": "300",
            "endpoint_tools-299-tool": str(tools[299].pk),
            "endpoint_tools-299-endpoint": str(endpoint.pk),
        }
    )
    return client.post(url, data)


def test_saving_an_endpoint_with_300_tools_checks_only_the_rows_that_changed(
    logged_in, alices_endpoint, many_tools, django_assert_max_num_queries, settings
):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 10_000

    with django_assert_max_num_queries(40):
        response = post_300_tools(logged_in, alices_endpoint, many_tools)

    assert response.status_code == 302
    alices_endpoint.refresh_from_db()
    assert alices_endpoint.name == "Everything"
    assert alices_endpoint.tools.count() == 300


def test_an_endpoint_with_300_tools_can_be_saved_with_the_project_settings(
    logged_in, alices_endpoint, many_tools
):
    assert post_300_tools(logged_in, alices_endpoint, many_tools).status_code == 302
