"""Charts of 0..100 scores, one per comparable group of runs: inline SVG for the HTML report, and the same charts
as PNG files on request.

A chart is drawn once, as a `Figure` of plain shapes in pixels (rectangles, lines, points, texts), and rendered
from it twice: to SVG for the report (`svg`) and with matplotlib to PNG (`write_png`), so both show the same
layout.

A bar chart is a small multiple: one row per run (labelled at the left, in the group's order), one column per
category (the seven domains and Overall, or the five rubric dimensions and the total), a horizontal bar with its
value in each cell. It stays readable from one run to twenty or more: rows are labelled directly, so no legend
has to be matched against twenty colours, and every bar has a fixed, readable size.

`line_panels` draws one run's scores along trajectories the same way: a small multiple of one panel per domain
(and Overall), the bins along x, a point per bin with its interval as an error bar.
"""

from __future__ import annotations

import html
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from awbench.run.store import write_into_folder

PALETTE = (
    "#4f46e5",
    "#0ea5e9",
    "#10b981",
    "#f59e0b",
    "#ef4444",
    "#8b5cf6",
    "#14b8a6",
    "#f97316",
    "#64748b",
    "#ec4899",
    "#84cc16",
    "#0f766e",
    "#a16207",
    "#1e3a8a",
)
TOTAL_COLOR = "#1d2330"  # the last category (Overall, a domain's total) stands out
INK, MUTED = "#1d2330", "#667085"  # the text's colours: the default, and secondary text


# --------------------------------------------------------------------------- shapes


@dataclass
class Text:
    x: float
    y: float  # the baseline
    text: str
    css: str
    anchor: Literal["start", "middle", "end"] = "start"
    size: int | None = None  # px; None: the figure's 12
    weight: int | None = None
    italic: bool = False
    fill: str | None = None  # None: INK
    tip: str = ""  # shown on hover in the report


@dataclass
class Rect:
    x: float
    y: float
    width: float
    height: float
    fill: str
    css: str
    stroke: str | None = None
    opacity: float | None = None  # of the fill
    data: dict[str, str] = field(default_factory=dict)  # data-* attributes, for the report's script and tests
    tip: str = ""


@dataclass
class Segment:
    x1: float
    x2: float
    y1: float
    y2: float
    stroke: str
    css: str
    opacity: float | None = None
    width: float | None = None  # px; None: 1


@dataclass
class Polyline:
    points: list[tuple[float, float]]
    stroke: str
    width: float
    css: str


@dataclass
class Dot:
    x: float
    y: float
    r: float
    fill: str
    css: str
    data: dict[str, str] = field(default_factory=dict)
    tip: str = ""


@dataclass
class Group:
    css: str
    data: dict[str, str]
    shapes: list[Shape]


Shape = Text | Rect | Segment | Polyline | Dot | Group


@dataclass
class Figure:
    """A chart in pixels, top-left origin, as both renderers draw it."""

    id: str
    css: str
    width: int
    height: int
    titles: list[str]
    shapes: list[Shape]


def titled(chart_id: str, css: str, width: int, height: int, titles: list[str]) -> Figure:
    """A figure that opens with its title lines, the first bold, the others muted."""
    heads: list[Shape] = [
        Text(8, 22 + 18 * i, line, "title", weight=600 if i == 0 else None, fill=None if i == 0 else MUTED)
        for i, line in enumerate(titles)
    ]
    return Figure(chart_id, css, width, height, titles, heads)


# --------------------------------------------------------------------------- SVG


def _number(value: float) -> str:
    """Coordinates as the report has always written them: whole pixels plain, others to a tenth."""
    return str(value) if isinstance(value, int) else f"{value:.1f}"


def _attributes(pairs: Sequence[tuple[str, str | None]]) -> str:
    return "".join(f' {name}="{html.escape(value)}"' for name, value in pairs if value is not None)


def _data(data: dict[str, str]) -> list[tuple[str, str | None]]:
    return [(f"data-{name}", value) for name, value in data.items()]


def _tip(tip: str) -> str:
    return f"<title>{html.escape(tip)}</title>" if tip else ""


def _svg_shape(shape: Shape) -> str:
    if isinstance(shape, Group):
        inner = "\n".join(_svg_shape(s) for s in shape.shapes)
        return f"<g{_attributes([('class', shape.css), *_data(shape.data)])}>\n{inner}\n</g>"
    if isinstance(shape, Text):
        attributes = _attributes(
            [
                ("class", shape.css),
                ("x", _number(shape.x)),
                ("y", _number(shape.y)),
                ("text-anchor", None if shape.anchor == "start" else shape.anchor),
                ("font-size", None if shape.size is None else str(shape.size)),
                ("font-weight", None if shape.weight is None else str(shape.weight)),
                ("font-style", "italic" if shape.italic else None),
                ("fill", shape.fill),
            ]
        )
        return f"<text{attributes}>{html.escape(shape.text)}{_tip(shape.tip)}</text>"
    if isinstance(shape, Rect):
        attributes = _attributes(
            [
                ("class", shape.css),
                *_data(shape.data),
                ("x", _number(shape.x)),
                ("y", _number(shape.y)),
                ("width", _number(shape.width)),
                ("height", _number(shape.height)),
                ("fill", shape.fill),
                ("stroke", shape.stroke),
                ("fill-opacity", None if shape.opacity is None else f"{shape.opacity:g}"),
            ]
        )
        return f"<rect{attributes}>{_tip(shape.tip)}</rect>" if shape.tip else f"<rect{attributes}/>"
    if isinstance(shape, Segment):
        attributes = _attributes(
            [
                ("class", shape.css),
                *(
                    (name, _number(v))
                    for name, v in (("x1", shape.x1), ("x2", shape.x2), ("y1", shape.y1), ("y2", shape.y2))
                ),
                ("stroke", shape.stroke),
                ("stroke-opacity", None if shape.opacity is None else f"{shape.opacity:g}"),
                ("stroke-width", None if shape.width is None else f"{shape.width:g}"),
            ]
        )
        return f"<line{attributes}/>"
    if isinstance(shape, Polyline):
        points = " ".join(f"{_number(x)},{_number(y)}" for x, y in shape.points)
        attributes = _attributes(
            [
                ("class", shape.css),
                ("points", points),
                ("fill", "none"),
                ("stroke", shape.stroke),
                ("stroke-width", f"{shape.width:g}"),
            ]
        )
        return f"<polyline{attributes}/>"
    attributes = _attributes(
        [
            ("class", shape.css),
            *_data(shape.data),
            ("cx", _number(shape.x)),
            ("cy", _number(shape.y)),
            ("r", _number(shape.r)),
            ("fill", shape.fill),
        ]
    )
    return f"<circle{attributes}>{_tip(shape.tip)}</circle>"


def svg(figure: Figure) -> str:
    """The figure as an inline SVG element (its titles joined as the accessible label)."""
    head = (
        f'<svg id="{figure.id}" class="{figure.css}" xmlns="http://www.w3.org/2000/svg" width="{figure.width}" '
        f'height="{figure.height}" viewBox="0 0 {figure.width} {figure.height}" role="img" '
        f'aria-label="{html.escape(" · ".join(figure.titles))}" '
        f'font-family="system-ui, sans-serif" font-size="12" fill="{INK}">'
    )
    return "\n".join([head, *(_svg_shape(shape) for shape in figure.shapes), "</svg>"])


# --------------------------------------------------------------------------- PNG

PNG_SCALE = 2  # PNG pixels per SVG pixel: sharp on high-density screens and in documents
PT_PER_PX = 0.72  # matplotlib sizes text and lines in points (1/72 in); the figure is drawn at 100 px an inch


def _mpl_color(css: str, opacity: float | None = None) -> Any:
    """matplotlib takes hex colours but not CSS hsl()."""
    from matplotlib.colors import to_rgba

    if css.startswith("hsl("):
        import colorsys

        h, sat, light = (float(v.strip(" %")) for v in css[4:-1].split(","))
        return (*colorsys.hls_to_rgb(h / 360, light / 100, sat / 100), 1.0 if opacity is None else opacity)
    return to_rgba(css, 1.0 if opacity is None else opacity)


def _draw(ax: Any, shape: Shape, z: int) -> int:
    """Draws `shape` over everything drawn before it (z: its place in that order, as in SVG); the next z."""
    from matplotlib import patches

    if isinstance(shape, Group):
        for inner in shape.shapes:
            z = _draw(ax, inner, z)
        return z
    if isinstance(shape, Text):
        ax.text(
            shape.x,
            shape.y,
            shape.text,
            ha={"start": "left", "middle": "center", "end": "right"}[shape.anchor],
            va="baseline",
            fontsize=(shape.size or 12) * PT_PER_PX,
            fontweight="bold" if shape.weight else "normal",  # matplotlib's font has no 600
            fontstyle="italic" if shape.italic else "normal",
            color=_mpl_color(shape.fill or INK),
            zorder=z,
        )
    elif isinstance(shape, Rect):
        ax.add_patch(
            patches.Rectangle(
                (shape.x, shape.y),
                shape.width,
                shape.height,
                facecolor=_mpl_color(shape.fill, shape.opacity),
                edgecolor=_mpl_color(shape.stroke) if shape.stroke else "none",
                linewidth=PT_PER_PX,
                zorder=z,
            )
        )
    elif isinstance(shape, Segment):
        ax.plot(
            [shape.x1, shape.x2],
            [shape.y1, shape.y2],
            color=_mpl_color(shape.stroke, shape.opacity),
            linewidth=(shape.width or 1) * PT_PER_PX,
            zorder=z,
        )
    elif isinstance(shape, Polyline):
        xs, ys = zip(*shape.points)
        ax.plot(xs, ys, color=_mpl_color(shape.stroke), linewidth=shape.width * PT_PER_PX, zorder=z)
    else:
        ax.add_patch(
            patches.Circle((shape.x, shape.y), shape.r, facecolor=_mpl_color(shape.fill), edgecolor="none", zorder=z)
        )
    return z + 1


def png(figure: Figure) -> bytes:
    """The figure drawn with matplotlib (Agg: no display needed) at PNG_SCALE times its size, in memory."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(figure.width / 100, figure.height / 100), dpi=100, facecolor="white")
    try:
        ax = fig.add_axes((0, 0, 1, 1))
        ax.set_xlim(0, figure.width)
        ax.set_ylim(figure.height, 0)  # y down, as in SVG
        ax.set_axis_off()
        z = 0
        for shape in figure.shapes:
            z = _draw(ax, shape, z)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=100 * PNG_SCALE)
    finally:
        plt.close(fig)
    return buffer.getvalue()


def write_figures(figures: Sequence[Figure], directory: Path) -> list[Path]:
    """Each figure as `{id}.png` in `directory` (`write_into_folder`: atomically, a failed write leaving the
    previous chart as it was; a FIFO or a device there refused, a link into a run too)."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for figure in figures:
        path = directory / f"{figure.id}.png"
        write_into_folder("--png", path, png(figure))
        written.append(path)
    return written


# --------------------------------------------------------------------------- bar charts


class Series(BaseModel):
    name: str
    values: list[float | None]
    published: bool = False


Charts = dict[str, tuple[str, list[str], list[Series]]]  # name -> (title, categories, series)

# Layout, in px (12 px text: about 7 px per character).
CHAR_W, ROW_H, BAR_H = 7.0, 22, 14
BAR_MAX, VALUE_W, COLUMN_GAP = 72, 34, 10
MAX_LABEL_CHARS = 40


def color(i: int) -> str:
    """Distinct colours past the palette too: golden-angle hues."""
    return PALETTE[i] if i < len(PALETTE) else f"hsl({i * 137.5 % 360:.0f}, 55%, 48%)"


def category_color(c: int, n: int) -> str:
    return TOTAL_COLOR if c == n - 1 else color(c)


def row_label(series: Series) -> str:
    label = series.name + (" (published)" if series.published else "")
    return label if len(label) <= MAX_LABEL_CHARS else label[: MAX_LABEL_CHARS - 1] + "…"


def bar_chart(chart_id: str, title: str, categories: Sequence[str], series: Sequence[Series]) -> Figure:
    """One row per series, one column per category; `title`'s lines are stacked above the chart."""
    lines = title.split("\n")
    labels = [row_label(s) for s in series]
    label_w = 16 + CHAR_W * max((len(label) for label in labels), default=8)
    column_w = BAR_MAX + VALUE_W + COLUMN_GAP
    title_h = 8 + 18 * len(lines)
    top = title_h + 26  # the category names sit between the title and the first row
    width = int(label_w + column_w * len(categories) + 8)
    width = max(width, int(CHAR_W * max(len(line) for line in lines)) + 16)
    height = top + ROW_H * len(series) + 12
    figure = titled(chart_id, "chart", width, height, lines)
    shapes = figure.shapes
    for r in range(len(series)):
        if r % 2:
            shapes.append(Rect(0, top + r * ROW_H, width, ROW_H, "#f5f7fa", "stripe"))
    for c, category in enumerate(categories):
        x0 = label_w + c * column_w
        weight = 600 if c == len(categories) - 1 else None
        shapes.append(Text(x0 + BAR_MAX / 2, top - 8, category, "category", anchor="middle", weight=weight))
        for tick in (0, 50, 100):
            x = x0 + BAR_MAX * tick / 100
            shapes.append(Segment(x, x, top - 2, top + ROW_H * len(series), "#e6e9ef", "grid"))
    for r, (ser, label) in enumerate(zip(series, labels)):
        y = top + r * ROW_H
        fill = "#6b21a8" if ser.published else None  # the published rows are set apart
        shapes.append(
            Text(label_w - 8, y + ROW_H / 2 + 4, label, "label", "end", italic=ser.published, fill=fill, tip=ser.name)
        )
        for c, category in enumerate(categories):
            value = ser.values[c]
            if value is None:
                continue
            x0 = label_w + c * column_w
            w = BAR_MAX * max(0.0, min(value, 100.0)) / 100
            data = {"series": ser.name, "category": category, "value": f"{value:.2f}"}
            shapes.append(
                Rect(
                    x0,
                    y + (ROW_H - BAR_H) / 2,
                    w,
                    BAR_H,
                    category_color(c, len(categories)),
                    "bar",
                    opacity=0.45 if ser.published else None,
                    data=data,
                    tip=f"{ser.name} · {category}: {value:.2f}",
                )
            )
            shapes.append(Text(x0 + w + 3, y + ROW_H / 2 + 4, f"{value:.1f}", "value", size=11))
    return figure


def bar_chart_svg(chart_id: str, title: str, categories: Sequence[str], series: Sequence[Series]) -> str:
    return svg(bar_chart(chart_id, title, categories, series))


def write_pngs(charts: Charts, directory: Path) -> list[Path]:
    """The report's bar charts as PNG files."""
    return write_figures([bar_chart(name, *chart) for name, chart in charts.items()], directory)


# --------------------------------------------------------------------------- lines over bins, with intervals


class LinePoint(BaseModel):
    """A bin's mean and its interval (None: no interval), over n samples."""

    mean: float
    lo: float | None = None
    hi: float | None = None
    n: int = 0


class Line(BaseModel):
    """One panel of a small multiple: a series (a domain, or Overall) over the bins."""

    name: str  # an id, for data attributes: the domain, or "overall"
    label: str  # the panel's title
    points: list[LinePoint | None]  # one per category; None: no samples in that bin
    color: str = PALETTE[0]
    total: bool = False  # drawn like the bar charts' total (Overall)


LineChart = tuple[str, list[str], list[Line], str]  # (title, categories, panels, footer)
LineCharts = dict[str, LineChart]

# Layout, in px: small text of 10 px is about 6 px per character.
SMALL_CHAR_W = 6.0
PANEL_COLUMNS = 4
PAGE_WIDTH = 1216  # the report's content at 1280 px (32 px of margin each side): panels wrap to fit it
PLOT_H, PLOT_LEFT, PLOT_RIGHT, PLOT_TOP, PLOT_BOTTOM = 110, 30, 10, 28, 24
PANEL_GAP = 14
MIN_PLOT_W = 140


def line_panels(
    chart_id: str, title: str, categories: Sequence[str], lines: Sequence[Line], footer: str = ""
) -> Figure:
    """A small multiple: one panel per line (up to four a row), each with the categories along x, 0..100 up y,
    a point per category with its interval as an error bar, joined where neighbouring categories have points.
    Every panel has the same scales, so panels compare at a glance, and no legend has to be matched."""
    lines = list(lines)
    heads = title.split("\n")
    # Wide enough for the longest category name, and a panel never narrower than 140 px.
    bin_w = max(
        34.0, SMALL_CHAR_W * max((len(c) for c in categories), default=1) + 10, MIN_PLOT_W / max(len(categories), 1)
    )
    panel_w = PLOT_LEFT + bin_w * max(len(categories), 1) + PLOT_RIGHT
    panel_h = PLOT_TOP + PLOT_H + PLOT_BOTTOM
    fitting = int((PAGE_WIDTH - 16 + PANEL_GAP) // (panel_w + PANEL_GAP))
    columns = max(1, min(PANEL_COLUMNS, len(lines), fitting))
    rows = -(-len(lines) // columns)
    title_h = 8 + 18 * len(heads)
    width = int(
        max(
            8 + columns * panel_w + (columns - 1) * PANEL_GAP + 8,
            CHAR_W * max(len(line) for line in heads) + 16,
            SMALL_CHAR_W * len(footer) + 16,
        )
    )
    footer_h = 22 if footer else 0
    height = int(title_h + 8 + rows * panel_h + (rows - 1) * PANEL_GAP + footer_h + 6)
    figure = titled(chart_id, "growth-chart", width, height, heads)
    for p, series in enumerate(lines):
        x0 = 8 + (p % columns) * (panel_w + PANEL_GAP)
        y0 = title_h + 8 + (p // columns) * (panel_h + PANEL_GAP)
        figure.shapes.append(Group("panel", {"series": series.name}, _panel(series, categories, x0, y0, bin_w)))
    if footer:
        figure.shapes.append(Text(8, height - 10, footer, "footer", size=10, fill=MUTED))
    return figure


def _panel(series: Line, categories: Sequence[str], x0: float, y0: int, bin_w: float) -> list[Shape]:
    """One panel of `line_panels`, its top-left corner at (x0, y0)."""
    left, top = x0 + PLOT_LEFT, y0 + PLOT_TOP
    bottom = top + PLOT_H
    plot_w = bin_w * len(categories)

    def y(value: float) -> float:
        return bottom - PLOT_H * max(0.0, min(value, 100.0)) / 100

    shapes: list[Shape] = [
        Text(left, y0 + 16, series.label, "panel-title", weight=700 if series.total else 600, fill=series.color),
        Rect(left, top, plot_w, PLOT_H, "#fafbfc", "frame", stroke="#e6e9ef"),
    ]
    for tick in (0, 25, 50, 75, 100):
        shapes.append(
            Segment(left, left + plot_w, y(tick), y(tick), "#d9dee7" if tick % 50 == 0 else "#eef0f4", "grid")
        )
        if tick % 50 == 0:
            shapes.append(Text(left - 4, y(tick) + 3.5, str(tick), "tick", anchor="end", size=10, fill=MUTED))
    centers = [left + bin_w * (c + 0.5) for c in range(len(categories))]
    for c, category in enumerate(categories):
        shapes.append(Text(centers[c], bottom + 14, category, "bin", anchor="middle", size=10, fill=MUTED))
    # Joined where neighbouring bins both have a point; a gap stays a gap.
    run: list[tuple[float, float]] = []
    for c, point in enumerate([*series.points, None]):
        if point is not None:
            run.append((centers[c], y(point.mean)))
            continue
        if len(run) > 1:
            shapes.append(Polyline(run, series.color, 2.2 if series.total else 1.6, "line"))
        run = []
    for c, point in enumerate(series.points):
        if point is None:
            continue
        bounds = ""
        if point.lo is not None and point.hi is not None:
            bounds = f" [{point.lo:.1f}, {point.hi:.1f}]"
            x = centers[c]
            shapes.append(Segment(x, x, y(point.lo), y(point.hi), series.color, "errorbar", opacity=0.55, width=1.4))
            for end in (point.lo, point.hi):
                shapes.append(Segment(x - 4, x + 4, y(end), y(end), series.color, "cap", opacity=0.55, width=1.4))
        data = {"series": series.name, "category": categories[c], "value": f"{point.mean:.2f}", "n": str(point.n)}
        tip = f"{series.label} · {categories[c]}: {point.mean:.1f}{bounds}, n={point.n}"
        shapes.append(Dot(centers[c], y(point.mean), 3.5, series.color, "point", data=data, tip=tip))
    return shapes


def line_panels_svg(
    chart_id: str, title: str, categories: Sequence[str], lines: Sequence[Line], footer: str = ""
) -> str:
    return svg(line_panels(chart_id, title, categories, lines, footer))


def write_line_pngs(charts: LineCharts, directory: Path) -> list[Path]:
    """The report's charts along trajectories as PNG files."""
    return write_figures([line_panels(name, *chart) for name, chart in charts.items()], directory)
