"""Charts drawn on the server as inline SVG: no script, no file fetched at view time, nothing from a CDN.

The dashboard's pages allow no script (their Content-Security-Policy), and the Airflow UI frames them, so a
chart is plain SVG markup in the page: a line per series, a dot per sample (with its value as a tooltip),
time on the x axis, "nice" ticks, horizontal rules (a quota, a mark), vertical markers (T0, enable_peer) and
shaded bands (the disabled phase). Pure functions: the same figures give the same bytes, which the unit tests
pin down. Every text that came from the ledger (a server name, a path) is escaped.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable, Sequence

from markupsafe import Markup, escape

# Colour-blind-safe palette (Okabe-Ito), cycled over the series.
PALETTE = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000")
MAX_DOTS = 400  # a series with more samples is drawn as a line only (the dots would cover it)
WIDTH, HEIGHT = 760, 250
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 78, 16, 40, 34
_TIME_STEPS_MS = [s * 1000 for s in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800,
                                     21600, 43200, 86400, 172800, 604800)]


@dataclass(frozen=True)
class Series:
    label: str
    points: tuple[tuple[int, float], ...]  # (epoch ms, value), oldest first
    dashed: bool = False
    step: bool = False  # a count that holds its value until the next point (finished partitions)
    color: str | None = None


@dataclass(frozen=True)
class Rule:
    """A horizontal line across the plot (a quota, a quota mark, a planned total)."""

    value: float
    label: str
    color: str = "#cf222e"


@dataclass(frozen=True)
class Marker:
    """A vertical line at an instant (T0, enable_peer)."""

    at_ms: int
    label: str


@dataclass(frozen=True)
class Band:
    """A shaded span of time (the peer's disabled phase)."""

    start_ms: int
    end_ms: int
    label: str


@dataclass(frozen=True)
class Chart:
    """Everything one chart draws; `svg()` renders it."""

    title: str
    series: tuple[Series, ...]
    y_format: Callable[[float], str]
    rules: tuple[Rule, ...] = ()
    markers: tuple[Marker, ...] = ()
    bands: tuple[Band, ...] = ()
    x_range: tuple[int, int] | None = None  # default: the data's span (and the markers')
    y_max: float | None = None  # default: the largest value or rule
    binary: bool = False  # values are bytes: ticks on binary units
    integer: bool = False  # values are counts: whole-number ticks
    min_top: float = 0.0  # the axis reaches at least this (a flat zero line still gets a readable scale)
    css_class: str = "chart"
    empty_text: str = "No sample yet."
    note: str | None = None
    extra: dict[str, str] = field(default_factory=dict)  # data-* attributes for tests and readers

    @property
    def points(self) -> int:
        return sum(len(s.points) for s in self.series)

    def svg(self) -> Markup:
        return render(self)


# ---------------------------------------------------------------------------------------------------------
# Scales and ticks (pure)

def nice_step(span: float, target_ticks: int = 5) -> float:
    """The 1-2-5 step that puts about `target_ticks` ticks over `span`: 97 -> 20.0, 0.3 -> 0.05."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / target_ticks
    magnitude = 10 ** math.floor(math.log10(raw))
    for multiple in (1, 2, 5, 10):
        if raw <= multiple * magnitude:
            return multiple * magnitude
    return 10 * magnitude


def value_ticks(top: float, target_ticks: int = 4, binary: bool = False, integer: bool = False) -> list[float]:
    """Ticks from 0 up to the first tick at or above `top` (at least one step); `binary`: steps of 1-2-5 in
    the binary unit the values read in (KiB, MiB, GiB), so a byte axis reads 1 GiB, 2 GiB, not 1.9 GiB."""
    unit = 1024 ** max(0, int(math.log(top, 1024))) if binary and top >= 1024 else 1
    step = nice_step((top if top > 0 else 1.0) / unit, target_ticks) * unit
    if integer:
        step = max(1.0, step)
    count = max(1, math.ceil(top / step - 1e-9)) if top > 0 else 1
    return [round(i * step, 10) for i in range(count + 1)]


def time_ticks(start_ms: int, end_ms: int, target_ticks: int = 5) -> list[int]:
    """Instants on round multiples of a 1s..1w step inside [start, end]."""
    span = max(1, end_ms - start_ms)
    step = next((s for s in _TIME_STEPS_MS if span / s <= target_ticks), _TIME_STEPS_MS[-1])
    first = -(-start_ms // step) * step
    return list(range(first, end_ms + 1, step))


def time_label(ms: int, span_ms: int) -> str:
    at = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return at.strftime("%H:%M:%S" if span_ms < 86_400_000 else "%m-%d %H:%M")


# ---------------------------------------------------------------------------------------------------------
# Rendering

def _fmt(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".") if v != int(v) else str(int(v))


def render(chart: Chart) -> Markup:
    width, height = WIDTH, HEIGHT
    plot_w = width - MARGIN_LEFT - MARGIN_RIGHT
    plot_h = height - MARGIN_TOP - MARGIN_BOTTOM
    xs = [x for s in chart.series for x, _ in s.points]
    xs += [m.at_ms for m in chart.markers] + [b.start_ms for b in chart.bands] + [b.end_ms for b in chart.bands]
    attrs = {"data-points": str(chart.points), **chart.extra}
    head = (f'<svg class="{escape(chart.css_class)}" xmlns="http://www.w3.org/2000/svg" role="img" '
            f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
            + " ".join(f'{escape(k)}="{escape(v)}"' for k, v in attrs.items()) + ">")
    out = [head, f"<title>{escape(chart.title)}</title>",
           f'<text class="title" x="{MARGIN_LEFT}" y="16">{escape(chart.title)}</text>']
    if not chart.points:
        out.append(f'<text class="empty" x="{MARGIN_LEFT + plot_w / 2:.0f}" y="{MARGIN_TOP + plot_h / 2:.0f}" '
                   f'text-anchor="middle">{escape(chart.empty_text)}</text></svg>')
        return Markup("".join(out))
    x0, x1 = chart.x_range or (min(xs), max(xs))
    if x1 <= x0:
        x0, x1 = x0 - 30_000, x0 + 30_000  # one instant: a minute around it
    ys = [y for s in chart.series for _, y in s.points] + [r.value for r in chart.rules]
    top = chart.y_max if chart.y_max is not None else max([chart.min_top, *ys])
    ticks = value_ticks(top, binary=chart.binary, integer=chart.integer)
    y_top = ticks[-1] if ticks[-1] > 0 else 1.0

    def px(x: float) -> float:
        return MARGIN_LEFT + (min(max(x, x0), x1) - x0) / (x1 - x0) * plot_w

    def py(y: float) -> float:
        return MARGIN_TOP + plot_h - min(max(y, 0.0), y_top) / y_top * plot_h

    for band in chart.bands:
        left, right = px(band.start_ms), px(band.end_ms)
        if right > left:
            out.append(f'<rect class="band" x="{left:.1f}" y="{MARGIN_TOP}" width="{right - left:.1f}" '
                       f'height="{plot_h}" fill="#fff1c2"><title>{escape(band.label)}</title></rect>')
            out.append(f'<text class="band-label" x="{left + 4:.1f}" y="{MARGIN_TOP + 12}">'
                       f'{escape(band.label)}</text>')
    for tick in ticks:
        y = py(tick)
        out.append(f'<line class="grid" x1="{MARGIN_LEFT}" x2="{MARGIN_LEFT + plot_w}" y1="{y:.1f}" y2="{y:.1f}" '
                   'stroke="#d0d7de" stroke-width="1"/>')
        out.append(f'<text class="tick" x="{MARGIN_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
                   f'{escape(chart.y_format(tick))}</text>')
    for tick in time_ticks(x0, x1):
        x = px(tick)
        out.append(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{MARGIN_TOP}" y2="{MARGIN_TOP + plot_h}" '
                   'stroke="#eaeef2" stroke-width="1"/>')
        out.append(f'<text class="tick" x="{x:.1f}" y="{MARGIN_TOP + plot_h + 16}" text-anchor="middle">'
                   f'{time_label(tick, x1 - x0)}</text>')
    out.append(f'<line class="axis" x1="{MARGIN_LEFT}" x2="{MARGIN_LEFT + plot_w}" y1="{MARGIN_TOP + plot_h}" '
               f'y2="{MARGIN_TOP + plot_h}" stroke="#57606a"/>')
    for rule in chart.rules:
        y = py(rule.value)
        out.append(f'<line class="rule" x1="{MARGIN_LEFT}" x2="{MARGIN_LEFT + plot_w}" y1="{y:.1f}" y2="{y:.1f}" '
                   f'stroke="{escape(rule.color)}" stroke-width="1.5" stroke-dasharray="2 3">'
                   f'<title>{escape(rule.label)}</title></line>')
        out.append(f'<text class="rule-label" x="{MARGIN_LEFT + plot_w - 4}" y="{y - 4:.1f}" text-anchor="end" '
                   f'fill="{escape(rule.color)}">{escape(rule.label)}</text>')
    for marker in chart.markers:
        x = px(marker.at_ms)
        out.append(f'<line class="marker" x1="{x:.1f}" x2="{x:.1f}" y1="{MARGIN_TOP}" y2="{MARGIN_TOP + plot_h}" '
                   f'stroke="#57606a" stroke-dasharray="4 3"><title>{escape(marker.label)}</title></line>')
        out.append(f'<text class="marker-label" x="{x + 3:.1f}" y="{MARGIN_TOP + plot_h - 4}">'
                   f'{escape(marker.label)}</text>')
    for i, s in enumerate(chart.series):
        color = s.color or PALETTE[i % len(PALETTE)]
        coords: list[tuple[float, float]] = []
        for x, y in s.points:
            if s.step and coords:
                coords.append((px(x), coords[-1][1]))
            coords.append((px(x), py(y)))
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        out.append(f'<g class="series" data-series="{escape(s.label)}" data-points="{len(s.points)}">')
        if len(coords) > 1:
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2"{dash} points="{path}"/>')
        if len(s.points) <= MAX_DOTS and not s.dashed:
            for x, y in s.points:
                out.append(f'<circle class="pt" cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.6" fill="{color}">'
                           f'<title>{escape(s.label)}: {escape(chart.y_format(y))} at '
                           f'{time_label(x, 0)} UTC</title></circle>')
        out.append("</g>")
    # Legend: one swatch per series, left to right under the title.
    x = float(MARGIN_LEFT)
    for i, s in enumerate(chart.series):
        color = s.color or PALETTE[i % len(PALETTE)]
        label = s.label if len(s.label) <= 42 else s.label[:20] + "\u2026" + s.label[-20:]
        if x + 20 + 6.5 * len(label) > width:
            break  # the rest is in each dot's tooltip and in the tables below
        swatch = (f'<line x1="{x:.0f}" x2="{x + 12:.0f}" y1="26" y2="26" stroke="{color}" stroke-width="3"'
                  + (' stroke-dasharray="4 2"' if s.dashed else "") + "/>")
        out.append(f'{swatch}<text class="legend" x="{x + 16:.0f}" y="30">{escape(label)}</text>')
        x += 28 + 6.5 * len(label)
    if chart.note:
        out.append(f'<text class="note" x="{MARGIN_LEFT + plot_w}" y="{height - 4}" text-anchor="end">'
                   f'{escape(chart.note)}</text>')
    out.append("</svg>")
    return Markup("".join(out))


def count_format(v: float) -> str:
    return f"{v:,.0f}" if v >= 10 or v == int(v) else _fmt(v)


def downsample(points: Sequence[tuple[int, float]], limit: int) -> tuple[tuple[int, float], ...]:
    """At most `limit` points, evenly picked, the first and the last always kept."""
    if len(points) <= limit or limit < 2:
        return tuple(points)
    step = (len(points) - 1) / (limit - 1)
    return tuple(points[round(i * step)] for i in range(limit))
