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
from typing import Any

from django.db import connections
from django.db.models import Field, Model, QuerySet


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
        slots = []
        for sample in samples:
            found = [i for i, value in enumerate(params) if _same(value, sample)]
            if len(found) != 1:
                raise ValueError(
                    f"sample {sample!r} is among the compiled parameters {len(found)} times, "
                    "not once: choose a value no other part of the query uses"
                )
            slots.append((found[0], _preparer(params[found[0]], sample)))
        return cls(compiler, sql, list(params), slots)

    def run(self, args: tuple[Any, ...], using: str) -> list[dict[str, Any]]:
        if len(args) != len(self.slots):
            raise TypeError(f"expected {len(self.slots)} arguments, got {len(args)}")
        params = list(self.params)
        for (position, prepare), arg in zip(self.slots, args):
            params[position] = prepare(arg)
        with connections[using].cursor() as cursor:
            cursor.execute(self.sql, params)
            rows = cursor.fetchall()
            if self.names is None:
                self.names = [column[0] for column in cursor.description]
        if self.converters:
            rows = self.compiler.apply_converters(rows, self.converters)
        return [dict(zip(self.names, row)) for row in rows]


def _same(value: Any, sample: Any) -> bool:
    if isinstance(sample, uuid.UUID) and isinstance(value, str):
        return value in (sample.hex, str(sample))
    return type(value) is type(sample) and value == sample


def _preparer(compiled: Any, sample: Any) -> Callable[[Any], Any]:
    if isinstance(sample, uuid.UUID) and isinstance(compiled, str):
        return _hex if compiled == sample.hex else str
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


_inserts: dict[tuple[type[Model], str], tuple[str, list[Field]]] = {}
