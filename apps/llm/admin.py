"""Admin for LLM providers: the API key is write-only, like server secrets."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import flatten_fieldsets
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.decorators import method_decorator
from django.views.decorators.debug import sensitive_post_parameters

from apps.llm import selectors, services
from apps.llm.forms import ProviderForm
from apps.llm.models import Provider


class ProviderAdminForm(ProviderForm):
    class Meta(ProviderForm.Meta):
        fields = [*ProviderForm.Meta.fields, "owner"]


@admin.register(Provider)
class ProviderAdmin(admin.ModelAdmin):
    form = ProviderAdminForm
    list_display = (
        "name",
        "kind",
        "base_url",
        "default_model",
        "scope",
        "is_default",
        "key_stored",
    )
    list_filter = ("kind", "is_default", ("owner", admin.EmptyFieldListFilter))
    search_fields = ("name", "base_url", "default_model", "owner__username")
    autocomplete_fields = ("owner",)
    actions = ("test_connection",)
    fieldsets = (
        (None, {"fields": ("name", "kind", "base_url", "default_model")}),
        (
            "Model settings",
            {"fields": ("reasoning_effort", "thinking_budget", "max_output_tokens")},
        ),
        (
            "Secret",
            {
                "fields": ("api_key", "clear_api_key"),
                "description": "Encrypted at rest; never shown.",
            },
        ),
        (
            "Access",
            {"fields": ("owner", "is_default"), "description": "No owner: shared with every user."},
        ),
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Provider]:
        queryset = super().get_queryset(request).select_related("owner")
        # Other users' private providers (and keys) are theirs; superusers manage everything.
        return (
            queryset
            if request.user.is_superuser
            else queryset.filter(pk__in=selectors.editable_providers(request.user))
        )

    def get_fieldsets(self, request: HttpRequest, obj: Provider | None = None):
        if obj is None:  # nothing stored yet to remove
            return (
                (None, self.fieldsets[0][1]),
                self.fieldsets[1],
                ("Secret", {"fields": ("api_key",)}),
                self.fieldsets[3],
            )
        return self.fieldsets

    def get_form(
        self, request: HttpRequest, obj: Provider | None = None, change: bool = False, **kwargs: Any
    ):
        # The admin would list every fieldset name as a model field, and construct_instance would
        # then blank the stored key on every save: the key fields stay form-only.
        fields = flatten_fieldsets(self.get_fieldsets(request, obj))
        kwargs["fields"] = [name for name in fields if name not in ("api_key", "clear_api_key")]
        return super().get_form(request, obj, change=change, **kwargs)

    @method_decorator(sensitive_post_parameters("api_key"))
    def changeform_view(self, request: HttpRequest, *args: Any, **kwargs: Any):
        # Error reports (500 mails, Sentry) must not carry the key an admin just typed.
        return super().changeform_view(request, *args, **kwargs)

    def save_model(
        self, request: HttpRequest, obj: Provider, form: ProviderAdminForm, change: bool
    ) -> None:
        services.save_provider(actor=request.user, provider=obj, api_key=form.new_api_key())

    def delete_model(self, request: HttpRequest, obj: Provider) -> None:
        services.delete_provider(actor=request.user, provider=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Provider]) -> None:
        for provider in queryset:
            services.delete_provider(actor=request.user, provider=provider)

    @admin.action(description="Test connection (list models)")
    def test_connection(self, request: HttpRequest, queryset: QuerySet[Provider]) -> None:
        for provider in queryset:
            check = services.list_models(provider)
            self.message_user(
                request,
                f"{provider.name}: {check}",
                messages.SUCCESS if check.ok else messages.ERROR,
            )

    @admin.display(description="scope", ordering="owner__username")
    def scope(self, provider: Provider) -> str:
        return "shared" if provider.is_shared else f"private to {provider.owner}"

    @admin.display(description="API key", boolean=True)
    def key_stored(self, provider: Provider) -> bool:
        return provider.has_api_key
