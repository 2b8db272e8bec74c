"""Looking at results: one sample's full story (`SampleView`, for `awbench show`), and a self-contained
static HTML report (leaderboard, inline SVG charts, the worst samples with diffs, a search box).

The report needs no network: CSS, JS and charts are inline. Charts are drawn here as SVG, and as PNG with
matplotlib on request.
"""

from __future__ import annotations

import difflib
import html
import json
from collections.abc import Sequence
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from string import Template

from pydantic import BaseModel

import awbench
from awbench.compare import Consistency, LengthBias, judge_consistency, run_length_bias
from awbench.domains import DIMENSIONS, DOMAIN_LABELS, DOMAINS
from awbench.leaderboard import (
    DIMENSION_LABELS, Leaderboard, RunData, build_leaderboard, fmt_cell, fmt_cost, fmt_number, load_run_data,
)
from awbench.parsing import strip_observation_marker
from awbench.records import JudgeKind
from awbench.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, OVERALL
from awbench.store import RunStore, StoreError

PALETTE = ("#4f46e5", "#0ea5e9", "#10b981", "#f59e0b", "#ef4444", "#8b5cf6", "#14b8a6", "#f97316", "#64748b",
           "#ec4899", "#84cc16", "#0f766e", "#a16207", "#1e3a8a")


# --------------------------------------------------------------------------- one sample


class Reasons(BaseModel):
    status: str
    strengths: list[str]
    weaknesses: list[str]


class SampleView(BaseModel):
    key: str
    domain: str
    trajectory: str
    origin: str
    context: list[tuple[str, str]]  # the turns just before this one: (action, observation)
    earlier_turns: int  # turns of history not in `context`
    action: str
    prediction: str
    ground_truth: str
    status: str | None  # the generation's status; None when there is no prediction
    error: str | None
    score: float | None  # 0..100, as it enters the means
    dimensions: dict[str, float]  # 0..100
    rule_parts: dict[str, float] | None
    reasons: list[Reasons]


def sample_view(data: RunData, key: str, kind: JudgeKind, context_turns: int = 2) -> SampleView:
    sample = data.samples.get(key)
    if sample is None:
        raise KeyError(key)
    record = sample.record
    point = next((p for p in data.points(kind).get(sample.domain, []) if p[0] == key), None)
    prediction = data.predictions.get(key)
    judgment = data.judgments_of(kind).get(key)
    history = range(max(0, record.turn_idx - 1 - context_turns), record.turn_idx - 1)
    return SampleView(
        key=key, domain=sample.domain, trajectory=record.trajectory_id, origin=sample.origin,
        context=[(record.prompt[i], strip_observation_marker(record.response[i])) for i in history],
        earlier_turns=max(0, record.turn_idx - 1 - context_turns), action=record.action,
        prediction=strip_observation_marker(prediction.prediction) if prediction else "",
        ground_truth=strip_observation_marker(record.ground_truth),
        status=prediction.status if prediction else None,
        error=(prediction.error if prediction else None) or (judgment.error if judgment else None),
        # Only the LLM judge has rubric dimensions (sample_points gives failures zeros for any judge).
        score=point[1] if point else None, dimensions=point[2] if point and kind == "llm" else {},
        rule_parts=judgment.rule.parts if judgment and judgment.rule else None,
        reasons=[Reasons(status=v.status, strengths=v.strengths, weaknesses=v.weaknesses)
                 for v in (judgment.verdicts if judgment else [])],
    )


def worst_keys(
    data: RunData, kind: JudgeKind, n: int, domain: str | None = None, dimension: str | None = None
) -> list[str]:
    """The n lowest-scored samples (by total, or by one dimension), lowest first; ties by key."""
    points = [p for d, pts in data.points(kind).items() if domain in (None, d) for p in pts]
    if dimension:
        points = [p for p in points if dimension in p[2]]
    ranked = sorted(points, key=lambda p: (p[2][dimension] if dimension else p[1], p[0]))
    return [key for key, _, _ in ranked[:n]]


def unified_diff(ground_truth: str, prediction: str) -> list[str]:
    return list(difflib.unified_diff(
        ground_truth.splitlines(), prediction.splitlines(), "ground truth", "prediction", lineterm=""
    ))


def clip(text: str, limit: int) -> str:
    """Head and tail of a long text: the end of an observation often carries its exit status or prompt."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return f"{text[:head]}\n… [{len(text) - limit} characters cut] …\n{text[-(limit - head):]}"


# --------------------------------------------------------------------------- charts


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


def chart_series(board: Leaderboard) -> list[Series]:
    """One series per row of the board, in display order; the last category is the board's total."""
    return [Series(name=row.run, values=[row.cells[c].value for c in board.columns], published=row.published)
            for group in board.groups for row in group.rows]


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


# --------------------------------------------------------------------------- HTML


def _e(text: object) -> str:
    return html.escape(str(text))


def leaderboard_html(board: Leaderboard, table_id: str = "leaderboard") -> str:
    heads = ["#", "Run", *(board.labels[c] for c in board.columns), "Scored", "Failed", "Judge", "Prompts", "Data",
             "Cost"]
    text_cols = {"Run", "Judge", "Prompts", "Data"}
    out = [f'<div class="scroll"><table id="{table_id}" class="leaderboard"><thead><tr>'
           + "".join(f'<th class="{"text" if h in text_cols else ""}">{_e(h)}</th>' for h in heads)
           + "</tr></thead><tbody>"]
    for group in board.groups:
        out.append(f'<tr class="group"><th colspan="{len(heads)}">{_e(group.header)}</th></tr>')
        for row in group.rows:
            css = "run published" if row.published else "run"
            name = _e(row.run) + (' <span class="badge">published</span>' if row.published else "")
            model = "" if row.published or row.model == row.run else f'<br><span class="meta">{_e(row.model)}</span>'
            cells = "".join(f'<td class="{"overall" if c == OVERALL else ""}">{_e(fmt_cell(row.cells[c]))}</td>'
                            for c in board.columns)
            out.append(
                f'<tr class="{css}" data-run="{_e(row.run)}"><td>{"" if row.rank is None else row.rank}</td>'
                f'<td class="text">{name}{model}</td>{cells}<td>{"" if row.scored is None else row.scored}</td>'
                f'<td>{"" if row.failed is None else row.failed}</td><td class="text">{_e(row.judge)}</td>'
                f'<td class="text">{_e(row.prompts)}</td><td class="text">{_e(row.data)}</td>'
                f"<td>{_e(fmt_cost(row.cost_usd))}</td></tr>"
            )
    out.append("</tbody></table></div>")
    out += [f'<p class="note warn">{_e(note)}</p>' for note in board.notes]
    return "\n".join(out)


def _diff_html(lines: list[str], max_lines: int = 300) -> str:
    if not lines:
        return '<p class="note">prediction and ground truth are identical</p>'
    spans = []
    for line in lines[:max_lines]:
        css = {"@": "hunk", "+": "add", "-": "del"}.get(line[:1], "")
        spans.append(f'<span class="{css}">{_e(line)}</span>' if css else _e(line))
    if len(lines) > max_lines:
        spans.append(f"… {len(lines) - max_lines} more diff lines")
    return '<pre class="diff">' + "\n".join(spans) + "</pre>"


def sample_card(view: SampleView, run: str, anchor: str) -> str:
    dims = "".join(f"<span>{_e(DIMENSION_LABELS[d])} {view.dimensions[d]:.0f}</span>"
                   for d in DIMENSIONS if d in view.dimensions)
    reasons = []
    for i, r in enumerate(view.reasons, start=1):
        label = f"verdict {i} ({r.status})" if len(view.reasons) > 1 else f"judge ({r.status})"
        reasons.append(
            f"<h4>{_e(label)}</h4>"
            + ('<ul class="reasons strengths">' + "".join(f"<li>{_e(s)}</li>" for s in r.strengths) + "</ul>"
               if r.strengths else "")
            + ('<ul class="reasons weaknesses">' + "".join(f"<li>{_e(w)}</li>" for w in r.weaknesses) + "</ul>"
               if r.weaknesses else "")
        )
    status = "" if view.status in (None, "ok") else f' <span class="warn">[{_e(view.status)}]</span>'
    error = f'<p class="warn">{_e(view.error)}</p>' if view.error else ""
    return (
        f'<details class="sample" id="{_e(anchor)}" data-key="{_e(view.key)}" data-run="{_e(run)}">'
        f"<summary>{_e(view.key)} · score {fmt_number(view.score, 1)}{status}</summary>"
        f'<div class="scores">{dims}</div>{error}'
        f"<h4>action</h4><pre>{_e(clip(view.action, 1500))}</pre>"
        "<h4>ground truth → prediction (unified diff)</h4>"
        f"{_diff_html(unified_diff(view.ground_truth, view.prediction))}"
        + "".join(reasons) + "</details>"
    )


def _length_bias_html(bias: LengthBias) -> str:
    cells = "".join(f"<tr><td class='text'>{_e(b)}</td><td>{n}</td><td>{fmt_number(m)}</td></tr>"
                    for b, (n, m) in bias.items())
    return ("<table class='length-bias'><thead><tr><th class='text'>prediction / truth length</th><th>n</th>"
            f"<th>mean score</th></tr></thead><tbody>{cells}</tbody></table>")


def _consistency_html(c: Consistency | None, agreement: dict[str, float | None] | None) -> str:
    parts = []
    if c:
        sd = ", ".join(f"{DOMAIN_LABELS[d]} {v:.1f}" for d, v in c.sd.items())
        alpha = ", ".join(f"{DIMENSION_LABELS[d]} {fmt_number(a)}" for d, a in c.alpha.items())
        parts.append(f"<p>Repeated verdicts (up to {c.k} per prediction, {c.n} predictions): mean SD of the total "
                     f"per domain: {_e(sd)}; Krippendorff's α (ordinal): {_e(alpha)}</p>")
    if agreement:
        rho = ", ".join(f"{DOMAIN_LABELS.get(d, d.capitalize())} {fmt_number(v)}" for d, v in agreement.items())
        parts.append(f"<p>Rule score vs LLM total, Spearman: {_e(rho)}</p>")
    return "".join(parts) or ('<p class="note">Nothing to show: no repeated verdicts (--judge-samples) and no '
                              "rule-vs-LLM comparison (--judge both) in this run.</p>")


class RunSection(BaseModel):
    """What the report shows for one run beyond its leaderboard row."""

    name: str
    judge: JudgeKind
    worst: dict[str, list[SampleView]]
    length_bias: LengthBias
    consistency: Consistency | None
    agreement: dict[str, float | None] | None


def run_section(data: RunData, kind: JudgeKind, worst_n: int) -> RunSection:
    return RunSection(
        name=data.name, judge=kind,
        worst={d: [sample_view(data, k, kind) for k in worst_keys(data, kind, worst_n, domain=d)] for d in DOMAINS},
        length_bias=run_length_bias(data, kind), consistency=judge_consistency(data),
        agreement=data.scores.agreement if data.scores else None,
    )


def _section_html(section: RunSection, index: int) -> str:
    out = [f'<section class="run-section" id="run-{index}"><h3>{_e(section.name)}</h3>',
           f'<p class="note">judge: {section.judge}</p>']
    out.append("<h4>Score by prediction length</h4>" + _length_bias_html(section.length_bias))
    out.append("<h4>Judge agreement</h4>" + _consistency_html(section.consistency, section.agreement))
    for domain in DOMAINS:
        views = section.worst.get(domain, [])
        if not views:
            continue
        out.append(f"<h4>{_e(DOMAIN_LABELS[domain])}: {len(views)} worst-scored</h4>")
        # Keys hold "/" and "#", which cannot go in a URL fragment: anchors are positional.
        out += [sample_card(v, section.name, f"s-{index}-{domain}-{i}") for i, v in enumerate(views)]
    out.append("</section>")
    return "\n".join(out)


def render_page(title: str, subtitle: str, body: str, nav: str = "", index: dict | None = None) -> str:
    template = Template(resources.files("awbench").joinpath("templates/report.html").read_text(encoding="utf-8"))
    # "</" inside the JSON would end the script element early.
    index_json = json.dumps(index or {"runs": [], "samples": {}}, ensure_ascii=False).replace("</", "<\\/")
    return template.substitute(
        title=_e(title), subtitle=_e(subtitle), body=body, nav=nav, index=index_json, version=awbench.__version__
    )


def leaderboard_page(board: Leaderboard) -> str:
    """`awbench leaderboard --format html`: the table alone, as a page."""
    return render_page("AgentWorldBench leaderboard", _stamp(), leaderboard_html(board))


def _stamp() -> str:
    return f"awbench {awbench.__version__} · generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}"


def report_charts(domain_board: Leaderboard, dimension_board: Leaderboard) -> Charts:
    """The charts that have something to show (no LLM-judged run: no dimension chart)."""
    charts: Charts = {
        "chart-domains": ("Score by domain (0–100)", [domain_board.labels[c] for c in domain_board.columns],
                          chart_series(domain_board)),
        "chart-dimensions": ("Score by rubric dimension, mean over domains (0–100)",
                             [dimension_board.labels[c] for c in dimension_board.columns],
                             chart_series(dimension_board)),
    }
    return {name: chart for name, chart in charts.items() if chart[2]}


def sample_index(datas: Sequence[RunData], kinds: Sequence[JudgeKind]) -> dict:
    """Every sample key with each run's score (None: not scored), for the search box."""
    runs = [d.name for d in datas]
    samples: dict[str, list[float | None]] = {}
    for i, (data, kind) in enumerate(zip(datas, kinds)):
        for pts in data.points(kind).values():
            for key, score, _ in pts:
                samples.setdefault(key, [None] * len(runs))[i] = round(score, 2)
    return {"runs": runs, "samples": dict(sorted(samples.items()))}


def _dimension_notes(charts: Charts, dimension_board: Leaderboard) -> list[str]:
    if "chart-dimensions" not in charts:
        return ["No rubric-dimension chart: no run here was scored by the LLM judge."]
    return [note for note in dimension_board.notes if note.startswith("left out")]


def report_html(
    domain_board: Leaderboard, dimension_board: Leaderboard, sections: Sequence[RunSection], index: dict,
    title: str = "AgentWorldBench report",
) -> str:
    charts = report_charts(domain_board, dimension_board)
    body = [
        '<section id="leaderboard-section"><h2>Leaderboard</h2>', leaderboard_html(domain_board), "</section>",
        '<section id="charts"><h2>Charts</h2>',
        *(bar_chart_svg(name, t, cats, ser) for name, (t, cats, ser) in charts.items()),
        *(f'<p class="note">{_e(note)}</p>' for note in _dimension_notes(charts, dimension_board)),
        "</section>",
        '<section id="samples"><h2>Samples</h2>',
        '<p><input id="search" type="search" placeholder="find a sample by key, e.g. terminal/12/3" '
        'aria-label="sample key"> <span id="search-status" class="note"></span></p><ul id="search-results"></ul>',
        *(_section_html(s, i) for i, s in enumerate(sections)),
        "</section>",
    ]
    nav = ('<a href="#leaderboard-section">Leaderboard</a><a href="#charts">Charts</a><a href="#samples">Samples</a>'
           + "".join(f'<a href="#run-{i}">{_e(s.name)}</a>' for i, s in enumerate(sections)))
    return render_page(title, _stamp(), "\n".join(body), nav, index)


class Report(BaseModel):
    html: str
    charts: Charts


def build_report(
    stores: Sequence[RunStore], *, judge: JudgeKind | None = None, worst_n: int = 3, reference: bool = False,
    ci: bool = True, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED, notes: Sequence[str] = (),
) -> Report:
    stores = list(stores)
    common = dict(judge=judge, ci=ci, resamples=resamples, seed=seed)
    domain_board = build_leaderboard(stores, reference=reference, notes=list(notes), **common)
    dimension_board = build_leaderboard(stores, view="dimension", **common)
    datas = [load_run_data(store) for store in stores]
    kinds: list[JudgeKind] = [judge or data.primary_judge for data in datas]
    for data, kind in zip(datas, kinds):
        if not data.judged_by(kind):
            raise StoreError(f"{data.name} has no {kind} judgments")
    sections = [run_section(data, kind, worst_n) for data, kind in zip(datas, kinds)]
    return Report(
        html=report_html(domain_board, dimension_board, sections, sample_index(datas, kinds)),
        charts=report_charts(domain_board, dimension_board),
    )
