"""The audit trail's one registration point: each app registers the models whose changes matter.

Records are django-auditlog's LogEntry rows (in the database): who (actor), when, from where
(remote address; `additional_data.source`: admin, pages, api, sso, command, or none for the hub's
own work), which object, and the changed fields. A secret field's value never enters a record: a
change to it shows as `[secret]` on both sides, so the trail says *that* it changed, never what to.

    # in an app's AppConfig.ready():
    from apps.audit.registry import register
    register(Provider, secret_fields=["api_key"], ignore_fields=["last_checked_at"])
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

from auditlog.registry import auditlog
from django.db import models

SECRET = "[secret]"


def hide_secret(value: str) -> str:
    """django-auditlog's own mask keeps half the value: not one character of a secret may stay."""
    return SECRET


def register(
    model: type[models.Model],
    *,
    secret_fields: Iterable[str] = (),
    ignore_fields: Iterable[str] = (),
) -> None:
    """Audit every create, change and delete of `model`; `ignore_fields` are bookkeeping that
    changes on its own (timestamps, health) and would only bury the changes people made."""
    if auditlog.contains(model):
        return
    auditlog.register(
        model,
        exclude_fields=["updated_at", *ignore_fields],
        mask_fields=list(secret_fields),
        mask_callable="apps.audit.registry.hide_secret",
    )


def record_set_change(
    *, instance: models.Model, field: str, added: Iterable[str] = (), removed: Iterable[str] = ()
) -> None:
    """One entry on `instance` for a bulk change of the set `field` names (e.g. the tools an
    endpoint serves), written as django-auditlog writes many-to-many changes: a bulk write sends
    no per-row signals, and 300 rows would otherwise mean 300 entries."""
    from auditlog.models import LogEntry

    for operation, names in (("add", sorted(added)), ("delete", sorted(removed))):
        if names:
            LogEntry.objects.log_m2m_changes(names, instance, operation, field)


@contextlib.contextmanager
def unrecorded() -> Iterator[None]:
    """Row-by-row records off, for a bulk write that `record_set_change` sums up instead."""
    from auditlog.context import disable_auditlog

    with disable_auditlog():
        yield
