"""`PoolAPI` is the one interface: both pools implement it exactly, the wire carries each operation."""

from __future__ import annotations

import inspect

import pytest

from apps.connections.contract import NOT_OPS, PoolAPI
from apps.connections.pool import Pool
from apps.connections.remote import RemotePool
from apps.connections.wire import NAME_OPS, OPS


def _methods(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(value)
        for name, value in vars(cls).items()
        if inspect.iscoroutinefunction(value)
    }


PROTOCOL = _methods(PoolAPI)


def test_the_protocol_is_the_pool_interface():
    assert {"call_tool", "list_tools", "discover", "stats", "aclose"} <= set(PROTOCOL)


def test_every_operation_has_a_wire_op_and_every_wire_op_an_operation():
    operations = set(PROTOCOL) - NOT_OPS
    wire = set(OPS) | set(NAME_OPS)
    assert operations - wire == set(), "PoolAPI methods without a wire op (wire.OPS / NAME_OPS)"
    assert wire - operations == set(), "wire ops that are not PoolAPI methods"


def test_spec_operations_and_name_operations_are_told_apart_on_the_wire():
    takes_spec = {n for n, sig in PROTOCOL.items() if "spec" in sig.parameters}
    assert takes_spec == set(OPS)
    assert set(PROTOCOL) - NOT_OPS - takes_spec == set(NAME_OPS)


@pytest.mark.parametrize("cls", [Pool, RemotePool], ids=lambda c: c.__name__)
@pytest.mark.parametrize("name", sorted(PROTOCOL))
def test_both_pools_implement_each_method_with_the_protocols_signature(cls, name):
    method = getattr(cls, name, None)
    assert method is not None, f"{cls.__name__} lacks PoolAPI.{name}"
    assert inspect.iscoroutinefunction(method), f"{cls.__name__}.{name} must be async"
    assert str(inspect.signature(method)) == str(PROTOCOL[name]), (
        f"{cls.__name__}.{name} drifted from PoolAPI.{name}"
    )


@pytest.mark.parametrize("cls", [Pool, RemotePool], ids=lambda c: c.__name__)
def test_neither_pool_has_public_operations_outside_the_protocol(cls):
    public = {n for n in _methods(cls) if not n.startswith("_") or n in PROTOCOL}
    assert public - set(PROTOCOL) == set(), (
        "add them to PoolAPI (and wire.OPS) or make them private"
    )
