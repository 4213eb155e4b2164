"""apps.core.serializers.ModelSerializer: fields built once per class, a copy of its own for each
instance, the same fields DRF would have built."""

import importlib

import pytest
from django.apps import apps as django_apps
from rest_framework import serializers

from apps.chat.runs.serializers import RunDetailSerializer, RunSerializer
from apps.core.serializers import ModelSerializer


def every_model_serializer() -> list[type]:
    for config in django_apps.get_app_configs():
        if config.name.startswith("apps."):
            for module in ("serializers", "api", "runs.serializers"):
                try:
                    importlib.import_module(f"{config.name}.{module}")
                except ModuleNotFoundError:
                    pass
    found, todo = [], [serializers.ModelSerializer]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if sub.__module__.startswith("apps.") and sub is not ModelSerializer:
                found.append(sub)
    return sorted(found, key=lambda c: f"{c.__module__}.{c.__qualname__}")


@pytest.mark.django_db
@pytest.mark.parametrize("serializer_class", every_model_serializer(), ids=lambda c: c.__name__)
def test_the_fields_are_the_ones_drf_builds_for_each_class(serializer_class):
    assert issubclass(serializer_class, ModelSerializer)  # the hub's, for every API shape
    drf_built = repr(serializers.ModelSerializer.get_fields(serializer_class()))
    for _ in range(2):  # built, then copied
        assert repr(dict(serializer_class().get_fields())) == drf_built


def test_a_subclass_has_fields_of_its_own():
    for _ in range(2):  # a subclass's fields are not its parent's, nor the other way round
        assert "steps" in RunDetailSerializer().fields
        assert "steps" not in RunSerializer().fields


def test_each_instance_binds_its_own_copies():
    first, second = RunSerializer(), RunSerializer()
    assert first.fields["task"] is not second.fields["task"]
    assert first.fields["task"].parent is first and second.fields["task"].parent is second
    first.fields["task"].label = "changed on one instance"
    assert RunSerializer().fields["task"].label != "changed on one instance"


def test_drf_builds_them_once_per_class(monkeypatch):
    built = []
    build = serializers.ModelSerializer.get_fields
    monkeypatch.setattr(
        serializers.ModelSerializer,
        "get_fields",
        lambda self: built.append(type(self)) or build(self),
    )
    monkeypatch.delattr(RunSerializer, "_built_fields", raising=False)
    for _ in range(3):
        assert "task" in RunSerializer().fields
    assert built == [RunSerializer]
