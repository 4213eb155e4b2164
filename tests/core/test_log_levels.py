"""The log stays at LOG_LEVEL even where a library turns its own logger to DEBUG on import (bm25s)."""

from __future__ import annotations

import os
import subprocess
import sys

SCRIPT = """
import django
django.setup()
import bm25s
retriever = bm25s.BM25()
retriever.index(bm25s.tokenize(["echo a text back", "the current time"], show_progress=False), show_progress=False)
import logging
logging.getLogger("apps.example").info("an info line")
"""


def test_indexing_tool_search_prints_no_debug_lines_at_info(tmp_path):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "mcphub.settings",
        "LOG_LEVEL": "INFO",
        "MCPHUB_DEBUG": "false",
        "SECRET_KEY": "x",
        "MCPHUB_DATA_DIR": str(tmp_path),
    }
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)

    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120
    )

    assert done.returncode == 0, done.stderr
    assert "an info line" in done.stderr  # the handler does print at INFO
    assert "DEBUG" not in done.stderr and "Building index" not in done.stderr
