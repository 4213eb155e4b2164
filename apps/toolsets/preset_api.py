"""REST API for presets: CRUD, sharing with a team, versions, diff, rollback, load onto an endpoint.

Alice (owner) edits; bob (her team, once shared) reads and loads; charlie sees nothing (404).
"""

from __future__ import annotations

import django_filters
from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from apps.accounts.models import Team
from apps.toolsets import selectors, services
from apps.toolsets.api import load_preset_onto, preset_queryset
from apps.toolsets.models import Preset
from apps.toolsets.serializers import (
    DiffSerializer,
    LoadResultSerializer,
    PresetLoadSerializer,
    PresetSerializer,
    PresetVersionSerializer,
    RollbackSerializer,
    ShareSerializer,
)

READ_ACTIONS = {"list", "retrieve", "versions", "diff", "load"}


class PresetFilter(django_filters.FilterSet):
    search = django_filters.CharFilter(
        field_name="name", lookup_expr="icontains", label="Name contains"
    )
    team = django_filters.CharFilter(field_name="team__slug", label="Team slug")

    class Meta:
        model = Preset
        fields = ["search", "visibility", "team"]


class PresetViewSet(viewsets.ModelViewSet):
    queryset = Preset.objects.none()
    serializer_class = PresetSerializer
    filterset_class = PresetFilter

    def get_queryset(self) -> QuerySet[Preset]:
        return preset_queryset(self.request.user)

    def get_object(self) -> Preset:
        preset = super().get_object()
        if self.action not in READ_ACTIONS and not selectors.can_edit_preset(
            self.request.user, preset
        ):
            raise exceptions.PermissionDenied(
                "Only the preset's owner (or its team's admins) may change it."
            )
        return preset

    def perform_create(self, serializer: PresetSerializer) -> None:
        data = serializer.validated_data
        serializer.instance = services.create_preset(
            owner=self.request.user,
            name=data["name"],
            description=data.get("description", ""),
            tool_keys=self._keys(data),
            team=self._team(data.get("share_with")),
            note=data.get("note", ""),
        )

    def perform_update(self, serializer: PresetSerializer) -> None:
        data = dict(serializer.validated_data)
        if data.pop("share_with", None) or data.pop("from_endpoint", None):
            raise exceptions.ValidationError(
                {"detail": "Use share/ to share; send tool_keys to change tools."}
            )
        services.update_preset(preset=serializer.instance, user=self.request.user, **data)

    def _keys(self, data: dict) -> list[str]:
        slug = data.get("from_endpoint")
        if not slug:
            return data.get("tool_keys", [])
        endpoint = selectors.visible_endpoints(self.request.user).filter(slug=slug).first()
        if endpoint is None:
            raise exceptions.ValidationError(
                {"from_endpoint": ["You have no endpoint with this slug."]}
            )
        return [tool.key for tool in endpoint.tools.select_related("server")]

    def _team(self, slug: str | None) -> Team | None:
        if not slug:
            return None
        team = Team.objects.filter(slug=slug, memberships__user=self.request.user).first()
        if team is None:
            raise exceptions.ValidationError(
                {"share_with": ["You are not a member of a team with this slug."]}
            )
        return team

    @extend_schema(request=ShareSerializer, responses=PresetSerializer)
    @action(detail=True, methods=["post"])
    def share(self, request: Request, pk: str) -> Response:
        """Share with one of your teams: its members may then see and load it."""
        preset = self.get_object()
        data = ShareSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        team = self._team(data.validated_data["team"])
        services.share_preset(preset=preset, team=team, user=request.user)
        return Response(PresetSerializer(preset).data)

    @extend_schema(request=None, responses=PresetSerializer)
    @action(detail=True, methods=["post"])
    def unshare(self, request: Request, pk: str) -> Response:
        preset = services.unshare_preset(preset=self.get_object())
        return Response(PresetSerializer(preset).data)

    @extend_schema(responses=PresetVersionSerializer(many=True))
    @action(detail=True, methods=["get"], pagination_class=None, filter_backends=[])
    def versions(self, request: Request, pk: str) -> Response:
        """Every saved version, newest first."""
        versions = self.get_object().versions.select_related("created_by").order_by("-number")
        return Response(PresetVersionSerializer(versions, many=True).data)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "from", OpenApiTypes.INT, description="Older version (default: the one before `to`)"
            ),
            OpenApiParameter(
                "to", OpenApiTypes.INT, description="Newer version (default: the latest)"
            ),
        ],
        responses=DiffSerializer,
    )
    @action(detail=True, methods=["get"], filter_backends=[])
    def diff(self, request: Request, pk: str) -> Response:
        """Tools added and removed between two versions."""
        preset = self.get_object()
        newest = preset.latest_version.number if preset.latest_version else 0
        to_number = self._int_param("to", newest)
        from_number = self._int_param("from", max(to_number - 1, 1))
        old, new = (
            self._version(preset, from_number, "from"),
            self._version(preset, to_number, "to"),
        )
        diff = selectors.diff_versions(old, new)
        return Response({"from_version": old.number, "to_version": new.number, **diff.__dict__})

    @extend_schema(request=RollbackSerializer, responses={201: PresetVersionSerializer})
    @action(detail=True, methods=["post"])
    def rollback(self, request: Request, pk: str) -> Response:
        """Save a new version equal to an earlier one (later versions are kept)."""
        preset = self.get_object()
        data = RollbackSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        number = self._version(preset, data.validated_data["version"], "version").number
        version = services.rollback_preset(preset=preset, number=number, user=request.user)
        return Response(PresetVersionSerializer(version).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=PresetLoadSerializer, responses=LoadResultSerializer)
    @action(detail=True, methods=["post"])
    def load(self, request: Request, pk: str) -> Response:
        """Load this preset onto one of your endpoints, replacing or merging its tools."""
        preset = self.get_object()
        data = PresetLoadSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        endpoint = (
            selectors.visible_endpoints(request.user)
            .filter(slug=data.validated_data["endpoint"])
            .first()
        )
        if endpoint is None:
            raise exceptions.ValidationError({"endpoint": ["You have no endpoint with this slug."]})
        return Response(
            load_preset_onto(
                request,
                endpoint=endpoint,
                preset_id=preset.pk,
                number=data.validated_data["version"],
                mode=data.validated_data["mode"],
            )
        )

    def _int_param(self, name: str, default: int) -> int:
        raw = self.request.query_params.get(name)
        if raw is None:
            return default
        try:
            return int(raw)
        except ValueError:
            raise exceptions.ValidationError({name: ["Must be a version number."]}) from None

    def _version(self, preset: Preset, number: int, field: str):
        version = preset.versions.filter(number=number).first()
        if version is None:
            raise exceptions.ValidationError({field: [f"This preset has no version {number}."]})
        return version
