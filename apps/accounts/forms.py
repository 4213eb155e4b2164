"""Admin forms for the hub's own User and for issuing access tokens."""

from __future__ import annotations

from django import forms
from django.contrib.auth.forms import AdminUserCreationForm, UserChangeForm
from django.utils import timezone

from apps.accounts.models import AccessToken, TokenScope, User


class HubUserCreationForm(AdminUserCreationForm):
    class Meta(AdminUserCreationForm.Meta):
        model = User


class HubUserChangeForm(UserChangeForm):
    class Meta(UserChangeForm.Meta):
        model = User


class AccessTokenIssueForm(forms.ModelForm):
    """What an admin chooses when issuing a token; the secret itself comes from the service."""

    class Meta:
        model = AccessToken
        fields = ("user", "name", "scope", "endpoint", "expires_at")
        help_texts = {
            "scope": "MCP tokens reach MCP endpoints only (the endpoint named, or all of the user's); "
            "API tokens reach the REST API only."
        }

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Left empty: MCP-only for a token naming an endpoint, else full (the service's defaults).
        self.fields["scope"].required = False

    def clean_expires_at(self):
        expires_at = self.cleaned_data["expires_at"]
        if expires_at is not None and expires_at <= timezone.now():
            raise forms.ValidationError(
                "Choose a moment in the future, or leave empty for no expiry."
            )
        return expires_at

    def clean(self) -> dict:
        cleaned = super().clean()
        user, endpoint = cleaned.get("user"), cleaned.get("endpoint")
        if not cleaned.get("scope"):
            cleaned["scope"] = TokenScope.MCP if endpoint is not None else TokenScope.FULL
        if user is not None and endpoint is not None and endpoint.owner_id != user.pk:
            self.add_error("endpoint", f"This endpoint belongs to {endpoint.owner}, not to {user}.")
        if endpoint is not None and cleaned.get("scope") != TokenScope.MCP:
            self.add_error(
                "endpoint",
                "Only an MCP token can name an endpoint; leave it empty for an API token.",
            )
        return cleaned
