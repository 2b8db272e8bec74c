"""A self-contained static HTML report: leaderboard, charts, each run's scores along trajectories (by turn index and
context length, `awbench.analysis.growth`), the worst samples with diffs, a search box.

The report needs no network: CSS, JS and charts (`awbench.analysis.charts`) are inline.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from collections.abc import Sequence
from datetime import datetime, timezone
from importlib import resources
from string import Template
from typing import Any

from pydantic import BaseModel

import awbench
from awbench.analysis.charts import (
    TOTAL_COLOR,
    Charts,
    Line,
    LineChart,
    LineCharts,
    LinePoint,
    Series,
    bar_chart_svg,
    color,
    line_panels_svg,
)
from awbench.analysis.compare import (
    Consistency,
    LengthBias,
    judge_consistency,
    run_length_bias,
)
from awbench.analysis.growth import (
    AXES,
    AXIS_NAMES,
    GrowthTable,
    RunGrowth,
    fmt_points,
    fmt_spread,
    growth_summary,
    run_growth,
)
from awbench.analysis.leaderboard import (
    DIMENSION_LABELS,
    INTERVALS_NOTE,
    Cell,
    Group,
    Leaderboard,
    build_leaderboard,
    fmt_cost,
    fmt_interval,
    fmt_number,
)
from awbench.analysis.options import DEFAULT_RESAMPLES, DEFAULT_SEED, OVERALL
from awbench.analysis.runs import RunData, load_run_data
from awbench.analysis.sample_view import (
    SampleView,
    clip,
    sample_view,
    unified_diff,
    worst_keys,
)
from awbench.analysis.stats import MIN_TRAJECTORIES, TOO_FEW
from awbench.analysis.turing import fmt_rate
from awbench.domains import DIMENSIONS, DOMAIN_LABELS, DOMAINS
from awbench.run.store import RunStore, StoreError
from awbench.run.variance import VARIANCE_COLUMNS, VARIANCE_NOTE, VARIANCE_TITLE, VarianceComponents


def _e(text: object) -> str:
    return html.escape(str(text))


def _cell_html(cell: Cell) -> str:
    """The value, and its interval `[lo, hi]` below it in small type."""
    interval = fmt_interval(cell)
    return _e(fmt_number(cell.value)) + (f'<br><span class="ci">{_e(interval)}</span>' if interval else "")


def leaderboard_html(board: Leaderboard, table_id: str = "leaderboard") -> str:
    """Judge, prompts and data are in each group's header row, not in columns of their own: the table fits a
    1280 px window with intervals and the published rows."""
    heads = ["#", "Run", *(board.labels[c] for c in board.columns), "Scored / failed / unscored", "Cost"]
    text_cols = {"Run"}
    out = [
        f'<div class="scroll"><table id="{table_id}" class="leaderboard"><thead><tr>'
        + "".join(f'<th class="{"text" if h in text_cols else ""}">{_e(h)}</th>' for h in heads)
        + "</tr></thead><tbody>"
    ]
    for group in board.groups:
        header = ("rule scores · " if group.rules else "") + group.header
        out.append(f'<tr class="group"><th colspan="{len(heads)}">{_e(header)}</th></tr>')
        for row in group.rows:
            css = "run published" if row.published else "run"
            name = _e(row.run) + (' <span class="badge">published</span>' if row.published else "")
            name += "".join(f' <span class="badge">{_e(mark)}</span>' for mark in row.marks())
            model = "" if row.published or row.model == row.run else f'<br><span class="meta">{_e(row.model)}</span>'
            cells = "".join(
                f'<td class="{"overall" if c == OVERALL else ""}">{_cell_html(row.cells[c])}</td>'
                for c in board.columns
            )
            counts = "" if row.scored is None else f"{row.scored}/{row.failed}/{row.unscored}"
            out.append(
                f'<tr class="{css}" data-run="{_e(row.run)}"><td>{"" if row.rank is None else row.rank}</td>'
                f'<td class="text">{name}{model}</td>{cells}<td class="counts">{counts}</td>'
                f"<td>{_e(fmt_cost(row.cost_usd))}</td></tr>"
            )
    out.append("</tbody></table></div>")
    if board.ci:
        out.append(f'<p class="note">{_e(INTERVALS_NOTE)}</p>')
    out += [f'<p class="note warn">{_e(note)}</p>' for note in board.notes]
    if board.turing:
        out.append(
            f'<div class="scroll"><table id="{table_id}-turing"><thead><tr><th class="text">Run</th>'
            '<th class="text">Turing test judge</th><th>judge accuracy, % [95% CI]</th>'
            "<th>model fool rate, % [95% CI]</th></tr></thead><tbody>"
        )
        out += [
            f'<tr><td class="text">{_e(t.run)}</td><td class="text">{_e(t.judge)}</td>'
            f"<td>{_e(fmt_rate(t.accuracy))}</td><td>{_e(fmt_rate(t.fool_rate))}</td></tr>"
            for t in board.turing
        ]
        out.append("</tbody></table></div>")
    return "\n".join(out)


def _diff_html(lines: list[str], max_lines: int = 300) -> str:
    if not lines:
        return '<p class="note">prediction and ground truth are identical</p>'
    # One block per line and no newline between them: a newline after a block would add an empty line.
    spans = []
    for line in lines[:max_lines]:
        css = {"@": "hunk", "+": "add", "-": "del"}.get(line[:1], "same")
        spans.append(f'<span class="{css}">{_e(line)}</span>')
    if len(lines) > max_lines:
        spans.append(f'<span class="same">… {len(lines) - max_lines} more diff lines</span>')
    return '<pre class="diff">' + "".join(spans) + "</pre>"


def sample_card(view: SampleView, run: str, anchor: str) -> str:
    dims = "".join(
        f"<span>{_e(DIMENSION_LABELS[d])} {view.dimensions[d]:.0f}</span>" for d in DIMENSIONS if d in view.dimensions
    )
    dims += "".join(
        f'<span class="rule-part">rule {_e(name)} {value * 100:.0f}</span>'
        for name, value in (view.rule_parts or {}).items()
    )
    reasons = []
    for i, r in enumerate(view.reasons, start=1):
        label = f"verdict {i} ({r.status})" if len(view.reasons) > 1 else f"judge ({r.status})"
        reasons.append(
            f"<h4>{_e(label)}</h4>"
            + (
                '<ul class="reasons strengths">' + "".join(f"<li>{_e(s)}</li>" for s in r.strengths) + "</ul>"
                if r.strengths
                else ""
            )
            + (
                '<ul class="reasons weaknesses">' + "".join(f"<li>{_e(w)}</li>" for w in r.weaknesses) + "</ul>"
                if r.weaknesses
                else ""
            )
        )
    status = "" if view.status in (None, "ok") else f' <span class="warn">[{_e(view.status)}]</span>'
    error = f'<p class="warn">{_e(view.error)}</p>' if view.error else ""
    return (
        f'<details class="sample" id="{_e(anchor)}" data-key="{_e(view.key)}" data-run="{_e(run)}">'
        f"<summary>{_e(view.key)} · score {fmt_number(view.score, 1)}{status}</summary>"
        f'<div class="scores">{dims}</div>{error}'
        f"<h4>action</h4><pre>{_e(clip(view.action, 1500))}</pre>"
        "<h4>ground truth → prediction (unified diff)</h4>"
        f"{_diff_html(unified_diff(view.ground_truth, view.prediction))}" + "".join(reasons) + "</details>"
    )


def _length_bias_html(bias: LengthBias) -> str:
    cells = "".join(
        f"<tr><td class='text'>{_e(b)}</td><td>{n}</td><td>{fmt_number(m)}</td></tr>" for b, (n, m) in bias.items()
    )
    return (
        "<table class='length-bias'><thead><tr><th class='text'>prediction / truth length</th><th>n</th>"
        f"<th>mean score</th></tr></thead><tbody>{cells}</tbody></table>"
    )


def _variance_html(variance: VarianceComponents | None) -> str:
    """The standard errors and their sources, as `score` and `show` print them."""
    if variance is None:
        return '<p class="note">No scored samples.</p>'
    head = "".join(f"<th>{_e(c)}</th>" for c in ("", *VARIANCE_COLUMNS))
    body = "".join(
        f"<tr><td class='text'>{_e(label)}</td>" + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>"
        for label, cells in variance.rows()
    )
    notes = [VARIANCE_NOTE, *([note] if (note := variance.unseen_note()) else [])]
    return (
        f"<table class='variance'><caption>{_e(VARIANCE_TITLE)}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table>" + "".join(f'<p class="note">{_e(n)}</p>' for n in notes)
    )


def _consistency_html(c: Consistency | None, agreement: dict[str, float | None] | None) -> str:
    parts = []
    if c:
        alpha = ", ".join(f"{DIMENSION_LABELS[d]} {fmt_number(a)}" for d, a in c.alpha.items())
        parts.append(
            f"<p>Repeated verdicts (up to {c.k} per prediction, {c.n} predictions): Krippendorff's α (ordinal) "
            f"between them: {_e(alpha)}</p>"
        )
    if agreement:
        rho = ", ".join(f"{DOMAIN_LABELS.get(d, d.capitalize())} {fmt_number(v)}" for d, v in agreement.items())
        parts.append(f"<p>Rule score vs LLM total, Spearman: {_e(rho)}</p>")
    return "".join(parts) or (
        '<p class="note">Nothing to show: no repeated verdicts (--judge-samples) and no '
        "rule-vs-LLM comparison (--judge both) in this run.</p>"
    )


class RunSection(BaseModel):
    """What the report shows for one run beyond its leaderboard row."""

    name: str
    judge: str
    worst: dict[str, list[SampleView]]
    length_bias: LengthBias
    consistency: Consistency | None
    agreement: dict[str, float | None] | None
    variance: VarianceComponents | None = None
    growth: RunGrowth | None = None
    rules: bool = False  # the judge is the rule judge: its charts say "rule score"
    notes: list[str] = []  # its K generations and their spread; predictions flagged as addressing the judge


def run_section(
    data: RunData, judge_id: str, worst_n: int, resamples: int | None = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> RunSection:
    """`resamples=None`: the scores along trajectories without intervals (`report --no-ci`)."""
    evaluation = data.evaluation(judge_id)
    scores = evaluation.scores
    return RunSection(
        name=data.name,
        judge=judge_id,
        worst={
            d: [sample_view(data, k, judge_id) for k in worst_keys(data, judge_id, worst_n, domain=d)] for d in DOMAINS
        },
        length_bias=run_length_bias(data, judge_id),
        consistency=judge_consistency(data, judge_id),
        agreement=scores.agreement if scores else None,
        variance=data.variance(judge_id),
        growth=run_growth(data, judge_id, resamples, seed),
        rules=evaluation.kind == "rules",
        notes=[n for n in (scores.generations_note(), scores.flagged_note(str(data.store.path))) if n]
        if scores
        else [],
    )


def growth_lines(table: GrowthTable) -> list[Line]:
    """One panel per domain with samples, in the published order, then Overall."""
    lines = []
    for name, cells in table.rows.items():
        total = name == OVERALL
        points = [
            None if (c := cells.get(b)) is None or c.mean is None else LinePoint(mean=c.mean, lo=c.lo, hi=c.hi, n=c.n)
            for b in table.bins
        ]
        lines.append(
            Line(
                name=name,
                label="Overall" if total else DOMAIN_LABELS.get(name, name),
                points=points,
                color=TOTAL_COLOR if total else color(DOMAINS.index(name)),
                total=total,
            )
        )
    return lines


def growth_chart(section: RunSection, table: GrowthTable) -> LineChart:
    """(title, bins, panels, footer) of one run's chart along one axis."""
    what = "Rule score" if section.rules else "Score"
    title = f"{what} by {AXIS_NAMES[table.axis]} (0–100), per domain\n{section.name} · judge {section.judge}"
    axis = "turn index (turn_idx)" if table.axis == "turn" else "context, tokens ≈ characters / 4"
    footer = f"x: bins of the {axis}" + (
        "; bars: 95% bootstrap intervals over whole trajectories" if table.intervals else ""
    )
    return title, table.bins, growth_lines(table), footer


def growth_charts(sections: Sequence[RunSection]) -> LineCharts:
    """Every run's charts along trajectories, by id: `growth-{run index}-{axis}`."""
    return {
        f"growth-{i}-{axis}": growth_chart(section, section.growth.table(axis))
        for i, section in enumerate(sections)
        if section.growth is not None
        for axis in AXES
        if section.growth.table(axis).rows
    }


def _growth_cell_html(mean: float | None, bounds: str = "", extra: str = "", signed: bool = False) -> str:
    """The mean, and below it its interval (or "too few to tell") and `extra`."""
    if mean is None:
        return "<td class='empty'>–</td>"
    return (
        f"<td>{_e(fmt_points(mean, signed))}"
        + (f'<br><span class="ci">{_e(bounds)}</span>' if bounds else "")
        + (f'<br><span class="ci">{_e(extra)}</span>' if extra else "")
        + "</td>"
    )


def growth_table_html(table: GrowthTable, table_id: str) -> str:
    """Domains x bins: mean, [lo, hi] and n; the trend per doubling in the last column."""
    heads = "".join(f"<th>{_e(b)}</th>" for b in table.bins)
    out = [
        f'<div class="scroll"><table class="growth" id="{table_id}" data-axis="{table.axis}"><thead><tr>'
        f'<th class="text">{_e(AXIS_NAMES[table.axis])}</th>{heads}<th>trend / doubling</th></tr></thead><tbody>'
    ]
    domains = sum(1 for name in table.rows if name != OVERALL)
    for name, cells in table.rows.items():
        tds = []
        for b in table.bins:
            c = cells.get(b)
            if c is None:
                tds.append(_growth_cell_html(None))
                continue
            extra = f"n={c.n}" + (
                f" · {c.domains} of {domains} domains" if c.domains is not None and c.domains < domains else ""
            )
            tds.append(_growth_cell_html(c.mean, fmt_spread(c), extra))
        t = table.trend.get(name)
        trend = _growth_cell_html(t.slope, fmt_spread(t, signed=True), signed=True) if t else _growth_cell_html(None)
        label = "Overall" if name == OVERALL else DOMAIN_LABELS.get(name, name)
        css = ' class="overall"' if name == OVERALL else ""
        out.append(f'<tr data-row="{_e(name)}"{css}><td class="text">{_e(label)}</td>{"".join(tds)}{trend}</tr>')
    out.append("</tbody></table></div>")
    return "\n".join(out)


GROWTH_NOTE = (
    "Cells: mean score, its 95% interval (bootstrap over whole trajectories) and n samples. Overall: the "
    "mean over the domains present in the bin. Trend: least-squares slope of the score on log2 of the "
    "turn index (or of the context tokens), in points per doubling, with its interval; Overall's is the "
    f"mean of the domains' slopes. From fewer than {MIN_TRAJECTORIES} trajectories, a cell or trend has no "
    f"interval ({TOO_FEW})."
)


def _growth_html(section: RunSection, index: int, charts: LineCharts) -> str:
    """One run along trajectories: by turn index, then by context length, each a chart, a table and a line."""
    growth = section.growth
    out = [
        f'<section class="growth-section" id="growth-{index}" data-run="{_e(section.name)}">'
        f"<h3>{_e(section.name)}</h3>",
        f'<p class="note">judge: {_e(section.judge)}</p>',
    ]
    if growth is None or not any(growth.table(axis).rows for axis in AXES):
        out.append('<p class="note">No scored samples.</p>')
    else:
        for axis in AXES:
            table = growth.table(axis)
            chart_id = f"growth-{index}-{axis}"
            out += [
                f"<h4>By {_e(AXIS_NAMES[axis])}</h4>",
                f'<div class="scroll">{line_panels_svg(chart_id, *charts[chart_id])}</div>',
                growth_table_html(table, f"{chart_id}-table"),
                f'<p class="growth-summary">{_e(growth_summary(table))}</p>',
            ]
    out.append("</section>")
    return "\n".join(out)


def growth_section_html(sections: Sequence[RunSection], charts: LineCharts) -> str:
    """The report's "Along trajectories": what the bins are, then a subsection per run."""
    intro = (
        "Scores by bins of the turn index (1, 2-3, 4-7, 8-15, 16-31, 32+) and of the context the candidate is "
        "shown (system prompt, earlier turns, action; tokens ≈ characters / 4, K = 1,024). " + GROWTH_NOTE
    )
    return "\n".join(
        [
            '<section id="growth"><h2>Along trajectories</h2>',
            f'<p class="note">{_e(intro)}</p>',
            *(_growth_html(s, i, charts) for i, s in enumerate(sections)),
            "</section>",
        ]
    )


def _section_html(section: RunSection, index: int) -> str:
    out = [
        f'<section class="run-section" id="run-{index}"><h3>{_e(section.name)}</h3>',
        f'<p class="note">judge: {_e(section.judge)}</p>',
        *(f"<p>{_e(note)}</p>" for note in section.notes),
    ]
    out.append("<h4>Where the noise is</h4>" + _variance_html(section.variance))
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


# "<" and ">" could end the script element or open a comment inside it ("<!--<script>" keeps the element open past
# its end tag), "&" is escaped with them as is usual, and U+2028/U+2029 end a line in older JavaScript. All of them
# only ever occur inside JSON strings, where a \u escape means the same character.
_SCRIPT_JSON_ESCAPES = str.maketrans({c: f"\\u{ord(c):04x}" for c in "<>&\u2028\u2029"})


def script_json(value: object) -> str:
    """JSON that can be placed inside a `<script>` element and read back with JSON.parse as `value`."""
    return json.dumps(value, ensure_ascii=False).translate(_SCRIPT_JSON_ESCAPES)


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def content_security_policy(template: str) -> str:
    """The page's policy: only the template's own inline scripts and style run (by their hashes, so that the
    elements must be byte for byte the template's); no other script, style, image, frame or request of any kind.
    A value that escaped escaping still runs nothing. The hashed elements hold no template placeholder."""
    scripts = re.findall(r"<script>(.*?)</script>", template, re.S)
    styles = re.findall(r"<style>(.*?)</style>", template, re.S)
    return (
        f"default-src 'none'; script-src {' '.join(map(_csp_hash, scripts))}; "
        f"style-src {' '.join(map(_csp_hash, styles))}; base-uri 'none'; form-action 'none'"
    )


def render_page(title: str, subtitle: str, body: str, nav: str = "", index: dict | None = None) -> str:
    text = resources.files("awbench.analysis").joinpath("templates/report.html").read_text(encoding="utf-8")
    return Template(text).substitute(
        csp=_e(content_security_policy(text)),
        title=_e(title),
        subtitle=_e(subtitle),
        body=body,
        nav=nav,
        index=script_json(index or {"runs": [], "samples": {}}),
        version=awbench.__version__,
    )


def leaderboard_page(board: Leaderboard) -> str:
    """`awbench leaderboard --format html`: the table alone, as a page."""
    return render_page("AgentWorldBench leaderboard", _stamp(), leaderboard_html(board))


def _stamp() -> str:
    return f"awbench {awbench.__version__} · generated {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}"


def chart_series(group: Group, board: Leaderboard) -> list[Series]:
    """One series per row of the group, in its order; the last category is the board's total."""
    return [
        Series(name=row.run, values=[row.cells[c].value for c in board.columns], published=row.published)
        for row in group.rows
    ]


def chart_title(kind: str, group: Group) -> str:
    """Two lines: what the chart shows (rule scores say so), then the group it shows."""
    what = {"domains": "by domain", "dimensions": "by rubric dimension, mean over domains"}[kind]
    if group.rules:
        first = f"Rule score {what} (0–100)"
    elif group.rows and all(row.published for row in group.rows):
        first = f"Published score {what} (0–100)"
    else:
        first = f"Score {what} (0–100)"
    return f"{first}\n{group.header}"


def report_charts(domain_board: Leaderboard, dimension_board: Leaderboard) -> Charts:
    """One chart per comparability group and view, so that scores on different scales (rule scores, LLM
    judges, the published rows) are never drawn together. No LLM-judged run: no dimension chart."""
    charts: Charts = {}
    for kind, board in (("domains", domain_board), ("dimensions", dimension_board)):
        categories = [board.labels[c] for c in board.columns]
        for i, group in enumerate(board.groups, start=1):
            if group.rows:
                charts[f"chart-{kind}-{i}"] = (chart_title(kind, group), categories, chart_series(group, board))
    return charts


def sample_index(datas: Sequence[RunData], judge_ids: Sequence[str]) -> dict:
    """Every sample key with each run's score (None: not scored), for the search box."""
    runs = [d.name for d in datas]
    samples: dict[str, list[float | None]] = {}
    for i, (data, judge_id) in enumerate(zip(datas, judge_ids)):
        for pts in data.points(judge_id).values():
            for key, score, _ in pts:
                samples.setdefault(key, [None] * len(runs))[i] = round(score, 2)
    return {"runs": runs, "samples": dict(sorted(samples.items()))}


def _dimension_notes(charts: Charts, dimension_board: Leaderboard) -> list[str]:
    if not any(name.startswith("chart-dimensions") for name in charts):
        return ["No rubric-dimension chart: no run here was scored by the LLM judge."]
    return [note for note in dimension_board.notes if note.startswith("left out")]


def report_html(
    domain_board: Leaderboard,
    dimension_board: Leaderboard,
    sections: Sequence[RunSection],
    index: dict,
    title: str = "AgentWorldBench report",
) -> str:
    charts = report_charts(domain_board, dimension_board)
    body = [
        '<section id="leaderboard-section"><h2>Leaderboard</h2>',
        leaderboard_html(domain_board),
        "</section>",
        '<section id="charts"><h2>Charts</h2>',
        *(f'<div class="scroll">{bar_chart_svg(name, t, cats, ser)}</div>' for name, (t, cats, ser) in charts.items()),
        *(f'<p class="note">{_e(note)}</p>' for note in _dimension_notes(charts, dimension_board)),
        "</section>",
        growth_section_html(sections, growth_charts(sections)),
        '<section id="samples"><h2>Samples</h2>',
        '<p><input id="search" type="search" placeholder="find a sample by key, e.g. terminal/12/3" '
        'aria-label="sample key"> <span id="search-status" class="note"></span></p><ul id="search-results"></ul>',
        *(_section_html(s, i) for i, s in enumerate(sections)),
        "</section>",
    ]
    nav = (
        '<a href="#leaderboard-section">Leaderboard</a><a href="#charts">Charts</a>'
        '<a href="#growth">Along trajectories</a><a href="#samples">Samples</a>'
        + "".join(f'<a href="#run-{i}">{_e(s.name)}</a>' for i, s in enumerate(sections))
    )
    return render_page(title, _stamp(), "\n".join(body), nav, index)


class Report(BaseModel):
    html: str
    charts: Charts  # the bar charts of the leaderboard's groups
    growth_charts: LineCharts = {}  # each run's scores along trajectories
    notes: list[str] = []  # what was left out, and why (also in the page)


def build_report(
    stores: Sequence[RunStore],
    *,
    judge: str | None = None,
    worst_n: int = 3,
    reference: bool = False,
    ci: bool = True,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    notes: Sequence[str] = (),
) -> Report:
    """Each run is read once, for both leaderboards and its section."""
    stores = list(stores)
    datas = [load_run_data(store) for store in stores]
    loaded = {store.path.resolve(): data for store, data in zip(stores, datas)}
    common: dict[str, Any] = dict(judge=judge, ci=ci, resamples=resamples, seed=seed, loaded=loaded)
    domain_board = build_leaderboard(stores, reference=reference, notes=list(notes), **common)
    dimension_board = build_leaderboard(stores, view="dimension", **common)
    judged: list[tuple[RunData, str]] = []
    for data in datas:
        try:
            judged.append((data, data.evaluation(judge).id))
        except StoreError:  # the leaderboard's notes already say it has no such judge
            continue
    # The runs' sections in the leaderboard's order (the best first), those it does not rank after them.
    ranked = [(row.run, row.judge_id) for group in domain_board.groups for row in group.rows if not row.published]
    judged.sort(
        key=lambda pair: ranked.index((pair[0].name, pair[1])) if (pair[0].name, pair[1]) in ranked else len(ranked)
    )
    sections = [run_section(data, judge_id, worst_n, resamples if ci else None, seed) for data, judge_id in judged]
    index = sample_index([d for d, _ in judged], [j for _, j in judged])
    return Report(
        html=report_html(domain_board, dimension_board, sections, index),
        charts=report_charts(domain_board, dimension_board),
        growth_charts=growth_charts(sections),
        notes=domain_board.notes,
    )
