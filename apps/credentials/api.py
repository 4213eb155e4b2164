"""REST API: `/api/servers/<name>/my-credentials/` — the caller's own values for a shared server.

GET lists the server's user variables and whether each is set (never a value); PUT
`{"values": {"NAME": "value" | null}}` sets (null clears) the named ones and keeps the others;
DELETE removes all of the caller's values. Any signed-in user may fill their own for any server
they can see; the values are used only for their own calls.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.catalog.models import McpServer
from apps.catalog.selectors import visible_servers
from apps.core.serializers import Serializer
from apps.credentials import selectors, services
from apps.credentials.errors import CredentialsInvalid


class VariableStateSerializer(Serializer):
    name = serializers.CharField()
    label = serializers.CharField()
    help_text = serializers.CharField()
    required = serializers.BooleanField()
    used_in = serializers.CharField(
        help_text="Where the value goes: `env NAME`, `header NAME` or `URL`."
    )
    is_set = serializers.BooleanField(
        help_text="Whether you have filled it (the value is never shown)."
    )


class MyCredentialsSerializer(Serializer):
    server = serializers.CharField()
    complete = serializers.BooleanField(
        help_text="Every required variable is filled: your calls can run."
    )
    fill_at = serializers.CharField(help_text="The page where you can fill them.")
    variables = VariableStateSerializer(many=True)


class CredentialsWriteSerializer(Serializer):
    values = serializers.DictField(
        child=serializers.CharField(allow_blank=True, allow_null=True, trim_whitespace=False),
        help_text='Name → value; null or "" clears one. Variables you leave out keep their values.',
    )


class MyCredentialsView(APIView):
    """Your own credentials for a shared server: which are set (GET), set some (PUT), remove all (DELETE)."""

    def _server(self, request: Request, name: str) -> McpServer:
        server = get_object_or_404(visible_servers(request.user), name=name)
        if not server.has_user_variables:
            raise NotFound(
                f"Server {name} has no per-user credentials (no ${{user:NAME}} variables)."
            )
        return server

    def _state(self, request: Request, server: McpServer) -> Response:
        states = selectors.variable_states(server, request.user.pk)
        data = {
            "server": server.name,
            "complete": all(s.is_set for s in states if s.required),
            "fill_at": request.build_absolute_uri(
                reverse("web:server_credentials", args=[server.name])
            ),
            "variables": [s.__dict__ for s in states],
        }
        return Response(MyCredentialsSerializer(data).data)

    @extend_schema(responses=MyCredentialsSerializer)
    def get(self, request: Request, name: str) -> Response:
        return self._state(request, self._server(request, name))

    @extend_schema(request=CredentialsWriteSerializer, responses=MyCredentialsSerializer)
    def put(self, request: Request, name: str) -> Response:
        server = self._server(request, name)
        data = CredentialsWriteSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            services.save_credentials(
                user=request.user, server=server, values=data.validated_data["values"]
            )
        except CredentialsInvalid as exc:
            raise ValidationError({"values": exc.errors}) from None
        return self._state(request, server)

    @extend_schema(request=None, responses={204: None})
    def delete(self, request: Request, name: str) -> Response:
        services.delete_credentials(user=request.user, server=self._server(request, name))
        return Response(status=status.HTTP_204_NO_CONTENT)
