"""The authorization server's pages and documents, on django-oauth-toolkit's views.

What the hub adds: the consent page requires a `resource` naming one of the signed-in user's
endpoints (RFC 8707) and says which client gets what; and each endpoint has its own protected
resource metadata document (RFC 9728, path-suffixed).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.http import HttpRequest, HttpResponse
from oauth2_provider.exceptions import OAuthToolkitError
from oauth2_provider.models import get_application_model
from oauth2_provider.views import AuthorizationView, OAuthProtectedResourceMetadataView, TokenView
from oauthlib.oauth2.rfc6749.errors import CustomOAuth2Error

from apps.core.public_url import request_origin
from apps.oauth import redirects, resources, selectors


class ConsentView(AuthorizationView):
    """`GET /oauth/authorize/`: the consent page; its POST issues the code (PKCE S256 enforced by the toolkit)."""

    template_name = "oauth/authorize.html"

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            _, credentials = self.validate_authorization_request(request)
        except OAuthToolkitError as error:
            return self.error_response(error, application=None)
        if credentials.get("code_challenge_method") != "S256":
            # The toolkit would refuse "plain" only after consent, when the code is made.
            return self._refuse(
                "invalid_request",
                'PKCE with code_challenge_method "S256" is required.',
                credentials,
            )
        refusal = self._resource_refusal(request.GET.getlist("resource"), credentials)
        if refusal:
            return refusal
        response = super().get(request, *args, **kwargs)
        # The form posts here and is answered with a redirect to the client: CSP's form-action must
        # allow the client's (registered, validated) redirect URI, or browsers stop there.
        response._csp_update = {
            "form-action": [redirects.form_action_source(credentials["redirect_uri"])]
        }
        return response

    def form_valid(self, form):
        # The hidden field may have been tampered with: check the endpoint again before any code exists.
        credentials = {
            "state": form.cleaned_data.get("state"),
            "redirect_uri": form.cleaned_data.get("redirect_uri"),
            "client_id": form.cleaned_data.get("client_id"),
        }
        refusal = self._resource_refusal(
            (form.cleaned_data.get("resource") or "").split(), credentials
        )
        return refusal or super().form_valid(form)

    def _resource_refusal(
        self, resource: list[str], credentials: dict[str, Any]
    ) -> HttpResponse | None:
        if len(resource) == 1 and selectors.owned_endpoint_for_resource(
            self.request.user, resource[0], origin_url=request_origin(self.request)
        ):
            return None
        code, description = (
            ("invalid_request", "The resource parameter (the MCP endpoint URL) is required.")
            if not resource
            else (
                "invalid_target",
                "The resource must be the URL of one of your MCP endpoints on this hub.",
            )
        )
        return self._refuse(code, description, credentials)

    def _refuse(self, code: str, description: str, credentials: dict[str, Any]) -> HttpResponse:
        """The error sent back to the client's redirect URI with its state, or shown here when that
        URI is not one the client registered (a tampered form must not make the hub an open redirect)."""
        error = CustomOAuth2Error(
            error=code, description=description, state=credentials.get("state")
        )
        application = (
            get_application_model().objects.filter(client_id=credentials.get("client_id")).first()
        )
        redirect_uri = credentials.get("redirect_uri") or ""
        if application is None or not application.redirect_uri_allowed(redirect_uri):
            return self.render_to_response({"error": error}, status=400)
        return self.error_response(
            OAuthToolkitError(error=error, redirect_uri=redirect_uri), application
        )

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        application = context.get("application")
        resource = (context.get("resource") or "").split()
        if application is not None and len(resource) == 1:
            context["endpoint"] = selectors.owned_endpoint_for_resource(
                self.request.user, resource[0], origin_url=request_origin(self.request)
            )
            context["redirect_host"] = urlsplit(context.get("redirect_uri") or "").netloc
            context["unverified"] = (
                application.registration_source != application.RegistrationSource.MANUAL
            )
            context["client_label"] = application.name or application.client_id
        return context


class JsonTokenView(TokenView):
    """The toolkit's token endpoint; some of its errors (invalid_target) come without a JSON content type."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = super().post(request, *args, **kwargs)
        if response.get("Content-Type", "").startswith("text/html") and response.content.startswith(
            b"{"
        ):
            response["Content-Type"] = "application/json"
        return response


class EndpointResourceMetadataView(OAuthProtectedResourceMetadataView):
    """`/.well-known/oauth-protected-resource/mcp/<slug>/`: one document per endpoint.

    Answered for any well-formed slug, existing or not, so it tells nobody which endpoints exist.
    """

    def get_resource(self, request: HttpRequest) -> str:
        return resources.resource_url(request_origin(request), self.kwargs["slug"])

    def get_authorization_servers(self, request: HttpRequest) -> list[str]:
        return [request_origin(request)]

    def get_resource_documentation(self) -> str:
        return self.request.build_absolute_uri("/")
