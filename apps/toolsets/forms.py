"""Admin pieces for an endpoint's enabled tools: an inline that stays fast with hundreds of rows.

The stock inline costs several queries per row (each autocomplete looks its label up, each form
re-validates its row); an endpoint with 300 tools would need ~1,000 queries per page.
"""

from __future__ import annotations

from typing import Any

from django.contrib.admin.widgets import AutocompleteSelect
from django.core.exceptions import ValidationError
from django.forms.models import BaseInlineFormSet

from apps.catalog.models import Tool
from apps.toolsets.services import BudgetExceeded, token_total


class KnownLabelsAutocompleteSelect(AutocompleteSelect):
    """An autocomplete that takes the selected option's label from `known_labels` when it can."""

    known_labels: dict[str, str] = {}

    def optgroups(self, name: str, value: list[Any], attr: dict | None = None) -> list:
        selected = [str(v) for v in value if v not in (None, "")]
        if not selected or any(v not in self.known_labels for v in selected):
            return super().optgroups(name, value, attr)
        options = [] if self.is_required else [self.create_option(name, "", "", False, 0)]
        options += [
            self.create_option(name, v, self.known_labels[v], True, len(options)) for v in selected
        ]
        return [(None, options, 0)]


class EndpointToolFormSet(BaseInlineFormSet):
    """Validates only the rows an admin touched, and applies the service's budget rule to the whole set."""

    def get_form_kwargs(self, index: int) -> dict[str, Any]:
        # An untouched saved row was valid when saved; skipping it saves queries, not checks.
        return {"empty_permitted": True}

    def _construct_form(self, i: int, **kwargs: Any):
        form = super()._construct_form(i, **kwargs)
        widget = form.fields["tool"].widget
        getattr(widget, "widget", widget).known_labels = self._tool_labels
        return form

    @property
    def _tool_labels(self) -> dict[str, str]:
        if not hasattr(self, "_labels"):
            self._labels = {str(row.tool_id): str(row.tool) for row in self.get_queryset()}
        return self._labels

    def clean(self) -> None:
        super().clean()
        if any(self.errors):
            return
        endpoint = self.instance  # carries the budget fields as submitted on the same page
        tools = [tool for form in self.forms if (tool := self._tool_of(form)) is not None]
        total = token_total(tools)
        if endpoint.budget_enforced and total > endpoint.token_budget:
            raise ValidationError(
                f"{BudgetExceeded(endpoint=endpoint, total=total)} Disable some tools, raise the budget, "
                "or untick “budget enforced”."
            )

    def _tool_of(self, form) -> Tool | None:
        if self._should_delete_form(form):
            return None
        if form.has_changed():
            return form.cleaned_data.get("tool")
        return form.instance.tool if form.instance.pk else None
