"""REST API: `GET /api/servers/<name>/my-oauth/` → whether you connected a server requiring OAuth
(never a token); `DELETE` → disconnect it. Connecting needs a browser: the Tools page's Connect."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core import public_url
from apps.core.serializers import Serializer
from apps.credentials.upstream import selectors, services


class ConnectionSerializer(Serializer):
    server = serializers.CharField(source="server.name")
    state = serializers.ChoiceField(choices=["connected", "reconnect", "not_connected"])
    connected_at = serializers.DateTimeField(allow_null=True)
    expires_at = serializers.DateTimeField(
        allow_null=True, help_text="When the current access token expires (refreshed before)"
    )
    scope = serializers.CharField()
    problem = serializers.CharField(help_text="Why a reconnect is needed")
    connect_at = serializers.SerializerMethodField(
        help_text="The page where you connect or reconnect it"
    )

    def get_connect_at(self, connection: selectors.Connection) -> str:
        return public_url.absolute(services.CONNECT_PAGE)


class MyOAuthView(APIView):
    """Your sign-in to one backend that requires OAuth."""

    def _connection(self, request: Request, name: str) -> selectors.Connection:
        found = [c for c in selectors.connections_for(request.user) if c.server.name == name]
        if not found:
            raise Http404("No such server requiring OAuth.")
        return found[0]

    @extend_schema(responses=ConnectionSerializer)
    def get(self, request: Request, name: str) -> Response:
        return Response(ConnectionSerializer(self._connection(request, name)).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, name: str) -> Response:
        connection = self._connection(request, name)
        services.disconnect(server=connection.server, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
