"""The set-up of a benchmark that times Django code in its own process, run as a script
(`.venv/bin/python benchmarks/NAME.py`, which puts this folder first on sys.path):

    import standalone  # noqa: F401  - before the project's imports

The project becomes importable and Django is set up with the benchmarks' defaults: the hub's
settings, debug on, a scratch data directory (each overridable from the environment).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import django

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mcphub.settings")
os.environ.setdefault("MCPHUB_DEBUG", "true")
os.environ.setdefault("MCPHUB_DATA_DIR", "/tmp/mcphub-bench-data")
django.setup()
