#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcphub.settings")
    from django.core.management import execute_from_command_line

    with _audited_as_command():
        execute_from_command_line(sys.argv)


def _audited_as_command():
    """Changes a command makes are audited as coming from it (`manage.py mcp_import` …)."""
    import contextlib

    import django

    try:
        django.setup()
    except Exception:  # bad settings: let Django's own command line report them
        return contextlib.nullcontext()
    from apps.audit.context import command_source

    return command_source(sys.argv[1] if len(sys.argv) > 1 else "help")


if __name__ == "__main__":
    main()
