"""The discovered catalog in the admin: servers at a glance, tools and friends read-only."""

from __future__ import annotations

import pytest
from django.urls import reverse

from apps.catalog.models import Prompt, Resource, ResourceTemplate, Tool
from tests.admin.browser import submit


@pytest.fixture
def logged_in(client, admin_user):
    client.force_login(admin_user)
    return client


def test_server_changelist_counts_tools_without_a_query_per_server(
    logged_in, global_server, alice_private_server, make_tool, django_assert_max_num_queries
):
    for name in ("now", "convert", "zones"):
        make_tool(global_server, name)
    global_server.last_error = "Connection refused " * 20
    global_server.save()

    with django_assert_max_num_queries(10):
        response = logged_in.get(reverse("admin:catalog_mcpserver_changelist"))

    rows = {server.name: server for server in response.context["cl"].result_list}
    assert (rows["time"].tool_count, rows["alice-notes"].tool_count) == (3, 0)
    html = response.content.decode()
    assert "Connection refused " * 4 in html and "Connection refused " * 20 not in html
    assert "alice-secret-header" not in html


def test_tool_detail_is_read_only_with_pretty_printed_schemas(logged_in, global_server, make_tool):
    tool = make_tool(global_server, "now")
    tool.input_schema = {"type": "object", "properties": {"tz": {"type": "string"}}}
    tool.annotations = {"readOnlyHint": True}
    tool.save()
    url = reverse("admin:catalog_tool_change", args=[tool.pk])

    response = logged_in.get(url)

    html = response.content.decode()
    assert "<pre>{\n  &quot;properties&quot;: {\n    &quot;tz&quot;" in html
    assert "&quot;readOnlyHint&quot;: true" in html
    assert response.context["adminform"].form.fields == {}
    assert logged_in.post(url, {"name": "renamed"}).status_code == 403


def test_tool_changelist_filters_by_server_and_searches_descriptions(
    logged_in, global_server, alice_private_server, make_tool
):
    make_tool(global_server, "now")
    make_tool(alice_private_server, "notes_search")
    url = reverse("admin:catalog_tool_changelist")

    by_server = (
        logged_in.get(url, {"server__id__exact": global_server.pk}).context["cl"].result_list
    )
    by_search = logged_in.get(url, {"q": "notes_search tool"}).context["cl"].result_list

    assert [tool.name for tool in by_server] == ["now"]
    assert [tool.name for tool in by_search] == ["notes_search"]


def test_server_page_lists_its_tools_and_still_saves_with_hundreds_of_them(
    logged_in, global_server, make_tool, django_assert_max_num_queries
):
    make_tool(global_server, "convert_time", tokens=321)
    Tool.objects.bulk_create(
        Tool(server=global_server, name=f"other_{number:04d}", input_schema={})
        for number in range(1200)
    )
    url = reverse("admin:catalog_mcpserver_change", args=[global_server.pk])

    with django_assert_max_num_queries(12):
        html = logged_in.get(url).content.decode()

    assert "convert_time</a></td><td>yes</td><td>321" in html
    assert f'?server__id__exact={global_server.pk}">All 1201 tools' in html
    assert submit(logged_in, url, {"description": "clock"}).status_code == 302


@pytest.mark.parametrize(
    ("model", "fields"),
    [
        (
            Resource,
            {"uri": "file:///notes.md", "name": "notes", "annotations": {"audience": ["user"]}},
        ),
        (
            ResourceTemplate,
            {"uri_template": "file:///{path}", "name": "files", "annotations": {"priority": 1}},
        ),
        (Prompt, {"name": "summarize", "arguments": [{"name": "text", "required": True}]}),
    ],
)
def test_other_discovered_items_show_read_only(logged_in, global_server, model, fields):
    item = model.objects.create(server=global_server, **fields)
    meta = model._meta

    response = logged_in.get(
        reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[item.pk])
    )

    assert response.status_code == 200
    assert response.context["adminform"].form.fields == {}
    assert "<pre>" in response.content.decode()
