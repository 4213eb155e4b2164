"""A throwaway test database for the benchmarks that time Django code in their own process
(`test_<db>` on Postgres when DATABASE_URL is set, SQLite otherwise), created and dropped as the
test runner does. Django must be set up before this is imported."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection
from django.test.utils import setup_test_environment


@contextmanager
def test_database() -> Iterator[None]:
    setup_test_environment()
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        yield
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
