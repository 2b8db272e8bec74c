"""Grouped bar charts of 0..100 scores: inline SVG for the HTML report, and the same charts as PNG files
drawn with matplotlib on request."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

PALETTE = ("#4f46e5", "#0ea5e9", "#10b981", "#f59e0b", "#ef4444", "#8b5cf6", "#14b8a6", "#f97316", "#64748b",
           "#ec4899", "#84cc16", "#0f766e", "#a16207", "#1e3a8a")


class Series(BaseModel):
    name: str
    values: list[float | None]
    published: bool = False


Charts = dict[str, tuple[str, list[str], list[Series]]]  # name -> (title, categories, series)


def color(i: int) -> str:
    """Distinct colours past the palette too: golden-angle hues."""
    return PALETTE[i] if i < len(PALETTE) else f"hsl({i * 137.5 % 360:.0f}, 55%, 48%)"


def bar_chart_svg(chart_id: str, title: str, categories: Sequence[str], series: Sequence[Series]) -> str:
    """A grouped bar chart on a 0..100 axis: one group per category, one bar per series."""
    n_cat, n_ser = len(categories), max(1, len(series))
    left, right, top, bottom = 48, 16, 36, 40
    group_w = max(96, min(160, 14 * n_ser + 24))
    plot_w, plot_h = max(n_cat * group_w, 560), 280
    group_w = plot_w / n_cat
    labels = [ser.name + (" (published)" if ser.published else "") for ser in series]
    item_w = 28 + 7 * max((len(label) for label in labels), default=0)  # ~7px per character at 12px
    per_row = max(1, int(plot_w // item_w))
    legend_rows = (len(series) + per_row - 1) // per_row
    width, height = left + plot_w + right, top + plot_h + bottom + 20 * legend_rows + 8
    bar_w = (group_w - 16) / n_ser
    out = [f'<svg id="{chart_id}" class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{html.escape(title)}">',
           f'<text x="{left}" y="20" font-weight="600">{html.escape(title)}</text>']
    for tick in range(0, 101, 20):
        y = top + plot_h * (1 - tick / 100)
        out.append(f'<line class="grid" x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}"/>'
                   f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick}</text>')
    for c, category in enumerate(categories):
        x0 = left + c * group_w + 8
        out.append(f'<text x="{x0 + (group_w - 16) / 2:.1f}" y="{top + plot_h + 18}" text-anchor="middle">'
                   f'{html.escape(category)}</text>')
        for s, ser in enumerate(series):
            value = ser.values[c]
            if value is None:
                continue
            h = plot_h * max(0.0, min(value, 100.0)) / 100
            opacity = ' fill-opacity="0.45"' if ser.published else ""
            out.append(
                f'<rect class="bar" data-series="{html.escape(ser.name)}" data-category="{html.escape(category)}" '
                f'data-value="{value:.2f}" x="{x0 + s * bar_w:.1f}" y="{top + plot_h - h:.1f}" width="{bar_w - 1:.1f}" '
                f'height="{h:.1f}" fill="{color(s)}"{opacity}>'
                f'<title>{html.escape(ser.name)} · {html.escape(category)}: {value:.2f}</title></rect>'
            )
    out.append(f'<line class="axis" x1="{left}" x2="{left + plot_w}" y1="{top + plot_h}" y2="{top + plot_h}"/>')
    for s, label in enumerate(labels):
        lx, ly = left + (s % per_row) * (plot_w / per_row), top + plot_h + bottom + 20 * (s // per_row)
        out.append(f'<rect x="{lx:.1f}" y="{ly - 10}" width="12" height="12" fill="{color(s)}"/>'
                   f'<text x="{lx + 16:.1f}" y="{ly}">{html.escape(label)}</text>')
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


def write_pngs(charts: Charts, directory: Path) -> list[Path]:
    """The same charts as PNG files, drawn with matplotlib (Agg: no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, (title, categories, series) in charts.items():
        fig, ax = plt.subplots(figsize=(max(8.0, 1.2 * len(categories) + 0.25 * len(series)), 5))
        width = 0.8 / max(1, len(series))
        for s, ser in enumerate(series):
            xs = [c + s * width - 0.4 + width / 2 for c, v in enumerate(ser.values) if v is not None]
            ys = [v for v in ser.values if v is not None]
            label = ser.name + (" (published)" if ser.published else "")
            ax.bar(xs, ys, width * 0.95, label=label, color=_mpl_color(color(s)), alpha=0.45 if ser.published else 1)
        ax.set_xticks(range(len(categories)), categories)
        ax.set_ylim(0, 100)
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8, ncol=min(4, max(1, len(series))), loc="upper center", bbox_to_anchor=(0.5, -0.08))
        fig.tight_layout()
        path = directory / f"{name}.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    return written
