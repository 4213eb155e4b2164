"""Model fields whose values are encrypted at rest."""

from __future__ import annotations

import json
from typing import Any

from django.db import models

from apps.core import crypto


class EncryptedJSONField(models.TextField):
    """A JSON value (e.g. an env or headers dict) stored as one Fernet token.

    The raw column never holds plaintext; Python code sees the decoded value.
    """

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> Any:
        if value is None or value == "":
            return self.get_default()
        return json.loads(crypto.decrypt(value))

    def to_python(self, value: Any) -> Any:
        return value

    def get_prep_value(self, value: Any) -> str | None:
        if value is None:
            return None
        return crypto.encrypt(json.dumps(value, sort_keys=True))

    def value_to_string(self, obj: models.Model) -> str:
        # Serialization (dumpdata) keeps the ciphertext, never the secret.
        return self.get_prep_value(self.value_from_object(obj)) or ""
