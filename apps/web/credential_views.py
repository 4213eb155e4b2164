"""A user's own credentials for a shared server: fill, replace or remove them (values are never shown)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods

from apps.catalog.models import McpServer
from apps.catalog.selectors import visible_servers
from apps.credentials import selectors, services
from apps.credentials.errors import CredentialsInvalid


class CredentialsForm(forms.Form):
    """One password box per variable; an empty box keeps what is stored."""

    def __init__(self, *args, states: list[selectors.VariableState], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for state in states:
            status = (
                "set — leave empty to keep it"
                if state.is_set
                else ("required" if state.required else "optional")
            )
            self.fields[state.name] = forms.CharField(
                label=state.label,
                required=False,
                max_length=8192,
                strip=True,
                help_text=" · ".join(filter(None, [state.help_text, f"{state.name} ({status})"])),
                widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
            )


def _server(request: HttpRequest, name: str) -> McpServer:
    server = get_object_or_404(visible_servers(request.user), name=name)
    if not server.has_user_variables:
        raise Http404("This server has no per-user credentials.")
    return server


@login_required
@sensitive_post_parameters()
@require_http_methods(["GET", "POST"])
def server_credentials(request: HttpRequest, name: str) -> HttpResponse:
    server = _server(request, name)
    states = selectors.variable_states(server, request.user.pk)
    form = CredentialsForm(request.POST or None, states=states)
    if request.method == "POST" and "remove" in request.POST:
        services.delete_credentials(user=request.user, server=server)
        messages.success(request, f"Your credentials for {server.name} were removed.")
        return redirect("web:server_credentials", name=server.name)
    if request.method == "POST" and form.is_valid():
        values = {key: value for key, value in form.cleaned_data.items() if value}
        try:
            if values:
                services.save_credentials(user=request.user, server=server, values=values)
        except CredentialsInvalid as exc:
            for field, message in exc.errors.items():
                form.add_error(field if field in form.fields else None, message)
        else:
            messages.success(
                request,
                f"Saved your credentials for {server.name}." if values else "Nothing to change.",
            )
            return redirect("web:server_credentials", name=server.name)
    context = {
        "server": server,
        "form": form,
        "states": states,
        "any_set": any(s.is_set for s in states),
    }
    return render(request, "web/server_credentials.html", context)
