"""Chart geometry for the evaluation page: bars, lines, grid and labels as numbers. The templates
draw the SVG from it, so every label goes through the template's escaping and nothing is loaded from
outside."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone
from django.utils.dateformat import format as date_format


@dataclass(frozen=True)
class GridLine:
    y: float
    label: str


@dataclass(frozen=True)
class AxisLabel:
    x: float
    lines: tuple[str, ...]
    note: str = ""  # a smaller, muted last line


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    tone: str  # the CSS class that colours the bar
    label: str  # the value written above it
    label_x: float
    label_y: float
    title: str  # the tooltip


@dataclass(frozen=True)
class ChartFrame:
    """What every chart draws first (web/_chart_frame.html): its size, plot area and value grid."""

    width: int
    height: int
    left: float
    right: float
    bottom: float
    label_y: float
    grid: list[GridLine]
    description: str

    @property
    def tick_x(self) -> float:
        return self.left - 6  # the grid's values end just left of the axis


@dataclass(frozen=True)
class BarChart(ChartFrame):
    bars: list[Bar]
    labels: list[AxisLabel]


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    title: str
    hollow: bool


@dataclass(frozen=True)
class Line:
    name: str
    tone: str
    points: list[Point]
    path: str
    end_label: str
    end_x: float
    end_y: float


@dataclass(frozen=True)
class LineChart(ChartFrame):
    ticks: list[AxisLabel]
    lines: list[Line]
    markers: bool


def percent(value: float, digits: int = 0) -> str:
    return f"{value * 100:.{digits}f}%"


# Tops of a rate axis with their number of steps, so that every grid line has a round label.
RATE_AXES = ((0.02, 4), (0.05, 5), (0.1, 5), (0.2, 4), (0.25, 5), (0.5, 5), (1.0, 4))


def _rate_axis(value: float) -> tuple[float, int]:
    """The smallest round axis that holds `value`: (top, steps)."""
    return next((axis for axis in RATE_AXES if value <= axis[0]), RATE_AXES[-1])


def _grid(top_value: float, steps: int, top: float, bottom: float, digits: int = 0) -> list[GridLine]:
    return [GridLine(y=round(bottom - (bottom - top) * i / steps, 1), label=percent(top_value * i / steps, digits))
            for i in range(steps + 1)]


def bar_chart(groups: list[tuple[tuple[str, ...], str, list[tuple[float, str, str]]]], *, description: str,
              width: int = 600, height: int = 280) -> BarChart:
    """Grouped bars of shares (0..1). `groups`: (label lines, note, [(value, tone, tooltip), ...]) each."""
    left, right, top, bottom = 44.0, width - 8.0, 22.0, height - 46.0
    group_width = (right - left) / max(len(groups), 1)
    bars, labels = [], []
    for index, (label_lines, note, values) in enumerate(groups):
        start = left + index * group_width
        inner = group_width * (0.72 if len(values) > 1 else 0.5)
        bar_width = inner / max(len(values), 1)
        first = start + (group_width - inner) / 2
        for position, (value, tone, tooltip) in enumerate(values):
            share = min(max(value, 0.0), 1.0)
            x = first + position * bar_width
            bar_height = (bottom - top) * share
            bars.append(Bar(x=round(x + 1, 1), y=round(bottom - bar_height, 1), width=round(bar_width - 2, 1),
                            height=round(bar_height, 1), tone=tone, label=percent(value),
                            label_x=round(x + bar_width / 2, 1), label_y=round(bottom - bar_height - 5, 1),
                            title=tooltip))
        labels.append(AxisLabel(x=round(start + group_width / 2, 1), lines=label_lines, note=note))
    return BarChart(width=width, height=height, left=left, right=right, bottom=bottom,
                    label_y=bottom + 16, grid=_grid(1.0, 4, top, bottom), bars=bars, labels=labels,
                    description=description)


def _when(moment: datetime, pattern: str = "j M, H:i") -> str:
    return date_format(timezone.localtime(moment), pattern)


def line_chart(series: list[tuple[str, str, list[tuple[datetime, float, bool]]]], *, description: str,
               width: int = 760, height: int = 250) -> LineChart:
    """Rates over time. `series`: (name, tone, [(when, value, hollow marker), ...]) each, oldest first."""
    left, right, top, bottom = 48.0, width - 52.0, 14.0, height - 30.0
    moments = [when for _, _, points in series for when, _, _ in points]
    first, last = min(moments), max(moments)
    span = (last - first).total_seconds()
    top_value, steps = _rate_axis(max((value for _, _, points in series for _, value, _ in points), default=0.0))

    def x_of(when: datetime) -> float:
        if not span:
            return round((left + right) / 2, 1)
        return round(left + (right - left) * (when - first).total_seconds() / span, 1)

    def y_of(value: float) -> float:
        return round(bottom - (bottom - top) * min(max(value, 0.0), top_value) / top_value, 1)

    drawn = [[Point(x=x_of(when), y=y_of(value), hollow=hollow,
                    title=f"{name}: {percent(value, 1)} on {_when(when)}"
                          f"{' (this organization)' if hollow else ' (store-wide)'}")
              for when, value, hollow in points] for name, _, points in series]
    ends = _end_label_heights([line[-1].y + 4 for line in drawn], lowest=bottom + 4)
    lines = [Line(name=name, tone=tone, points=line, path=" ".join(f"{p.x},{p.y}" for p in line),
                  end_label=percent(points[-1][1], 1), end_x=line[-1].x + 8, end_y=end_y)
             for (name, tone, points), line, end_y in zip(series, drawn, ends, strict=True)]
    pattern = "j M, H:i" if span < 3 * 86400 else "j M"
    count = 1 if not span else min(4, len(set(moments)))
    tick_moments = [first + (last - first) * i / max(count - 1, 1) for i in range(count)]
    ticks = [AxisLabel(x=x_of(when), lines=(_when(when, pattern),)) for when in tick_moments]
    digits = 1 if top_value / steps < 0.01 else 0  # a 0.5% step needs its decimal
    return LineChart(width=width, height=height, left=left, right=right, bottom=bottom,
                     label_y=bottom + 18, grid=_grid(top_value, steps, top, bottom, digits), ticks=ticks,
                     lines=lines, markers=max(len(points) for _, _, points in series) <= 120,
                     description=description)


def _end_label_heights(heights: list[float], lowest: float, gap: float = 13) -> list[float]:
    """Where to write each line's last value: labels of lines ending close together are pushed
    apart, and up again where that would take them below the axis."""
    order = sorted(range(len(heights)), key=lambda i: heights[i])
    result = list(heights)
    for previous, current in zip(order, order[1:], strict=False):
        result[current] = max(result[current], result[previous] + gap)
    overflow = max(max(result, default=lowest) - lowest, 0)
    return [round(height - overflow, 1) for height in result]
