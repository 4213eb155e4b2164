"""Regular expressions users write (activation patterns), on RE2: linear time, bounded cost.

Python's `re` backtracks: `(a|a)+$` against 26 characters froze a web process for 10 s. RE2
runs in time linear in the text and refuses what it cannot do that way (backreferences,
lookaround); on top of that a pattern may compile to at most MAX_PROGRAM instructions and sees
at most MAX_TEXT_BYTES of text, since RE2's cost is about text bytes × instructions.

Measured (2026-11, this 2-core machine under load, CPU time of one search, fresh DFA cache):
the worst patterns found under these bounds — counted wildcards after a star such as
`(?:a|b)*(?:[^x]){10}(?:[^x]){10}q` (186 instructions), the issue's catastrophic list, and
random nestings of wildcards, alternations and counted repetitions — take ≤ 3 ms against the
worst 2,000 bytes tried (random mixes of ASCII and 4-byte characters); realistic patterns
(`\\b(issue|pull request)s?\\b`, keyword lists) take ≤ 0.2 ms. Compiling one takes ≤ 20 ms.
An endpoint holds at most 50 patterns, so one query or call costs ≤ 150 ms of CPU at worst, and
RE2 releases the GIL while matching: callers on an event loop run matching in a thread. Memory:
MAX_MEM per compiled pattern (re2's own cache keeps the last 128 compiled).
"""

from __future__ import annotations

import re2

MAX_PROGRAM = 200  # RE2 instructions: a 20-keyword alternation with \b is ~165
MAX_TEXT_BYTES = 2000  # of a query or call, in UTF-8: 2,000 characters of ASCII
MAX_MEM = 512 * 1024  # RE2's budget for the program and its DFA caches, per pattern

Regex = re2._Regexp


class RegexRefused(ValueError):
    """A pattern RE2 cannot run, or may not (too costly); the message says why."""


def _options() -> re2.Options:
    options = re2.Options()
    options.case_sensitive = False
    options.never_capture = True  # only "does it match" is asked: no submatch bookkeeping
    options.log_errors = False  # a refusal is reported to the user, not to stderr
    options.max_mem = MAX_MEM
    return options


OPTIONS = _options()

# RE2's own message → what the user can do about it.
_HINTS = (
    (
        "invalid perl operator: (?<",
        "lookbehind ((?<=…), (?<!…)) is not supported: match the text itself instead",
    ),
    (
        "invalid perl operator: (?=",
        "lookahead ((?=…)) is not supported: match the text itself instead",
    ),
    (
        "invalid perl operator: (?!",
        "negative lookahead ((?!…)) is not supported: use a separate, simpler pattern",
    ),
    (
        "invalid perl operator: (?>",
        "atomic groups ((?>…)) are not supported and not needed: RE2 never backtracks",
    ),
    ("invalid perl operator: (?P", "backreferences ((?P=name)) are not supported"),
    ("invalid perl operator: (?(", "conditionals ((?(1)…|…)) are not supported"),
    (
        "invalid perl operator: (?x",
        "verbose mode (?x) is not supported: write the pattern without spaces or comments",
    ),
    ("invalid escape sequence: \\1", "backreferences (\\1…\\9) are not supported"),
    ("invalid escape sequence: \\2", "backreferences (\\1…\\9) are not supported"),
    ("invalid escape sequence: \\Z", "write \\z for the end of the text"),
    ("invalid escape sequence: \\u", "write \\x{e9} for a character by its code"),
    (
        "bad repetition operator: *+",
        "possessive repetition (*+, ++, ?+) is not supported and not needed: RE2 never backtracks",
    ),
    (
        "bad repetition operator: ++",
        "possessive repetition (*+, ++, ?+) is not supported and not needed: RE2 never backtracks",
    ),
    (
        "bad repetition operator: ?+",
        "possessive repetition (*+, ++, ?+) is not supported and not needed: RE2 never backtracks",
    ),
    (
        "invalid repetition size",
        "a counted repetition {m,n} needs m ≤ n ≤ 1000, nested repetitions multiplied",
    ),
    (
        "pattern too large",
        f"too costly: it compiles to more than {MAX_PROGRAM} steps; simplify it or split it into several patterns",
    ),
)


def compile_regex(pattern: str) -> Regex:
    """`pattern` compiled for matching, or RegexRefused with the reason in words."""
    try:
        regex = re2.compile(pattern, OPTIONS)
    except re2.error as exc:
        raise RegexRefused(_reason(exc)) from None
    size = max(regex.programsize, regex.reverseprogramsize)
    if size > MAX_PROGRAM:
        raise RegexRefused(
            f"too costly: it compiles to {size} steps and the limit is {MAX_PROGRAM} "
            "(counted repetitions, wildcards and Unicode classes such as .{50} or \\p{L} cost the most): "
            "simplify it or split it into several patterns"
        )
    return regex


def _reason(exc: re2.error) -> str:
    raw = exc.args[0] if exc.args else ""
    detail = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    for needle, hint in _HINTS:
        if detail.startswith(needle):
            return f"{hint} ({detail})"
    return detail or "RE2 cannot compile it"


def searchable(text: str) -> bytes:
    """The part of `text` patterns see: its first MAX_TEXT_BYTES bytes of UTF-8, cut between
    characters."""
    data = text.encode("utf-8", "replace")
    if len(data) <= MAX_TEXT_BYTES:
        return data
    cut = MAX_TEXT_BYTES
    while cut and data[cut] & 0xC0 == 0x80:  # a continuation byte: back up to the character's start
        cut -= 1
    return data[:cut]


def search(regex: Regex, text: bytes) -> bool:
    return regex.search(text) is not None
