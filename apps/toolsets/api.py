"""REST API: tools with their enabled state, endpoints (with per-endpoint tool calls) and presets.

Views parse, authorize and call one service or selector; every change to an enabled set goes
through `apps.toolsets.services`, which announces it to connected MCP clients.
"""

from __future__ import annotations

import django_filters
from django.db.models import BooleanField, Q, QuerySet, Value
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from apps.catalog.models import Tool
from apps.catalog.selectors import visible_tools
from apps.toolsets import selectors, services
from apps.toolsets.models import Endpoint, Preset
from apps.toolsets.serializers import (
    BudgetSerializer,
    EnabledToolsSerializer,
    EndpointDetailSerializer,
    EndpointSerializer,
    LoadPresetSerializer,
    LoadResultSerializer,
    PresetSerializer,
    ReplaceToolsSerializer,
    ServerToggleResultSerializer,
    ToggleResultSerializer,
    ToggleSerializer,
    ToolDetailSerializer,
    ToolSerializer,
)


class BudgetRefused(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "budget_exceeded"

    def __init__(self, error: services.BudgetExceeded) -> None:
        super().__init__(str(error))
        # Numbers stay numbers, so scripts can act on how far over the budget they are.
        self.detail = {"detail": self.detail, "over_by": error.over_by, "total": error.total}


class ToolFilter(django_filters.FilterSet):
    search = django_filters.CharFilter(
        method="filter_search", label="Search name, title and description"
    )
    server = django_filters.CharFilter(field_name="server__name", label="Server name")
    available = django_filters.BooleanFilter()
    enabled = django_filters.BooleanFilter(label="Enabled on the endpoint")

    class Meta:
        model = Tool
        fields = ["search", "server", "available", "enabled"]

    def filter_search(self, queryset: QuerySet[Tool], name: str, value: str) -> QuerySet[Tool]:
        return queryset.filter(
            Q(name__icontains=value)
            | Q(title__icontains=value)
            | Q(description__icontains=value)
            | Q(server__name__icontains=value)
        )


class ToolListFilter(ToolFilter):
    endpoint = django_filters.CharFilter(
        method="keep", label="Endpoint slug `enabled` refers to (default: yours)"
    )

    class Meta(ToolFilter.Meta):
        fields = [*ToolFilter.Meta.fields, "endpoint"]

    def keep(self, queryset: QuerySet[Tool], name: str, value: str) -> QuerySet[Tool]:
        return queryset  # applied by the view, which annotates `enabled` for that endpoint


class ToolViewSet(viewsets.ReadOnlyModelViewSet):
    """Every tool you may see, with a token estimate and whether it is enabled on an endpoint."""

    queryset = Tool.objects.none()
    filterset_class = ToolListFilter

    def get_serializer_class(self):
        return ToolDetailSerializer if self.action == "retrieve" else ToolSerializer

    def get_queryset(self) -> QuerySet[Tool]:
        if getattr(self, "swagger_fake_view", False):
            return Tool.objects.none()
        slug = self.request.query_params.get("endpoint")
        endpoint = (
            selectors.visible_endpoints(self.request.user).filter(slug=slug).first()
            if slug
            else selectors.default_endpoint_for(self.request.user)
        )
        if endpoint is None:
            tools = visible_tools(self.request.user).annotate(
                enabled=Value(False, output_field=BooleanField())
            )
            return tools.none() if slug else tools
        return selectors.endpoint_tools(self.request.user, endpoint)


def resolve_tool_keys(user, keys: list[str]) -> dict[str, Tool]:
    """The visible tools named by `server.tool` keys, by key; unknown keys are simply absent."""
    servers = {key.split(".", 1)[0] for key in keys}
    tools = visible_tools(user).filter(server__name__in=servers)
    wanted = set(keys)
    return {tool.key: tool for tool in tools if tool.key in wanted}


KEY_PARAM = OpenApiParameter(
    "key", OpenApiTypes.STR, OpenApiParameter.PATH, description="`server.tool`"
)
TOOL_FILTER_PARAMS = [
    OpenApiParameter("search", OpenApiTypes.STR, description="Search name, title and description"),
    OpenApiParameter("server", OpenApiTypes.STR, description="Server name"),
    OpenApiParameter("available", OpenApiTypes.BOOL),
    OpenApiParameter("enabled", OpenApiTypes.BOOL, description="Enabled on this endpoint"),
    OpenApiParameter("page", OpenApiTypes.INT),
    OpenApiParameter("page_size", OpenApiTypes.INT),
]
SERVER_PARAM = OpenApiParameter(
    "server", OpenApiTypes.STR, OpenApiParameter.PATH, description="Server name"
)


class EndpointViewSet(viewsets.ModelViewSet):
    """Your MCP endpoints, their budget, and the calls that change which tools they serve."""

    queryset = Endpoint.objects.none()
    lookup_field = "slug"

    @property
    def filterset_class(self) -> type[ToolFilter] | None:
        return ToolFilter if getattr(self, "action", None) == "tools" else None

    def get_queryset(self) -> QuerySet[Endpoint]:
        return selectors.visible_endpoints(self.request.user)

    def filter_queryset(self, queryset: QuerySet) -> QuerySet:
        # Only the tools of an endpoint are filtered; looking up the endpoint itself never is.
        return super().filter_queryset(queryset) if queryset.model is Tool else queryset

    def get_serializer_class(self):
        return EndpointSerializer if self.action == "list" else EndpointDetailSerializer

    def perform_create(self, serializer: EndpointSerializer) -> None:
        serializer.instance = services.create_endpoint(
            owner=self.request.user, **serializer.validated_data
        )

    def perform_update(self, serializer: EndpointSerializer) -> None:
        data = {k: v for k, v in serializer.validated_data.items() if k != "slug"}
        services.update_endpoint(endpoint=serializer.instance, **data)

    def perform_destroy(self, instance: Endpoint) -> None:
        try:
            services.delete_endpoint(endpoint=instance)
        except services.DefaultEndpointProtected as exc:
            raise exceptions.ValidationError({"detail": str(exc)}) from None

    # --- The tools of one endpoint.

    @extend_schema(
        parameters=TOOL_FILTER_PARAMS, responses=ToolSerializer(many=True), filters=False
    )
    @action(detail=True, methods=["get"])
    def tools(self, request: Request, slug: str) -> Response:
        """Every tool you may see, with its enabled state on this endpoint."""
        queryset = self.filter_queryset(selectors.endpoint_tools(request.user, self.get_object()))
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(ToolSerializer(page, many=True).data)

    @extend_schema(parameters=[KEY_PARAM], responses=ToolDetailSerializer)
    @action(detail=True, methods=["get"], url_path=r"tools/(?P<key>[^/]+)")
    def tool(self, request: Request, slug: str, key: str) -> Response:
        return Response(ToolDetailSerializer(self._tool(key, self.get_object())).data)

    @extend_schema(
        parameters=[KEY_PARAM], request=ToggleSerializer, responses=ToggleResultSerializer
    )
    @tool.mapping.patch
    def toggle_tool(self, request: Request, slug: str, key: str) -> Response:
        """Enable or disable one tool; enabling beyond an enforced budget is refused (409)."""
        endpoint = self.get_object()
        tool = self._tool(key, endpoint)
        enabled = self._valid(ToggleSerializer, request)["enabled"]
        if enabled and not tool.available:
            raise exceptions.ValidationError(
                {"enabled": ["This tool is unavailable: its server no longer offers it."]}
            )
        self._guard_budget(services.set_tool_enabled, endpoint=endpoint, tool=tool, enabled=enabled)
        tool = self._tool(key, endpoint)
        return Response({"tool": ToolSerializer(tool).data, "budget": self._budget(endpoint)})

    @extend_schema(
        parameters=[SERVER_PARAM], request=ToggleSerializer, responses=ServerToggleResultSerializer
    )
    @action(detail=True, methods=["patch"], url_path=r"servers/(?P<server>[^/]+)")
    def toggle_server(self, request: Request, slug: str, server: str) -> Response:
        """Enable or disable every available tool of one server at once."""
        endpoint = self.get_object()
        enabled = self._valid(ToggleSerializer, request)["enabled"]
        tools = list(visible_tools(request.user).filter(server__name=server, available=True))
        if not tools:
            raise exceptions.NotFound("No visible server with available tools by this name.")
        self._guard_budget(
            services.set_tools_enabled, endpoint=endpoint, tools=tools, enabled=enabled
        )
        return Response({"server": server, "changed": len(tools), "budget": self._budget(endpoint)})

    @extend_schema(responses=EnabledToolsSerializer)
    @action(
        detail=True,
        methods=["get"],
        url_path="enabled-tools",
        pagination_class=None,
        filter_backends=[],
    )
    def enabled_tools(self, request: Request, slug: str) -> Response:
        """Only the enabled tools, with the budget they use."""
        return Response(self._enabled(self.get_object()))

    @extend_schema(request=ReplaceToolsSerializer, responses=EnabledToolsSerializer)
    @enabled_tools.mapping.put
    def replace_enabled_tools(self, request: Request, slug: str) -> Response:
        """Make exactly these tools enabled (all or nothing)."""
        endpoint = self.get_object()
        keys = self._valid(ReplaceToolsSerializer, request)["tools"]
        tools = resolve_tool_keys(request.user, keys)
        unknown = sorted({key for key in keys if key not in tools or not tools[key].available})
        if unknown:
            raise exceptions.ValidationError(
                {"tools": [f"Unknown or unavailable tools: {', '.join(unknown[:10])}."]}
            )
        self._guard_budget(services.set_enabled_tools, endpoint=endpoint, tools=tools.values())
        return Response(self._enabled(endpoint))

    @extend_schema(responses=PresetSerializer(many=True))
    @action(detail=True, methods=["get"], filter_backends=[])
    def presets(self, request: Request, slug: str) -> Response:
        """The presets you may load onto this endpoint (yours and your teams')."""
        self.get_object()
        page = self.paginate_queryset(preset_queryset(request.user))
        return self.get_paginated_response(PresetSerializer(page, many=True).data)

    @extend_schema(request=LoadPresetSerializer, responses=LoadResultSerializer)
    @action(detail=True, methods=["post"], url_path="load-preset")
    def load_preset(self, request: Request, slug: str) -> Response:
        """Load a preset (latest version unless one is named) by replacing or merging."""
        endpoint = self.get_object()
        data = self._valid(LoadPresetSerializer, request)
        return Response(
            load_preset_onto(
                request,
                endpoint=endpoint,
                preset_id=data["preset"],
                number=data["version"],
                mode=data["mode"],
            )
        )

    # --- Helpers.

    def _tool(self, key: str, endpoint: Endpoint) -> Tool:
        server, _, name = key.partition(".")
        return get_object_or_404(
            selectors.endpoint_tools(self.request.user, endpoint), server__name=server, name=name
        )

    def _valid(self, serializer_class, request: Request) -> dict:
        serializer = serializer_class(data=request.data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data

    def _guard_budget(self, write, **kwargs) -> None:
        try:
            write(**kwargs)
        except services.BudgetExceeded as exc:
            raise BudgetRefused(exc) from None

    def _budget(self, endpoint: Endpoint) -> dict:
        return BudgetSerializer(selectors.endpoint_budget(endpoint)).data

    def _enabled(self, endpoint: Endpoint) -> dict:
        tools = selectors.enabled_tools(endpoint)
        return {"budget": self._budget(endpoint), "tools": ToolSerializer(tools, many=True).data}


def load_preset_onto(
    request: Request, *, endpoint: Endpoint, preset_id: int, number: int | None, mode: str
) -> dict:
    preset = selectors.visible_presets(request.user).filter(pk=preset_id).first()
    if preset is None:
        raise exceptions.ValidationError({"preset": ["No preset you may see has this id."]})
    version = preset.versions.filter(number=number).first() if number else preset.latest_version
    if version is None:
        raise exceptions.ValidationError({"version": ["This preset has no such version."]})
    tools = [
        tool
        for tool in resolve_tool_keys(request.user, version.tool_keys).values()
        if tool.available
    ]
    try:
        result = services.load_preset(endpoint=endpoint, version=version, tools=tools, mode=mode)
    except services.BudgetExceeded as exc:
        raise BudgetRefused(exc) from None
    budget = BudgetSerializer(selectors.endpoint_budget(endpoint)).data
    return {"loaded": result.loaded, "missing": result.missing, "budget": budget}


def preset_queryset(user) -> QuerySet[Preset]:
    return (
        selectors.visible_presets(user)
        .select_related("owner", "team")
        .prefetch_related("versions")
        .order_by("name", "pk")
    )
