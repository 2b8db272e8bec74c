"""Charts of 0..100 scores, one per comparable group of runs: inline SVG for the HTML report, and the same charts
as PNG files drawn with matplotlib on request.

A chart is a small multiple: one row per run (labelled at the left, in the group's order), one column per
category (the seven domains and Overall, or the five rubric dimensions and the total), a horizontal bar with its
value in each cell. It stays readable from one run to twenty or more: rows are labelled directly, so no legend
has to be matched against twenty colours, and every bar has a fixed, readable size.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

PALETTE = ("#4f46e5", "#0ea5e9", "#10b981", "#f59e0b", "#ef4444", "#8b5cf6", "#14b8a6", "#f97316", "#64748b",
           "#ec4899", "#84cc16", "#0f766e", "#a16207", "#1e3a8a")
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
    out = [f'<svg id="{chart_id}" class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{html.escape(" · ".join(lines))}" '
           'font-family="system-ui, sans-serif" font-size="12" fill="#1d2330">']
    for i, line in enumerate(lines):
        weight = ' font-weight="600"' if i == 0 else ' fill="#667085"'
        out.append(f'<text class="title" x="8" y="{22 + 18 * i}"{weight}>{html.escape(line)}</text>')
    for r in range(len(series)):
        if r % 2:
            out.append(f'<rect class="stripe" x="0" y="{top + r * ROW_H}" width="{width}" height="{ROW_H}" fill="#f5f7fa"/>')
    for c, category in enumerate(categories):
        x0 = label_w + c * column_w
        weight = ' font-weight="600"' if c == len(categories) - 1 else ""
        out.append(f'<text class="category" x="{x0 + BAR_MAX / 2:.1f}" y="{top - 8}" text-anchor="middle"{weight}>'
                   f"{html.escape(category)}</text>")
        for tick in (0, 50, 100):
            x = x0 + BAR_MAX * tick / 100
            out.append(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{top - 2}" y2="{top + ROW_H * len(series)}" '
                       'stroke="#e6e9ef"/>')
    for r, (ser, label) in enumerate(zip(series, labels)):
        y = top + r * ROW_H
        style = ' font-style="italic" fill="#6b21a8"' if ser.published else ""
        out.append(f'<text class="label" x="{label_w - 8:.1f}" y="{y + ROW_H / 2 + 4:.1f}" text-anchor="end"{style}>'
                   f"{html.escape(label)}<title>{html.escape(ser.name)}</title></text>")
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
            1, len(categories), sharey=True, squeeze=False,
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
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    return written
