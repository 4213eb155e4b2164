"""A logging filter that keeps raw access tokens out of every log line (see tokens.redact)."""

from __future__ import annotations

import logging

from apps.accounts.tokens import redact

_formatter = logging.Formatter()


class RedactTokensFilter(logging.Filter):
    """Attached to the log handlers: a token in a logged URL, header or traceback is cut to its prefix."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = redact(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            record.exc_text = _formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True
