"""Re-encrypt every stored secret under the newest key in MCPHUB_ENCRYPTION_KEYS.

Rotation: put a new key first in the list (keep the old ones after it), restart, run this,
then drop the old keys.
"""

from __future__ import annotations

from django.apps import apps
from django.core.management.base import BaseCommand
from django.db import transaction

from apps.core.fields import EncryptedJSONField


class Command(BaseCommand):
    help = "Re-encrypt all secrets with the first key of MCPHUB_ENCRYPTION_KEYS."

    @transaction.atomic
    def handle(self, *args, **options) -> None:
        for model in apps.get_models():
            fields = [f.name for f in model._meta.get_fields() if isinstance(f, EncryptedJSONField)]
            if fields:
                count = self._rotate(model, fields)
                self.stdout.write(f"{model._meta.label}: re-encrypted {count} row(s)")

    def _rotate(self, model, fields: list[str]) -> int:
        rows = model._default_manager.select_for_update().only("pk", *fields)
        for row in rows:
            # update() encrypts through the field, i.e. with the newest key; no save() side effects.
            model._default_manager.filter(pk=row.pk).update(**{f: getattr(row, f) for f in fields})
        return len(rows)
