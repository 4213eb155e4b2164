"""The provider form of the admin and the Models page: the API key is write-only."""

from __future__ import annotations

from typing import Any

from django import forms

from apps.llm.models import Provider


class ProviderForm(forms.ModelForm):
    """Edits a provider; the key is typed, never shown. Empty keeps the stored key."""

    api_key = forms.CharField(
        required=False,
        strip=True,
        label="API key",
        widget=forms.PasswordInput(
            render_value=False, attrs={"autocomplete": "new-password", "spellcheck": "false"}
        ),
        help_text="Stored encrypted and never shown again. Leave empty to keep the stored key; "
        "local servers (LM Studio, Ollama) need none.",
    )
    clear_api_key = forms.BooleanField(required=False, label="Remove the stored API key")

    class Meta:
        model = Provider
        # api_key is not a model field here: construct_instance must never blank the stored key.
        fields = [
            "name",
            "kind",
            "base_url",
            "default_model",
            "reasoning_effort",
            "thinking_budget",
            "max_output_tokens",
            "model_traits",
            "is_default",
        ]
        widgets = {
            "base_url": forms.URLInput(
                attrs={"placeholder": "http://127.0.0.1:1234/v1", "class": "vURLField"}
            )
        }
        labels = {
            "base_url": "Base URL",
            "is_default": "Default provider (new chats use it)",
            "max_output_tokens": "Output limit (tokens)",
            "model_traits": "Model traits for sampling (JSON)",
        }
        help_texts = {
            "base_url": "OpenAI-compatible: the URL ending in /v1 (LM Studio http://127.0.0.1:1234/v1, "
            "Ollama http://127.0.0.1:11434/v1, OpenAI https://api.openai.com/v1). "
            "Anthropic: https://api.anthropic.com.",
            "default_model": "The model chats use unless they pick another.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk and self.instance.has_api_key:
            self.fields["api_key"].widget.attrs["placeholder"] = (
                "******** (stored; type to replace)"
            )
        elif not self.instance.pk:
            del self.fields["clear_api_key"]

    def clean_model_traits(self) -> dict[str, Any]:
        return self.cleaned_data.get("model_traits") or {}  # an empty box: the hub's table

    def new_api_key(self) -> str | None:
        """None: keep the stored key; "": remove it; anything else: the new key."""
        if self.cleaned_data.get("clear_api_key"):
            return ""
        return self.cleaned_data.get("api_key") or None

    def model_fields(self) -> dict[str, Any]:
        return {
            name: self.cleaned_data[name] for name in self.Meta.fields if name in self.cleaned_data
        }
