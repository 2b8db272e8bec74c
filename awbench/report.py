"""A self-contained static HTML report: leaderboard, charts, the worst samples with diffs, a search box.

The report needs no network: CSS, JS and charts (`awbench.charts`) are inline.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from datetime import datetime, timezone
from importlib import resources
from string import Template

from pydantic import BaseModel

import awbench
from awbench.charts import Charts, Series, bar_chart_svg
from awbench.compare import Consistency, LengthBias, judge_consistency, run_length_bias
from awbench.domains import DIMENSIONS, DOMAIN_LABELS, DOMAINS
from awbench.leaderboard import (
    DIMENSION_LABELS, INTERVALS_NOTE, Cell, Group, Leaderboard, build_leaderboard, fmt_cost, fmt_interval, fmt_number,
)
from awbench.runs import RunData, load_run_data
from awbench.sample_view import SampleView, clip, sample_view, unified_diff, worst_keys
from awbench.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, OVERALL
from awbench.store import RunStore, StoreError


def _e(text: object) -> str:
    return html.escape(str(text))


def _cell_html(cell: Cell) -> str:
    """The value, and its interval `[lo, hi]` below it in small type."""
    interval = fmt_interval(cell)
    return _e(fmt_number(cell.value)) + (f'<br><span class="ci">{_e(interval)}</span>' if interval else "")


def leaderboard_html(board: Leaderboard, table_id: str = "leaderboard") -> str:
    heads = ["#", "Run", *(board.labels[c] for c in board.columns), "Scored", "Failed", "Judge", "Prompts", "Data",
             "Cost"]
    text_cols = {"Run", "Judge", "Prompts", "Data"}
    out = [f'<div class="scroll"><table id="{table_id}" class="leaderboard"><thead><tr>'
           + "".join(f'<th class="{"text" if h in text_cols else ""}">{_e(h)}</th>' for h in heads)
           + "</tr></thead><tbody>"]
    for group in board.groups:
        header = ("rule scores · " if group.rules else "") + group.header
        out.append(f'<tr class="group"><th colspan="{len(heads)}">{_e(header)}</th></tr>')
        for row in group.rows:
            css = "run published" if row.published else "run"
            name = _e(row.run) + (' <span class="badge">published</span>' if row.published else "")
            model = "" if row.published or row.model == row.run else f'<br><span class="meta">{_e(row.model)}</span>'
            cells = "".join(f'<td class="{"overall" if c == OVERALL else ""}">{_cell_html(row.cells[c])}</td>'
                            for c in board.columns)
            out.append(
                f'<tr class="{css}" data-run="{_e(row.run)}"><td>{"" if row.rank is None else row.rank}</td>'
                f'<td class="text">{name}{model}</td>{cells}<td>{"" if row.scored is None else row.scored}</td>'
                f'<td>{"" if row.failed is None else row.failed}</td><td class="text">{_e(row.judge)}</td>'
                f'<td class="text">{_e(row.prompts)}</td><td class="text">{_e(row.data)}</td>'
                f"<td>{_e(fmt_cost(row.cost_usd))}</td></tr>"
            )
    out.append("</tbody></table></div>")
    if board.ci:
        out.append(f'<p class="note">{_e(INTERVALS_NOTE)}</p>')
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
    judge: str
    worst: dict[str, list[SampleView]]
    length_bias: LengthBias
    consistency: Consistency | None
    agreement: dict[str, float | None] | None


def run_section(data: RunData, judge_id: str, worst_n: int) -> RunSection:
    scores = data.evaluation(judge_id).scores
    return RunSection(
        name=data.name, judge=judge_id,
        worst={d: [sample_view(data, k, judge_id) for k in worst_keys(data, judge_id, worst_n, domain=d)] for d in DOMAINS},
        length_bias=run_length_bias(data, judge_id), consistency=judge_consistency(data, judge_id),
        agreement=scores.agreement if scores else None,
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


def chart_series(group: Group, board: Leaderboard) -> list[Series]:
    """One series per row of the group, in its order; the last category is the board's total."""
    return [Series(name=row.run, values=[row.cells[c].value for c in board.columns], published=row.published)
            for row in group.rows]


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
    domain_board: Leaderboard, dimension_board: Leaderboard, sections: Sequence[RunSection], index: dict,
    title: str = "AgentWorldBench report",
) -> str:
    charts = report_charts(domain_board, dimension_board)
    body = [
        '<section id="leaderboard-section"><h2>Leaderboard</h2>', leaderboard_html(domain_board), "</section>",
        '<section id="charts"><h2>Charts</h2>',
        *(f'<div class="scroll">{bar_chart_svg(name, t, cats, ser)}</div>' for name, (t, cats, ser) in charts.items()),
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
    notes: list[str] = []  # what was left out, and why (also in the page)


def build_report(
    stores: Sequence[RunStore], *, judge: str | None = None, worst_n: int = 3, reference: bool = False,
    ci: bool = True, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED, notes: Sequence[str] = (),
) -> Report:
    """Each run is read once, for both leaderboards and its section."""
    stores = list(stores)
    datas = [load_run_data(store) for store in stores]
    loaded = {store.path.resolve(): data for store, data in zip(stores, datas)}
    common = dict(judge=judge, ci=ci, resamples=resamples, seed=seed, loaded=loaded)
    domain_board = build_leaderboard(stores, reference=reference, notes=list(notes), **common)
    dimension_board = build_leaderboard(stores, view="dimension", **common)
    judged: list[tuple[RunData, str]] = []
    for data in datas:
        try:
            judged.append((data, data.evaluation(judge).id))
        except StoreError:  # the leaderboard's notes already say it has no such judge
            continue
    sections = [run_section(data, judge_id, worst_n) for data, judge_id in judged]
    index = sample_index([d for d, _ in judged], [j for _, j in judged])
    return Report(
        html=report_html(domain_board, dimension_board, sections, index),
        charts=report_charts(domain_board, dimension_board), notes=domain_board.notes,
    )
