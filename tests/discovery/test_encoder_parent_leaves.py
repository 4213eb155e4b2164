"""An encoder process whose parent leaves while it encodes (the web process exited or was killed)
ends quietly: no traceback for a question nobody waits for."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import pytest

from apps.discovery import embeddings
from tests.discovery import slow_encoder

pytestmark = pytest.mark.skipif(
    not embeddings.available(), reason="the embedding model is not installed"
)


def test_an_encoder_whose_parent_left_mid_question_ends_without_a_traceback():
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.discovery.slow_encoder"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=embeddings.ROOT,
        env={**os.environ, "PYTHONPATH": str(embeddings.ROOT)},
    )
    question = json.dumps([f"find it {slow_encoder.SLOWLY}"]).encode()
    process.stdin.write(struct.pack("<I", len(question)) + question)
    process.stdin.flush()
    process.stdout.close()  # the parent is gone before the answer: its write finds no reader
    process.stdin.close()
    process.wait(timeout=60)
    errors = process.stderr.read()
    process.stderr.close()

    assert process.returncode == 0
    assert b"Traceback" not in errors, errors.decode()
