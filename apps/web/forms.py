"""Small forms behind the pages; each maps onto one toolsets or accounts service."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError

from apps.accounts.models import Team
from apps.llm.models import Provider
from apps.llm.selectors import providers_for
from apps.toolsets.calllog.selectors import WINDOWS, UsageFilter
from apps.toolsets.models import Endpoint, validate_roots


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=100, required=False, help_text="Where you will use it, e.g. 'laptop'."
    )
    # An endpoint page's token is for MCP clients of that endpoint; scripts ask for an API token.
    scope = forms.ChoiceField(
        choices=[
            ("mcp", "MCP: this endpoint"),
            ("api_read", "REST API: read-only"),
            ("api_write", "REST API: read-write"),
        ],
        initial="mcp",
        required=False,
        label="For",
    )


class PresetForm(forms.Form):
    name = forms.CharField(max_length=100)
    team = forms.ModelChoiceField(
        queryset=Team.objects.none(), required=False, empty_label="Only me", label="Share with"
    )

    def __init__(self, *args, user, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = Team.objects.filter(memberships__user=user).order_by("name")


class ShareForm(forms.Form):
    team = forms.ModelChoiceField(queryset=Team.objects.none())

    def __init__(self, *args, user, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = Team.objects.filter(memberships__user=user).order_by("name")


class LoadForm(forms.Form):
    endpoint = forms.SlugField(max_length=64)
    mode = forms.ChoiceField(choices=[("replace", "Replace"), ("merge", "Merge")])


class McpJsonForm(forms.Form):
    """A `.mcp.json` to preview or apply: uploaded as a file, or pasted (an upload wins)."""

    MAX_BYTES = 1_000_000

    text = forms.CharField(
        required=False,
        widget=forms.Textarea,
        label="Paste a config",
        strip=False,
        max_length=MAX_BYTES,
    )
    file = forms.FileField(required=False, label="or upload a file")
    audience = forms.ChoiceField(label="Who sees them", required=False)
    # The text the preview was made of: Apply writes only what the page showed.
    previewed = forms.CharField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args, user, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.user = user
        self.teams = {
            team.slug: team for team in Team.objects.filter(memberships__user=user).order_by("name")
        }
        self.fields["audience"].choices = [
            ("global", "Everyone (global)"),
            ("me", "Only me"),
            *((f"team:{slug}", f"Team {team.name}") for slug, team in self.teams.items()),
        ]

    def scope(self) -> dict:
        """`owner=` or `team=` for the import service; empty for global servers."""
        audience = self.cleaned_data.get("audience") or "global"
        if audience == "me":
            return {"owner": self.user}
        if audience.startswith("team:"):
            return {"team": self.teams[audience.removeprefix("team:")]}
        return {}

    def clean(self) -> dict:
        data = super().clean()
        upload = data.get("file")
        if upload is not None:
            if upload.size > self.MAX_BYTES:
                raise forms.ValidationError(
                    f"The file is larger than {self.MAX_BYTES // 1_000_000} MB."
                )
            try:
                data["text"] = upload.read().decode("utf-8-sig")
            except UnicodeDecodeError:
                raise forms.ValidationError("The file is not UTF-8 text.") from None
        if not data.get("text", "").strip():
            raise forms.ValidationError("Paste a config or choose a file.")
        return data


class EndpointSettingsForm(forms.Form):
    """An endpoint's name and settings: the same fields create one and change one."""

    name = forms.CharField(max_length=100)
    naming_strategy = forms.ChoiceField(choices=Endpoint.Naming.choices, label="Tool names")
    mode = forms.ChoiceField(choices=Endpoint.Mode.choices)
    token_budget = forms.IntegerField(min_value=0, max_value=10_000_000, label="Token budget")
    budget_enforced = forms.BooleanField(required=False, label="Refuse tools beyond the budget")
    approval = forms.ChoiceField(
        choices=Endpoint.Approval.choices, label="Ask before a tool runs", required=False
    )

    sampling = forms.ChoiceField(
        choices=Endpoint.Sampling.choices, label="Sampling by your model", required=False
    )
    sampling_max_tokens = forms.IntegerField(
        min_value=1, max_value=1_000_000, label="Sampling token cap", required=False
    )
    roots = forms.CharField(
        label="Roots", required=False, max_length=50_000, widget=forms.Textarea(attrs={"rows": 3})
    )

    def clean_roots(self) -> list[dict[str, str]]:
        """One root a line: a file:// URI, then optionally a space and its name."""
        roots = []
        for line in self.cleaned_data.get("roots", "").splitlines():
            uri, _, name = line.strip().partition(" ")
            if uri:
                roots.append({"uri": uri, "name": name.strip()} if name.strip() else {"uri": uri})
        try:
            validate_roots(roots)
        except ValidationError as exc:
            raise forms.ValidationError(exc.messages) from None
        return roots

    def clean(self) -> dict:
        data = super().clean()
        # A form without a field (an older page, a script): that setting stays as it is.
        for name in ("approval", "sampling", "sampling_max_tokens"):
            if data.get(name) in ("", None):
                data.pop(name, None)
        if "roots" not in self.data:
            data.pop("roots", None)
        return data

    @classmethod
    def for_endpoint(cls, endpoint: Endpoint) -> EndpointSettingsForm:
        initial = {name: getattr(endpoint, name) for name in cls.base_fields}
        initial["roots"] = "\n".join(
            f"{r['uri']} {r.get('name', '')}".strip() for r in endpoint.roots
        )
        return cls(initial=initial)

    @classmethod
    def for_new(cls) -> EndpointSettingsForm:
        return cls(
            initial={
                "name": "",
                "naming_strategy": Endpoint.Naming.HYBRID,
                "mode": Endpoint.Mode.STATIC,
                "token_budget": settings.MCPHUB_DEFAULT_TOKEN_BUDGET,
                "budget_enforced": True,
                "approval": Endpoint.Approval.DESTRUCTIVE,
                "sampling": Endpoint.Sampling.ASK,
                "sampling_max_tokens": 1024,
                "roots": "",
            }
        )


class UsageForm(forms.Form):
    """The usage page's filters; anything invalid falls back to the whole last day."""

    window = forms.ChoiceField(
        choices=[(key, w.label) for key, w in WINDOWS.items()], required=False
    )
    server = forms.CharField(max_length=40, required=False)
    tool = forms.CharField(max_length=255, required=False)
    endpoint = forms.CharField(max_length=64, required=False)
    user = forms.CharField(max_length=150, required=False)

    def selection(self) -> UsageFilter:
        data = self.cleaned_data if self.is_valid() else {}
        return UsageFilter(
            window=data.get("window") or "24h",
            server=data.get("server", ""),
            tool=data.get("tool", ""),
            endpoint=data.get("endpoint", ""),
            user=data.get("user", ""),
        )


class ConversationForm(forms.Form):
    """Title, provider/model and endpoint of one conversation, choices limited to the user's own."""

    title = forms.CharField(max_length=200, required=False)
    provider = forms.ModelChoiceField(
        queryset=Provider.objects.none(), required=False, empty_label="No provider"
    )
    model = forms.CharField(
        max_length=200,
        required=False,
        help_text="Empty: the provider's default model.",
        widget=forms.TextInput(attrs={"list": "model-options", "placeholder": "provider default"}),
    )
    endpoint = forms.ModelChoiceField(
        queryset=Endpoint.objects.none(),
        required=False,
        empty_label="No tools",
        to_field_name="slug",
    )

    def __init__(self, *args, user, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["provider"].queryset = providers_for(user)
        self.fields["endpoint"].queryset = Endpoint.objects.filter(owner=user).order_by(
            "-is_default", "name"
        )

    @classmethod
    def for_conversation(cls, conversation, *, user) -> ConversationForm:
        initial = {
            "title": conversation.title,
            "provider": conversation.provider_id,
            "model": conversation.model,
            "endpoint": conversation.endpoint.slug if conversation.endpoint else None,
        }
        return cls(initial=initial, user=user)
