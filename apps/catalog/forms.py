"""Admin form for MCP servers: write-only secrets and a friendly arguments box."""

from __future__ import annotations

import json
import re
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from apps.catalog import openapi, uservars
from apps.catalog.models import McpServer

# What a stored value looks like on the page; typing it back means "keep what is stored".
MASK = "********"

ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# RFC 9110 token characters, the alphabet of an HTTP header name; `scheme:NAME` is an OpenAPI
# server's credential for its security scheme NAME (apps/connections/transports/openapi.py).
HEADER_NAME_RE = re.compile(r"^(?:scheme:)?[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


class MaskedSecretsTextarea(forms.Textarea):
    """Renders `KEY=value` lines with every value masked, whether stored or just typed.

    Like a password input, nothing secret is echoed back, not even after a validation error.
    """

    def format_value(self, value: Any) -> str:
        if isinstance(value, dict):
            return "\n".join(f"{key}={_masked(secret)}" for key, secret in value.items())
        return "\n".join(_mask_line(line) for line in str(value or "").splitlines())


def _masked(value: str) -> str:
    # `${user:NAME}` (each user's own value, filled by them) is no secret of the server: shown as written.
    return value if uservars.is_public_value(str(value)) else MASK


def _mask_line(line: str) -> str:
    key, sep, value = line.partition("=")
    return f"{key.strip()}={_masked(value.strip())}" if sep else line


class SecretMapField(forms.Field):
    """A name-to-secret mapping edited as `KEY=value` lines; `stored` is the mapping being edited.

    A line `KEY=********` keeps the stored value, a new value replaces it, a missing line removes it.
    """

    widget = MaskedSecretsTextarea

    def __init__(self, *, name_re: re.Pattern[str], name_kind: str, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)
        self.name_re = name_re
        self.name_kind = name_kind
        self.stored: dict[str, str] = {}

    def to_python(self, value: Any) -> dict[str, str]:
        if isinstance(value, dict):
            return value
        result: dict[str, str] = {}
        for number, line in enumerate(str(value or "").splitlines(), start=1):
            if line.strip() and not line.lstrip().startswith("#"):
                key, secret = self._parse_line(number, line)
                if key in result:
                    raise ValidationError(f"Line {number}: {key} is listed twice.")
                result[key] = secret
        return result

    def _parse_line(self, number: int, line: str) -> tuple[str, str]:
        key, sep, secret = line.partition("=")
        key, secret = key.strip(), secret.strip()
        if not sep:
            raise ValidationError(f"Line {number}: write it as NAME=value.")
        if not self.name_re.match(key):
            raise ValidationError(f"Line {number}: {key!r} is not a valid {self.name_kind}.")
        if secret == MASK:
            if key not in self.stored:
                raise ValidationError(
                    f"Line {number}: {key} has no stored value to keep; type its value "
                    "(values are never shown again, not even after an error)."
                )
            secret = self.stored[key]
        return key, secret

    def has_changed(self, initial: Any, data: Any) -> bool:
        try:
            return self.to_python(data) != (initial or {})
        except ValidationError:
            return True


class ArgumentsField(forms.Field):
    """Command arguments: one per line, or a JSON list for arguments that lines cannot express."""

    widget = forms.Textarea(attrs={"rows": 4})

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault(
            "help_text",
            'One argument per line. For empty arguments, newlines or edge spaces use a JSON list: ["-y", "pkg"].',
        )
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        if not isinstance(value, list):
            return value
        if all(isinstance(arg, str) and _fits_on_a_line(arg) for arg in value) and not (
            value and value[0].startswith("[")
        ):
            return "\n".join(value)
        return json.dumps(value)

    def to_python(self, value: Any) -> list[str]:
        if isinstance(value, list):
            return value
        text = str(value or "").strip()
        if text.startswith("["):
            try:
                args = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValidationError(f"Not a valid JSON list: {exc.msg}.") from None
            if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
                raise ValidationError("The JSON list must hold only strings.")
            return args
        return [line.strip() for line in text.splitlines() if line.strip()]

    def has_changed(self, initial: Any, data: Any) -> bool:
        try:
            return self.to_python(data) != (initial or [])
        except ValidationError:
            return True


def _fits_on_a_line(arg: str) -> bool:
    return bool(arg) and arg == arg.strip() and "\n" not in arg and "\r" not in arg


class McpServerForm(forms.ModelForm):
    url = forms.URLField(
        max_length=2048,
        required=False,
        assume_scheme="https",
        widget=forms.URLInput(attrs={"class": "vURLField"}),
    )
    args = ArgumentsField()
    env = SecretMapField(
        name_re=ENV_NAME_RE,
        name_kind="environment variable name",
        label="Environment variables",
        widget=MaskedSecretsTextarea(
            attrs={"rows": 5, "autocomplete": "off", "spellcheck": "false"}
        ),
        help_text=(
            f"One NAME=value per line. Stored values show as {MASK}: leave such a line as it is to keep "
            "the value, type a new value to replace it, delete the line to remove the variable."
        ),
    )
    headers = SecretMapField(
        name_re=HEADER_NAME_RE,
        name_kind="header name",
        widget=MaskedSecretsTextarea(
            attrs={"rows": 3, "autocomplete": "off", "spellcheck": "false"}
        ),
        help_text=f"One Header-Name=value per line (e.g. Authorization=Bearer …); {MASK} keeps a stored value.",
    )

    openapi_source = forms.URLField(
        max_length=2048,
        required=False,
        assume_scheme="https",
        label="OpenAPI document URL",
        help_text=McpServer._meta.get_field("openapi_source").help_text,
    )
    openapi_file = forms.FileField(
        required=False,
        label="OpenAPI document (upload)",
        help_text="A JSON or YAML file; used instead of the URL above when given.",
    )

    # Set per request by the admin: whether the editing user holds the stdio permission.
    may_define_stdio = False

    class Meta:
        model = McpServer
        fields = "__all__"

    def clean_transport(self) -> str:
        transport = self.cleaned_data["transport"]
        if transport == McpServer.Transport.STDIO and not self.may_define_stdio:
            raise ValidationError(
                "Defining a stdio server needs the 'manage stdio servers' permission: it runs a command on the hub's host."
            )
        return transport

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("transport") == McpServer.Transport.OPENAPI and not self.errors:
            data.update(self._openapi(data))
        return data

    def _openapi(self, data: dict[str, Any]) -> dict[str, Any]:
        """Fetch (or read the upload), bundle and validate the document; fill the base URL."""
        values = {k: data.get(k) or "" for k in ("openapi_source", "openapi_document", "url")}
        if upload := data.get("openapi_file"):
            values.update(
                openapi_source="", openapi_document=upload.read().decode("utf-8", "replace")
            )
        elif not values["openapi_source"] and not values["openapi_document"]:
            # A page that does not show the stored document (the Servers page) keeps it.
            values["openapi_document"] = self.instance.openapi_document
        owner = data.get("owner")
        public_only = owner is not None and not owner.is_staff
        try:
            return openapi.complete(values, public_only=public_only)
        except ValidationError as exc:
            for field, messages in exc.message_dict.items():
                self.add_error(field if field in self.fields else None, messages)
            return {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Decrypted values are only ever used to resolve masked lines, never rendered.
        self.fields["env"].stored = dict(self.instance.env or {})
        self.fields["headers"].stored = dict(self.instance.headers or {})
