"""Chart geometry for inline SVG drawn by templates: no JavaScript, no build step.

Functions take plain numbers per bucket and return coordinates in a fixed viewBox; the SVG
scales with the page. Empty buckets are gaps in a line, never a fake zero.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

WIDTH, HEIGHT = 480, 220
LEFT, RIGHT, TOP, BOTTOM = 60, 8, 10, 26
MAX_X_LABELS = 6


@dataclass(frozen=True)
class Tick:
    y: float
    label: str


@dataclass(frozen=True)
class XLabel:
    x: float
    label: str


@dataclass(frozen=True)
class Column:
    """One bucket: its hover area and, for bar charts, its stacked bars (ok below, errors on top)."""

    x: float
    width: float
    title: str
    ok_y: float = 0
    ok_height: float = 0
    error_y: float = 0
    error_height: float = 0


@dataclass(frozen=True)
class Line:
    name: str
    css: str
    segments: list[str]  # "x,y x,y …" runs between gaps
    dots: list[tuple[float, float]]  # points with no neighbour, drawn as dots


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int
    ticks: list[Tick]
    x_labels: list[XLabel]
    columns: list[Column]
    lines: list[Line]

    @property
    def plot_height(self) -> int:
        return self.bottom - self.top

    @property
    def x_label_y(self) -> int:
        return self.height - 8


def nice_scale(value: float, *, whole: bool = False) -> float:
    """The top of a four-tick axis reaching `value`, with round ticks (0, 10, 20, 30, 40)."""
    step = nice_ceiling(value / 4)
    return 4 * (max(1, step) if whole else step)


def nice_ceiling(value: float) -> float:
    """The smallest 1, 2 or 5 × 10^n at or above `value` (1 for nothing), so ticks read well."""
    if value <= 0:
        return 1
    magnitude = 10 ** math.floor(math.log10(value))
    return next(step * magnitude for step in (1, 2, 5, 10) if step * magnitude >= value)


def _frame(labels: Sequence[str], top_value: float, fmt: Callable[[float], str]) -> dict:
    plot_height = HEIGHT - TOP - BOTTOM
    ticks = [
        Tick(y=round(HEIGHT - BOTTOM - plot_height * i / 4, 1), label=fmt(top_value * i / 4))
        for i in range(5)
    ]
    slot = (WIDTH - LEFT - RIGHT) / max(len(labels), 1)
    every = math.ceil(len(labels) / MAX_X_LABELS) or 1
    x_labels = [
        XLabel(x=round(LEFT + slot * (i + 0.5), 1), label=label)
        for i, label in enumerate(labels)
        if i % every == 0
    ]
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "left": LEFT,
        "right": WIDTH - RIGHT,
        "top": TOP,
        "bottom": HEIGHT - BOTTOM,
        "ticks": ticks,
        "x_labels": x_labels,
    }


def _y(value: float, top_value: float) -> float:
    return HEIGHT - BOTTOM - (HEIGHT - TOP - BOTTOM) * value / top_value


def bar_chart(
    labels: Sequence[str], ok: Sequence[int], errors: Sequence[int], titles: Sequence[str]
) -> Chart:
    """Stacked bars of successful and failed calls per bucket."""
    top_value = nice_scale(
        max((a + b for a, b in zip(ok, errors, strict=True)), default=0), whole=True
    )
    slot = (WIDTH - LEFT - RIGHT) / max(len(labels), 1)
    gap = min(4.0, slot * 0.2)
    columns = []
    for i, (good, bad) in enumerate(zip(ok, errors, strict=True)):
        ok_y, error_y = _y(good, top_value), _y(good + bad, top_value)
        columns.append(
            Column(
                x=round(LEFT + slot * i + gap / 2, 1),
                width=round(slot - gap, 1),
                title=titles[i],
                ok_y=round(ok_y, 1),
                ok_height=round(HEIGHT - BOTTOM - ok_y, 1),
                error_y=round(error_y, 1),
                error_height=round(ok_y - error_y, 1),
            )
        )
    return Chart(**_frame(labels, top_value, lambda v: f"{v:g}"), columns=columns, lines=[])


def line_chart(
    labels: Sequence[str],
    series: dict[str, tuple[str, Sequence[float | None]]],
    titles: Sequence[str],
    fmt: Callable[[float], str],
) -> Chart:
    """One line per series (name → (css class, values)); None is a gap."""
    values = [v for _, points in series.values() for v in points if v is not None]
    top_value = nice_scale(max(values, default=0))
    slot = (WIDTH - LEFT - RIGHT) / max(len(labels), 1)
    lines = [_line(name, css, points, slot, top_value) for name, (css, points) in series.items()]
    columns = [
        Column(x=round(LEFT + slot * i, 1), width=round(slot, 1), title=title)
        for i, title in enumerate(titles)
    ]
    return Chart(**_frame(labels, top_value, fmt), columns=columns, lines=lines)


def _line(
    name: str, css: str, points: Sequence[float | None], slot: float, top_value: float
) -> Line:
    runs: list[list[tuple[float, float]]] = [[]]
    for i, value in enumerate(points):
        if value is None:
            runs.append([])
        else:
            runs[-1].append((round(LEFT + slot * (i + 0.5), 1), round(_y(value, top_value), 1)))
    segments = [" ".join(f"{x},{y}" for x, y in run) for run in runs if len(run) > 1]
    dots = [run[0] for run in runs if len(run) == 1]
    return Line(name=name, css=css, segments=segments, dots=dots)


def sparkline(values: Sequence[int], width: int = 120, height: int = 24) -> str:
    """Polyline points for a small trend of calls per bucket (flat at the bottom when idle)."""
    top_value = max(values, default=0) or 1
    step = width / max(len(values) - 1, 1)
    return " ".join(
        f"{round(i * step, 1)},{round(height - 2 - (height - 4) * value / top_value, 1)}"
        for i, value in enumerate(values)
    )
