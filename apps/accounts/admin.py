"""Admin for users, teams and access tokens (issued through the service, shown exactly once)."""

from __future__ import annotations

import allauth.account.admin  # noqa: F401  (registered first, so the hub can unregister them)
import allauth.socialaccount.admin  # noqa: F401
from allauth.account.models import EmailAddress
from allauth.socialaccount.models import SocialApp, SocialToken
from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone

from apps.accounts.forms import AccessTokenIssueForm, HubUserChangeForm, HubUserCreationForm
from apps.accounts.models import AccessToken, Membership, SsoProvider, Team, User
from apps.accounts.services import create_access_token, revoke_access_token


class UserMembershipInline(admin.TabularInline):
    model = Membership
    fields = ("team", "role", "created_at")
    readonly_fields = ("created_at",)
    autocomplete_fields = ("team",)
    extra = 0
    verbose_name = "team"
    verbose_name_plural = "teams"


class TeamMembershipInline(admin.TabularInline):
    model = Membership
    fields = ("user", "role", "created_at")
    readonly_fields = ("created_at",)
    autocomplete_fields = ("user",)
    extra = 0
    verbose_name = "member"


@admin.register(User)
class HubUserAdmin(UserAdmin):
    form = HubUserChangeForm
    add_form = HubUserCreationForm
    list_display = (
        "username",
        "email",
        "first_name",
        "last_name",
        "is_staff",
        "is_active",
        "date_joined",
    )
    inlines = (UserMembershipInline,)

    def get_inlines(self, request: HttpRequest, obj: User | None):
        # The add page only asks for credentials; teams come once the user exists.
        return self.inlines if obj else ()


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "member_count", "created_at")
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}
    inlines = (TeamMembershipInline,)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Team]:
        return super().get_queryset(request).annotate(member_count=Count("memberships"))

    @admin.display(description="members", ordering="member_count")
    def member_count(self, team: Team) -> int:
        return team.member_count


class TokenStateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin):
        return (("active", "Active"), ("expired", "Expired"), ("revoked", "Revoked"))

    def queryset(
        self, request: HttpRequest, queryset: QuerySet[AccessToken]
    ) -> QuerySet[AccessToken]:
        now = timezone.now()
        if self.value() == "active":
            return queryset.active()
        if self.value() == "expired":
            return queryset.filter(revoked_at__isnull=True, expires_at__lte=now)
        if self.value() == "revoked":
            return queryset.filter(revoked_at__isnull=False)
        return queryset


@admin.register(AccessToken)
class AccessTokenAdmin(admin.ModelAdmin):
    """Issue, rename, re-date and revoke tokens; the digest never shows and the raw value shows once."""

    add_form = AccessTokenIssueForm
    created_template = "admin/accounts/accesstoken/token_created.html"
    list_display = (
        "user",
        "name",
        "display_prefix",
        "scope",
        "endpoint",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
        "is_active",
    )
    list_filter = (TokenStateFilter, "scope")
    list_select_related = ("user", "endpoint")
    search_fields = ("name", "prefix", "user__username", "user__email")
    autocomplete_fields = ("user", "endpoint")
    actions = ("revoke_selected",)
    change_fields = ("user", "name", "display_prefix", "scope", "endpoint", "expires_at")
    change_readonly_fields = (
        "user",
        "display_prefix",
        "scope",
        "endpoint",
        "created_at",
        "last_used_at",
        "revoked_at",
        "is_active",
    )

    def get_form(self, request: HttpRequest, obj: AccessToken | None = None, **kwargs):
        if obj is None:
            kwargs["form"] = self.add_form
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request: HttpRequest, obj: AccessToken | None = None):
        if obj is None:
            return self.add_form.Meta.fields
        return (*self.change_fields, "created_at", "last_used_at", "revoked_at", "is_active")

    def get_readonly_fields(self, request: HttpRequest, obj: AccessToken | None = None):
        return self.change_readonly_fields if obj else ()

    def save_model(self, request: HttpRequest, obj: AccessToken, form, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        token, raw = create_access_token(
            user=obj.user,
            name=obj.name,
            endpoint=obj.endpoint,
            scope=obj.scope,
            expires_at=obj.expires_at,
        )
        # The admin logs and answers about `obj`: make it the row the service created.
        obj.pk = token.pk
        obj.refresh_from_db()
        obj.raw_value = raw

    def response_add(
        self, request: HttpRequest, obj: AccessToken, post_url_continue=None
    ) -> HttpResponse:
        """Show the raw value on this one page: never stored, never in a redirect, message or cookie.

        The admin marks every page `no-store`, so browsers keep no copy of this one either.
        """
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Token created",
            "token": obj,
            "raw_value": obj.raw_value,
        }
        return TemplateResponse(request, self.created_template, context)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        # Every save of the add form issues a token, so only one plain "Save" button makes sense.
        if add:
            context.update(show_save_and_add_another=False, show_save_and_continue=False)
        return super().render_change_form(request, context, add, change, form_url, obj)

    @admin.display(description="token")
    def display_prefix(self, token: AccessToken) -> str:
        return f"mcphub_{token.prefix}_…"

    @admin.display(description="active", boolean=True)
    def is_active(self, token: AccessToken) -> bool:
        return token.is_active

    @admin.action(description="Revoke selected tokens", permissions=("change",))
    def revoke_selected(self, request: HttpRequest, queryset: QuerySet[AccessToken]) -> None:
        tokens = list(queryset.filter(revoked_at__isnull=True))
        for token in tokens:
            revoke_access_token(token=token)
        self.message_user(request, f"Revoked {len(tokens)} token(s).", messages.SUCCESS)


class SsoProviderForm(forms.ModelForm):
    issuer = forms.URLField(
        assume_scheme="https",
        help_text=SsoProvider._meta.get_field("issuer").help_text,
    )
    client_secret = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False),
        help_text="Stored encrypted. Leave empty to keep the current one.",
    )

    class Meta:
        model = SsoProvider
        fields = ("name", "slug", "issuer", "client_id", "client_secret", "scopes", "enabled")

    def clean_client_secret(self) -> str:
        return self.cleaned_data["client_secret"] or (
            self.instance.client_secret if self.instance.pk else ""
        )


@admin.register(SsoProvider)
class SsoProviderAdmin(admin.ModelAdmin):
    form = SsoProviderForm
    list_display = ("name", "slug", "issuer", "enabled", "redirect_uri")
    prepopulated_fields = {"slug": ("name",)}

    @admin.display(description="redirect URI to register at the provider")
    def redirect_uri(self, provider: SsoProvider) -> str:
        return reverse("openid_connect_callback", kwargs={"provider_id": provider.slug})


# allauth's own tables are not how the hub configures providers (config.py), nor does it keep
# provider tokens or email addresses there; only the links between accounts and providers matter.
for _model in (SocialApp, SocialToken, EmailAddress):
    if admin.site.is_registered(_model):
        admin.site.unregister(_model)
