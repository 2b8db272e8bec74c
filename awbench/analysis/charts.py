"""Charts of 0..100 scores, one per comparable group of runs: inline SVG for the HTML report, and the same charts
as PNG files drawn with matplotlib on request.

A chart is a small multiple: one row per run (labelled at the left, in the group's order), one column per
category (the seven domains and Overall, or the five rubric dimensions and the total), a horizontal bar with its
value in each cell. It stays readable from one run to twenty or more: rows are labelled directly, so no legend
has to be matched against twenty colours, and every bar has a fixed, readable size.

`line_panels_svg` draws one run's scores along trajectories the same way: a small multiple of one panel per domain
(and Overall), the bins along x, a point per bin with its interval as an error bar.
"""

from __future__ import annotations

import html
import io
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from awbench.files import write_atomic

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


def bar_chart_svg(chart_id: str, title: str, categories: Sequence[str], series: Sequence[Series]) -> str:
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
    out = _svg_head(chart_id, "chart", width, height, lines)
    for r in range(len(series)):
        if r % 2:
            out.append(
                f'<rect class="stripe" x="0" y="{top + r * ROW_H}" width="{width}" height="{ROW_H}" fill="#f5f7fa"/>'
            )
    for c, category in enumerate(categories):
        x0 = label_w + c * column_w
        weight = ' font-weight="600"' if c == len(categories) - 1 else ""
        out.append(
            f'<text class="category" x="{x0 + BAR_MAX / 2:.1f}" y="{top - 8}" text-anchor="middle"{weight}>'
            f"{html.escape(category)}</text>"
        )
        for tick in (0, 50, 100):
            x = x0 + BAR_MAX * tick / 100
            out.append(
                f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{top - 2}" y2="{top + ROW_H * len(series)}" '
                'stroke="#e6e9ef"/>'
            )
    for r, (ser, label) in enumerate(zip(series, labels)):
        y = top + r * ROW_H
        style = ' font-style="italic" fill="#6b21a8"' if ser.published else ""
        out.append(
            f'<text class="label" x="{label_w - 8:.1f}" y="{y + ROW_H / 2 + 4:.1f}" text-anchor="end"{style}>'
            f"{html.escape(label)}<title>{html.escape(ser.name)}</title></text>"
        )
        for c, category in enumerate(categories):
            value = ser.values[c]
            if value is None:
                continue
            x0 = label_w + c * column_w
            w = BAR_MAX * max(0.0, min(value, 100.0)) / 100
            opacity = ' fill-opacity="0.45"' if ser.published else ""
            out.append(
                f'<rect class="bar" data-series="{html.escape(ser.name)}" data-category="{html.escape(category)}" '
                f'data-value="{value:.2f}" x="{x0:.1f}" y="{y + (ROW_H - BAR_H) / 2:.1f}" width="{w:.1f}" '
                f'height="{BAR_H}" fill="{category_color(c, len(categories))}"{opacity}>'
                f"<title>{html.escape(ser.name)} · {html.escape(category)}: {value:.2f}</title></rect>"
                f'<text class="value" x="{x0 + w + 3:.1f}" y="{y + ROW_H / 2 + 4:.1f}" font-size="11">{value:.1f}</text>'
            )
    out.append("</svg>")
    return "\n".join(out)


def _mpl_color(css: str) -> str | tuple[float, float, float]:
    """matplotlib takes hex colours but not CSS hsl()."""
    if not css.startswith("hsl("):
        return css
    import colorsys

    h, sat, light = (float(v.strip(" %")) for v in css[4:-1].split(","))
    r, g, b = colorsys.hls_to_rgb(h / 360, light / 100, sat / 100)
    return (r, g, b)


def _save_png(fig: Any, path: Path) -> None:
    """Drawn in memory, then written atomically: a failed write leaves the previous chart as it was."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)
    write_atomic(path, buffer.getvalue())


def write_pngs(charts: Charts, directory: Path) -> list[Path]:
    """The same charts as PNG files, drawn with matplotlib (Agg: no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, (title, categories, series) in charts.items():
        labels = [row_label(s) for s in series]
        label_in = 0.3 + 0.075 * max((len(label) for label in labels), default=8)
        lines = title.count("\n") + 1
        fig, axes = plt.subplots(
            1,
            len(categories),
            sharey=True,
            squeeze=False,
            figsize=(label_in + 1.15 * len(categories), 0.9 + 0.25 * lines + 0.27 * len(series)),
        )
        rows = range(len(series))
        for c, ax in enumerate(axes[0]):
            colour = _mpl_color(category_color(c, len(categories)))
            for r, ser in zip(rows, series):
                value = ser.values[c]
                if value is None:
                    continue
                ax.barh(r, value, height=0.62, color=colour, alpha=0.45 if ser.published else 1)
                ax.text(value + 3, r, f"{value:.1f}", va="center", fontsize=7)
            ax.set_xlim(0, 135)
            ax.set_xticks([0, 50, 100])
            ax.tick_params(axis="x", labelsize=7)
            ax.grid(axis="x", alpha=0.3)
            ax.set_title(categories[c], fontsize=9, fontweight="bold" if c == len(categories) - 1 else "normal")
            for side in ("top", "right"):
                ax.spines[side].set_visible(False)
        axes[0][0].set_yticks(list(rows), labels, fontsize=8)
        axes[0][0].set_ylim(len(series) - 0.5, -0.5)  # the first row on top, as in the leaderboard
        for label, ser in zip(axes[0][0].get_yticklabels(), series):
            if ser.published:
                label.set_color("#6b21a8")
                label.set_style("italic")
        first, *rest = title.split("\n")
        fig.suptitle(first + ("\n" + "\n".join(rest) if rest else ""), fontsize=10, x=0.01, ha="left")
        fig.tight_layout()
        path = directory / f"{name}.png"
        _save_png(fig, path)
        plt.close(fig)
        written.append(path)
    return written


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


def line_panels_svg(
    chart_id: str, title: str, categories: Sequence[str], lines: Sequence[Line], footer: str = ""
) -> str:
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
    out = _svg_head(chart_id, "growth-chart", width, height, heads)
    for p, series in enumerate(lines):
        x0 = 8 + (p % columns) * (panel_w + PANEL_GAP)
        y0 = title_h + 8 + (p // columns) * (panel_h + PANEL_GAP)
        left, top = x0 + PLOT_LEFT, y0 + PLOT_TOP
        bottom = top + PLOT_H

        def y(value: float, bottom: float = bottom) -> float:
            return bottom - PLOT_H * max(0.0, min(value, 100.0)) / 100

        weight = ' font-weight="700"' if series.total else ' font-weight="600"'
        out.append(f'<g class="panel" data-series="{html.escape(series.name)}">')
        out.append(
            f'<text class="panel-title" x="{left:.1f}" y="{y0 + 16}"{weight} fill="{series.color}">'
            f"{html.escape(series.label)}</text>"
        )
        out.append(
            f'<rect class="frame" x="{left:.1f}" y="{top}" width="{bin_w * len(categories):.1f}" '
            f'height="{PLOT_H}" fill="#fafbfc" stroke="#e6e9ef"/>'
        )
        for tick in (0, 25, 50, 75, 100):
            out.append(
                f'<line class="grid" x1="{left:.1f}" x2="{left + bin_w * len(categories):.1f}" y1="{y(tick):.1f}" '
                f'y2="{y(tick):.1f}" stroke="{"#d9dee7" if tick % 50 == 0 else "#eef0f4"}"/>'
            )
            if tick % 50 == 0:
                out.append(
                    f'<text class="tick" x="{left - 4:.1f}" y="{y(tick) + 3.5:.1f}" text-anchor="end" '
                    f'font-size="10" fill="#667085">{tick}</text>'
                )
        centers = [left + bin_w * (c + 0.5) for c in range(len(categories))]
        for c, category in enumerate(categories):
            out.append(
                f'<text class="bin" x="{centers[c]:.1f}" y="{bottom + 14}" text-anchor="middle" font-size="10" '
                f'fill="#667085">{html.escape(category)}</text>'
            )
        # Joined where neighbouring bins both have a point; a gap stays a gap.
        run: list[str] = []
        for c, point in enumerate([*series.points, None]):
            if point is not None:
                run.append(f"{centers[c]:.1f},{y(point.mean):.1f}")
                continue
            if len(run) > 1:
                out.append(
                    f'<polyline class="line" points="{" ".join(run)}" fill="none" stroke="{series.color}" '
                    f'stroke-width="{2.2 if series.total else 1.6}"/>'
                )
            run = []
        for c, point in enumerate(series.points):
            if point is None:
                continue
            category = html.escape(categories[c])
            bounds = ""
            if point.lo is not None and point.hi is not None:
                bounds = f" [{point.lo:.1f}, {point.hi:.1f}]"
                out.append(
                    f'<line class="errorbar" x1="{centers[c]:.1f}" x2="{centers[c]:.1f}" y1="{y(point.lo):.1f}" '
                    f'y2="{y(point.hi):.1f}" stroke="{series.color}" stroke-opacity="0.55" stroke-width="1.4"/>'
                )
                for end in (point.lo, point.hi):
                    out.append(
                        f'<line class="cap" x1="{centers[c] - 4:.1f}" x2="{centers[c] + 4:.1f}" y1="{y(end):.1f}" '
                        f'y2="{y(end):.1f}" stroke="{series.color}" stroke-opacity="0.55" stroke-width="1.4"/>'
                    )
            out.append(
                f'<circle class="point" data-series="{html.escape(series.name)}" data-category="{category}" '
                f'data-value="{point.mean:.2f}" data-n="{point.n}" cx="{centers[c]:.1f}" cy="{y(point.mean):.1f}" '
                f'r="3.5" fill="{series.color}"><title>{html.escape(series.label)} · {category}: {point.mean:.1f}'
                f"{bounds}, n={point.n}</title></circle>"
            )
        out.append("</g>")
    if footer:
        out.append(
            f'<text class="footer" x="8" y="{height - 10}" font-size="10" fill="#667085">{html.escape(footer)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out)


def write_line_pngs(charts: LineCharts, directory: Path) -> list[Path]:
    """The small multiples of `line_panels_svg` as PNG files, drawn with matplotlib (Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, (title, categories, lines, footer) in charts.items():
        columns = max(1, min(PANEL_COLUMNS, len(lines)))
        rows = -(-len(lines) // columns)
        panel_in = max(1.9, 0.42 * len(categories) + 0.5)
        fig, axes = plt.subplots(
            rows,
            columns,
            sharey=True,
            squeeze=False,
            figsize=(0.4 + panel_in * columns, 0.9 + 0.2 * title.count("\n") + 1.75 * rows),
        )
        xs = list(range(len(categories)))
        for p, ax in enumerate(axes.flat):
            if p >= len(lines):
                ax.set_visible(False)
                continue
            series = lines[p]
            colour = _mpl_color(series.color)
            present = [(x, point) for x, point in zip(xs, series.points) if point is not None]
            # Joined where neighbouring bins both have a point, as in the SVG.
            for (x0, a), (x1, b) in itertools.pairwise(present):
                if x1 == x0 + 1:
                    ax.plot([x0, x1], [a.mean, b.mean], color=colour, linewidth=2 if series.total else 1.4)
            for x, point in present:
                if point.lo is not None and point.hi is not None:
                    ax.errorbar(
                        [x],
                        [point.mean],
                        yerr=[[point.mean - point.lo], [point.hi - point.mean]],
                        color=colour,
                        alpha=0.6,
                        capsize=3,
                        linewidth=1.2,
                    )
                ax.plot([x], [point.mean], "o", color=colour, markersize=4)
            ax.set_title(series.label, fontsize=9, color=colour, loc="left", fontweight="bold")
            ax.set_ylim(-3, 103)
            ax.set_yticks([0, 50, 100])
            ax.set_xlim(-0.5, len(categories) - 0.5)
            ax.set_xticks(xs, categories, fontsize=7)
            ax.tick_params(axis="y", labelsize=7)
            ax.grid(axis="y", alpha=0.3)
            for side in ("top", "right"):
                ax.spines[side].set_visible(False)
        fig.suptitle(title, fontsize=10, x=0.01, ha="left")
        if footer:
            fig.text(0.01, 0.01, footer, fontsize=7, color="#667085")
        fig.tight_layout(rect=(0, 0.04 if footer else 0, 1, 1))
        path = directory / f"{name}.png"
        _save_png(fig, path)
        plt.close(fig)
        written.append(path)
    return written


def _svg_head(chart_id: str, css_class: str, width: int, height: int, titles: list[str]) -> list[str]:
    """An SVG chart's opening tag (its titles joined as the accessible label) and its title lines, the first bold."""
    out = [
        f'<svg id="{chart_id}" class="{css_class}" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{html.escape(" · ".join(titles))}" '
        'font-family="system-ui, sans-serif" font-size="12" fill="#1d2330">'
    ]
    for i, line in enumerate(titles):
        weight = ' font-weight="600"' if i == 0 else ' fill="#667085"'
        out.append(f'<text class="title" x="8" y="{22 + 18 * i}"{weight}>{html.escape(line)}</text>')
    return out
