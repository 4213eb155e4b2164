"""A bounded ring buffer for a backend's stderr: enough to explain a crash, never a memory leak."""

from __future__ import annotations

from collections import deque

# Prefix of the lines the pool itself writes into a tail (restarts, failures).
MARKER = "[mcp-hub]"


class StderrTail:
    """Keeps the last `max_lines` lines and at most `max_bytes` bytes of a stream."""

    def __init__(self, max_lines: int = 500, max_bytes: int = 64 * 1024) -> None:
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self._lines: deque[str] = deque()
        self._size = 0
        self._partial = ""

    def feed(self, chunk: bytes) -> None:
        text = self._partial + chunk.decode("utf-8", errors="replace")
        *lines, self._partial = text.split("\n")
        for line in lines:
            self.append(line)
        if len(self._partial) > self.max_bytes:
            # A flood without newlines must not grow the partial line without bound.
            self.append(self._partial)
            self._partial = ""

    def append(self, line: str) -> None:
        line = line.rstrip("\r")[-self.max_bytes :]
        self._lines.append(line)
        self._size += len(line) + 1
        while len(self._lines) > self.max_lines or self._size > self.max_bytes:
            self._size -= len(self._lines.popleft()) + 1

    def text(self, last_lines: int | None = None) -> str:
        lines = list(self._lines) + ([self._partial] if self._partial else [])
        if last_lines is not None:
            lines = lines[-last_lines:]
        return "\n".join(lines)

    def summary(self, last_lines: int = 10, max_chars: int = 1500) -> str:
        """The child's own last lines, for error messages (the full tail stays in the pool)."""
        own = [line for line in self.text().split("\n") if not line.startswith(MARKER)]
        return "\n".join(own[-last_lines:])[-max_chars:].strip()
