"""ORM statements compiled once per process and run again with other arguments.

Building a queryset and compiling it to SQL costs Django more CPU than Postgres needs to answer
it: the query that starts a chat turn (turn, conversation, provider, endpoint and the last event's
number, one statement) took 1.42 ms through the ORM on this kind of machine, 0.40 ms run from its
compiled SQL, of which 0.13 ms is the round trip itself (`SELECT 1`); its compilation alone is
0.67 ms. On a path that runs for every turn or round, that is the difference.

The SQL still comes from the ORM, for every database the hub runs on: `build(*samples)` makes the
queryset once, it is compiled for the connection's database, and the parameters that carried the
samples are found by value and replaced on each run, prepared as Django prepared the samples (a
UUID is a UUID for Postgres, its hex for SQLite). Each sample must be a value found exactly once
among the compiled parameters (unique: a fresh UUID, an unlikely number), or compiling fails.
Rows come back as `values()` gives them: dicts, with the ORM's converters applied (JSON decoded).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from django.db import connections
from django.db.models import DEFERRED, Field, Model, QuerySet
from django.db.models.sql import UpdateQuery

M = TypeVar("M", bound=Model)

# A time no statement's other parameters carry, for a datetime argument's sample (a second one in
# the same statement: this plus a second).
SAMPLE_TIME = datetime(2001, 2, 3, 4, 5, 6, 789012, tzinfo=UTC)


def attnames(model: type[Model], *related: str) -> list[str]:
    """Every concrete field of `model` by the name `values()` and `Model.from_db` take, then those
    of each `related` path (as select_related names it: "provider", "provider__owner") prefixed
    with it, for `first_instance(..., related=...)`."""
    names = [field.attname for field in model._meta.concrete_fields]
    for path in related:
        fields = _related_model(model, path)._meta.concrete_fields
        names += [f"{path}__{field.attname}" for field in fields]
    return names


def _related_model(model: type[Model], path: str) -> type[Model]:
    for name in path.split("__"):
        model = model._meta.get_field(name).related_model
    return model


def _load(model: type[M], row: dict[str, Any], prefix: str, using: str) -> M:
    fields = model._meta.concrete_fields
    values = [row.get(prefix + field.attname, DEFERRED) for field in fields]
    names = [field.attname for field, value in zip(fields, values) if value is not DEFERRED]
    return model.from_db(using, names, values)


class Compiled:
    """`build(*args)` → a `values()` queryset; `run(*args)` its rows, compiled once per database."""

    def __init__(self, build: Callable[..., QuerySet], *samples: Any) -> None:
        self._build = build
        self._samples = samples
        self._by_alias: dict[str, _Statement] = {}

    def run(self, *args: Any, using: str = "default") -> list[dict[str, Any]]:
        statement = self._by_alias.get(using)
        if statement is None:
            statement = self._by_alias[using] = _Statement.compile(
                self._build(*self._samples), self._samples, using
            )
        return statement.run(args, using)

    def first(self, *args: Any, using: str = "default") -> dict[str, Any] | None:
        rows = self.run(*args, using=using)
        return rows[0] if rows else None

    def first_instance(
        self, model: type[M], *args: Any, related: Sequence[str] = (), using: str = "default"
    ) -> M | None:
        """The first row as a `model` instance, as the ORM loads one (`Model.from_db`): `build`
        selects the model's fields by attname (`attnames(model, *related)`); a field left out is
        deferred. Each `related` path (a parent before its children) is loaded into its foreign
        key as select_related would, None where the key is null. Any other value `build` selects (an
        annotation) is set on the instance by its name, as the ORM's `annotate()` sets it."""
        row = self.first(*args, using=using)
        if row is None:
            return None
        instance = _load(model, row, "", using)
        fields = {field.name for field in model._meta.concrete_fields}
        for name, value in row.items():
            if "__" not in name and name not in fields and name not in instance.__dict__:
                setattr(instance, name, value)
        for path in related:
            parent_path, _, name = path.rpartition("__")
            parent: Any = instance
            for step in filter(None, parent_path.split("__")):
                parent = getattr(parent, step)  # loaded above, or None: no query either way
            target = _related_model(model, path)
            if parent is not None and row.get(f"{path}__{target._meta.pk.attname}") is not None:
                setattr(parent, name, _load(target, row, f"{path}__", using))
        return instance


class CompiledUpdate:
    """`build(*args)` → (queryset, {field: value}); `run(*args)` updates and returns the number of
    rows it changed, compiled once per database. One table only: what compiles is all it runs."""

    def __init__(
        self, build: Callable[..., tuple[QuerySet, dict[str, Any]]], *samples: Any
    ) -> None:
        self._build = build
        self._samples = samples
        self._by_alias: dict[str, tuple[str, list[Any], list[tuple[int, Any]]]] = {}

    def run(self, *args: Any, using: str = "default") -> int:
        statement = self._by_alias.get(using)
        if statement is None:
            queryset, values = self._build(*self._samples)
            query = queryset.query.chain(UpdateQuery)
            query.add_update_values(values)
            if query.related_updates or query.count_active_tables() > 1:
                raise ValueError("only an update of one table compiles to one statement")
            sql, params = query.get_compiler(using).as_sql()
            slots = _slots(params, self._samples, connections[using])
            statement = self._by_alias[using] = (sql, list(params), slots)
        sql, params, slots = statement
        with connections[using].cursor() as cursor:
            cursor.execute(sql, _bind(params, slots, args))
            return cursor.rowcount


class _Statement:
    def __init__(
        self,
        compiler: Any,
        sql: str,
        params: list[Any],
        slots: list[tuple[int, Callable[[Any], Any]]],
    ) -> None:
        self.compiler = compiler
        self.sql = sql
        self.params = params
        self.slots = slots
        fields = [selected[0] for selected in compiler.select[: compiler.col_count]]
        self.converters = compiler.get_converters(fields)
        self.names: list[str] | None = None

    @classmethod
    def compile(cls, queryset: QuerySet, samples: tuple[Any, ...], using: str) -> _Statement:
        compiler = queryset.query.get_compiler(using)
        sql, params = compiler.as_sql()
        slots = _slots(params, samples, connections[using])
        return cls(compiler, sql, list(params), slots)

    def run(self, args: tuple[Any, ...], using: str) -> list[dict[str, Any]]:
        params = _bind(self.params, self.slots, args)
        with connections[using].cursor() as cursor:
            cursor.execute(self.sql, params)
            rows = cursor.fetchall()
            if self.names is None:
                self.names = [column[0] for column in cursor.description]
        if self.converters:
            rows = self.compiler.apply_converters(rows, self.converters)
        return [dict(zip(self.names, row)) for row in rows]


def _slots(
    params: Sequence[Any], samples: tuple[Any, ...], connection: Any
) -> list[tuple[int, Callable[[Any], Any]]]:
    """Where each sample went among the compiled parameters, and how to prepare its replacements."""
    slots = []
    for sample in samples:
        found = [i for i, value in enumerate(params) if _same(value, sample, connection)]
        if len(found) != 1:
            raise ValueError(
                f"sample {sample!r} is among the compiled parameters {len(found)} times, "
                "not once: choose a value no other part of the query uses"
            )
        slots.append((found[0], _preparer(params[found[0]], sample, connection)))
    return slots


def _bind(
    params: list[Any], slots: list[tuple[int, Callable[[Any], Any]]], args: tuple[Any, ...]
) -> list[Any]:
    if len(args) != len(slots):
        raise TypeError(f"expected {len(slots)} arguments, got {len(args)}")
    bound = list(params)
    for (position, prepare), arg in zip(slots, args):
        bound[position] = prepare(arg)
    return bound


def _same(value: Any, sample: Any, connection: Any) -> bool:
    if isinstance(value, str) and isinstance(sample, uuid.UUID):
        return value in (sample.hex, str(sample))
    if isinstance(value, str) and isinstance(sample, datetime):
        return value == connection.ops.adapt_datetimefield_value(sample)
    if _number(value) and _number(sample):  # psycopg's Int4/Int8 wrap an int in an expression
        return value == sample
    return type(value) is type(sample) and value == sample


def _number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _preparer(compiled: Any, sample: Any, connection: Any) -> Callable[[Any], Any]:
    if isinstance(compiled, str) and isinstance(sample, uuid.UUID):
        return _hex if compiled == sample.hex else str
    if isinstance(compiled, str) and isinstance(sample, datetime):
        return connection.ops.adapt_datetimefield_value
    if _number(compiled) and type(compiled) is not int:
        return type(compiled)
    return _as_is


def _hex(value: Any) -> str:
    return (value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))).hex


def _as_is(value: Any) -> Any:
    return value


def insert(model: type[Model], rows: Sequence[Model], *, using: str = "default") -> None:
    """Inserts `rows` of `model`, without reading their keys back: the statement is built once per
    model and database from its fields, each value prepared by its field as `bulk_create` prepares
    it (defaults, `auto_now_add`, JSON). For the chat's journal, which never reads those keys:
    one event through `bulk_create` took 0.78 ms on this kind of machine, 0.45 ms this way."""
    if not rows:
        return
    connection = connections[using]
    key = (model, using)
    statement = _inserts.get(key)
    if statement is None:
        fields = [
            f
            for f in model._meta.concrete_fields
            if not (getattr(f, "db_returning", False) or getattr(f, "generated", False))
        ]
        quote = connection.ops.quote_name
        sql = "INSERT INTO {} ({}) VALUES ({})".format(
            quote(model._meta.db_table),
            ", ".join(quote(f.column) for f in fields),
            ", ".join(["%s"] * len(fields)),
        )
        statement = _inserts[key] = (sql, fields)
    sql, fields = statement
    values = [[f.pre_save(row, True) for f in fields] for row in rows]
    if any(hasattr(value, "resolve_expression") for row in values for value in row):
        model._default_manager.using(using).bulk_create(rows)  # a db_default: the ORM's own way
        return
    params = [
        [f.get_db_prep_save(value, connection) for f, value in zip(fields, row)] for row in values
    ]
    with connection.cursor() as cursor:
        if len(params) == 1:
            cursor.execute(sql, params[0])
        else:
            cursor.executemany(sql, params)
    for row in rows:  # saved, as bulk_create leaves them: a later save() updates
        row._state.adding, row._state.db = False, using


_inserts: dict[tuple[type[Model], str], tuple[str, list[Field]]] = {}
