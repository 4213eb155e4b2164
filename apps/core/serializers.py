"""Serializers whose fields cost what binding them costs, not what building them costs.

DRF builds a serializer's fields again for every instance: a ModelSerializer introspects its model
(840 µs of a 1,070 µs `RunSerializer(run).data` on this kind of machine, in process, 2,000 each),
and every serializer deep-copies its declared fields, which for a DRF field means a new instance
made from its arguments (its validators and messages built again). Both are paid on every request
(POST /api/runs/: the two serializers' fields were 22 % of its CPU, py-spy). The fields depend on
the class alone (its Meta and declared fields), so here they are built once per class and kept
unbound, and each instance gets `unbound_copies` of them: a shallow copy of a field that holds no
other field (what `bind()` sets is then the copy's own), DRF's deep copy of one that does (a list's
child, a nested serializer), whose children must be bound to it. In process against Postgres,
3,000 each: RunSerializer(run).data 250 → 120 µs, StartRunSerializer validation 150 → 107 µs.
"""

from __future__ import annotations

import copy
from typing import Any

from rest_framework import serializers


def unbound_copies(fields: dict[str, Any]) -> dict[str, Any]:
    """A serializer's own copies of template fields, ready to bind."""
    return {
        name: copy.deepcopy(field) if _holds_fields(field) else copy.copy(field)
        for name, field in fields.items()
    }


def _holds_fields(field: Any) -> bool:
    return (
        isinstance(field, serializers.BaseSerializer)
        or hasattr(field, "child")
        or hasattr(field, "child_relation")
    )


class ModelSerializer(serializers.ModelSerializer):
    def get_fields(self):
        cls = type(self)
        built = cls.__dict__.get("_built_fields")  # each class its own: a subclass adds fields
        if built is None:
            built = super().get_fields()
            cls._built_fields = built
        return unbound_copies(built)


class Serializer(serializers.Serializer):
    def get_fields(self):
        return unbound_copies(self._declared_fields)
