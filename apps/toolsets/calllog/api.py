"""REST API for usage: calls, error rate and p50/p95 durations per tool and per server, over time."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from apps.toolsets.calllog import selectors
from apps.toolsets.calllog.serializers import UsageQuerySerializer, UsageSerializer


class UsageViewSet(viewsets.ViewSet):
    """Usage of your endpoints' tool calls (staff: everyone's, or one user's with `?user=`)."""

    @extend_schema(parameters=[UsageQuerySerializer], responses=UsageSerializer)
    def list(self, request: Request) -> Response:
        query = UsageQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        try:
            usage = selectors.usage(request.user, selectors.UsageFilter(**query.validated_data))
        except selectors.UsageForbidden as exc:
            raise exceptions.PermissionDenied(str(exc)) from None
        return Response(UsageSerializer(usage).data)
